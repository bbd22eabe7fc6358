"""Logits → probabilities, the ranking every filter walks, renormalising: one row, then a batch.

Taught in notebook 07 (sampling: softmax with temperature, the overflow of a naive softmax,
greedy = argmax, ranked order). The per-row functions take one row as a list of floats (a 1-D
tensor works too) and are loops a learner can follow; the ``*_batched`` ones do the same over a
[B, V] tensor, vectorised, with the same results:

* ranking: ``torch.sort(..., descending=True, stable=True)`` keeps equal values in id order,
  the per-row tie-break;
* masses for renormalising: the last running sum of the masked row, added in id order, in
  float64, like the per-row loop that adds Python floats one at a time.
"""
from __future__ import annotations

import math

import torch

from ..tokens.ids import check_ids
from .checks import as_float_list, check_logits, check_prob_rows, check_probs, check_rows, check_temperature

# --------------------------------------------------------------------------- one row


def softmax_with_temperature(logits, temperature: float = 1.0) -> list[float]:
    """p[i] = exp((z[i] − max z) / τ) / Σⱼ exp((z[j] − max z) / τ).

    Subtracting the maximum first changes nothing mathematically (the common factor
    exp(−max z / τ) cancels) but keeps every exponent ≤ 0, so nothing overflows. τ must be
    finite and > 0; a −inf logit gets probability exactly 0.
    """
    z = check_logits(logits)
    t = check_temperature(temperature)
    top = max(z)
    weights = [math.exp((v - top) / t) for v in z]
    total = 0.0
    for w in weights:
        total += w
    return [w / total for w in weights]


def naive_softmax(logits) -> list[float]:
    """p[i] = exp(z[i]) / Σ exp(z[j]) *without* subtracting the maximum (to show the overflow:
    a logit above ~709 makes exp return inf in float64, and inf / inf is NaN)."""
    z = check_logits(logits)
    weights = []
    for v in z:
        try:
            weights.append(math.exp(v))
        except OverflowError:                 # Python raises where numpy/torch give inf
            weights.append(math.inf)
    total = sum(weights)
    return [w / total if math.isfinite(total) else math.nan for w in weights]


def entropy(probs) -> float:
    """How spread a distribution is: −Σ p ln p in nats (0 ln 0 counts as 0).

    0 when one id holds all the mass; ln V when all V ids are equally likely.
    """
    return -sum(p * math.log(p) for p in check_probs(probs) if p > 0)


def greedy_id(logits) -> int:
    """The id with the largest logit (= the largest probability, softmax keeps the order).
    Ties break towards the smaller id, like ``torch.argmax``. No temperature involved."""
    z = check_logits(logits)
    return z.index(max(z))


def ranked_ids(probs) -> list[int]:
    """All ids sorted by probability, highest first; equal probabilities by smaller id.
    (Works for any scores: ``ranked_ids(logits)`` ranks by logits.)"""
    p = as_float_list(probs, "probs")
    # Python's sort is stable, also with reverse=True: equal values keep their id order.
    return sorted(range(len(p)), key=p.__getitem__, reverse=True)


def renormalize(probs, kept) -> list[float]:
    """Keep the ids in ``kept``, divide by the mass they hold, set every other id to 0.

    The result keeps the original id order (index = token id) and sums to 1. The mass is
    added up in id order. ``kept`` must hold at least one id with positive probability.
    """
    p = check_probs(probs)
    allowed = set(check_ids(kept, "kept", ordered=False))
    if not allowed:
        raise ValueError("kept is empty: keep at least one id")
    if min(allowed) < 0 or max(allowed) >= len(p):
        raise ValueError(f"kept holds ids outside 0..{len(p) - 1}")
    mass = 0.0
    for i, v in enumerate(p):
        if i in allowed:
            mass += v
    if mass <= 0:
        raise ValueError("kept holds no probability mass")
    return [v / mass if i in allowed else 0.0 for i, v in enumerate(p)]


# --------------------------------------------------------------------------- a batch [B, V]


