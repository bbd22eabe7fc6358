"""Exact top-k and top-p from a bar: a sample of each row says roughly where the wanted values
start, one pass collects every value at or above that bar, and only those few are ranked.

Not taught: one of the methods behind the batched ``TopK.mask`` / ``TopP.mask`` and the
pipeline's top-k candidates (``methods.py`` picks, by a fixed rule, which method runs;
tests/test_decoding_methods.py proves every method keeps the per-row rules' ids).

Why the results are exact whatever the sample says:

* every value at or above a bar is collected, so the collected values of a row are the first
  places of its ranking (ties at the bar included). If a row has at least k of them, its k
  largest are among them; if their running sum, added in ranked order in float64 (the per-row
  rule's own sum), reaches p, the nucleus is among them. Each is checked on every row.
* a row the bar does not serve (too few values above it, or too little mass) is redone with
  its exact k-th largest value as the bar (top-k), or by the partition method (top-p).

A bad sample costs time, never correctness. The sample is every 16th value of the row (a
strided view: every cache line is read, but numpy compares 16 times fewer values).
"""
from __future__ import annotations

import math

import numpy as np
import torch

STRIDE = 16            # the sample: every STRIDE-th value of a row
MIN_VOCAB = 1024       # below this a row is too short for a sample to pay
ONE_ROW_STRIDE = 32    # top-p on one row: a sparser sample (its sort is most of the estimate's cost)
TOP_P_SAMPLE = 64      # top-p: the largest values of the sample looked at (≈ 1,024 of the row): a row
                       # whose nucleus looks wider goes to the partition method (collecting costs ~30 ns an id)


def usable(V: int, wanted: int) -> bool:
    """Whether a sample of a row of V values can place a bar below its ``wanted`` largest."""
    return V >= MIN_VOCAB and _sample_rank(wanted) < V // STRIDE


def _sample_rank(k: int) -> int:
    """Which largest value of the sample becomes the bar for the k largest of the row: about
    1.5 k / STRIDE, plus 8 (the number of row values above the r-th of a strided sample is
    ≈ STRIDE × r ± STRIDE √r)."""
    return math.ceil(1.5 * (k + 1) / STRIDE) + 8


def ranked_sums(top: np.ndarray) -> np.ndarray:
    """[B, w] float64 running sums of each row of ``top`` (values in ranked order), added one by
    one from the left in float64 — the per-row rule's ``mass += q`` (torch's cumsum: several
    times faster than numpy's)."""
    return torch.cumsum(torch.from_numpy(np.array(top, dtype=np.float64, order="C")), dim=-1).numpy()


def at_or_above(a: np.ndarray, bar: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, ids) of every value with a[b, i] ≥ bar[b], row by row in increasing id order."""
    flat = np.flatnonzero(a >= bar[:, None])
    return np.divmod(flat, a.shape[1])


def _places(rows: np.ndarray, B: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(count per row [B], first position of each row [B], place of each entry within its row)."""
    counts = np.bincount(rows, minlength=B)
    starts = np.cumsum(counts) - counts
    return counts, starts, np.arange(rows.size) - starts[rows]


def _grid(values: np.ndarray, rows: np.ndarray, place: np.ndarray, B: int, width: int, fill) -> np.ndarray:
    """[B, width]: each row's collected values from the left, ``fill`` after them."""
    grid = np.full((B, max(width, 1)), fill, dtype=values.dtype)
    grid[rows, place] = values
    return grid


# --------------------------------------------------------------------------- top-k


