"""The per-row sampling rules: exact boundaries, tie-breaks, and a ValueError for every bad input."""
import itertools
import math
import random

import pytest
import torch

from course_lib import decoding as S

# A row whose shape makes every boundary easy to see: probabilities 0.5, 0.25, 0.125, 0.125, 0
# are exact binary fractions, so running sums hit 0.5, 0.75, 0.875 and 1.0 with no rounding.
EXACT = [0.25, 0.5, 0.125, 0.0, 0.125]


def test_softmax_is_stable_and_matches_the_definition():
    z = [1.5, -0.5, 0.25, 3.0]
    for tau in (0.3, 1.0, 2.5):
        direct = [math.exp(v / tau) for v in z]
        want = [d / sum(direct) for d in direct]
        got = S.softmax_with_temperature(z, tau)
        assert got == pytest.approx(want, rel=1e-12)
    big = [1000.0, 999.0]                                # exp(1000) overflows float64
    assert S.softmax_with_temperature(big) == pytest.approx(S.softmax_with_temperature([1.0, 0.0]))
    assert all(math.isnan(v) for v in S.naive_softmax(big))


def test_neg_inf_logits_get_zero_probability():
    p = S.softmax_with_temperature([0.0, -math.inf, 0.0])
    assert p == [0.5, 0.0, 0.5]


def test_temperature_keeps_the_ranking_and_the_ratio_rule():
    z = [0.3, 2.0, -1.0, 1.1]
    for tau in (0.05, 0.5, 1.0, 4.0, 100.0):
        p = S.softmax_with_temperature(z, tau)
        assert S.ranked_ids(p) == [1, 3, 0, 2]
        assert p[1] / p[0] == pytest.approx(math.exp((z[1] - z[0]) / tau), rel=1e-9)
    cold = S.softmax_with_temperature([2.0, 2.0, 0.0], 1e-3)   # tied maximum shares the limit
    assert cold == pytest.approx([0.5, 0.5, 0.0], abs=1e-12)


def test_greedy_ties_break_to_the_smaller_id_like_torch_argmax():
    z = [0.1, 3.0, 3.0, -2.0]
    assert S.greedy_id(z) == 1 == int(torch.argmax(torch.tensor(z)))
    assert S.greedy_id([-math.inf, -1.0]) == 1


def test_ranked_ids_ties_by_id():
    assert S.ranked_ids([0.2, 0.3, 0.2, 0.3, 0.0]) == [1, 3, 0, 2, 4]


def test_renormalize_keeps_id_order_and_zeroes_the_rest():
    out = S.renormalize(EXACT, [4, 1])
    assert out == [0.0, 0.8, 0.0, 0.0, 0.2]
    assert S.renormalize([0.5, 0.5], [0, 1]) == [0.5, 0.5]


def test_top_k_exactly_k_with_ties_and_k_above_vocab():
    p = [0.1, 0.3, 0.3, 0.3]
    assert S.top_k_ids(p, 2) == [1, 2]
    assert S.top_k_ids(p, 1) == [S.greedy_id(p)]
    assert S.top_k_ids(p, 99) == [1, 2, 3, 0]


def test_strict_cut_keeps_ties_where_top_k_does_not():
    z = [0.5, 2.0, 2.0, 2.0, -1.0]
    assert S.top_k_strict_cut(z, 2) == [1, 2, 3]               # three survive "< 2nd value"
    assert S.top_k_ids(S.softmax_with_temperature(z), 2) == [1, 2]
    assert S.top_k_strict_cut([3.0, 1.0, 2.0], 2) == [0, 2]    # no ties: same as top-k
    assert S.top_k_strict_cut([3.0, 1.0], 10) == [0, 1]


def test_top_p_keeps_the_crossing_token_and_stops_on_equality():
    # ranked: 1 (0.5), 0 (0.25), 2 (0.125), 4 (0.125), 3 (0); sums 0.5, 0.75, 0.875, 1.0, 1.0
    assert S.top_p_ids(EXACT, 0.5) == [1]              # sum reaches exactly p: stop
    assert S.top_p_ids(EXACT, 0.5000001) == [1, 0]     # crossing token kept
    assert S.top_p_ids(EXACT, 0.75) == [1, 0]
    assert S.top_p_ids(EXACT, 0.8) == [1, 0, 2]
    assert S.top_p_ids(EXACT, 1.0) == [1, 0, 2, 4]     # the zero-probability id is not needed
    assert S.top_p_ids([0.96, 0.01, 0.01, 0.01, 0.01], 0.9) == [0]
    assert len(S.top_p_ids([0.2] * 5, 0.9)) == 5


