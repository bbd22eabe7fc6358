"""Fast selection behind the batched top-k and top-p: the first n ids of each row's ranking,
found without sorting whole rows.

Not taught: the machinery of ``TopK.mask`` and ``TopP.mask`` in ``rules.py`` (notebook 07 teaches
the per-row rules; tests/test_decoding_batched.py proves these equal to them on every row of
[64, 50257] batches with ties, −inf, underflow to 0 and near-p sums). Two ideas carry it:

* numpy's ``partition`` moves the w largest values of every row to its end in one linear pass
  (unsorted), far cheaper than sorting the row; only those w values are then sorted.
* A row keeps every id at or above its n-th largest value — exactly n ids — unless that value is
  tied with the next one; only such rows take the exact tie path, :func:`top_n_mask`, which
  keeps the smallest tied ids (the per-row rules' tie-break).

Each rule has several exact methods — numpy's ``partition`` (top-p also on two Python threads,
"partition2"), ``torch.topk``, a bar from a sample (``threshold.py``; top-k also one row at a
time, "rows") — and runs the one ``methods.py``'s rule picks for that kind of call; all return
the same ids (tests/test_decoding_methods.py). numpy works on the tensors' memory (no copy) and, unlike
torch's comparisons, compares a float32 row against its bar with vector instructions at full
speed. The results are exact whatever the CPU and whichever method runs.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from . import methods, threshold
from .checks import numpy_view

_FIRST_WIDTH = 4096        # top-p: the largest values sorted first (rows needing more: × 8, then all)


def as_numpy(x: torch.Tensor) -> np.ndarray:
    """The values of a float tensor as a numpy array: its own memory for a float32 or float64
    CPU tensor (``checks.numpy_view``), else a float64 copy."""
    a = numpy_view(x)
    return a if a is not None else x.detach().double().cpu().numpy()


def _largest_rows(a: np.ndarray, w: int, rows, split: bool = False) -> np.ndarray:
    """[len(rows), w + 1]: the w + 1 largest values of each listed row of ``a`` (w < V),
    unsorted except that the (w+1)-th largest comes first. One row at a time through a buffer
    the size of a row (a partition works in place): the batch is never copied whole, and the
    buffer stays in the cache. ``split``: the first half of the rows on a second Python thread
    (numpy lets go of the GIL while it partitions)."""
    rows = list(rows)
    if split and len(rows) >= 2:
        half = len(rows) // 2
        first = _helper().submit(_largest_rows, a, w, rows[:half])
        rest = _largest_rows(a, w, rows[half:])
        return np.concatenate([first.result(), rest])
    V = a.shape[-1]
    out = np.empty((len(rows), w + 1), dtype=a.dtype)
    buffer = np.empty(V, dtype=a.dtype)
    for i, b in enumerate(rows):
        buffer[:] = a[b]
        buffer.partition(V - w - 1)                 # the w + 1 largest now at the end
        out[i] = buffer[V - w - 1:]
    return out


_HELPER = []


def _helper() -> ThreadPoolExecutor:
    """One extra Python thread, made at first use (method "partition2")."""
    if not _HELPER:
        _HELPER.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="course-partition"))
    return _HELPER[0]


def top_n_mask(scores: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """The exact path: the first n[b] ids of each row's ranking (ties by smaller id). Keep
    everything above the n-th value, then the smallest ids equal to it until n are kept.
    ``n``: [B, 1] integers in 1..V. ``scores``: probabilities or logits (the same ranking)."""
    kth = torch.topk(scores, int(n.max()), dim=-1).values.gather(-1, n - 1)   # [B, 1] n-th value
    above = scores > kth                                          # all of these are kept
    room = n - above.sum(dim=-1, keepdim=True)                    # places left for ties
    tied = scores == kth
    return above | (tied & (torch.cumsum(tied.int(), dim=-1) <= room))


def _at_or_above(a: np.ndarray, bar: np.ndarray) -> torch.Tensor:
    """[B, V] bool: a[b, i] ≥ bar[b], compared by numpy (a torch tensor on the same memory)."""
    return torch.from_numpy(a >= bar[:, None])


def _fix_tied_rows(mask: torch.Tensor, tied: np.ndarray, key: torch.Tensor, n: np.ndarray) -> torch.Tensor:
    """``mask`` with the rows listed in ``tied`` replaced by the exact tie path for n[b] ids."""
    if tied.size:
        rows = torch.from_numpy(tied)
        mask[rows] = top_n_mask(key[rows], torch.from_numpy(n[tied]).long()[:, None])
    return mask


def _top_k_partition(a: np.ndarray, k: int, key: torch.Tensor) -> torch.Tensor:
    """Method "partition": numpy moves each row's k + 1 largest values to its end."""
    part = _largest_rows(a, k, range(len(a)))                    # [B, k+1]
    kth, after = part[:, 1:].min(axis=-1), part[:, 0]
    mask = _at_or_above(a, kth)
    return _fix_tied_rows(mask, np.flatnonzero(kth == after), key, np.full(len(a), k))


