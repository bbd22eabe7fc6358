"""The sampling rules against an independent implementation: transformers' logits processors.

``TemperatureLogitsWarper``, ``TopKLogitsWarper``, ``TopPLogitsWarper`` and ``MinPLogitsWarper``
run on seeded [64, 50257] float32 logits with thousands of ties, −inf logits, rows with only
three finite logits, flat rows and leaders so far ahead that a float32 softmax underflows
(+60 at T = 0.5, +1000). A token transformers keeps is one whose score is still finite.

The kept sets must be equal wherever the two conventions agree; every deliberate difference
(listed in ``course_lib.decoding.rules``' docstring) is pinned below by a minimal example and, on
the big batch, checked to be exactly that difference and nothing else. The batched rules must
keep, row for row, what the per-row rules keep — underflowing rows included.
"""
import math
import os

import numpy
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")      # transformers must never reach the network here
from transformers.generation.logits_process import (LogitsProcessorList, MinPLogitsWarper,  # noqa: E402
                                                    TemperatureLogitsWarper, TopKLogitsWarper,
                                                    TopPLogitsWarper)

from course_lib import decoding as S  # noqa: E402
from course_lib import decoding as SB  # noqa: E402

B, V = 64, 50_257
LEADER_ID = 11184


@pytest.fixture(scope="module")
def logits():
    """[64, 50257] float32 logits: even rows rounded to 0.1 (ties everywhere), rows 1::8 with
    1,000 −inf logits, rows 2::8 with only 3 finite logits, rows 3::8 with a +60 leader at id
    11184 (at T = 0.5 every other token is ≥ 120 nats behind: exactly 0 in a float32 softmax),
    rows 5::8 with a +1000 leader (0 even in float64), rows 7::16 flat (every id tied)."""
    torch.manual_seed(2026)
    z = torch.randn(B, V) * 2
    z[::2] = torch.round(z[::2] * 10) / 10
    z[1::8, :1000] = -math.inf
    z[2::8, 3:] = -math.inf
    z[3::8, LEADER_ID] = 60.0
    z[5::8, 7] = 1000.0
    z[7::16] = 0.5
    return z


TIED_ROWS = [b for b in range(B) if b % 2 == 0 or b % 16 == 7]     # rounded rows and flat rows
UNTIED_ROWS = [b for b in range(B) if b not in TIED_ROWS]


def hf_kept(processors, logits: torch.Tensor) -> torch.Tensor:
    """transformers' processors in order; a token is kept while its score is not −inf."""
    return ~torch.isneginf(LogitsProcessorList(processors)(None, logits))


def ids(mask_row: torch.Tensor) -> set[int]:
    return set(torch.nonzero(mask_row).flatten().tolist())


# ------------------------------------------------------------------ the deliberate differences, minimal

def test_difference_top_k_ties():
    """We keep exactly k (ties by smaller id); transformers keeps every id tied with the k-th."""
    z = torch.tensor([[2.0, 1.0, 1.0]])
    assert ids(hf_kept([TopKLogitsWarper(2)], z)[0]) == {0, 1, 2}
    assert S.SamplingRule(top_k=2).apply(z[0]).kept == [0, 1]
    assert ids(SB.apply_batched(S.SamplingRule(top_k=2), z)[0][0]) == {0, 1}
    assert set(S.top_k_strict_cut(z[0], 2)) == {0, 1, 2}              # nanoGPT's cut = transformers'


def test_difference_tie_order_in_top_p():
    """Same count; among tied ids we keep the smaller ones, transformers the larger ones."""
    z = torch.zeros(1, 4)
    assert ids(hf_kept([TopPLogitsWarper(0.5)], z)[0]) == {2, 3}
    assert S.SamplingRule(top_p=0.5).apply(z[0]).kept == [0, 1]
    assert ids(SB.apply_batched(S.SamplingRule(top_p=0.5), z)[0][0]) == {0, 1}


def test_difference_gpt2_legacy_top_p():
    """GPT-2's old rule keeps one id fewer than the paper's, which transformers implements."""
    probs = [0.5, 0.25, 0.15, 0.1]                                  # running sums 0.5, 0.75, 0.9
    z = torch.tensor([[math.log(p) for p in probs]], dtype=torch.float64)
    assert ids(hf_kept([TopPLogitsWarper(0.8)], z)[0]) == {0, 1, 2}
    assert S.top_p_ids(probs, 0.8) == [0, 1, 2]
    assert S.gpt2_legacy_top_p_ids(probs, 0.8) == [0, 1]


