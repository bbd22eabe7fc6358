"""Did the draws follow the distribution? Pearson's chi-square test, written out.

Taught in notebook 07 (sampling: the 100,000 draws); tests/test_decoding_stats.py uses it on seeded draws. No SciPy: the p-value of a chi-square
statistic with ``df`` degrees of freedom is the upper regularised gamma function
Q(df/2, x/2), which for half-integer and integer shapes needs only ``exp`` and ``erfc``:

    Q(1/2, y) = erfc(√y),   Q(1, y) = e^(−y),   Q(a + 1, y) = Q(a, y) + y^a e^(−y) / Γ(a + 1).
"""
from __future__ import annotations

import math


def chi_square_statistic(counts, probs) -> tuple[float, int]:
    """X² = Σ (observed − expected)² / expected over ids with probability > 0, and its degrees
    of freedom (those ids − 1). An observed count on a zero-probability id is impossible: X² = inf."""
    counts = [int(c) for c in counts]
    probs = [float(p) for p in probs]
    if len(counts) != len(probs) or not counts:
        raise ValueError("counts and probs must be non-empty and of the same length")
    n = sum(counts)
    if n <= 0:
        raise ValueError("counts must add up to at least one draw")
    x2, used = 0.0, 0
    for c, p in zip(counts, probs):
        if p > 0:
            expected = n * p
            x2 += (c - expected) ** 2 / expected
            used += 1
        elif c > 0:
            return math.inf, max(used - 1, 1)
    if used < 2:
        raise ValueError("probs must give at least two ids a positive probability")
    return x2, used - 1


def chi_square_p_value(x2: float, df: int) -> float:
    """P(X² ≥ x2) for a chi-square variable with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError(f"df must be ≥ 1, got {df}")
    if x2 == math.inf:
        return 0.0
    y = x2 / 2
    if df % 2:                                   # start at shape 1/2
        a, q = 0.5, math.erfc(math.sqrt(y))
    else:                                        # start at shape 1
        a, q = 1.0, math.exp(-y)
    while a < df / 2:
        q += math.exp(a * math.log(y) - y - math.lgamma(a + 1)) if y > 0 else 0.0
        a += 1
    return min(q, 1.0)
