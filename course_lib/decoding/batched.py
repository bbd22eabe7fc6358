"""How the batched rules find, in every row of a [B, V] batch at once, the ids the per-row rules keep.

Not taught: notebook 07 teaches the per-row rules (``rules.py``, each rule's ``ids``) and says in
one paragraph what their batched ``mask`` does, which calls these. One exact method per job, equal
to the per-row rules row by row (tests/test_decoding_hard_rows.py, test_decoding_reference.py):

* :func:`check_batch` — the logits checked, and which ids may be kept (those with a finite logit);
* :func:`first_k` — the first k ids of each row's ranking (top-k): one partition of each row;
* :func:`first_n` — the first n ids of each row's ranking, n per row (a top-p row with a tie);
* :func:`nucleus` — how many ranked places top-p keeps: one partition of each row's largest values.

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
    """What the filters rank by (the logits when given, else the probabilities) and which ids may
    be kept (:func:`check_batch`; None: every id)."""
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


def first_k(key: torch.Tensor, k: int) -> torch.Tensor:
    """[B, V] bool: the first k ids of each row's ranking (k < V). numpy's ``partition`` moves
    each row's k + 1 largest values to its end in one linear pass, the (k+1)-th largest first;
    every id at or above the k-th largest is kept — exactly k ids, whatever order equal values
    took, unless the k-th value equals the (k+1)-th: such a row takes :func:`first_n`."""
    a = as_numpy(key)
    V = a.shape[1]
    part = np.partition(a, V - k - 1, axis=-1)[:, V - k - 1:]               # [B, k+1]
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
    numpy's partition moves each row's 4,097 largest values to its end in one linear pass; only
    those are sorted and added up. A row whose sum through them stays below p is sorted whole."""
    B, V = a.shape
    m = min(NUCLEUS_WIDTH + 1, V)                     # one more than the places it settles: the tie check
    top = np.sort(np.partition(a, V - m, axis=-1)[:, V - m:], axis=-1)[:, ::-1]    # [B, m] largest first
    n, kth, tied, settled = _places(top, p, m == V)
    wide = np.flatnonzero(~settled)
    if wide.size:
        n[wide], kth[wide], tied[wide], _ = _places(np.sort(a[wide], axis=-1)[:, ::-1], p, True)
    return n, kth, tied
