"""Every method a batched rule can choose (``course_lib.decoding.methods``) keeps the same ids —
the per-row rules' — so which one the rule picks changes the time a call takes, never its
result. Each method is forced in turn on batches with ties, −inf logits, underflow, float64,
bfloat16, [1, V] and [64, V]; the sample-bar method's fall-backs and the pipeline's per-row redo
are forced too; the rule that picks a method is checked (the same pick on every call)."""
import math

import numpy
import pytest
import torch

from course_lib import decoding as D
from course_lib.decoding import candidates, methods, select, threshold
from course_lib.decoding.rules import MIN_P, TOP_K, TOP_P, keep_mask

from _exact import assert_close

V = 50_257
METHODS = {"top_k": ("partition", "topk", "threshold", "rows"), "top_k_ids": ("partition", "topk", "threshold", "rows"),
           "top_p": ("partition", "partition2", "threshold"), "min_p": ("numpy", "torch")}


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


@pytest.fixture(scope="module")
def batch():
    return hard_logits()


def each_method(work: str, call, rows: int = 64):
    """{method: call()} with ``work`` forced to each of its methods ("partition2", two threads'
    partitions, with torch on two threads and at least 8 rows; "rows", one row at a time, from
    two rows)."""
    results, threads = {}, torch.get_num_threads()
    for name in METHODS[work]:
        if (name == "partition2" and rows < 8) or (name == "rows" and rows < 2):
            continue
        torch.set_num_threads(2 if name == "partition2" else threads)
        try:
            with methods.forced(work, name):
                results[name] = call()
        finally:
            torch.set_num_threads(threads)
    return results


def assert_all_equal(results: dict, what):
    first, *others = results
    for name in others:
        assert torch.equal(results[first], results[name]), (what, first, name)


