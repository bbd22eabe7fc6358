"""Seeded chi-square tests: every draw function samples the distribution it is given."""
import math
import random

import pytest
import torch

from course_lib import decoding as S
from course_lib import decoding as SB
from course_lib.decoding.stats import chi_square_p_value, chi_square_statistic

TARGET = [0.05, 0.4, 0.0, 0.25, 0.3]          # one zero-length interval in the middle
N = 20_000


def test_p_value_matches_table_values():
    # 95% critical values of the chi-square table, df = 1, 2, 4, 7
    for x, df in [(3.841, 1), (5.991, 2), (9.488, 4), (14.067, 7)]:
        assert chi_square_p_value(x, df) == pytest.approx(0.05, abs=2e-4)
    assert chi_square_p_value(0.0, 3) == 1.0
    assert chi_square_p_value(math.inf, 3) == 0.0


def test_statistic_by_hand():
    assert chi_square_statistic([30, 70], [0.5, 0.5]) == (pytest.approx(16.0), 1)
    assert chi_square_statistic([1, 99], [0.0, 1.0])[0] == math.inf
    with pytest.raises(ValueError):
        chi_square_statistic([1], [0.5, 0.5])


def check(counts, target=TARGET):
    assert counts[2] == 0                               # the zero-probability id never drawn
    x2, df = chi_square_statistic(counts, target)
    assert df == 3
    assert chi_square_p_value(x2, df) > 0.001, (counts, x2)
    wrong = [0.1, 0.35, 0.0, 0.25, 0.3]                 # a nearby wrong distribution is rejected
    assert chi_square_p_value(*chi_square_statistic(counts, wrong)) < 1e-6


def test_interval_sampling_with_random_random():
    check(S.draw_counts(TARGET, N, seed=12))


def test_sample_seeded_multinomial():
    gen = torch.Generator().manual_seed(12)
    counts = [0] * 5
    for _ in range(4000):                               # one draw per call, as generation does
        counts[S.sample_seeded(TARGET, gen)] += 1
    x2, df = chi_square_statistic(counts, TARGET)
    assert counts[2] == 0 and chi_square_p_value(x2, df) > 0.001


def test_batched_interval_and_multinomial_draws():
    probs = torch.tensor([TARGET] * N, dtype=torch.float64)
    u = torch.rand(N, generator=torch.Generator().manual_seed(12), dtype=torch.float64)
    check(torch.bincount(SB.sample_interval_batched(probs, u), minlength=5).tolist())
    draws = SB.sample_seeded_batched(probs.float(), torch.Generator().manual_seed(12))
    check(torch.bincount(draws, minlength=5).tolist())


def test_pipeline_choose_samples_the_renormalised_distribution():
    rule = S.SamplingRule(temperature=0.8, top_k=3)
    logits = [1.0, 0.2, -0.5, 0.6, -2.0]
    final = rule.apply(logits).final
    rng = random.Random(5)
    counts = [0] * 5
    for _ in range(4000):
        counts[rule.choose(logits, rng.random())] += 1
    x2, df = chi_square_statistic(counts, final)
    assert df == 2 and chi_square_p_value(x2, df) > 0.001
    assert counts[2] == counts[4] == 0
