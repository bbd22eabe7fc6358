"""The sampling rules, one object each: temperature, top-k, top-p, min-p.

Taught in notebook 07 (sampling). Each rule is ONE class holding everything about it:

* ``field``  — its name, the :class:`~course_lib.decoding.pipeline.SamplingRule` field that sets it;
* ``check``  — its argument check (``ValueError`` naming the argument);
* ``ids``    — the readable *teaching* version on one row (a list of floats): which ids it keeps;
* ``mask``   — the same rule over a [B, V] batch, vectorised: a boolean keep-mask.

:data:`FILTERS` lists the filters in the order they run, after :data:`TEMPERATURE`:
temperature → top-k → top-p → min-p (the order Hugging Face ``transformers`` applies its
logits warpers). Both pipelines (``SamplingRule.filter`` per row and ``filter_batched``) iterate
it, so the order is written here once. Adding a rule is one class, one entry in :data:`FILTERS`
and its field on ``SamplingRule``.

Conventions every rule follows:

* An id is a position in the row: the probability of token ``i`` is ``probs[i]``.
* A *kept set* is a list of ids in ranked order (highest first, ties broken by the smaller id),
  the order a learner reads a top-k or top-p table in.
* Given the logits (``logits=``, and always in ``SamplingRule``), the ranking uses the
  *logits*, and an id whose logit is −inf is never kept. Probabilities can round or underflow
  to equal values (a leader 120 nats ahead leaves the others at ~1e-52 in float64 but exactly 0
  in float32); logits keep their order, so rounding can never decide which ids a filter keeps.

Compared with ``transformers``' logits processors (``TemperatureLogitsWarper``,
``TopKLogitsWarper``, ``TopPLogitsWarper``, ``MinPLogitsWarper``): the kept sets are the same,
except for these deliberate differences, each pinned by a minimal example in
tests/test_decoding_reference.py:

1. **Top-k ties.** :class:`TopK` keeps exactly k ids (ties at the k-th value broken by the
   smaller id); transformers (like nanoGPT, ``variants.top_k_strict_cut``) keeps every id tied
   with the k-th value. Logits [2, 1, 1], k = 2: we keep [0, 1], transformers keeps [0, 1, 2].
2. **Tie order in top-p.** Among ids tied where the running sum crosses p, we keep the smaller
   ids; transformers sorts *ascending* and removes from the bottom, so it keeps the larger ones.
   Four equal logits, p = 0.5: we keep [0, 1], transformers keeps [2, 3] (as many ids).
3. **GPT-2's legacy top-p** (``variants.gpt2_legacy_top_p_ids``) keeps one id fewer than the
   paper's rule, which is the one transformers implements: probabilities [0.5, 0.25, 0.15,
   0.1], p = 0.8: legacy keeps 2 ids, we (:func:`top_p_ids`) and transformers keep 3.
4. **Precision, and top-p at p = 1.** transformers computes in the logits' dtype (float32 for
   a model's output); we compute probabilities in float64, so a running sum within rounding of
   p can end top-p one id apart. At p = 1 transformers keeps every id with a nonzero
   probability, while we stop as soon as the running sum reaches 1.0. Logits [0, −100], p = 1:
   we keep [0] (1 + e⁻¹⁰⁰ rounds to 1), transformers keeps [0, 1].
5. **−inf.** transformers leaves a removed id in the row at −inf; here it is simply not in the
   kept set. Top-k with k above the number of finite logits keeps the finite ones in both.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from itertools import accumulate

import torch

from .checks import check_logits, check_min_p, check_prob_rows, check_probs, check_temperature, check_top_k, check_top_p
from .probs import checked_rows, ranked_ids, softmax64, softmax_with_temperature

# --------------------------------------------------------------------------- rankings


def _ranking(probs: list[float], logits) -> tuple[list[int], set[int] | None]:
    """The order filters walk (by logits when given, else by probabilities; ties by id) and
    the ids allowed at all (finite logits; None: every id)."""
    if logits is None:
        return ranked_ids(probs), None
    z = check_logits(logits)
    if len(z) != len(probs):
        raise ValueError(f"logits has {len(z)} values but probs has {len(probs)}")
    allowed = {i for i, v in enumerate(z) if v != -math.inf} if -math.inf in z else set(range(len(z)))
    return ranked_ids(z), allowed


def _allowed(logits: torch.Tensor) -> torch.Tensor | None:
    """[B, V] finite-logit mask, or None when no logit is −inf (every id allowed; one ``amin``)."""
    return ~torch.isneginf(logits) if bool(torch.isneginf(logits.amin(dim=-1)).any()) else None


def _key_and_allowed(probs: torch.Tensor, logits: torch.Tensor | None):
    """Batched: what to rank by (the logits when given, else the probabilities) and which ids
    may be kept at all (finite logits; None: every id)."""
    if logits is None:
        return probs, None
    checked_rows(logits)
    if logits.shape != probs.shape:
        raise ValueError(f"logits has shape {tuple(logits.shape)} but probs has {tuple(probs.shape)}")
    return logits, _allowed(logits)


def _only_allowed(mask: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
    return mask if allowed is None else mask & allowed


def top_n_mask(probs: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """The first n[b] ids of each row's ranking (ties by smaller id), without a full sort:
    keep everything above the n-th value, then the smallest ids equal to it until n are kept.
    ``n``: [B, 1] integers in 1..V. ``probs`` may be any scores (logits rank the same way)."""
    kth = torch.topk(probs, int(n.max()), dim=-1).values.gather(-1, n - 1)   # [B, 1] n-th value
    above = probs > kth                                           # all of these are kept
    room = n - above.sum(dim=-1, keepdim=True)                    # places left for ties
    tied = probs == kth
    return above | (tied & (torch.cumsum(tied.int(), dim=-1) <= room))


def _top_n_rows(mask: torch.Tensor, rows: torch.Tensor, key: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """``mask`` with the listed rows replaced by :func:`top_n_mask` (the exact tie path)."""
    if rows.numel():
        mask[rows] = top_n_mask(key[rows], n[rows])
    return mask


def top_k_fast(key: torch.Tensor, k: int, sorted_ids: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``top_n_mask(key, k)`` for one k < V: ``topk(k + 1)``; where the k-th value is above the
    (k+1)-th (no tie across the cut) the k ids are that set, otherwise the row takes the exact
    tie path. Returns (mask [B, V], ids [B, k] in increasing id order, or None when
    ``sorted_ids=False``: the mask alone)."""
    B, V = key.shape
    values, idx = torch.topk(key, k + 1, dim=-1)
    mask = torch.zeros(B, V, dtype=torch.bool).scatter_(1, idx[:, :k], True)
    cut = values[:, k - 1] > values[:, k]                          # [B] no tie across the cut
    if not bool(cut.all()):
        tied = torch.nonzero(~cut).flatten()
        mask = _top_n_rows(mask, tied, key, torch.full((B, 1), k))
        idx = idx[:, :k].clone()
        idx[tied] = torch.nonzero(mask[tied])[:, 1].view(-1, k)
    return mask, (torch.sort(idx[:, :k], dim=-1).values if sorted_ids else None)


