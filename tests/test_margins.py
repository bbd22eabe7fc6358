"""Every printed figure sits far from any boundary where its printed text would change.

float32 kernels differ in the last bits between CPUs (x86 AVX2 / AVX-512, ARM NEON / SVE,
Apple); float64 ones by ~1e-16. The toy models compute in float64 and show float32 where an
article printed float32. These tests compute, for every offline figure, how far its exact
value lies from the nearest boundary of its text (a decimal or float32 rounding boundary), and
for every decision behind a printed result (an argmax, a ranking, a top-k cut, a top-p count, a
min-p bar, an interval draw) how far it lies from flipping; each distance must exceed
``course_lib.figures.margins.required_margin`` — 1e-9 of the value on float64 paths, 1e-4 on float32.
"""
from __future__ import annotations

import math
import random
from bisect import bisect_left
from itertools import accumulate

import pytest
import torch

from course_lib.figures import margins
from course_lib.figures.computers import computed_figures
from course_lib.figures.interface import five_token_logits
from course_lib.toys import lab as lab_toy
from course_lib import decoding as S
from course_lib.figures import load_registry, to_float32
from course_lib.toys.five_token import FIVE_TOKEN
from course_lib.decoding.generate import RuleChoice, generate
from course_lib.toys.lab import LAB, LAB_PROMPT_IDS
from course_lib.decoding import random_logit_batch

REGISTRY = load_registry()


@pytest.fixture(scope="module")
def computed():
    """figure id -> {name: value} for every offline figure the toy models and rules compute."""
    return computed_figures()


def numbers(value, float32_path=False, path=""):
    """(path, float, computed in float32?) for every non-integer number inside ``value``."""
    if isinstance(value, torch.Tensor):
        float32_path = value.dtype in (torch.float32, torch.float16, torch.bfloat16)
        value = value.detach().tolist()
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from numbers(v, float32_path, f"{path}[{i}]")
    elif isinstance(value, float):
        yield path, value, float32_path


def is_literal(x: float) -> bool:
    """A short decimal such as 0.5 or 1e-05: a premise typed in, not a computed float64
    (whose full repr would be exactly the digits that differ between CPUs)."""
    mantissa = repr(x).lstrip("-").split("e")[0].replace(".", "").strip("0")
    return len(mantissa) <= 6


def test_every_toy_figure_is_computed_here(computed):
    offline = {fid for fid, entry in REGISTRY.items()
               if not entry["needs_pretrained_weights"]
               and fid.split(".")[0] in ("interface", "lab", "decoding")
               and not fid.startswith(("interface.tok.", "interface.gpt2.", "lab.detok", "lab.partial_utf8"))}
    missing = offline - set(computed) - {"interface.tying"}     # tying: integer counts only
    assert not missing, f"figures without a margin check: {sorted(missing)}"


def test_every_printed_number_is_far_from_the_boundary_of_its_text(computed):
    problems, checked = [], 0
    for figure_id, values in sorted(computed.items()):
        for name, value in values.items():
            spec = REGISTRY[figure_id]["values"][name]
            decimals, f32, truncated = spec.get("decimals"), spec.get("float32", False), spec.get("truncated", False)
            for path, x, float32_path in numbers(value):
                if decimals is None and not f32 and is_literal(x):
                    continue        # an input written as a short decimal (u = 0.5, eps = 1e-05)
                margin = margins.text_margin(x, decimals, f32, truncated)
                need = margins.required_margin(x, float32_path)
                checked += 1
                if not margin >= need:
                    shown = margins.text_of(to_float32(x) if f32 else x, decimals, truncated)
                    problems.append(f"{figure_id} · {name}{path} = {x!r} prints {shown!r} but lies only "
                                    f"{margin:.3g} from a value that prints differently (needs {need:.3g})")
    assert checked > 100
    assert not problems, "\n".join(problems)


def test_the_margin_measure_sees_a_boundary():
    # 0.12345 is (in binary) just below the 4-decimal boundary 0.12345: no margin at all
    assert margins.text_margin(0.12345, 4) < 1e-12
    # a float32 value's own rounding interval is half a float32 step wide on each side
    x = to_float32(0.1)
    step = math.ulp(x) * 2 ** 29                      # float32 spacing near 0.1
    assert margins.text_margin(x, None, float32=True) == pytest.approx(step / 2, rel=1e-6)
    # truncated digits change at the truncation point, not halfway
    assert margins.text_margin(0.6902849, 6, truncated=True) == pytest.approx(1e-7, rel=1e-6)
    # a full float64 repr is never portable
    assert margins.text_margin(0.5, None) == 0.0


# ----------------------------------------------------------------------------- decisions

def ranking_gap(values) -> float:
    """The smallest gap between neighbours in ranked order, relative to the larger of the two
    (a ranking flips across a gap of 0; float64 errors are relative, even for tiny values)."""
    ranked = sorted(values, reverse=True)
    return min((a - b) / max(abs(a), abs(b)) for a, b in zip(ranked, ranked[1:]))


def top_p_gap(probs, top_p) -> float:
    """How far every running sum (ranked order) lies from p: the top-p count flips at 0."""
    ranked = sorted(probs, reverse=True)
    return min(abs(s - top_p) for s in accumulate(ranked))