def top_k_collect(a: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, ids, keep) for k < V: every collected id, in row then id order, and whether it is
    one of the first k ids of its row's ranking (larger value first, ties by smaller id) —
    exactly k per row. ``a`` [B, V]: float values without NaN (−inf allowed)."""
    B, V = a.shape
    sample = a[:, ::STRIDE]                                        # [B, ⌈V / STRIDE⌉] view
    m = sample.shape[1]
    r = min(_sample_rank(k), m)
    bar = np.partition(sample, m - r, axis=-1)[:, m - r]           # [B] the r-th largest
    rows, ids = at_or_above(a, bar)
    counts = np.bincount(rows, minlength=B)
    short = np.flatnonzero(counts < k)
    if short.size:                          # the bar was too high: the row's own k-th largest
        bar[short] = np.partition(a[short], V - k, axis=-1)[:, V - k]
        rows, ids = at_or_above(a, bar)
    counts, starts, place = _places(rows, B)
    values = a[rows, ids]
    width = int(counts.max())
    grid = _grid(values, rows, place, B, width, -np.inf)           # [B, width]
    kth = np.partition(grid, width - k, axis=-1)[:, width - k]     # [B] the k-th largest
    above = values > kth[rows]
    tied = values == kth[rows]
    room = k - np.bincount(rows, weights=above, minlength=B).astype(np.int64)   # places left for ties
    tie_rank = np.cumsum(tied)                                     # ties so far, across rows
    before = tie_rank[starts] - tied[starts]                      # [B] ties before each row (k ≥ 1 each)
    keep = above | (tied & (tie_rank - before[rows] <= room[rows]))
    return rows, ids, keep


def _one_row_bar(row: np.ndarray, k: int):
    """The bar for one row's k largest values: the matching largest value of its sample."""
    sample = row[::STRIDE]                                         # [⌈V / STRIDE⌉] view
    m = sample.size
    r = min(_sample_rank(k), m)
    return np.partition(sample, m - r)[m - r]


def _strict_kth(got: np.ndarray, k: int):
    """The k-th largest of the values collected at a bar, when it is strictly above the
    (k+1)-th; None when it is tied with it, or when k values or fewer were collected."""
    c = got.size
    if c <= k:
        return None
    part = np.partition(got, (c - k - 1, c - k))                   # the (k+1)-th and k-th largest
    return part[c - k] if part[c - k] != part[c - k - 1] else None


def one_row_kth(row: np.ndarray, k: int):
    """The k-th largest value of one row (k < V) when it is strictly above the (k+1)-th, so that
    the values at or above it are exactly the first k ids; None otherwise (a tie at the k-th
    value, or a bar from the sample that collected k values or fewer: the caller takes
    :func:`top_k_collect`). A batch of one row in ~6 numpy calls."""
    return _strict_kth(np.compress(row >= _one_row_bar(row, k), row), k)   # values at or above the bar


def top_k_mask(a: np.ndarray, k: int) -> torch.Tensor:
    """[B, V] bool: the first k ids of each row's ranking (k < V)."""
    if len(a) == 1 and (kth := one_row_kth(a[0], k)) is not None:
        return torch.from_numpy(a >= kth)
    rows, ids, keep = top_k_collect(a, k)
    mask = np.zeros(a.shape, dtype=bool)
    mask[rows[keep], ids[keep]] = True
    return torch.from_numpy(mask)


def one_row_ids(row: np.ndarray, k: int):
    """[k] int64: the first k ids of one row's ranking (k < V), in increasing id order, when
    its k-th largest value is strictly above the (k+1)-th; None otherwise (as
    :func:`one_row_kth`). The ids at the bar are collected once, with their values: the k-th
    largest is found among those, and the row is not read again."""
    ids = np.flatnonzero(row >= _one_row_bar(row, k))              # every id at or above the bar
    got = row[ids]                                                 # [c] their values
    kth = _strict_kth(got, k)
    return None if kth is None else ids[got >= kth]


def top_k_ids(a: np.ndarray, k: int) -> torch.Tensor:
    """[B, k] int64: the ids :func:`top_k_mask` keeps, in increasing id order."""
    if len(a) == 1 and (ids := one_row_ids(a[0], k)) is not None:
        return torch.from_numpy(ids[None, :])
    rows, ids, keep = top_k_collect(a, k)
    return torch.from_numpy(ids[keep].reshape(a.shape[0], k))


def top_k_mask_by_rows(a: np.ndarray, k: int) -> torch.Tensor:
    """:func:`top_k_mask` one row at a time (method "rows"): each row's k-th value by
    :func:`one_row_kth` while the row is in the cache, then one comparison of the batch with its
    k-th values; rows it does not serve (a tie at the k-th value) go to the batch path."""
    kth = np.empty(len(a), dtype=a.dtype)
    redo = []
    for b, row in enumerate(a):
        value = one_row_kth(row, k)
        if value is None:
            redo.append(b)
            value = np.inf
        kth[b] = value
    mask = a >= kth[:, None]
    if redo:
        mask[redo] = top_k_mask(a[redo], k).numpy()
    return torch.from_numpy(mask)


def top_k_ids_by_rows(a: np.ndarray, k: int) -> torch.Tensor:
    """:func:`top_k_ids` one row at a time (method "rows", as :func:`top_k_mask_by_rows`)."""
    ids = np.empty((len(a), k), dtype=np.int64)
    redo = []
    for b, row in enumerate(a):
        found = one_row_ids(row, k)
        if found is None:
            redo.append(b)
        else:
            ids[b] = found
    if redo:
        ids[redo] = top_k_ids(a[redo], k).numpy()
    return torch.from_numpy(ids)