def test_gpt2_legacy_rule_keeps_one_fewer_than_the_paper():
    assert S.gpt2_legacy_cutoff(EXACT, 0.8) == (2, 1)        # sums ≤ 0.8: 0.5, 0.75
    assert S.gpt2_legacy_top_p_ids(EXACT, 0.8) == [1, 0]
    assert S.top_p_ids(EXACT, 0.8) == [1, 0, 2]
    assert S.gpt2_legacy_cutoff(EXACT, 0.3) == (0, 0)        # nothing ≤ p: index clamps to 0
    assert S.gpt2_legacy_top_p_ids(EXACT, 0.3) == [1]
    assert S.gpt2_legacy_top_p_ids([0.4, 0.4, 0.2], 0.5) == [0, 1]   # ties at the threshold stay


def test_min_p_bar_follows_the_top_probability():
    assert S.min_p_ids(EXACT, 0.25) == [1, 0, 2, 4]          # bar 0.125: equality kept
    assert S.min_p_ids(EXACT, 0.26) == [1, 0]
    assert S.min_p_ids(EXACT, 0.0) == [1, 0, 2, 4, 3]
    assert S.min_p_ids([0.3, 0.3, 0.4], 1.0) == [2]
    confident = [0.9, 0.05, 0.05]
    flat = [0.4, 0.3, 0.3]
    assert len(S.min_p_ids(confident, 0.1)) == 1 and len(S.min_p_ids(flat, 0.1)) == 3


def test_interval_sampling_left_closed_and_zero_length_never_wins():
    p = [0.25, 0.0, 0.5, 0.25, 0.0]
    assert S.sample_interval(p, 0.0) == 0
    assert S.sample_interval(p, 0.2499999) == 0
    assert S.sample_interval(p, 0.25) == 2                   # boundary belongs to the right
    assert S.sample_interval(p, 0.75) == 3
    assert S.sample_interval(p, 0.9999999999) == 3           # never the trailing zero
    for u in [i / 1000 for i in range(1000)]:
        assert p[S.sample_interval(p, u)] > 0


def test_ranked_interval_walks_highest_first():
    p = [0.25, 0.0, 0.5, 0.25, 0.0]                          # ranked: 2, 0, 3, then the zeros
    assert [S.sample_interval_ranked(p, u) for u in (0.0, 0.49, 0.5, 0.74, 0.75, 0.999)] == [2, 2, 0, 0, 3, 3]
    assert S.sample_interval(p, 0.49) == 2 and S.sample_interval(p, 0.1) == 0


def test_last_boundary_is_forced_to_one():
    p = [0.1] * 10                   # added up left to right: 0.9999999999999999
    # the running sum interval_boundaries builds (Python 3.12's sum() of floats is compensated
    # and gives 1.0 here, so the premise is stated with plain additions)
    assert list(itertools.accumulate(p))[-1] < 1.0
    assert S.interval_boundaries(p)[-1] == 1.0
    assert S.sample_interval(p, 0.99999999999999994) == 9


def test_draw_counts_are_reproducible_and_follow_the_probabilities():
    p = [0.2, 0.5, 0.3]
    a = S.draw_counts(p, 20_000, seed=3)
    assert a == S.draw_counts(p, 20_000, seed=3) and sum(a) == 20_000
    assert a != S.draw_counts(p, 20_000, seed=4)
    rng = random.Random(3)                                   # the same rule, written out
    manual = [0, 0, 0]
    for _ in range(20_000):
        manual[S.sample_interval(p, rng.random())] += 1
    assert manual == a


def test_sample_seeded_uses_the_generator():
    p = [0.1, 0.6, 0.3]
    draws = [S.sample_seeded(p, torch.Generator().manual_seed(7)) for _ in range(3)]
    assert len(set(draws)) == 1
    gen = torch.Generator().manual_seed(0)
    assert S.sample_seeded([0.0, 1.0, 0.0], gen) == 1


