"""Drawing one id: intervals on [0, 1), a uniform u, seeded draws; per row and per batch.

Taught in notebook 07 (sampling: "laying the probabilities end to end", the 100,000 draws).
"""
from __future__ import annotations

import random
from bisect import bisect_right
from numbers import Integral

import torch

from .checks import PROB_TOL, check_prob_rows, check_probs, check_u
from .probs import ranked_ids

# --------------------------------------------------------------------------- one row


def interval_boundaries(probs, tol: float = PROB_TOL) -> list[float]:
    """Running sums of ``probs``: id i owns the left-closed interval [b[i−1], b[i]).

    The boundaries from the last id with positive probability onward are forced to 1.0, so
    every u in [0, 1) lands somewhere even when the sum rounds to 0.9999999, and a trailing
    zero-probability id still owns an empty interval.
    """
    p = check_probs(probs, tol=tol)
    boundaries, mass = [], 0.0
    for v in p:
        mass += v
        boundaries.append(mass)
    last_positive = max(i for i, v in enumerate(p) if v > 0)
    for i in range(last_positive, len(p)):
        boundaries[i] = 1.0
    return boundaries


def pick_interval(boundaries: list[float], u: float) -> int:
    """The id whose interval holds u: the first boundary strictly greater than u
    (``bisect_right``). A zero-length interval never wins: its boundary equals the previous
    one, which is already > u."""
    return bisect_right(boundaries, check_u(u))


def sample_interval(probs, u: float, tol: float = PROB_TOL) -> int:
    """Categorical draw by hand: lay the probabilities end to end on [0, 1) and return the id
    of the interval that contains u (left-closed: u = 0.2203 with a first interval
    [0, 0.2203) picks id 1)."""
    return pick_interval(interval_boundaries(probs, tol=tol), u)


def sample_interval_ranked(probs, u: float, tol: float = PROB_TOL) -> int:
    """The same draw with the intervals laid out in *ranked* order (highest probability first,
    ties by id), as the lab article walks its running sums (0.626, 0.770, 0.845, …). Returns
    the token id. Both layouts draw every id with its probability; a given u can differ."""
    p = check_probs(probs, tol=tol)
    order = ranked_ids(p)
    return order[sample_interval([p[i] for i in order], u, tol=tol)]


def check_generator(generator) -> torch.Generator:
    """A draw needs its own seeded ``torch.Generator``: None would fall back to torch's global,
    unseeded one, and the draws could not be repeated."""
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a seeded torch.Generator "
                         f"(torch.Generator().manual_seed(0)), got {generator!r}")
    return generator


def sample_seeded(probs, generator) -> int:
    """One draw with ``torch.multinomial`` and a seeded ``torch.Generator`` (what PyTorch code
    does; the interval picture explains it, it is not PyTorch's internal loop)."""
    check_generator(generator)
    p = torch.tensor(check_probs(probs), dtype=torch.float64)
    return int(torch.multinomial(p, num_samples=1, generator=generator).item())


def draw_counts(probs, n: int, seed: int) -> list[int]:
    """Draw ``n`` ids with ``random.Random(seed)``: u = rng.random(), then the interval rule.
    Returns how often each id was drawn (same distribution every draw: no context)."""
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
        raise ValueError(f"n must be an integer ≥ 1, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, Integral):    # None: an unseeded generator
        raise ValueError(f"seed must be an integer (the same seed gives the same draws), got {seed!r}")
    boundaries = interval_boundaries(probs)
    rng = random.Random(seed)
    counts = [0] * len(boundaries)
    for _ in range(n):
        counts[bisect_right(boundaries, rng.random())] += 1
    return counts


# --------------------------------------------------------------------------- a batch [B, V]


def sample_interval_batched(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """``sample_interval`` per row: probs [B, V] (rows summing to 1), u [B] in [0, 1) -> ids [B].
    Boundaries from the last positive id onward are forced to 1.0, as in the teaching rule."""
    q = check_prob_rows(probs).double()
    u = torch.as_tensor(u, dtype=torch.float64).reshape(-1, 1)
    if u.shape[0] != q.shape[0]:
        raise ValueError(f"u must hold one number per row: probs has {q.shape[0]} rows, u has {u.shape[0]}")
    if not bool(((u >= 0) & (u < 1)).all()):           # False for NaN too
        raise ValueError(f"u must hold numbers in [0, 1), got {u.flatten().tolist()}")
    boundaries = torch.cumsum(q, dim=-1)
    ids = torch.arange(q.shape[-1])
    last_positive = torch.where(q > 0, ids, -1).max(dim=-1, keepdim=True).values
    boundaries = torch.where(ids >= last_positive, torch.ones((), dtype=torch.float64), boundaries)
    return torch.searchsorted(boundaries, u, right=True).squeeze(-1)


def sample_seeded_batched(probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One ``torch.multinomial`` draw per row with a seeded generator: [B, V] -> [B]."""
    check_generator(generator)
    q = check_prob_rows(probs)
    return torch.multinomial(q, num_samples=1, generator=generator).squeeze(-1)