def _top_k_torch(a: np.ndarray, k: int, key: torch.Tensor) -> torch.Tensor:
    """Method "topk": ``torch.topk`` finds the k-th and (k+1)-th largest values of each row."""
    values = torch.topk(key, k + 1, dim=-1).values               # [B, k+1], sorted
    kth, after = (values[:, k - 1].double().numpy(), values[:, k].double().numpy())
    mask = _at_or_above(a, kth.astype(a.dtype))
    return _fix_tied_rows(mask, np.flatnonzero(kth == after), key, np.full(len(a), k))


def top_k_fast(key: torch.Tensor, k: int) -> torch.Tensor:
    """[B, V] mask of the first k ids of each row of ``key`` (k < V), by the method
    ``methods.py`` picks: numpy's partition, ``torch.topk``, or a bar from a sample."""
    a = as_numpy(key)
    ways = {"partition": lambda: _top_k_partition(a, k, key), "topk": lambda: _top_k_torch(a, k, key)}
    if threshold.usable(a.shape[1], k):
        ways["threshold"] = lambda: threshold.top_k_mask(a, k)
        if len(a) > 1:                  # one row: "threshold" takes the one-row path already
            ways["rows"] = lambda: threshold.top_k_mask_by_rows(a, k)
    return methods.run("top_k", len(a), ways)


def _top_k_ids_partition(a: np.ndarray, k: int, key: torch.Tensor) -> torch.Tensor:
    V = a.shape[-1]
    idx = np.argpartition(a, V - k - 1, axis=-1)[:, V - k - 1:]   # [B, k+1]: (k+1)-th largest first
    values = np.take_along_axis(a, idx, axis=-1)
    tied = np.flatnonzero(values[:, 1:].min(axis=-1) == values[:, 0])
    return _exact_tied_ids(torch.from_numpy(np.sort(idx[:, 1:], axis=-1)), tied, key, k)


def _top_k_ids_torch(a: np.ndarray, k: int, key: torch.Tensor) -> torch.Tensor:
    values, idx = torch.topk(key, k + 1, dim=-1)                 # [B, k+1], sorted
    tied = np.flatnonzero((values[:, k - 1] == values[:, k]).numpy())
    return _exact_tied_ids(torch.sort(idx[:, :k], dim=-1).values, tied, key, k)


def _exact_tied_ids(ids: torch.Tensor, tied: np.ndarray, key: torch.Tensor, k: int) -> torch.Tensor:
    """``ids`` with the rows listed in ``tied`` (the k-th value tied with the next) replaced
    by the exact tie path's ids (the smallest ids among the tied)."""
    if tied.size:
        rows = torch.from_numpy(tied)
        exact = top_n_mask(key[rows], torch.full((tied.size, 1), k))
        ids[rows] = torch.nonzero(exact)[:, 1].view(-1, k)
    return ids


