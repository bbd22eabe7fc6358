"""The batched pipeline when top-k runs first: every later stage, and the draw, on the k candidates.

Not taught: how ``pipeline.apply_batched`` / ``sample_batched`` stay near one pass over the
logits. After a top-k stage only its k candidates can be kept, so the softmax is needed on
those alone: w = exp((z − max z) / τ) for k values per row, not V. The per-row rule
(``SamplingRule.apply``) divides by the sum of all V exponentials first, and renormalises after
each stage; those divisions change its numbers only in their last bits, never its decisions —
except on a row where a running sum lands within rounding of p, or a probability within
rounding of the min-p bar. Such a row is recognised here (a margin far wider than the
rounding of either computation) and redone by the per-row rule's own float64 arithmetic
(``pipeline._filter_candidates`` on the whole row). The kept sets are therefore the per-row
rule's on every row (tests/test_decoding_methods.py forces the redo on every row and compares).

The final probabilities are the kept candidates' exponentials divided by their sum, computed
the same way on every row whichever way its kept set was found: they equal the per-row rule's
up to the last bits (rel 1e-12), and the draw from them does not depend on the path.

A batch of one row (one generation step) runs the stages on its k candidates as Python floats
(:func:`_one_row`): ~40 numpy calls on 50 values cost more than the values themselves. It does
the batch code's operations in the batch code's order — the same sums, divisions and
comparisons, the exponentials and the final division still by numpy — so its results are the
batch code's, bit for bit (tests/test_decoding_one_row.py).
"""
from __future__ import annotations

import math
from bisect import bisect_left
from itertools import accumulate

import numpy as np
import torch

from .rules import MIN_P, TOP_P
from .select import top_k_candidates

_TINY = 2.0 ** -960      # an exponential below this (but not 0) is redone: near float64's underflow
                         # the per-row rule's divisions lose bits and the margins below no longer hold
EXACT_ONLY = False       # True: every row takes the per-row rule's arithmetic (the tests set it)
ONE_ROW_AS_BATCH = False  # True: a batch of one row takes the batch code too (the tests compare the two)


def margin(k: int) -> float:
    """How near p (absolute, sums ≤ 1) or the min-p bar (relative) a value must come for its
    row to be redone: far above the rounding of both computations (each ≤ ~(2k + 8) float64
    roundings of ≤ 2⁻⁵³, and the two exponentials' last bits)."""
    return (16 * k + 256) * 2.0 ** -53