def test_difference_top_p_at_one():
    """At p = 1 we stop when the float64 sum reaches 1.0; transformers keeps every nonzero id."""
    z = torch.tensor([[0.0, -100.0]])
    assert ids(hf_kept([TopPLogitsWarper(1.0)], z)[0]) == {0, 1}
    assert S.SamplingRule(top_p=1.0).apply(z[0]).kept == [0]
    assert ids(SB.apply_batched(S.SamplingRule(top_p=1.0), z)[0][0]) == {0}


def test_minus_inf_is_never_kept():
    """transformers leaves removed ids at −inf; top-k beyond the finite logits keeps only those."""
    z = torch.tensor([[0.0, -math.inf, 1.0, -math.inf]])
    assert ids(hf_kept([TopKLogitsWarper(3)], z)[0]) == {0, 2}
    for rule in (S.SamplingRule(top_k=3), S.SamplingRule(min_p=0.0), S.SamplingRule(top_p=1.0), S.SamplingRule()):
        assert rule.apply(z[0]).kept == [2, 0], rule
        assert ids(SB.apply_batched(rule, z)[0][0]) == {0, 2}, rule
    assert S.top_k_ids([0.25, 0.0, 0.75, 0.0], 3, logits=z[0]) == [2, 0]


def test_underflow_cannot_pick_tokens(logits):
    """A +60 leader at T = 0.5 and top-k 5. A float32 softmax leaves every
    other probability at exactly 0, and ranking those zeros by id would keep ids 0, 1, 2, 3;
    ranking by logit keeps the five largest logits, as transformers and the per-row rule do."""
    row = logits[3:4]
    probs32 = SB.softmax_with_temperature_batched(row, 0.5)
    assert (probs32[0] > 0).sum() == 1                               # everything but the leader is 0
    assert ids(SB.top_k_mask(probs32, 5)[0]) == {0, 1, 2, 3, LEADER_ID}   # what ranking by probability does
    five_largest = set(torch.topk(row[0], 5).indices.tolist())
    rule = S.SamplingRule(temperature=0.5, top_k=5)
    assert ids(SB.apply_batched(rule, row)[0][0]) == five_largest
    assert set(rule.apply(row[0]).kept) == five_largest
    assert ids(hf_kept([TemperatureLogitsWarper(0.5), TopKLogitsWarper(5)], row)[0]) == five_largest


# ------------------------------------------------------------------ the big batch

def test_temperature_equals_transformers(logits):
    for t in (0.5, 0.7, 1.0, 1.8):
        theirs = torch.softmax(TemperatureLogitsWarper(t)(None, logits.double()), dim=-1)
        torch.testing.assert_close(SB.softmax64_batched(logits, t), theirs, rtol=1e-9, atol=1e-300)


def tie_structure(ours: torch.Tensor, theirs: torch.Tensor, logits: torch.Tensor):
    """Where the kept sets differ, per row: ``(only_ours, only_theirs, boundary)`` masks and
    each row's lowest logit that we keep (the boundary value of our ranking)."""
    boundary = torch.where(ours, logits, torch.tensor(math.inf)).min(dim=-1, keepdim=True).values
    return ours & ~theirs, theirs & ~ours, boundary


def largest_id(mask):
    return torch.where(mask, torch.arange(mask.shape[-1]), -1).max(dim=-1).values


def smallest_id(mask):
    return torch.where(mask, torch.arange(mask.shape[-1]), mask.shape[-1]).min(dim=-1).values


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 5, 50, 2000, 60_000])
def test_top_k_equals_transformers_except_ties(logits, k):
    t = 0.7
    theirs = hf_kept([TemperatureLogitsWarper(t), TopKLogitsWarper(k)], logits)
    ours, _ = SB.apply_batched(S.SamplingRule(temperature=t, top_k=k), logits)
    # transformers' rule is the strict cut, exactly
    assert torch.equal(SB.top_k_strict_cut_mask(logits / t, k) & ~torch.isneginf(logits), theirs)
    finite = (~torch.isneginf(logits)).sum(dim=-1)
    assert torch.equal(ours.sum(dim=-1), finite.clamp(max=k))           # exactly k, never a −inf logit
    assert torch.equal(ours[UNTIED_ROWS], theirs[UNTIED_ROWS])
    # difference 1, and only it: transformers adds ids tied with our k-th logit, larger ids
    only_ours, only_theirs, kth = tie_structure(ours, theirs, logits)
    assert not only_ours.any()
    assert (logits[only_theirs] == kth.expand_as(logits)[only_theirs]).all()
    has_extra = only_theirs.any(dim=-1)
    tied_kept = ours & (logits == kth)
    assert (largest_id(tied_kept)[has_extra] < smallest_id(only_theirs)[has_extra]).all()
    assert has_extra[TIED_ROWS].any() or k >= V                        # the difference does occur


