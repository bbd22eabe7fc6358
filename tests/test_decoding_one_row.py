"""A batch of one row — one generation step — takes short paths of its own: the
pipeline's stages on its k candidates in Python floats (``candidates._one_row``), top-k's ids
collected once (``threshold.one_row_ids``) and top-p's lowered bar (``threshold.top_p_one_row``).
Each must return what the batch code returns for the same row, bit for bit: the kept ids, the
final probabilities and the drawn id."""
import math

import numpy as np
import pytest
import torch

from course_lib import decoding as D
from course_lib.decoding import candidates, methods, select, threshold
from course_lib.decoding.rules import TOP_P, keep_mask

from _exact import assert_close
from test_decoding_methods import hard_logits

RULES = [D.SamplingRule(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05),
         D.SamplingRule(temperature=1.3, top_k=1000, top_p=0.5),
         D.SamplingRule(temperature=0.5, top_k=40, min_p=0.2),
         D.SamplingRule(temperature=0.7, top_k=50, top_p=1.0, min_p=0.0),
         D.SamplingRule(temperature=1.0, top_k=60),
         D.SamplingRule(temperature=1e-39, top_k=20, top_p=0.9)]


@pytest.fixture(scope="module")
def rows():
    """[22, V]: the hard batch's first 16 rows (ties, −inf, leaders, underflow, 40 finite
    logits), then random rows at three scales."""
    g = torch.Generator().manual_seed(11)
    extra = torch.cat([torch.randn(2, 50_257, generator=g) * s for s in (1.0, 3.0, 8.0)])
    return torch.cat([hard_logits(rows=16), extra])


def as_batch(monkeypatch, on: bool):
    monkeypatch.setattr(candidates, "ONE_ROW_AS_BATCH", on)


CASES = [(rule, torch.float32) for rule in RULES] + [(RULES[0], torch.float64), (RULES[-1], torch.float64)]


@pytest.mark.parametrize("rule, dtype", CASES, ids=str)
def test_the_one_row_stages_equal_the_batch_code_bit_for_bit(rows, rule, dtype, monkeypatch):
    z = rows.to(dtype)
    batch_mask, batch_final = D.apply_batched(rule, z)
    for b in range(len(z)):
        row = z[b:b + 1]
        as_batch(monkeypatch, False)
        mask, final = D.apply_batched(rule, row)
        drawn = D.sample_batched(rule, row, torch.Generator().manual_seed(b))
        as_batch(monkeypatch, True)
        mask_b, final_b = D.apply_batched(rule, row)
        assert torch.equal(mask, mask_b), (b, str(rule))
        assert torch.equal(final, final_b), (b, str(rule))             # every bit
        assert torch.equal(D.sample_batched(rule, row, torch.Generator().manual_seed(b)), drawn)
        assert torch.equal(mask[0], batch_mask[b]), (b, str(rule))     # and the row inside the batch
        assert torch.allclose(final[0], batch_final[b], rtol=1e-15, atol=0), (b, str(rule))
        assert mask[0, drawn[0]]


def test_the_one_row_stages_keep_the_per_row_rules_ids(rows, monkeypatch):
    """Against the readable per-row rule (``SamplingRule.apply``, slow) on a few rows: a tie at
    the k-th value, −inf logits, 40 finite logits, a random row."""
    as_batch(monkeypatch, False)
    for rule, b in ((RULES[0], 0), (RULES[0], 5), (RULES[1], 1), (RULES[2], 17)):
        mask, final = D.apply_batched(rule, rows[b:b + 1])
        step = rule.apply(rows[b])
        assert sorted(torch.nonzero(mask[0]).flatten().tolist()) == sorted(step.kept), (b, str(rule))
        assert_close(final[0], step.final, rel=1e-12, abs=1e-300)


def test_a_one_row_sum_at_p_goes_to_the_per_row_arithmetic(monkeypatch):
    """p set to a running sum of the row itself (and one float64 step either side): the one-row
    path sees the row within the margin, redoes it, and keeps the per-row rule's ids."""
    z = hard_logits(rows=4, seed=3)[2:3]
    step = D.SamplingRule(temperature=0.8, top_k=50).apply(z[0])
    sums, total = [], 0.0
    for i in step.kept:
        total += step.final[i]
        sums.append(total)
    redone = []
    real = candidates._one_row

    def spy(stages, zc, w, redo_rows):
        return real(stages, zc, w, lambda r: redone.append(r.tolist()) or redo_rows(r))
    monkeypatch.setattr(candidates, "_one_row", spy)
    for p in (sums[3], math.nextafter(sums[3], 0), math.nextafter(sums[10], 2)):
        rule = D.SamplingRule(temperature=0.8, top_k=50, top_p=p)
        redone.clear()
        mask, _ = D.apply_batched(rule, z)
        assert redone == [[0]], p
        assert sorted(torch.nonzero(mask[0]).flatten().tolist()) == sorted(rule.apply(z[0]).kept), p
    redone.clear()
    D.apply_batched(D.SamplingRule(temperature=0.8, top_k=50, top_p=0.9), z)
    assert redone == []                                                 # far from p: not redone


def test_one_row_ids_are_the_batch_codes_ids_or_none_at_a_tie(rows):
    for k in (1, 50, 1000):
        rows_, ids, keep = threshold.top_k_collect(rows.numpy(), k)
        expected = ids[keep].reshape(len(rows), k)
        served = 0
        for b in range(len(rows)):
            got = threshold.one_row_ids(rows[b].numpy(), k)
            if got is None:                                # only where the k-th value is tied
                values = np.sort(rows[b].numpy())[::-1]
                assert values[k - 1] == values[k], (b, k)
                continue
            served += 1
            assert got.dtype == np.int64 and np.array_equal(got, expected[b]), (b, k)
        assert served >= len(rows) // 2, k
    expected = threshold.top_k_collect(rows.numpy(), 50)
    with methods.forced("top_k_ids", "threshold"):                  # through the method's door
        for b in (1, 3, 16):
            assert np.array_equal(select.top_k_candidates(rows[b:b + 1], 50)[0].numpy(),
                                  expected[1][expected[2]].reshape(len(rows), 50)[b])


def test_top_p_one_row_lowers_a_bar_that_collects_too_little(monkeypatch):
    """Rows whose first bar (from the sample) collects less than p are served by a lower bar
    on the same row, not by the batch code; every answer equals the partition method's."""
    z = torch.randn(64, 50_257, generator=torch.Generator().manual_seed(1)) * 3
    probs = torch.softmax(z, dim=-1)
    a = probs.numpy()
    calls, real = [], np.compress

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    retried = 0
    for b in range(len(a)):
        calls.clear()
        monkeypatch.setattr(threshold.np, "compress", counting)
        found = threshold.top_p_one_row(a[b], 0.9)
        monkeypatch.setattr(threshold.np, "compress", real)
        assert found is not None, b
        retried += len(calls) > 1
        n, kth, tied = (column[0] for column in select.top_p_count(a[b:b + 1], 0.9))
        assert (found[0], found[1], bool(found[2])) == (n, kth, bool(tied)), b
    assert retried > 0                                      # the lowered bar did serve
    with methods.forced("top_p", "threshold"):
        for b in (0, 1):
            assert torch.equal(keep_mask(TOP_P, probs[b:b + 1], 0.9, z[b:b + 1])[0],
                               keep_mask(TOP_P, probs, 0.9, z)[b])