def top_k_candidates(key: torch.Tensor, k: int) -> torch.Tensor:
    """[B, k] the ids :func:`top_k_fast` keeps, in increasing id order (k < V)."""
    a = as_numpy(key)
    ways = {"partition": lambda: _top_k_ids_partition(a, k, key), "topk": lambda: _top_k_ids_torch(a, k, key)}
    if threshold.usable(a.shape[1], k):
        ways["threshold"] = lambda: threshold.top_k_ids(a, k)
        if len(a) > 1:                  # one row: "threshold" takes the one-row path already
            ways["rows"] = lambda: threshold.top_k_ids_by_rows(a, k)
    return methods.run("top_k_ids", len(a), ways)


def _top_p_rows(a: np.ndarray, p: float, width: int, rows, split: bool = False) -> tuple[np.ndarray, ...]:
    """:func:`top_p_count` for the listed rows, sorting each row's width + 1 largest values
    (the whole row when that is all of it): (n, n-th value, tied, settled) per row, where
    ``settled`` is False for a row whose sum through its first width places stays below p."""
    V = a.shape[-1]
    whole = width + 1 >= V
    top = np.sort(a[rows] if whole else _largest_rows(a, width, rows, split), axis=-1)[:, ::-1]
    sums = threshold.ranked_sums(top)                            # sums[j]: through place j
    settled = np.ones(len(rows), dtype=bool) if whole else sums[:, width - 1] >= p
    n = 1 + (sums[:, :-1] < p).sum(axis=-1)                       # the first place, then each
    at = np.arange(len(rows))                                     # one whose sum before is < p
    kth = top[at, n - 1]
    tied = (n < top.shape[1]) & (top[at, np.minimum(n, top.shape[1] - 1)] == kth)
    return n, kth, tied, settled


def top_p_count(a: np.ndarray, p: float, split: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each row of probabilities ``a`` [B, V]: (n, the n-th largest value, tied) where n
    is the number of ranked places whose preceding sum is < p — the sum added in ranked order
    in float64, exactly the per-row rule's running sum — and ``tied`` says the (n+1)-th value
    equals the n-th. Only the largest 4,096 values of a row are sorted; a row whose sum through
    them stays below p is redone with 8 times as many, and so on up to the whole row.
    ``split``: the partitions on two threads (:func:`_largest_rows`)."""
    B = len(a)
    n, kth, tied = np.zeros(B, dtype=np.int64), np.zeros(B, dtype=a.dtype), np.zeros(B, dtype=bool)
    rows, width = np.arange(B), _FIRST_WIDTH
    while rows.size:
        found = _top_p_rows(a, p, width, rows, split)
        settled = found[3]
        for column, value in zip((n, kth, tied), found):
            column[rows[settled]] = value[settled]
        rows, width = rows[~settled], width * 8
    return n, kth, tied


def _top_p_threshold(a: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Method "threshold" (``threshold.top_p_collect``); rows it cannot settle go to
    :func:`top_p_count`."""
    if len(a) == 1 and (found := threshold.top_p_one_row(a[0], p)) is not None:
        return tuple(np.array([value]) for value in found)
    n, kth, tied, settled = threshold.top_p_collect(a, p)
    redo = np.flatnonzero(~settled)
    if redo.size:
        for column, value in zip((n, kth, tied), top_p_count(a[redo], p)):
            column[redo] = value
    return n, kth, tied


def top_p_fast(probs: torch.Tensor, p: float, key: torch.Tensor) -> torch.Tensor:
    """[B, V] keep-mask of top-p before −inf logits are removed: the first n ids by ``key``,
    n from :func:`top_p_count` or the bar of a sample (``threshold.py``), as ``methods.py``
    picks (probabilities rank like their logits)."""
    a = as_numpy(probs)

    def mask(count):
        n, kth, tied = count()
        return _fix_tied_rows(_at_or_above(a, kth), np.flatnonzero(tied), key, n)
    ways = {"partition": lambda: mask(lambda: top_p_count(a, p))}
    if torch.get_num_threads() > 1 and len(a) >= 8:
        ways["partition2"] = lambda: mask(lambda: top_p_count(a, p, split=True))
    if threshold.usable(a.shape[1], 1):
        ways["threshold"] = lambda: mask(lambda: _top_p_threshold(a, p))
    return methods.run("top_p", len(a), ways)