def filter_top_k_first(stages, z: torch.Tensor, allowed, temperature: float, redo_rows):
    """(candidate ids [B, k] in id order, their keep-mask [B, k] numpy bool, final float64
    [B, k] numpy). ``stages`` starts with (TOP_K, k); ``z``: checked logits [B, V];
    ``redo_rows(rows)`` returns the per-row rule's keep-mask [len(rows), k] for those rows."""
    k = stages[0][1]
    idx = top_k_candidates(z, k)                                    # [B, k] ids, increasing
    zc = z.gather(1, idx).double().numpy()                          # [B, k] their logits
    shifted = zc - zc.max(axis=-1, keepdims=True)                   # the row's max is among them
    if temperature >= 1e-30 and z.dtype != torch.float64:          # |z − max| < 7e38: no overflow
        w = np.exp(shifted / temperature)
    else:                                                           # (z − max) / τ may overflow to −inf
        with np.errstate(over="ignore", invalid="ignore"):
            w = np.exp(shifted / temperature)
    if len(zc) == 1 and not ONE_ROW_AS_BATCH:
        return (idx, *_one_row(stages, zc, w, redo_rows))
    w_by_id = w
    keep = zc != -np.inf
    unsafe = np.zeros(len(zc), dtype=bool)
    if w.min() < _TINY:                                             # w = 0 (a −inf logit) is exact
        unsafe = ((w > 0) & (w < _TINY)).any(axis=-1)
    delta = margin(k)
    B = len(zc)
    ranked = any(rule is TOP_P for rule, _ in stages[1:])
    if ranked:                                                      # work in ranked order
        order = np.argsort(-zc, axis=-1, kind="stable")             # by logit, ties by id
        at = np.arange(B)[:, None]
        w, keep = w[at, order], keep[at, order]
    for rule, value in stages[1:]:
        kept_w = np.where(keep, w, 0.0)
        if rule is TOP_P:
            sums = np.cumsum(kept_w, axis=-1)
            sums /= sums[:, -1:]                                    # running sums of the probabilities
            n = 1 + (sums[:, :-1] < value).sum(axis=-1)             # [B] places kept
            last, before = sums[np.arange(B), n - 1], sums[np.arange(B), np.maximum(n - 2, 0)]
            unsafe |= (np.abs(last - value) <= delta) | ((n >= 2) & (np.abs(before - value) <= delta))
            keep &= np.arange(k) < n[:, None]
        elif rule is MIN_P:
            bar = value * kept_w.max(axis=-1, keepdims=True)        # [B, 1]
            unsafe |= (keep & (np.abs(kept_w - bar) <= delta * bar)).any(axis=-1)
            keep &= kept_w >= bar
        else:                                                       # a stage added later: per row
            unsafe[:] = True
    final = np.where(keep, w, 0.0)
    if ranked:                                                      # back to id order
        by_id, final_by_id = np.empty_like(keep), np.empty_like(final)
        by_id[at, order], final_by_id[at, order] = keep, final
        keep, final = by_id, final_by_id
    if EXACT_ONLY:
        unsafe[:] = True
    rows = np.flatnonzero(unsafe)
    if rows.size:
        keep[rows] = redo_rows(torch.from_numpy(rows))
        final[rows] = np.where(keep[rows], w_by_id[rows], 0.0)
    final /= final.sum(axis=-1, keepdims=True)
    return idx, keep, final


def _one_row(stages, zc: np.ndarray, w: np.ndarray, redo_rows):
    """:func:`filter_top_k_first`'s stages for a batch of one row, in Python floats: (keep
    [1, k] numpy bool, final [1, k] float64 numpy). Each step is the batch code's step for one
    row: the same running sums added in the same order, the same divisions and comparisons."""
    k = zc.shape[1]
    zl, wl = zc[0].tolist(), w[0].tolist()
    keep = [v != -math.inf for v in zl]
    unsafe = any(0.0 < x < _TINY for x in wl)                       # w = 0 (a −inf logit) is exact
    delta = margin(k)
    ranked = any(rule is TOP_P for rule, _ in stages[1:])
    order = sorted(range(k), key=zl.__getitem__, reverse=True) if ranked else range(k)   # stable
    wr, kr = [wl[i] for i in order], [keep[i] for i in order]
    for rule, value in stages[1:]:
        kept_w = [x if kept else 0.0 for x, kept in zip(wr, kr)]
        if rule is TOP_P:
            sums = list(accumulate(kept_w))                         # np.cumsum: left to right
            total = sums[-1]                                        # sums / total: nondecreasing, so
            n = 1 + bisect_left(sums, value, 0, k - 1, key=lambda s: s / total)   # places kept
            last, before = sums[n - 1] / total, sums[max(n - 2, 0)] / total
            unsafe |= abs(last - value) <= delta or (n >= 2 and abs(before - value) <= delta)
            kr[n:] = [False] * (k - n)
        elif rule is MIN_P:
            bar = value * max(kept_w)
            near = delta * bar
            unsafe |= any(kept and abs(x - bar) <= near for x, kept in zip(kept_w, kr))
            kr = [kept and x >= bar for x, kept in zip(kept_w, kr)]
        else:                                                       # a stage added later: per row
            unsafe = True
    by_id = [False] * k
    for place, i in enumerate(order):                               # back to id order
        by_id[i] = kr[place]
    keep = np.array([by_id])
    if unsafe or EXACT_ONLY:
        keep = np.asarray(redo_rows(torch.zeros(1, dtype=torch.long)))
    final = np.where(keep, w, 0.0)
    final /= final.sum(axis=-1, keepdims=True)
    return keep, final
