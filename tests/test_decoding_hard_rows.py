"""The batched rules (``course_lib.decoding.batched`` behind each rule's ``mask``) on hard rows of
GPT-2's width: ties at every cut, −inf logits, leaders that make the others underflow, rows with
fewer finite logits than k, a nucleus wider than the first partition, p set to a running sum
itself. Each keeps the per-row rules' ids — in float32, float64 and bfloat16, on a [64, V] batch
and on a row alone — and a row alone gets what it gets inside the batch, bit for bit."""
import math

import numpy
import pytest
import torch

from course_lib import decoding as D
from course_lib.decoding import batched
from course_lib.decoding.rules import MIN_P, TOP_K, TOP_P, keep_mask

from _exact import assert_close
from _threads import one_thread

V = 50_257


def hard_logits(rows: int = 64, seed: int = 26) -> torch.Tensor:
    """[rows, V] float32: even rows rounded to 0.1 (ties at every cut), rows 1::8 with 1,000 −inf
    logits, rows 3::8 with a +25 leader, rows 7::16 with a +150 leader (the rest underflows to 0),
    rows 5::16 with only 40 finite logits (top-k 50 reaches −inf)."""
    z = torch.randn(rows, V, generator=torch.Generator().manual_seed(seed)) * 3
    z[::2] = torch.round(z[::2] * 10) / 10
    z[1::8, :1000] = -math.inf
    z[3::8, 7] = 25.0
    z[7::16, 11] = 150.0
    z[5::16, 40:] = -math.inf
    return z


@pytest.fixture(scope="module", autouse=True)
def torch_on_one_thread():
    """This module's rows on one torch thread; the tests after it keep their threads."""
    with one_thread():
        yield


@pytest.fixture(scope="module")
def batch():
    return hard_logits()


def as_mask(ids, size=V):
    mask = numpy.zeros(size, dtype=bool)
    mask[numpy.array(list(ids), dtype=numpy.int64)] = True     # numpy: ~25x quicker than torch
    return torch.from_numpy(mask)                               # indexed by a list of ids


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_top_k_keeps_the_per_row_ids(batch, dtype):
    """Exactly min(k, finite logits) ids per row, the per-row rule's; a tie at the k-th value
    goes to the smaller ids (the rounded rows have one at every k)."""
    z = batch.to(dtype)
    for k in ((1, 50, 1000) if dtype == torch.float32 else (50,)):
        mask = keep_mask(TOP_K, None, k, z)
        finite = (~torch.isneginf(z)).sum(dim=-1)
        assert mask.sum(dim=-1).tolist() == torch.clamp(finite, max=k).tolist()
        values = torch.sort(z.float(), dim=-1, descending=True).values
        assert (values[:, k - 1] == values[:, k]).any() or k == 1         # the tie path does run
        for b in ((0, 1, 5, 7) if dtype == torch.float32 else (0, 5)):   # tied, −inf, 40 finite, underflow
            row = z[b].double().tolist()
            probs = D.softmax_with_temperature(row, 1.0)
            assert torch.equal(mask[b], as_mask(D.top_k_ids(probs, k, logits=row))), (k, b, dtype)


def test_the_tie_path_keeps_the_smallest_tied_ids(batch):
    """``first_n``: everything above the n-th value, then the smallest ids equal to it; and
    ``first_k`` gives tied rows to it (its answer on them), untied rows their k largest."""
    z = batch[:8]
    for k in (1, 50, 1000):
        n = torch.full((len(z), 1), k)
        exact = batched.first_n(z, n)
        assert torch.equal(batched.first_k(z, k), exact), k
        for b in (0, 2):                                         # rounded rows: ties at the k-th
            kth = torch.sort(z[b], descending=True).values[k - 1]
            tied_ids = torch.nonzero(z[b] == kth).flatten()
            kept_tied = torch.nonzero(exact[b] & (z[b] == kth)).flatten()
            assert torch.equal(kept_tied, tied_ids[:len(kept_tied)]), (k, b)   # the smallest ids
    n = torch.tensor([[1], [7], [V], [4000], [2], [50], [1], [30_000]])   # a different n per row
    mask = batched.first_n(z, n)
    for b in range(len(z)):
        order = D.ranked_ids(z[b].tolist())
        assert torch.equal(mask[b], as_mask(order[:int(n[b])])), b


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_top_p_and_min_p_keep_the_per_row_ids(batch, dtype):
    z = batch.to(dtype)
    probs = D.softmax_with_temperature_batched(z, 0.8)
    rows = [0, 1, 3, 7] if dtype == torch.float32 else [0, 3]
    lists = [(probs[b].tolist(), z[b].tolist()) for b in rows]
    for p in ((0.3, 0.9, 0.99, 1.0) if dtype == torch.float32 else (0.9,)):
        mask = keep_mask(TOP_P, probs, p, z)
        for b, (q, row) in zip(rows, lists):
            assert torch.equal(mask[b], as_mask(D.top_p_ids(q, p, logits=row))), (p, b, dtype)
    for m in (0.0, 0.05, 1.0):
        mask = keep_mask(MIN_P, probs, m, z)
        for b, (q, row) in zip(rows, lists):
            assert torch.equal(mask[b], as_mask(D.min_p_ids(q, m, logits=row))), (m, b, dtype)