@pytest.mark.slow
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9, 0.95])
def test_top_p_equals_transformers_except_tie_order(logits, p):
    t = 0.7
    theirs = hf_kept([TemperatureLogitsWarper(t), TopPLogitsWarper(p)], logits)
    ours, _ = SB.apply_batched(S.SamplingRule(temperature=t, top_p=p), logits)
    assert torch.equal(ours[UNTIED_ROWS], theirs[UNTIED_ROWS])
    # difference 2, and only it: the same count, differing inside the tie at our last logit,
    # where we keep the smaller ids
    assert torch.equal(ours.sum(dim=-1), theirs.sum(dim=-1))
    only_ours, only_theirs, last = tie_structure(ours, theirs, logits)
    differ = only_ours | only_theirs
    assert (logits[differ] == last.expand_as(logits)[differ]).all()
    rows = only_ours.any(dim=-1)
    assert (largest_id(only_ours)[rows] < smallest_id(only_theirs)[rows]).all()
    assert rows.any()                                                   # the difference does occur


@pytest.mark.slow
@pytest.mark.parametrize("m", [0.0, 0.05, 0.3, 1.0])
def test_min_p_equals_transformers(logits, m):
    t = 0.7
    theirs = hf_kept([TemperatureLogitsWarper(t), MinPLogitsWarper(m)], logits)
    ours, _ = SB.apply_batched(S.SamplingRule(temperature=t, min_p=m), logits)
    assert torch.equal(ours, theirs)


@pytest.mark.slow
def test_whole_pipeline_equals_transformers_on_untied_rows(logits):
    """temperature → top-k → top-p → min-p, each reading what the last one left."""
    rows = logits[UNTIED_ROWS]
    for t, k, p, m in [(0.5, 5, 0.9, 0.05), (0.8, 2000, 0.95, 0.01), (1.3, 50, 0.7, 0.1)]:
        theirs = hf_kept([TemperatureLogitsWarper(t), TopKLogitsWarper(k), TopPLogitsWarper(p),
                          MinPLogitsWarper(m)], rows)
        ours, _ = SB.apply_batched(S.SamplingRule(temperature=t, top_k=k, top_p=p, min_p=m), rows)
        assert torch.equal(ours, theirs), (t, k, p, m)


# ------------------------------------------------------------------ batched = per-row, every row

RULES = [S.SamplingRule(temperature=0.5, top_k=5), S.SamplingRule(temperature=0.7, top_k=50, top_p=0.9, min_p=0.05),
         S.SamplingRule(temperature=1.0, top_p=0.95), S.SamplingRule(greedy=True)]
SOME_ROWS = [0, 1, 2, 3, 5, 7, 11]        # tied, −inf, three finite, +60, +1000, flat, +60


@pytest.fixture(scope="module")
def per_row_steps(logits):
    """(rule, row) -> ``rule.apply(logits[row])`` as (kept ids, final [V] float64), each computed
    once and shared by the tests below (the quick test's rows are among the every-row test's)."""
    steps = {}

    def step(rule, b):
        if (rule, b) not in steps:
            done = rule.apply(logits[b])
            steps[rule, b] = done.kept, torch.tensor(done.final, dtype=torch.float64)
        return steps[rule, b]
    return step


def check_batched_equals_per_row(logits, rule, rows, step):
    mask, final = SB.apply_batched(rule, logits[rows])
    finals = torch.empty(len(rows), V, dtype=torch.float64)
    for n, b in enumerate(rows):
        kept, finals[n] = step(rule, b)                   # its ids; its final row into [n]
        expected = numpy.zeros(V, dtype=bool)
        expected[numpy.array(kept, dtype=numpy.int64)] = True     # kept ids are 0..V-1, each once
        expected = torch.from_numpy(expected)             # (set by numpy: ~25x quicker than torch)
        assert len(set(kept)) == len(kept) and min(kept) >= 0, (rule, b)
        assert torch.equal(expected, mask[n]), (rule, b)
        assert not torch.isneginf(logits[b, kept]).any()
    torch.testing.assert_close(final, finals, rtol=1e-12, atol=1e-300)   # every row at once


@pytest.mark.parametrize("rule", RULES, ids=str)
def test_batched_rules_keep_the_per_row_ids(logits, rule, per_row_steps):
    check_batched_equals_per_row(logits, rule, SOME_ROWS, per_row_steps)


@pytest.mark.slow
def test_batched_rules_keep_the_per_row_ids_on_every_row(logits, per_row_steps):
    """The rule T = 0.5, top-k 5 on all 64 rows, leaders of +60 and +1000 included."""
    check_batched_equals_per_row(logits, RULES[0], list(range(B)), per_row_steps)
