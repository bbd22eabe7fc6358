"""Not taught: what the batched rules' ``mask``s call to keep, in every row of a [B, V] batch at
once, the ids the per-row rules keep (notebook 07 teaches those, ``rules.py``; it says in one
paragraph what the masks do). One exact method per job (tests/test_decoding_hard_rows.py):
:func:`check_batch` (which ids may be kept at all), :func:`first_k` (top-k: one partition per row,
:func:`largest`), :func:`first_n` (a tie at the last place kept: the smaller ids), :func:`nucleus`
(top-p: one partition, then only each row's largest values sorted and added up).

numpy, on the tensors' own memory, partitions (torch has none: ``torch.topk`` is slower on one row,
and much slower for thousands of values) and compares each row with its bar (faster than torch).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .checks import as_numpy, check_rows

NUCLEUS_WIDTH = 4096    # top-p sorts each row's 4,096 largest values; a wider nucleus sorts its row whole


def check_batch(logits) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(the logits, [B, V] bool: the ids that may be kept — False at a −inf logit — or None when
    every logit is finite). The usual batch is read once: a sum is finite exactly when it adds no
    NaN and no ±inf (or it overflows the dtype: then the full check runs, and passes)."""
    if (isinstance(logits, torch.Tensor) and logits.is_floating_point() and logits.dim() == 2
            and logits.numel() > 0 and math.isfinite(logits.detach().sum().item())):
        return logits, None
    z = check_rows(logits)                                  # raises, naming what is wrong
    minus_inf = torch.isneginf(z)
    return z, (~minus_inf if bool(minus_inf.any()) else None)


def key_and_allowed(probs: torch.Tensor, logits) -> tuple[torch.Tensor, torch.Tensor | None]:
    """What the filters rank by (the logits, else the probabilities) and :func:`check_batch`'s mask."""
    if logits is None:
        return probs, None
    z, allowed = check_batch(logits)
    if z.shape != probs.shape:
        raise ValueError(f"logits has shape {tuple(z.shape)} but probs has {tuple(probs.shape)}")
    return z, allowed


def only_allowed(mask: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
    return mask if allowed is None else mask & allowed


def first_n(key: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """[B, V] bool: the first n[b] ids of each row's ranking by ``key`` (larger first, ties by the
    smaller id); ``n`` [B, 1] in 1..V. Every id above the n-th largest value is kept, then the
    smallest ids equal to it until n are kept."""
    kth = torch.topk(key, int(n.max()), dim=-1).values.gather(1, n - 1)    # [B, 1] the n-th largest
    above, at = key > kth, key == kth
    room = n - above.sum(dim=-1, keepdim=True)                             # [B, 1] places left for ties
    return above | (at & (torch.cumsum(at, dim=-1) <= room))


def largest(a: np.ndarray, m: int) -> np.ndarray:
    """[B, m]: each row's m largest values, unsorted but for the m-th largest first (numpy's
    ``partition``, one linear pass). One row at a time through one buffer: a fresh copy of the
    whole batch costs about as much again as the partitions."""
    (B, V), row = a.shape, np.empty(a.shape[1], a.dtype)
    out = np.empty((B, m), a.dtype)
    for b in range(B):
        row[:] = a[b]
        row.partition(V - m)
        out[b] = row[V - m:]
    return out


def first_k(key: torch.Tensor, k: int) -> torch.Tensor:
    """[B, V] bool: the first k ids of each row's ranking (k < V): every id at or above the k-th
    largest value — exactly k ids, whatever order equal values took, unless the k-th value
    equals the (k+1)-th: such a row takes :func:`first_n`."""
    a = as_numpy(key)
    part = largest(a, k + 1)                                                # [B, k+1]
    kth = part[:, 1:].min(axis=-1)                                          # [B] the k-th largest
    mask = torch.from_numpy(a >= kth[:, None])
    tied = torch.from_numpy(np.flatnonzero(kth == part[:, 0]))
    if len(tied):
        mask[tied] = first_n(key[tied], torch.full((len(tied), 1), k))
    return mask


def _places(top: np.ndarray, p: float, whole: bool):
    """For rows of values sorted largest first [R, m]: (n, the n-th value, tied, settled). n counts
    the places whose running sum *before* them is < p, the sum added in ranked order in float64
    like the per-row rule's ``mass += q``; ``tied``: the (n+1)-th value equals the n-th;
    ``settled``: n is final (the row is whole, or the sum reached p before its last place)."""
    wide = torch.from_numpy(np.array(top, dtype=np.float64, order="C"))     # a new array
    sums = torch.cumsum(wide, dim=-1).numpy()                # left to right (faster than numpy's)
    n = 1 + (sums[:, :-1] < p).sum(axis=-1)                                # 1..m
    at = np.arange(len(top))
    kth = top[at, n - 1]
    tied = (n < top.shape[1]) & (top[at, np.minimum(n, top.shape[1] - 1)] == kth)
    return n, kth, tied, whole | (n < top.shape[1])


def nucleus(a: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top-p for rows of probabilities ``a`` [B, V]: (n [B], the n-th largest value [B], tied [B]).
    Only each row's 4,097 largest values (:func:`largest`) are sorted and added up; a row whose
    sum through them stays below p is sorted whole."""
    V = a.shape[1]
    m = min(NUCLEUS_WIDTH + 1, V)                     # one more than the places it settles: the tie check
    top = np.sort(largest(a, m), axis=-1)[:, ::-1]                          # [B, m] largest first
    n, kth, tied, settled = _places(top, p, m == V)
    wide = np.flatnonzero(~settled)
    if wide.size:
        n[wide], kth[wide], tied[wide], _ = _places(np.sort(a[wide], axis=-1)[:, ::-1], p, True)
    return n, kth, tied