def test_pipeline_order_temperature_then_filters():
    z = [2.0, 1.0, 0.0, -1.0]
    hot, cold = S.SamplingRule(temperature=2.0, top_p=0.8), S.SamplingRule(temperature=0.5, top_p=0.8)
    assert len(hot.apply(z).kept) > len(cold.apply(z).kept)    # temperature first changes top-p
    step = S.SamplingRule(top_k=3, top_p=0.9).apply(z)
    p = S.softmax_with_temperature(z)
    after_k = S.renormalize(p, S.top_k_ids(p, 3))
    assert step.kept == S.top_p_ids(after_k, 0.9)              # top-p reads the top-k result
    assert sum(step.final) == pytest.approx(1.0)
    assert all(step.final[i] == 0 for i in range(4) if i not in step.kept)
    greedy = S.SamplingRule(greedy=True, temperature=5.0).apply(z)
    assert greedy.kept == [0] and greedy.final == [1.0, 0.0, 0.0, 0.0]
    assert S.SamplingRule(min_p=0.37).apply(z).kept == [0]     # p1 / p0 = e^-1 ≈ 0.368
    assert S.SamplingRule(min_p=0.36).apply(z).kept == [0, 1]


BAD_INPUTS = [
    (lambda: S.softmax_with_temperature([1.0, 2.0], 0), "temperature"),
    (lambda: S.softmax_with_temperature([1.0, 2.0], -1.0), "temperature"),
    (lambda: S.softmax_with_temperature([1.0, 2.0], math.nan), "temperature"),
    (lambda: S.softmax_with_temperature([1.0, 2.0], math.inf), "temperature"),
    (lambda: S.SamplingRule(temperature=0.0), "temperature"),
    (lambda: S.top_p_ids(EXACT, 0.0), "top_p"),
    (lambda: S.top_p_ids(EXACT, 1.01), "top_p"),
    (lambda: S.top_p_ids(EXACT, math.nan), "top_p"),
    (lambda: S.gpt2_legacy_top_p_ids(EXACT, -0.1), "top_p"),
    (lambda: S.SamplingRule(top_p=1.5), "top_p"),
    (lambda: S.top_k_ids(EXACT, 0), "top_k"),
    (lambda: S.top_k_ids(EXACT, 2.0), "top_k"),
    (lambda: S.top_k_ids(EXACT, True), "top_k"),
    (lambda: S.top_k_strict_cut([1.0, 2.0], -3), "top_k"),
    (lambda: S.SamplingRule(top_k=1.5), "top_k"),
    (lambda: S.min_p_ids(EXACT, -0.01), "min_p"),
    (lambda: S.min_p_ids(EXACT, 1.5), "min_p"),
    (lambda: S.SamplingRule(min_p=math.nan), "min_p"),
    (lambda: S.softmax_with_temperature([]), "logits"),
    (lambda: S.greedy_id([]), "logits"),
    (lambda: S.softmax_with_temperature([1.0, math.nan]), "logits"),
    (lambda: S.softmax_with_temperature([-math.inf, -math.inf]), "logits"),
    (lambda: S.softmax_with_temperature([0.0, math.inf]), "logits"),
    (lambda: S.softmax_with_temperature(torch.zeros(2, 3)), "logits"),
    (lambda: S.sample_interval([0.5, 0.4], 0.3), "probs"),
    (lambda: S.sample_interval([0.5, 0.6], 0.3), "probs"),
    (lambda: S.sample_interval([1.5, -0.5], 0.3), "probs"),
    (lambda: S.sample_interval([0.5, math.nan], 0.3), "probs"),
    (lambda: S.sample_interval([], 0.3), "probs"),
    (lambda: S.sample_interval([0.5, 0.5], 1.0), "u"),
    (lambda: S.sample_interval([0.5, 0.5], -0.1), "u"),
    (lambda: S.renormalize([0.5, 0.5], []), "kept"),
    (lambda: S.renormalize([1.0, 0.0], [1]), "kept"),
    (lambda: S.draw_counts([1.0], 0, seed=1), "n"),
]