def as_mask(ids, size=V):
    mask = numpy.zeros(size, dtype=bool)
    mask[numpy.array(list(ids), dtype=numpy.int64)] = True     # numpy: ~25x quicker than torch
    return torch.from_numpy(mask)                               # indexed by a list of ids


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_every_top_k_method_keeps_the_same_ids(batch, dtype):
    z = batch.to(dtype)
    for k in ((1, 50, 1000) if dtype == torch.float32 else (50,)):
        masks = each_method("top_k", lambda: keep_mask(TOP_K, None, k, z))
        assert_all_equal(masks, (k, dtype))
        ids = each_method("top_k_ids", lambda: select.top_k_candidates(z, k))
        assert_all_equal(ids, (k, dtype))
        mask = next(iter(masks.values()))
        finite = (~torch.isneginf(z)).sum(dim=-1)
        assert mask.sum(dim=-1).tolist() == torch.clamp(finite, max=k).tolist()
        kept = torch.zeros_like(mask).scatter_(1, next(iter(ids.values())), True)
        assert torch.equal(kept & ~torch.isneginf(z), mask)          # the ids = the mask, −inf aside
        if k == 50:                          # per row (a Python sort of 50,257 floats each): a few rows
            for b in ((0, 1, 5, 7) if dtype == torch.float32 else (0, 5)):   # tied, −inf, 40 finite, underflow
                row = z[b].double().tolist()
                probs = D.softmax_with_temperature(row, 1.0)
                assert torch.equal(mask[b], as_mask(D.top_k_ids(probs, k, logits=row))), (k, b, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_every_top_p_and_min_p_method_keeps_the_same_ids(batch, dtype):
    z = batch.to(dtype)
    probs = D.softmax_with_temperature_batched(z, 0.8)
    rows = [0, 1, 3, 7] if dtype == torch.float32 else [0, 3]
    lists = [(probs[b].tolist(), z[b].tolist()) for b in rows]
    for p in ((0.3, 0.9, 0.99, 1.0) if dtype == torch.float32 else (0.9,)):
        masks = each_method("top_p", lambda: keep_mask(TOP_P, probs, p, z))
        assert_all_equal(masks, (p, dtype))
        mask = next(iter(masks.values()))
        for b, (q, row) in zip(rows, lists):
            assert torch.equal(mask[b], as_mask(D.top_p_ids(q, p, logits=row))), (p, b, dtype)
    for m in (0.0, 0.05, 1.0):
        masks = each_method("min_p", lambda: keep_mask(MIN_P, probs, m, z))
        assert_all_equal(masks, (m, dtype))
        mask = next(iter(masks.values()))
        for b, (q, row) in zip(rows, lists):
            assert torch.equal(mask[b], as_mask(D.min_p_ids(q, m, logits=row))), (m, b, dtype)


def test_one_row_takes_every_method_too(batch):
    """[1, V]: the shape of one generation step."""
    for b in (0, 3):
        z = batch[b:b + 1]
        probs = D.softmax_with_temperature_batched(z, 1.0)
        q, row = probs[0].tolist(), z[0].tolist()
        for work, call, per_row in (("top_k", lambda: keep_mask(TOP_K, None, 50, z), D.top_k_ids(q, 50, logits=row)),
                                    ("top_p", lambda: keep_mask(TOP_P, probs, 0.9, z), D.top_p_ids(q, 0.9, logits=row)),
                                    ("min_p", lambda: keep_mask(MIN_P, probs, 0.05, z), D.min_p_ids(q, 0.05, logits=row))):
            for name, mask in each_method(work, call, rows=1).items():
                assert torch.equal(mask[0], as_mask(per_row)), (work, name, b)


def test_the_one_row_sample_bar_keeps_the_batch_paths_ids(batch, monkeypatch):
    """A batch of one row takes the sample bar's own short path (``threshold.one_row_kth``,
    ``threshold.top_p_one_row``): each row of the hard batch alone, forced to "threshold", keeps
    the ids the [64, V] batch keeps for it (proven equal to the per-row rules above) — on the
    short path where it serves, through the fall-back where it does not (ties at the k-th value,
    a bar set too high)."""
    probs = D.softmax_with_temperature_batched(batch, 1.0)
    expected_k = {k: keep_mask(TOP_K, None, k, batch) for k in (1, 50, 1000)}
    expected_ids = {k: select.top_k_candidates(batch, k) for k in (1, 50, 1000)}
    expected_p = {p: keep_mask(TOP_P, probs, p, batch) for p in (0.3, 0.9, 0.99, 1.0)}
    short = {"top_k": 0, "top_p": 0}
    for b in range(0, len(batch), 3):
        z, q = batch[b:b + 1], probs[b:b + 1]
        for k, mask in expected_k.items():
            short["top_k"] += threshold.one_row_kth(z[0].numpy(), k) is not None
            with methods.forced("top_k", "threshold"):
                assert torch.equal(keep_mask(TOP_K, None, k, z)[0], mask[b]), (b, k)
            with methods.forced("top_k_ids", "threshold"):
                assert torch.equal(select.top_k_candidates(z, k)[0], expected_ids[k][b]), (b, k)
        for p, mask in expected_p.items():
            short["top_p"] += threshold.top_p_one_row(q[0].numpy(), p) is not None
            with methods.forced("top_p", "threshold"):
                assert torch.equal(keep_mask(TOP_P, q, p, z)[0], mask[b]), (b, p)
    assert short["top_k"] > 0 and short["top_p"] > 0              # the short paths did serve
    assert threshold.one_row_kth(batch[0].numpy(), 50) is None       # rounded to 0.1: tied at the k-th
    monkeypatch.setattr(threshold, "_sample_rank", lambda k: 1)      # the sample's largest: too high
    assert threshold.one_row_kth(batch[2].numpy(), 50) is None
    with methods.forced("top_k", "threshold"):
        assert torch.equal(keep_mask(TOP_K, None, 50, batch[2:3])[0], expected_k[50][2])


def test_the_sample_bar_falls_back_where_it_does_not_serve(batch, monkeypatch):
    """A bar set too high (top-k: fewer than k values above it; top-p: too little mass above it,
    or a nucleus that looks wide) is redone exactly: forced on every row, same ids."""
    probs = D.softmax_with_temperature_batched(batch, 1.0)
    expected_k = {k: keep_mask(TOP_K, None, k, batch) for k in (1, 50)}
    expected_p = {p: keep_mask(TOP_P, probs, p, batch) for p in (0.5, 0.9)}
    monkeypatch.setattr(threshold, "_sample_rank", lambda k: 1)      # the sample's largest: too high
    with methods.forced("top_k", "threshold"):
        for k, mask in expected_k.items():
            assert torch.equal(keep_mask(TOP_K, None, k, batch), mask), k
    a = probs.numpy()
    settled = threshold.top_p_collect(a, 0.5)[3]
    assert 0 < settled.sum() < len(a)                  # at p = 0.5 both kinds of row occur (0.9: all wide)
    with methods.forced("top_p", "threshold"):
        for p, mask in expected_p.items():
            assert torch.equal(keep_mask(TOP_P, probs, p, batch), mask), p
    monkeypatch.setattr(threshold, "TOP_P_SAMPLE", 2)                  # every nucleus looks wide
    with methods.forced("top_p", "threshold"):
        for p, mask in expected_p.items():
            assert not threshold.top_p_collect(a, p)[3].any()
            assert torch.equal(keep_mask(TOP_P, probs, p, batch), mask), p


RULES = [D.SamplingRule(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05),
         D.SamplingRule(temperature=1.3, top_k=1000, top_p=0.5),
         D.SamplingRule(temperature=0.5, top_k=40, min_p=0.2),
         D.SamplingRule(temperature=1e-39, top_k=20, top_p=0.9)]


@pytest.mark.parametrize("rule", RULES, ids=str)
def test_the_pipeline_on_candidates_equals_its_per_row_redo_and_the_per_row_rule(batch, rule, monkeypatch):
    z = batch[:16]
    mask, final = D.apply_batched(rule, z)
    drawn = D.sample_batched(rule, z, torch.Generator().manual_seed(0))
    monkeypatch.setattr(candidates, "EXACT_ONLY", True)               # every row: the per-row arithmetic
    redo_mask, redo_final = D.apply_batched(rule, z)
    assert torch.equal(mask, redo_mask)
    assert torch.equal(final, redo_final)                            # one formula for the final, either way
    assert torch.equal(D.sample_batched(rule, z, torch.Generator().manual_seed(0)), drawn)
    for b in ((0, 1, 5, 7) if rule is RULES[0] else (0,)):
        step = rule.apply(z[b])
        assert torch.equal(mask[b], as_mask(step.kept)), (rule, b)
        assert_close(final[b], step.final, rel=1e-12, abs=1e-300, what=f"{rule} row {b}")
        assert mask[b, drawn[b]]


def test_a_running_sum_at_p_sends_its_row_to_the_per_row_arithmetic(monkeypatch):
    """p set to a row's running sum itself, and one float64 step either side: those rows are
    within the margin, redone, and keep the per-row rule's ids."""
    z = hard_logits(rows=4, seed=3)
    rule0 = D.SamplingRule(temperature=0.8, top_k=50)
    redone = []
    real = candidates.filter_top_k_first

    def spy(stages, z, allowed, t, redo_rows):
        return real(stages, z, allowed, t, lambda rows: redone.append(rows.tolist()) or redo_rows(rows))
    monkeypatch.setattr("course_lib.decoding.pipeline.filter_top_k_first", spy)
    step = rule0.apply(z[2])
    sums, total = [], 0.0
    for i in step.kept:                                   # ranked order, as top-p walks it
        total += step.final[i]
        sums.append(total)
    for p in (sums[3], math.nextafter(sums[3], 0), math.nextafter(sums[10], 2)):
        rule = D.SamplingRule(temperature=0.8, top_k=50, top_p=p)
        redone.clear()
        mask, _ = D.apply_batched(rule, z)
        assert [2] in redone, p
        assert torch.equal(mask[2], as_mask(rule.apply(z[2]).kept)), p


def test_the_rule_picks_the_same_method_every_time():
    """The choice is a rule of the work, the rows and the threads: no timing, so no run can pick
    differently from another. Where the preferred method does not apply, the rule falls back."""
    every = set(METHODS["top_k"]) | {"partition2"}
    assert methods.rule("top_k", 1, 1, every) == "threshold" and methods.rule("top_k", 64, 1, every) == "rows"
    assert methods.rule("top_k_ids", 1, 2, every) == "threshold" and methods.rule("top_k_ids", 64, 2, every) == "rows"
    assert methods.rule("top_p", 64, 1, every) == "partition" and methods.rule("top_p", 1, 2, every) == "partition"
    assert methods.rule("top_p", 64, 2, every) == "partition2" and methods.rule("top_p", 7, 2, every) == "partition"
    assert methods.rule("min_p", 64, 1, {"numpy", "torch"}) == "numpy"
    assert methods.rule("min_p", 64, 1, {"torch"}) == "torch"                  # bfloat16: numpy cannot read it
    assert methods.rule("top_k", 64, 1, {"partition", "topk"}) == "partition"  # a row too short for a sample
    assert methods.rule("top_p", 64, 2, {"partition"}) == "partition"
    threads = torch.get_num_threads()
    try:
        for t in (1, 2):
            torch.set_num_threads(t)
            for z in (torch.randn(64, 2000), torch.randn(1, 2000)):
                for _ in range(3):                                        # the same pick each call
                    keep_mask(TOP_K, None, 50, z)
                    keep_mask(TOP_P, torch.softmax(z, dim=-1), 0.9, z)
                picked = methods.chosen()
                one = len(z) == 1
                assert picked["top_k", one, t] == methods.rule("top_k", len(z), t, every)
                assert picked["top_p", one, t] == methods.rule("top_p", len(z), t, every)
    finally:
        torch.set_num_threads(threads)
    calls = []
    assert methods.run("top_p", 64, {"partition": lambda: calls.append("partition") or 1,
                                     "threshold": lambda: calls.append("threshold") or 2}) == 1
    assert calls == ["partition"]                                     # the picked method alone runs
    with pytest.raises(ValueError, match="does not apply"), methods.forced("top_k", "threshold"):
        keep_mask(TOP_K, None, 2, torch.randn(2, 100))                # a row too short for a sample