def test_min_p_compares_in_float64_as_the_per_row_rule():
    """A float32 probability just below, at and just above the float64 bar m × max: the bar
    itself is no float32, so the comparison must not round it to one."""
    top = 0.5
    m = 0.06
    bar = m * top                                               # 0.03, not a float32
    below = float(numpy.nextafter(numpy.float32(bar), numpy.float32(0)))
    above = float(numpy.nextafter(numpy.float32(bar), numpy.float32(1)))
    nearest = float(numpy.float32(bar))                         # rounded down: below the bar
    assert below < nearest < bar < above
    rest = 1 - top - below - nearest - above
    q = torch.tensor([[top, below, nearest, above, rest]], dtype=torch.float32)
    assert D.min_p_ids(q[0].tolist(), m) == [0, 4, 3]
    assert torch.nonzero(D.min_p_mask(q, m)[0]).flatten().tolist() == [0, 3, 4]
    assert torch.nonzero(D.min_p_mask(q.double(), m)[0]).flatten().tolist() == [0, 3, 4]


def test_a_nucleus_wider_than_the_first_partition_is_sorted_whole(batch, monkeypatch):
    """top-p sorts each row's 4,096 largest probabilities first; a row whose sum through them
    stays below p is sorted whole. With only 64 values looked at first, every row here takes
    the whole sort — and keeps the same ids."""
    probs = D.softmax_with_temperature_batched(batch[:16], 1.0)
    expected = {p: keep_mask(TOP_P, probs, p, batch[:16]) for p in (0.5, 0.9)}
    assert (expected[0.9].sum(dim=-1) > 64).sum() >= 8          # most nuclei are wider than 64
    monkeypatch.setattr(batched, "NUCLEUS_WIDTH", 64)
    for p, mask in expected.items():
        assert torch.equal(keep_mask(TOP_P, probs, p, batch[:16]), mask), p
    flat = torch.zeros(2, V)                                    # every id tied: n = 0.9 V, and a tie
    flat[1, 5] = 1.0
    q = torch.softmax(flat, dim=-1)
    for b in range(2):
        assert torch.equal(D.top_p_mask(q, 0.9)[b], as_mask(D.top_p_ids(q[b].tolist(), 0.9))), b


RULES = [D.SamplingRule(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05),
         D.SamplingRule(temperature=1.3, top_k=1000, top_p=0.5),
         D.SamplingRule(temperature=0.5, top_k=40, min_p=0.2),
         D.SamplingRule(temperature=0.7, top_k=50, top_p=1.0, min_p=0.0),
         D.SamplingRule(temperature=1.0, top_k=60),
         D.SamplingRule(temperature=1e-39, top_k=20, top_p=0.9)]


@pytest.mark.parametrize("rule", RULES[:3] + RULES[-1:], ids=str)
def test_the_pipeline_keeps_the_per_row_ids(batch, rule):
    """``apply_batched`` (the later stages on the top-k candidates) against ``rule.apply``."""
    z = batch[:16]
    mask, final = D.apply_batched(rule, z)
    drawn = D.sample_batched(rule, z, torch.Generator().manual_seed(0))
    for b in ((0, 1, 5, 7) if rule is RULES[0] else (0,)):
        step = rule.apply(z[b])
        assert torch.equal(mask[b], as_mask(step.kept)), (rule, b)
        assert_close(final[b], step.final, rel=1e-12, abs=1e-300, what=f"{rule} row {b}")
    assert mask.gather(1, drawn[:, None]).all()


@pytest.fixture(scope="module")
def rows():
    """[22, V]: the hard batch's first 16 rows, then random rows at three scales."""
    g = torch.Generator().manual_seed(11)
    extra = torch.cat([torch.randn(2, V, generator=g) * s for s in (1.0, 3.0, 8.0)])
    return torch.cat([hard_logits(rows=16), extra])


CASES = [(rule, torch.float32) for rule in RULES] + [(RULES[0], torch.float64), (RULES[-1], torch.float64)]