def bar_gap(probs, fraction) -> float:
    """How far every probability lies from the min-p bar."""
    bar = fraction * max(probs)
    return min(abs(p - bar) for p in probs)


def edge_gap(edges, u) -> float:
    """How far u lies from every interval edge."""
    return min(abs(u - e) for e in edges)


def require(label, gap, scale=1.0):
    need = margins.required_margin(scale)
    assert gap >= need, f"{label}: the decision is only {gap:.3g} from flipping (needs {need:.3g})"


def test_five_token_sampling_decisions_are_far_from_flipping():
    z = five_token_logits(FIVE_TOKEN.load())
    probs = S.softmax_with_temperature(z)
    require("greedy / ranking of the five logits", ranking_gap(z))
    for tau in (0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 4.0, 10.0, 0.3):
        require(f"ranking at τ = {tau}", ranking_gap(S.softmax_with_temperature(z, tau)))
    for p in (0.90, 0.92, 0.95):
        require(f"top-p {p} count", top_p_gap(probs, p))
    for t in (0.5, 2.0):
        require(f"min-p 0.05 bar at τ = {t}", bar_gap(S.softmax_with_temperature(z, t), 0.05))
    for i, p in enumerate(probs):
        require(f"probability {i} rounded to 4 decimals", margins.text_margin(p, 4), p)


def test_interval_draws_are_far_from_the_edges():
    probs = S.softmax_with_temperature(five_token_logits(FIVE_TOKEN.load()))
    rounded = [round(p, 4) for p in probs]
    edges = S.interval_boundaries(rounded)
    for u in (0.50, 0.05, 0.93, 0.95):
        require(f"u = {u}", edge_gap(edges, u))
    # u = rounded[0] sits exactly on the first edge on purpose (left-closed intervals): both
    # are the same float, no arithmetic in between, so the draw is exact on every machine
    assert edges[0] == rounded[0]
    rng, nearest = random.Random(12), math.inf
    for _ in range(100_000):
        u = rng.random()
        i = bisect_left(edges, u)
        nearest = min(nearest, *(abs(u - edges[j]) for j in (i - 1, i) if 0 <= j < len(edges)))
    require("the 100,000 draws of interface.draws", nearest)


def test_the_sampled_generation_loop_is_far_from_flipping():
    model = FIVE_TOKEN.load()
    run = generate(model, [0, 1, 0], 5, choose=RuleChoice(S.SamplingRule(), torch.Generator().manual_seed(0)), record_logits=True)
    for step in run.steps:
        probs = S.softmax_with_temperature(step.logits)
        require(f"decoding.loop step draw u = {step.u}", edge_gap(S.interval_boundaries(probs), step.u))


def test_lab_decisions_are_far_from_flipping():
    model = LAB.load()
    probs = lab_toy.next_token_probs(model)
    require("lab greedy / top-k / ranked table", ranking_gap(probs))
    require("lab top-p 0.9 count", top_p_gap(probs, 0.9))
    warm = S.softmax_with_temperature(LAB.last_row_logits(model), 0.7)
    require("lab T = 0.7 top-p 0.9 count", top_p_gap(warm, 0.9))
    step = S.SamplingRule(temperature=0.7, top_p=0.9).apply(LAB.last_row_logits(model))
    sums = list(accumulate(sorted((step.final[i] for i in step.kept), reverse=True)))
    for u in (0.5, 0.8):
        require(f"lab T = 0.7 draw u = {u}", edge_gap(sums, u))
    heads = lab_toy.row6_head_weights(model)
    require("lab head 2's ranking of keys", ranking_gap(heads[1].tolist()))
    require("lab head 1's ranking of keys", ranking_gap(heads[0].tolist()))
    roof = lab_toy.next_token_probs(model, LAB_PROMPT_IDS + [lab_toy.ROOF])
    require("lab after ␣roof: ranking", ranking_gap(roof))
    period = lab_toy.next_token_probs(model, LAB_PROMPT_IDS + [lab_toy.ROOF, lab_toy.PERIOD])
    require("lab after '.': ranking", ranking_gap(period))
    for step in lab_toy.greedy_generation(model, record_logits=True).steps:
        require(f"lab greedy generation step → {step.token_id}", ranking_gap(step.logits))


def test_a_decision_on_a_knife_edge_is_caught():
    """The checks above fail for a row whose running sum lands within float error of p."""
    probs = [0.5, 0.4, 0.1]
    with pytest.raises(AssertionError, match="from flipping"):
        require("knife-edge top-p", top_p_gap(probs, 0.9))


def test_notebook_07s_batched_example_is_far_from_flipping():
    """The [4, 50257] example: every row's top-p 0.9 count and min-p 0.05 set, at T = 0.7."""
    logits = random_logit_batch(rows=4, seed=0)
    assert logits.dtype == torch.float64
    probs = torch.softmax(logits / 0.7, dim=-1)
    for row, p in enumerate(probs):
        ranked = torch.sort(p, descending=True).values
        running = torch.cumsum(ranked, dim=0)
        require(f"batch row {row}: top-p 0.9 count", (running - 0.9).abs().min().item())
        require(f"batch row {row}: min-p 0.05 bar", (p - 0.05 * p.max()).abs().min().item(), p.max().item())