@pytest.mark.parametrize("call, name", BAD_INPUTS)
def test_bad_input_raises_a_value_error_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        call()


def test_k_above_vocabulary_and_p_one_are_valid():
    assert S.top_k_ids(EXACT, 10**6) == S.ranked_ids(EXACT)
    assert S.SamplingRule(top_k=100, top_p=1.0, min_p=0.0).apply([0.0, 1.0]).kept == [1, 0]


def test_entropy_is_zero_for_certainty_and_ln_v_for_uniform():
    assert S.entropy([0.0, 1.0, 0.0]) == 0.0
    assert abs(S.entropy([0.25] * 4) - math.log(4)) < 1e-12
    assert S.entropy([0.9, 0.1]) < S.entropy([0.6, 0.4])


# --- one object per rule ---------------------------------------------------------------------

def test_the_filters_run_in_one_order_written_once():
    from course_lib.decoding import rules
    assert [rule.field for rule in rules.FILTERS] == ["top_k", "top_p", "min_p"]
    assert S.SamplingRule(top_k=3, top_p=0.9, min_p=0.1).stages() == [
        (rules.TOP_K, 3), (rules.TOP_P, 0.9), (rules.MIN_P, 0.1)]
    assert S.SamplingRule(greedy=True, top_p=0.5).stages() == [(rules.TOP_K, 1)]


def test_each_rule_object_keeps_the_same_ids_per_row_and_batched():
    import torch
    from course_lib.decoding import rules
    logits = torch.randn(6, 300, generator=torch.Generator().manual_seed(5), dtype=torch.float64) * 3
    probs = S.softmax64_batched(logits)
    for rule, value in ((rules.TOP_K, 7), (rules.TOP_P, 0.8), (rules.MIN_P, 0.05)):
        mask = rules.keep_mask(rule, probs, value, logits)
        for b in range(6):
            kept = rules.keep_ids(rule, probs[b].tolist(), value, logits[b].tolist())
            assert sorted(kept) == torch.nonzero(mask[b]).flatten().tolist(), (rule.field, b)
    with pytest.raises(ValueError, match="top_p"):
        rules.TOP_P.check(1.5)


def test_sampling_rule_repr_is_fixed():
    assert repr(S.SamplingRule()) == "SamplingRule(temperature=1.0, top_k=None, top_p=None, min_p=None, greedy=False)"
    assert str(S.SamplingRule(temperature=0.7, top_p=0.9)) == (
        "SamplingRule(temperature=0.7, top_k=None, top_p=0.9, min_p=None, greedy=False)")


def test_adding_a_rule_is_one_class_one_entry_and_one_field(monkeypatch):
    """A made-up rule (keep ids with p ≥ a fixed bar) joins both pipelines through FILTERS alone;
    the repr of every existing setting stays the same."""
    import dataclasses

    import torch
    from course_lib.decoding import pipeline, rules

    class AtLeast:
        field = "at_least"
        check = staticmethod(lambda v: float(v))

        def ids(self, q, bar, order, allowed):
            return [i for i in order if q[i] >= bar and (allowed is None or i in allowed)]

        def mask(self, probs, bar, key, allowed):
            keep = probs.double() >= bar
            return keep if allowed is None else keep & allowed

    @dataclasses.dataclass(frozen=True, repr=False)
    class Extended(pipeline.SamplingRule):
        at_least: float | None = None

    plain = repr(S.SamplingRule())
    monkeypatch.setattr(pipeline, "FILTERS", (*rules.FILTERS, AtLeast()))     # the one line
    rule = Extended(top_k=4, at_least=0.2)
    z = [2.0, 1.5, 1.0, 0.2, -1.0]
    kept = rule.apply(z).kept
    probs = S.softmax_with_temperature(z)
    assert kept == [i for i in S.top_k_ids(probs, 4) if S.renormalize(probs, S.top_k_ids(probs, 4))[i] >= 0.2]
    mask, _ = pipeline.apply_batched(rule, torch.tensor([z], dtype=torch.float64))
    assert torch.nonzero(mask[0]).flatten().tolist() == sorted(kept)
    assert repr(Extended()) == plain
    assert repr(rule).endswith("greedy=False, at_least=0.2)")