# --------------------------------------------------------------------------- top-p


def top_p_collect(a: np.ndarray, p: float) -> tuple[np.ndarray, ...]:
    """For rows of probabilities ``a`` [B, V]: (n, the n-th largest value, tied, settled) as
    ``select.top_p_count`` defines them, for the rows where ``settled`` is True. A row is not
    settled (the caller redoes it) when its nucleus looks wider than about ``TOP_P_SAMPLE ×
    STRIDE`` ids, or when the values collected at its bar do not reach p."""
    B, V = a.shape
    sample = a[:, ::STRIDE].copy()                                 # [B, m]
    m = sample.shape[1]
    r = min(TOP_P_SAMPLE, m)
    mass = sample.sum(axis=-1, dtype=np.float64)                   # [B] the sample's mass
    top = -np.sort(-np.partition(sample, m - r, axis=-1)[:, m - r:], axis=-1)   # [B, r] descending
    # the share of the sample's mass at or above each of its largest values estimates the
    # row's; the bar goes a margin of ranks below where that share reaches p + (1 − p) / 4
    running = np.cumsum(top, axis=-1, dtype=np.float64)
    reach = (running < (p + (1.0 - p) / 4) * mass[:, None]).sum(axis=-1)
    place = reach + reach // 4 + 8
    settled = place < r                    # the others look wide: not collected, the caller redoes them
    bar = top[np.arange(B), np.minimum(place, r - 1)]
    settled &= bar > 0                     # a bar of 0 would collect every id whose value is 0
    bar[~settled] = np.inf
    rows, ids = at_or_above(a, bar)
    counts, _, place = _places(rows, B)
    width = int(counts.max()) if rows.size else 1
    grid = _grid(a[rows, ids], rows, place, B, width, 0)            # [B, width], zeros after
    top = -np.sort(-grid, axis=-1)                                 # [B, width] descending
    sums = ranked_sums(top)
    settled &= (counts > 0) & (sums[:, -1] >= p)
    n = 1 + (sums[:, :-1] < p).sum(axis=-1)                        # the first place, then each
    at = np.arange(B)                                              # one whose sum before is < p
    n = np.minimum(n, np.maximum(counts, 1))
    kth = top[at, n - 1]
    tied = (n < counts) & (top[at, np.minimum(n, width - 1)] == kth)
    return n, kth, tied, settled


def top_p_one_row(row: np.ndarray, p: float):
    """``top_p_collect`` for a batch of one row of probabilities, in ~10 numpy calls: (n, the
    n-th largest value, tied), or None when no bar from the sample collects values that reach p
    (the caller redoes the row). The whole sample is ranked, so a wide nucleus (a few thousand
    ids) is served too; only the collected values are sorted, never the row. A bar that
    collects too little is lowered (twice as many ranks of the sample) and tried again.

    Both sorts are ascending, on negated values where the largest must come first (negating is
    exact, so −sums are the per-row rule's running sums with their sign changed)."""
    sample = np.sort(row[::ONE_ROW_STRIDE])                        # [m] ascending
    m = sample.size
    below = torch.cumsum(torch.from_numpy(sample), dim=0).numpy()  # an estimate: its dtype is enough
    # the ids left out of a nucleus hold a share < 1 − p: the bar goes a margin of ranks below
    # where the sample's own share from the top reaches p + (1 − p) / 4
    reach = m - 1 - int(np.searchsorted(below, (1.0 - p) * 0.75 * float(below[-1]), side="right"))
    place = reach + reach // 4 + 8                                 # ranks from the top
    while place < m and sample[-1 - place] > 0:                    # (a bar of 0 would collect every 0)
        top = np.compress(row >= sample[-1 - place], row)          # [c] every value ≥ the bar
        np.negative(top, out=top)
        top.sort()                                                 # −values: the largest first
        sums = torch.cumsum(torch.from_numpy(top), dim=0, dtype=torch.float64).numpy()   # −(running sums)
        if -sums[-1] >= p:
            n = 1 + int(np.count_nonzero(sums[:-1] > -p))          # the first place, then each
            kth = -top[n - 1]                                      # one whose sum before is < p
            return n, kth, n < top.size and -top[n] == kth        # (a value after the last is < the bar)
        place *= 2
    return None
