"""The numbers the notebooks print besides the figures are far from changing too.

``test_margins.py`` covers every registry figure and the decisions behind them. The notebooks
also print intermediates (the five-token model's whole trace at 4 decimals in notebooks 02–06,
gradient norms in 06, the lab model's row x₆ and probability tables in 03 and 07, the
temperature and min-p tables of 07). Each is checked here at the precision it is printed, and
no printed entry may be a rounding residue of an exact zero (|x| < 1e-12 but not 0), whose
sign — and so whether it prints as "0.0000" or "-0.0000" — depends on the CPU's kernels.
"""
from itertools import accumulate

import torch

from course_lib.figures import margins
from course_lib.figures.interface import five_token_logits
from course_lib.toys import lab as lab_toy
from course_lib import decoding as S
from course_lib.toys.five_token import FIVE_TOKEN, TARGET_IDS
from course_lib.toys.lab import LAB, LAB_PROMPT_IDS
from course_lib.model.loss import mean_loss


def tensors(obj, path=""):
    if isinstance(obj, torch.Tensor):
        if obj.is_floating_point():
            yield path, obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from tensors(value, f"{path}.{key}")
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield from tensors(value, f"{path}[{i}]")


def residues(label, values):
    """Entries that are zero in exact arithmetic but came out as ±1e-17: their sign, and so
    "0.0000" or "-0.0000", depends on the CPU's kernels."""
    return [f"{label}[{i}] = {x!r} is a residue of 0: its sign depends on the CPU"
            for i, x in enumerate(torch.as_tensor(values, dtype=torch.float64).flatten().tolist())
            if x != 0 and abs(x) < 1e-12]


def problems(label, values, decimals):
    """Entries too close to a boundary of their text at ``decimals`` decimals."""
    found = []
    for i, x in enumerate(torch.as_tensor(values, dtype=torch.float64).flatten().tolist()):
        margin, need = margins.text_margin(x, decimals), margins.required_margin(x)
        if margin < need:
            found.append(f"{label}[{i}] = {x!r} is {margin:.3g} from a boundary at {decimals} decimals")
    return found


def test_the_five_token_trace_and_gradients_print_the_same_everywhere():
    model = FIVE_TOKEN.load()
    logits, trace = FIVE_TOKEN.run(model)
    found = []
    for path, t in tensors(trace):
        found += problems(f"trace{path}", t[torch.isfinite(t)], 4) + residues(f"trace{path}", t[torch.isfinite(t)])
    found += problems("probabilities", torch.softmax(logits[0], dim=-1), 4)
    loss = mean_loss(model(FIVE_TOKEN.input_tensor()), [TARGET_IDS])
    loss.backward()
    for name, p in model.named_parameters():
        found += problems(f"|grad {name}|", p.grad.norm(), 4)
        # notebook 06 prints which rows of E, P and the MLP have a gradient: a row is either
        # exactly zero (never used) or clearly not
        if name in ("token_embedding.weight", "position_embedding.weight", "blocks.0.mlp.up.weight"):
            rows = p.grad.abs().max(dim=1).values
            found += residues(f"largest |grad| of a row of {name}", rows)
        # the table prints "nonzero" for the weights (not the biases: the key bias's gradient
        # is exactly 0 in exact arithmetic — softmax ignores a shift shared by all keys — and
        # only rounding residues of ±1e-19 remain)
        if name.endswith(".weight") and bool((p.grad != 0).any()) != bool((p.grad.abs() >= 1e-12).any()):
            found.append(f"grad {name} is nonzero only through rounding residues")
    assert not found, "\n".join(found)


def test_the_lab_rows_the_notebooks_print_are_the_same_everywhere():
    model = LAB.load()
    found = []
    with torch.no_grad():
        _, trace = model.forward_trace(torch.tensor([LAB_PROMPT_IDS + [lab_toy.ROOF]]))
    layer = trace["layers"][0]
    for label, values, decimals in (("x₆", trace["x0"][0, 5], 3), ("u₆", layer["ln1"][0, 5], 3),
                                    ("q₆", layer["q"][0, :, 5], 3), ("row-6 scores", layer["scores"][0, :, 5], 4),
                                    ("row-6 weights", layer["attention_weights"][0, :, 5], 4)):
        found += problems(label, values, decimals) + residues(label, values)
    for ids in (LAB_PROMPT_IDS, LAB_PROMPT_IDS + [lab_toy.ROOF],
                LAB_PROMPT_IDS + [lab_toy.ROOF, lab_toy.PERIOD]):
        probs = lab_toy.next_token_probs(model, ids)
        found += problems(f"probabilities after {ids}", probs, 3)
        ranked = sorted(probs, reverse=True)
        found += problems(f"running sums after {ids}", list(accumulate(ranked)), 3)
    step = S.SamplingRule(temperature=0.7, top_p=0.9).apply(LAB.last_row_logits(model))
    kept = [step.final[i] for i in step.kept]
    found += problems("T = 0.7 kept probabilities", kept, 3)
    found += problems("T = 0.7 running sums", list(accumulate(kept)), 3)
    assert not found, "\n".join(found)


def test_notebook_07s_tables_print_the_same_everywhere():
    z = five_token_logits(FIVE_TOKEN.load())
    found = []
    for tau in (0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 4.0, 10.0):        # the temperature table
        p = S.softmax_with_temperature(z, tau)
        found += problems(f"τ = {tau} probabilities", p, 4)
        found += problems(f"τ = {tau} p_b/p_a", [p[1] / p[0]], 2)
    found += problems("τ = 0.01 probabilities", S.softmax_with_temperature(z, 0.01), 4)
    for tau in (0.3, 1.0, 1.5, 0.5, 2.0):                              # entropies, min-p bars
        p = S.softmax_with_temperature(z, tau)
        found += problems(f"τ = {tau} top probability, entropy, min-p bar",
                          [max(p), S.entropy(p), 0.05 * max(p)], 4)
    for rule in (S.SamplingRule(top_p=0.9), S.SamplingRule(temperature=0.5, top_p=0.9),
                 S.SamplingRule(temperature=1.5, top_p=0.9), S.SamplingRule(temperature=1.5, top_k=3, top_p=0.9)):
        found += problems(f"{rule} p'", rule.apply(z).final, 4)
    probs = S.softmax_with_temperature(z)
    kept = S.top_k_ids(probs, 2)
    found += problems("top-k 2 renormalised", S.renormalize(probs, kept), 6)
    assert not found, "\n".join(found)