def softmax_with_temperature_batched(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Row-wise stable softmax of logits / τ, in the logits' dtype: [B, V] -> [B, V].

    The fast path of sampling (no gradient flows through it):

    * z / τ is computed as z × (1/τ): cheaper than a division, and at most the last bit of z / τ
      apart (none when 1/τ is exact, as for τ = 0.8 or 0.5), far below the float32 softmax's own
      rounding. (A logit beyond ~1e38 × τ, or a τ so small that z / τ overflows, is redone below.)
    * ``torch.softmax`` (which subtracts each row's maximum itself) runs in place on that buffer;
    * float16 / bfloat16 logits are divided and exponentiated in float32 (z / τ rounded to
      bfloat16 near 85 can be off by 0.25, a 28 % error in a probability);
    * the input is checked through the output: a row holding NaN or +inf, or only −inf, has a
      NaN sum of exponentials, which makes every probability of the row NaN — so the first
      column tells, and only then does the full check run (for its message).
    """
    t = check_temperature(temperature)
    if not (isinstance(logits, torch.Tensor) and logits.is_floating_point() and logits.dim() == 2
            and logits.numel() > 0):
        check_rows(logits)                                     # raises, naming what is wrong
    logits = logits.detach()
    wide = logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits
    probs = torch.softmax(wide, dim=-1) if t == 1.0 else wide * (1.0 / t)
    if t != 1.0:
        torch.softmax(probs, dim=-1, out=probs)
    if probs.dtype != logits.dtype:
        probs = probs.to(logits.dtype)
    return probs if not math.isnan(probs[0, 0] if len(probs) == 1 else probs[:, 0].sum()) else _redone(logits, t)


def _redone(logits: torch.Tensor, t: float) -> torch.Tensor:
    """A NaN in the first column: invalid logits raise (NaN, +inf, a row all −inf); valid ones
    whose z / τ overflowed (τ tiny, or 1/τ itself inf) take the per-row rule's (z − max z) / τ
    in float64, where a division cannot turn 0 into 0 × inf = NaN."""
    check_rows(logits)
    z64 = logits.double()
    shifted = (z64 - z64.amax(dim=-1, keepdim=True)) / t
    return torch.softmax(shifted, dim=-1).to(logits.dtype)


def softmax64_batched(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """The per-row rule's softmax for a batch, in float64: exp((z − max z) / τ) divided by the
    sum added left to right (:func:`softmax_with_temperature`; equal to its values up to the
    last bit of ``exp``)."""
    t = check_temperature(temperature)
    z = check_rows(logits).double()
    weights = torch.exp((z - z.max(dim=-1, keepdim=True).values) / t)
    return weights / torch.cumsum(weights, dim=-1)[:, -1:]


def greedy_ids_batched(logits: torch.Tensor) -> torch.Tensor:
    """[B, V] -> [B]: argmax per row, first (smallest) id among ties."""
    return torch.argmax(check_rows(logits), dim=-1)


def ranked_batched(probs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Sorted values and ids per row, highest first, ties by smaller id: ([B, V], [B, V]).
    (Any scores: ``ranked_batched(logits)`` ranks by logit.)"""
    return torch.sort(probs, dim=-1, descending=True, stable=True)


def renormalize_batched(probs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Kept probabilities divided by their mass (added in id order), others 0: float64 [B, V].
    ``probs``: rows of probabilities (checked as :func:`renormalize` checks one row);
    ``mask``: a bool tensor of the same shape, True for every id kept."""
    probs = check_prob_rows(probs)
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise ValueError(f"mask must be a bool tensor (True: keep the id), got "
                         f"{type(mask).__name__}{' of dtype ' + str(mask.dtype) if isinstance(mask, torch.Tensor) else ''}")
    if mask.shape != probs.shape:
        raise ValueError(f"mask has shape {tuple(mask.shape)} but probs has {tuple(probs.shape)}")
    return renormalize_rows(probs, mask)


def renormalize_rows(probs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """:func:`renormalize_batched` on inputs already checked (the pipeline's stages)."""
    kept = torch.where(mask, probs.double(), torch.zeros((), dtype=torch.float64))
    mass = torch.cumsum(kept, dim=-1)[:, -1:]                  # [B, 1], same order as the loop
    if (mass <= 0).any():
        raise ValueError("mask keeps no probability mass in some row")
    return kept / mass


def random_logit_batch(rows: int = 4, vocab: int = 50_257, scale: float = 3.0, seed: int = 0) -> torch.Tensor:
    """A seeded (rows, vocab) batch of GPT-2-sized logits, N(0, scale²), in float64.

    Notebook 07's batched example. float64, so that the rules' decisions (a running sum
    against p, a probability against the min-p bar) do not depend on the CPU's float32
    kernels; ``tests/test_margins.py`` checks each is far from flipping."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, vocab, generator=generator, dtype=torch.float64) * scale
