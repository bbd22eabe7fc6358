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
5. **−inf, filter_value.** transformers leaves a removed id in the row at its ``filter_value``
   (−inf by default); here it is simply not in the kept set. Top-k with k above the number of
   finite logits keeps the finite ones in both.
6. **min_tokens_to_keep.** transformers' top-k, top-p and min-p take a floor on how many ids
   survive; the course's rules have none beyond their own (top-k keeps k, top-p and min-p always
   keep the first-ranked id). With a floor m, transformers keeps max(the course's count, m)
   (tests/test_upstream_transformers_logits_process.py).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .batched import check_batch, first_k, first_n, key_and_allowed, nucleus, only_allowed
from .checks import as_numpy, check_logits, check_min_p, check_prob_rows, check_probs, check_temperature, check_top_k, check_top_p
from .probs import ranked_ids, softmax64_batched, softmax_with_temperature

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


# --------------------------------------------------------------------------- the rules


class Temperature:
    """τ: divide the logits by τ before the softmax (τ < 1 sharpens, τ > 1 flattens)."""

    field = "temperature"
    check = staticmethod(check_temperature)

    def probs(self, logits, t: float) -> list[float]:
        """One row: softmax(z / τ) in float64, as a list (``probs.softmax_with_temperature``)."""
        return softmax_with_temperature(logits, t)

    def probs_batched(self, z: torch.Tensor, t: float) -> torch.Tensor:
        """[B, V] logits -> float64 [B, V], the per-row values up to ``exp``'s last bit."""
        return softmax64_batched(z, t)


class TopK:
    """Top-k: exactly the k highest-ranked ids (ties by smaller id); k above V keeps every id."""

    field = "top_k"
    check = staticmethod(check_top_k)

    def ids(self, q: list[float], k: int, order: list[int], allowed) -> list[int]:
        return [i for i in order[:k] if allowed is None or i in allowed]

    def mask(self, probs: torch.Tensor, k: int, key: torch.Tensor, allowed) -> torch.Tensor:
        """[B, V]: the first k ids by ``key`` (``batched.first_k``: one partition per row; a tie
        at the k-th value goes to the smaller ids)."""
        if k >= probs.shape[-1]:
            return only_allowed(torch.ones_like(probs, dtype=torch.bool), allowed)
        return only_allowed(first_k(key, k), allowed)


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
        """[B, V]: how many places n a row keeps depends only on its sorted values (``batched.nucleus``
        adds each row's largest values in ranked order in float64, as :meth:`ids` does); the ids
        kept are those at or above the n-th largest probability — exactly n of them unless the
        n-th value is tied with the next, where the first n by ``key`` are kept, ties by id."""
        a = as_numpy(probs)
        n, kth, tied = nucleus(a, p)                                      # [B] each
        mask = torch.from_numpy(a >= kth[:, None])
        rows = torch.from_numpy(np.flatnonzero(tied))
        if len(rows):
            mask[rows] = first_n(key[rows], torch.from_numpy(n)[rows, None])
        return only_allowed(mask, allowed)


class MinP:
    """Min-p: keep every id whose probability is ≥ min_p × (the largest probability).
    The bar rises with the model's confidence. min_p = 0 keeps all, 1 keeps the tied top."""

    field = "min_p"
    check = staticmethod(check_min_p)

    def ids(self, q: list[float], m: float, order: list[int], allowed) -> list[int]:
        bar = m * max(q)
        return [i for i in order if q[i] >= bar and (allowed is None or i in allowed)]

    def mask(self, probs: torch.Tensor, m: float, key: torch.Tensor, allowed) -> torch.Tensor:
        """[B, V]: q ≥ m × max q, decided in float64 as :meth:`ids` decides, in one comparison
        per row: a float32 row with the least float32 ≥ the float64 bar (the same answer, and
        numpy compares float32 values several times faster than it widens them)."""
        a = as_numpy(probs)
        bar = m * a.max(axis=-1, keepdims=True).astype(np.float64)       # [B, 1]
        low = bar.astype(a.dtype)                                         # rounded to nearest
        low = np.where(low < bar, np.nextafter(low, a.dtype.type(np.inf)), low)
        return only_allowed(torch.from_numpy(a >= low), allowed)


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
        z, allowed = check_batch(logits)
        return rule.mask(z, value, z, allowed)
    probs = check_prob_rows(probs)
    return rule.mask(probs, value, *key_and_allowed(probs, logits))


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