@pytest.mark.parametrize("rule, dtype", CASES, ids=str)
def test_a_row_alone_gets_what_it_gets_in_the_batch(rows, rule, dtype):
    """One generation step is a batch of one row: the same ids, the same final probabilities
    (every bit), and the draw lands in the kept set."""
    z = rows.to(dtype)
    batch_mask, batch_final = D.apply_batched(rule, z)
    for b in range(len(z)):
        mask, final = D.apply_batched(rule, z[b:b + 1])
        assert torch.equal(mask[0], batch_mask[b]), (b, str(rule))
        assert torch.equal(final[0], batch_final[b]), (b, str(rule))
        drawn = D.sample_batched(rule, z[b:b + 1], torch.Generator().manual_seed(b))
        assert mask[0, drawn[0]]
    for b in ((0, 5, 17) if rule is RULES[0] else ()):          # a tie at the k-th, 40 finite, random
        assert torch.equal(batch_mask[b], as_mask(rule.apply(z[b]).kept)), (b, str(rule))


def test_one_rule_on_a_row_alone_equals_the_batch(batch):
    probs = D.softmax_with_temperature_batched(batch, 1.0)
    expected = {(rule, value): keep_mask(rule, probs, value, batch)
                for rule, values in ((TOP_K, (1, 50)), (TOP_P, (0.9, 1.0)), (MIN_P, (0.05,))) for value in values}
    for b in range(0, len(batch), 5):
        for (rule, value), mask in expected.items():
            assert torch.equal(keep_mask(rule, probs[b:b + 1], value, batch[b:b + 1])[0], mask[b]), (b, value)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_the_pipeline_is_the_float64_softmax_then_the_filters_bit_for_bit(batch, dtype):
    """``apply_batched(rule, z)`` = ``filter_batched(rule, softmax64_batched(z, τ), logits=z)``,
    every bit: the softmax over the whole row (divided by the sum of all V exponentials, added
    left to right) even where only the top-k candidates are filtered further. And
    ``filter_batched`` = the per-row ``SamplingRule.filter`` on the same probabilities, every bit
    (their exponentials can differ from ``math.exp``'s in the last bit, nothing else)."""
    z = batch[:8].to(dtype)
    for rule in RULES:
        probs = D.softmax64_batched(z, rule.temperature)
        mask, final = D.apply_batched(rule, z)
        expected_mask, expected_final = D.filter_batched(rule, probs, logits=z)
        assert torch.equal(mask, expected_mask) and torch.equal(final, expected_final), str(rule)
        for b in ((0, 3) if rule is RULES[0] else (0,)):
            kept, row_final = rule.filter(probs[b].tolist(), logits=z[b].tolist())
            assert torch.equal(mask[b], as_mask(kept)) and final[b].tolist() == row_final, (str(rule), b)


@pytest.fixture(scope="module")
def knife_edges():
    """Logits [4, V], their float64 probabilities at τ 0.8, and (p, the ids the per-row rule keeps
    for top-k 50 then top-p p on row 2) for p at three of that rule's own running sums and one
    float64 step either side of each."""
    z = hard_logits(rows=4, seed=3)
    probs = D.softmax64_batched(z, 0.8)
    row, logits = probs[2].tolist(), z[2].tolist()
    kept, final = D.SamplingRule(temperature=0.8, top_k=50).filter(row, logits=logits)
    sums, total = [], 0.0
    for i in kept:                                        # ranked order, as top-p walks it
        total += final[i]
        sums.append(total)
    cases = []
    for j in (0, 3, 20):
        for p in (sums[j], math.nextafter(sums[j], 0), math.nextafter(sums[j], 2)):
            expected = D.SamplingRule(temperature=0.8, top_k=50, top_p=p).filter(row, logits=logits)[0]
            assert len(expected) == j + 1 + (p > sums[j])        # the knife's edge itself
            cases.append((p, expected))
    return z, probs, cases


@pytest.mark.parametrize("one_row", [False, True], ids=["batch", "one row"])
def test_p_at_a_running_sum_keeps_the_per_row_ids(knife_edges, one_row):
    """p set to a running sum of the per-row rule itself (after temperature and top-k), and one
    float64 step either side: the batched filters do the per-row rule's float64 arithmetic on
    the same probabilities, so they decide as it does even there."""
    z, probs, cases = knife_edges
    rows = slice(2, 3) if one_row else slice(None)
    for p, expected in cases:
        mask, _ = D.filter_batched(D.SamplingRule(temperature=0.8, top_k=50, top_p=p), probs[rows], logits=z[rows])
        assert torch.equal(mask[0 if one_row else 2], as_mask(expected)), p