# top-p: a row's probabilities go into buckets by their float bits (8 per power of two), so only
# the bucket where the running sum crosses p is sorted. Sums are float64 but not in ranked order:
# a decision within _P_MARGIN of p (far above their rounding, ≤ 1e-11 at V = 50,257) is made by
# the exact ranked sum instead, as are rows tied at the cut.
_P_MARGIN = 1e-9
_SUB_BITS = 3


def _buckets(q: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Bucket of each value (≥ 0), increasing with the value: ([B, V] int, buckets per row)."""
    if q.dtype == torch.float32:
        return (q.view(torch.int32) >> (23 - _SUB_BITS)).clamp_(min=0), 1 << (8 + _SUB_BITS)
    if q.dtype == torch.float64:             # exponents below 2^-255 share bucket 0
        low = (1023 - 255) << _SUB_BITS
        return ((q.view(torch.int64) >> (52 - _SUB_BITS)) - low).clamp_(min=0), 1 << (9 + _SUB_BITS)
    raise TypeError


def _top_p_count_exact(probs: torch.Tensor, p: float) -> torch.Tensor:
    """[B, 1] places kept: the sum *before* a ranked place is < p (float64, ranked order)."""
    V = probs.shape[-1]
    width = min(V, 1024)
    while True:
        values = torch.topk(probs, width, dim=-1).values           # [B, width], sorted
        cum = torch.cumsum(values.double(), dim=-1)                # left to right, float64
        if width == V or bool((cum[:, -1] >= p).all()):
            break
        width = min(V, width * 8)
    before = torch.cat([torch.zeros_like(cum[:, :1]), cum[:, :-1]], dim=-1)
    return (before < p).sum(dim=-1, keepdim=True)


def _top_p_one_row(probs: torch.Tensor, p: float, bucket: torch.Tensor, nb: int) -> torch.Tensor | None:
    """:func:`top_p_fast` for a single row [1, V], with the small decisions in Python floats
    (a few tensor calls instead of dozens); None when a decision is near p or the cut is tied
    (the batched path then decides)."""
    mass = torch.bincount(bucket.view(-1), weights=probs.view(-1).double(), minlength=nb)
    top = int(bucket.max())
    above = list(accumulate(mass[:top + 1].flip(0).tolist()))   # mass of buckets ≥ top − i
    i = bisect_left(above, p)                          # the first running mass ≥ p: bucket top − i
    if i == len(above):
        return None                                    # the row's sum stays below p
    hi = above[i - 1] if i else 0.0                   # mass of the buckets above the crossing one
    if hi >= p - _P_MARGIN:
        return None
    values = torch.sort(probs[bucket == top - i].double(), descending=True).values.tolist()
    before = list(accumulate(values, initial=hi))      # before[j]: the sum before place j
    j = bisect_left(before, p, hi=len(values))         # places whose preceding sum is < p
    if (j == 0 or before[j - 1] >= p - _P_MARGIN or before[j] < p + _P_MARGIN
            or (j < len(values) and values[j] == values[j - 1])):
        return None                                    # near p, or tied across the cut
    return probs >= values[j - 1]


def top_p_fast(probs: torch.Tensor, p: float, key: torch.Tensor) -> torch.Tensor:
    """The keep-mask of :meth:`TopP.mask` before ``allowed``: ``top_n_mask(key, n)`` with n the
    number of ranked places whose preceding sum is < p, without sorting whole rows."""
    B, V = probs.shape
    try:
        bucket, nb = _buckets(probs)
    except TypeError:
        return top_n_mask(key, _top_p_count_exact(probs, p))
    if B == 1:
        mask = _top_p_one_row(probs, p, bucket, nb)
        if mask is not None:
            return mask
    flat = (bucket + (torch.arange(B, dtype=bucket.dtype) * nb)[:, None]).flatten()   # row r: r·nb + bucket
    mass = torch.bincount(flat, weights=probs.flatten().double(), minlength=B * nb).view(B, nb)
    above = mass.flip(-1).cumsum(-1).flip(-1)                      # mass of buckets ≥ b
    cross = (above >= p).sum(-1) - 1                               # [B] the bucket where p is crossed
    ok = cross >= 0
    cross = cross.clamp(min=0)
    hi_mass = (above.gather(1, (cross + 1).clamp(max=nb - 1)[:, None]).squeeze(1)
               * (cross + 1 < nb))                                 # mass of buckets above it
    ok &= hi_mass < p - _P_MARGIN
    # the crossing bucket's values, sorted, row by row in a padded [B, m] table
    r, c = torch.nonzero(bucket == torch.where(ok, cross, -1).to(bucket.dtype)[:, None], as_tuple=True)
    m_row = torch.bincount(r, minlength=B)
    width = int(m_row.max()) + 2                                  # ≥ 2, one place after the bucket
    pos = torch.arange(r.numel()) - (torch.cumsum(m_row, 0) - m_row)[r]
    table = torch.zeros(B, width, dtype=torch.float64)
    table[r, pos] = probs[r, c].double()
    table = torch.sort(table, dim=-1, descending=True).values
    before = hi_mass[:, None] + torch.cat([torch.zeros(B, 1, dtype=torch.float64), table[:, :-1].cumsum(-1)], -1)
    j = (before < p).sum(-1)                                       # places kept inside the bucket
    j_c = j.clamp(1, width - 1)
    ok &= (j >= 1) & (j <= m_row)
    ok &= before.gather(1, (j_c - 1)[:, None]).squeeze(1) < p - _P_MARGIN
    ok &= before.gather(1, j_c[:, None]).squeeze(1) >= p + _P_MARGIN
    kq = table.gather(1, (j_c - 1)[:, None])                       # [B, 1] the n-th largest value
    ok &= (table.gather(1, j_c[:, None]) < kq).squeeze(1) | (j == m_row)   # no tie across the cut
    mask = probs >= kq.to(probs.dtype)
    bad = torch.nonzero(~ok).flatten()
    if bad.numel():                    # the exact count and the tie path, for these rows only
        n = torch.zeros(B, 1, dtype=torch.long)
        n[bad] = _top_p_count_exact(probs[bad], p)
        mask = _top_n_rows(mask, bad, key, n)
    return mask


# --------------------------------------------------------------------------- the rules


class Temperature:
    """τ: divide the logits by τ before the softmax (τ < 1 sharpens, τ > 1 flattens)."""

    field = "temperature"
    check = staticmethod(check_temperature)

    def probs(self, logits, t: float) -> list[float]:
        """One row: softmax(z / τ) in float64, as a list (``probs.softmax_with_temperature``)."""
        return softmax_with_temperature(logits, t)

    def probs_batched(self, z: torch.Tensor, t: float) -> torch.Tensor:
        """[B, V] checked logits -> float64 [B, V], the per-row values up to ``exp``'s last bit."""
        return softmax64(z, t)


class TopK:
    """Top-k: exactly the k highest-ranked ids (ties by smaller id); k above V keeps every id."""

    field = "top_k"
    check = staticmethod(check_top_k)

    def ids(self, q: list[float], k: int, order: list[int], allowed) -> list[int]:
        return [i for i in order[:k] if allowed is None or i in allowed]

    def mask(self, probs: torch.Tensor, k: int, key: torch.Tensor, allowed) -> torch.Tensor:
        if k >= probs.shape[-1]:
            return _only_allowed(torch.ones_like(probs, dtype=torch.bool), allowed)
        return _only_allowed(top_k_fast(key, k, sorted_ids=False)[0], allowed)


class TopP:
    """Nucleus sampling (Holtzman et al. 2020, §3.1): walk the ranking, adding each id and its
    probability to a running sum; stop as soon as the sum is ≥ p. The id that crosses p is
    kept; if rounding keeps the sum below p, every id is kept."""

    field = "top_p"
    check = staticmethod(check_top_p)

    def ids(self, q: list[float], p: float, order: list[int], allowed) -> list[int]:
        kept, mass = [], 0.0
        for token_id in order:
            kept.append(token_id)
            mass += q[token_id]
            if mass >= p:
                break
        return [i for i in kept if allowed is None or i in allowed]

    def mask(self, probs: torch.Tensor, p: float, key: torch.Tensor, allowed) -> torch.Tensor:
        """A ranked place is kept while the sum *before* it is < p. How many places that is
        depends only on the sorted values: :func:`top_p_fast` sums whole buckets of values and
        sorts only the bucket where the sum crosses p (the exact ranked sum decides near p);
        the first n ids by ``key`` are then kept, ties by id."""
        return _only_allowed(top_p_fast(probs, p, key), allowed)


class MinP:
    """Min-p: keep every id whose probability is ≥ min_p × (the largest probability).
    The bar rises with the model's confidence. min_p = 0 keeps all, 1 keeps the tied top."""

    field = "min_p"
    check = staticmethod(check_min_p)

    def ids(self, q: list[float], m: float, order: list[int], allowed) -> list[int]:
        bar = m * max(q)
        return [i for i in order if q[i] >= bar and (allowed is None or i in allowed)]

    def mask(self, probs: torch.Tensor, m: float, key: torch.Tensor, allowed) -> torch.Tensor:
        bar = m * probs.amax(dim=-1, keepdim=True).double()           # m × max, in float64
        if probs.dtype == torch.float32:        # q ≥ bar ⇔ q ≥ the least float32 ≥ bar
            bar32 = bar.float()
            bar32 = torch.where(bar32.double() < bar, torch.nextafter(bar32, torch.tensor(math.inf)), bar32)
            return _only_allowed(probs >= bar32, allowed)
        return _only_allowed(probs.double() >= bar, allowed)


TEMPERATURE, TOP_K, TOP_P, MIN_P = Temperature(), TopK(), TopP(), MinP()
FILTERS = (TOP_K, TOP_P, MIN_P)        # the order they run in, after the temperature


# --------------------------------------------------------------------------- one rule alone


def keep_ids(rule, probs, value, logits=None) -> list[int]:
    """Which ids ``rule`` keeps on one row (its check, then its per-row ``ids``), ranked."""
    value = rule.check(value)
    q = check_probs(probs)
    return rule.ids(q, value, *_ranking(q, logits))


def keep_mask(rule, probs: torch.Tensor | None, value, logits: torch.Tensor | None = None) -> torch.Tensor:
    """Which ids ``rule`` keeps in each row of [B, V] ``probs`` (its check, then its ``mask``).
    Top-k reads only the ranking: with ``logits`` given, ``probs`` may be None (no softmax)."""
    value = rule.check(value)
    if probs is None:
        if rule is not TOP_K or logits is None:
            raise ValueError("probs is None: only top-k with logits given can do without probabilities")
        z = checked_rows(logits)
        return rule.mask(z, value, z, _allowed(z))
    return rule.mask(check_prob_rows(probs), value, *_key_and_allowed(probs, logits))


def top_k_ids(probs, top_k: int, logits=None) -> list[int]:
    """Exactly k ids: the first k of ``ranked_ids`` (ties broken by smaller id). With
    ``logits`` (the ones ``probs`` came from): the first k by logit, never one at −inf."""
    return keep_ids(TOP_K, probs, top_k, logits)


def top_p_ids(probs, top_p: float, logits=None) -> list[int]:
    """Nucleus sampling (:class:`TopP`) on one row. With ``logits``: the walk goes in logit
    order, and an id whose logit is −inf is never kept."""
    return keep_ids(TOP_P, probs, top_p, logits)


def min_p_ids(probs, min_p: float, logits=None) -> list[int]:
    """Min-p (:class:`MinP`) on one row. With ``logits``: listed in logit order, and an id whose
    logit is −inf is never kept."""
    return keep_ids(MIN_P, probs, min_p, logits)


def top_k_mask(probs: torch.Tensor, top_k: int, logits: torch.Tensor | None = None) -> torch.Tensor:
    """[B, V] keep-mask of :class:`TopK` (the ids ``top_k_ids`` keeps, row by row)."""
    return keep_mask(TOP_K, probs, top_k, logits)


def top_p_mask(probs: torch.Tensor, top_p: float, logits: torch.Tensor | None = None) -> torch.Tensor:
    """[B, V] keep-mask of :class:`TopP`. With ``logits`` (those ``probs`` came from) it picks
    the ids by logit (softmax never reverses an order, so the count is the same) and never
    keeps a −inf logit."""
    return keep_mask(TOP_P, probs, top_p, logits)


def min_p_mask(probs: torch.Tensor, min_p: float, logits: torch.Tensor | None = None) -> torch.Tensor:
    """[B, V] keep-mask of :class:`MinP`, compared in float64. With ``logits``: never an id whose
    logit is −inf (min_p = 0 keeps the finite ones)."""
    return keep_mask(MIN_P, probs, min_p, logits)
