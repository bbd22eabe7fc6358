"""The sampling rules of ``course_lib.sampling`` over a batch: logits or probabilities [B, V].

Taught in notebook 07 (the last section, "the same rules at GPT-2's size"). Every function is
vectorised (sorting, cumulative sums, scatters: no Python loop over the vocabulary) and keeps
*exactly* the same ids as the per-row teaching version given the same row:

* ranking: ``torch.sort(..., descending=True, stable=True)`` keeps equal values in id order,
  the teaching rule's tie-break;
* running sums: ``torch.cumsum`` in float64 adds left to right, like the teaching loop that
  adds Python floats (float64) one at a time;
* masses for renormalising: the last running sum of the masked row, added in id order.

Filters return a boolean keep-mask [B, V]; ``renormalize_batched`` turns it into a float64
distribution with excluded ids at 0.
"""
from __future__ import annotations

import torch

from .sampling import (SamplingRule, check_min_p, check_temperature, check_top_k, check_top_p)


def check_rows(x: torch.Tensor, name: str = "logits") -> torch.Tensor:
    """Rule of ``check_logits`` for every row of a [B, V] float tensor."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise ValueError(f"{name} must be a float tensor")
    if x.dim() != 2:
        raise ValueError(f"{name} must have shape [B, V], got {tuple(x.shape)}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {tuple(x.shape)}")
    if torch.isnan(x).any():
        raise ValueError(f"{name} contains NaN")
    if torch.isposinf(x).any():
        raise ValueError(f"{name} contains +inf")
    if torch.isneginf(x).all(dim=-1).any():
        raise ValueError(f"{name} has a row that is all -inf: no token could be chosen")
    return x


def softmax_with_temperature_batched(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Row-wise stable softmax of logits / τ, in the logits' dtype: [B, V] -> [B, V]."""
    t = check_temperature(temperature)
    z = check_rows(logits)
    shifted = (z - z.max(dim=-1, keepdim=True).values) / t     # every exponent ≤ 0
    return torch.softmax(shifted, dim=-1)


def greedy_ids_batched(logits: torch.Tensor) -> torch.Tensor:
    """[B, V] -> [B]: argmax per row, first (smallest) id among ties."""
    return torch.argmax(check_rows(logits), dim=-1)


def ranked_batched(probs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Sorted values and ids per row, highest first, ties by smaller id: ([B, V], [B, V])."""
    return torch.sort(probs, dim=-1, descending=True, stable=True)


def _mask_from_sorted(keep_sorted: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """Move a keep-flag per *rank* back to its token id: [B, V] bool."""
    return torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)


def top_n_mask(probs: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """The first n[b] ids of each row's ranking (ties by smaller id), without a full sort:
    keep everything above the n-th value, then the smallest ids equal to it until n are kept.
    ``n``: [B, 1] integers in 1..V."""
    kth = torch.topk(probs, int(n.max()), dim=-1).values.gather(-1, n - 1)   # [B, 1] n-th value
    above = probs > kth                                           # all of these are kept
    room = n - above.sum(dim=-1, keepdim=True)                    # places left for ties
    tied = probs == kth
    return above | (tied & (torch.cumsum(tied.int(), dim=-1) <= room))


def top_k_mask(probs: torch.Tensor, top_k: int) -> torch.Tensor:
    """Exactly k ids per row, ties by smaller id (``top_k_ids``)."""
    k = min(check_top_k(top_k), check_rows(probs, "probs").shape[-1])
    return top_n_mask(probs, torch.full((probs.shape[0], 1), k))


def top_k_strict_cut_mask(logits: torch.Tensor, top_k: int) -> torch.Tensor:
    """nanoGPT's cut: keep logits not below the k-th largest (ties kept) (``top_k_strict_cut``)."""
    k = min(check_top_k(top_k), check_rows(logits).shape[-1])
    kth = torch.topk(logits, k, dim=-1).values[:, -1:]         # [B, 1]
    return ~(logits < kth)


def _running_sums(probs: torch.Tensor):
    """Sorted probabilities, their ids and float64 running sums (left to right)."""
    values, order = ranked_batched(probs)
    return values, order, torch.cumsum(values.double(), dim=-1)


def top_p_mask(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Nucleus rule (``top_p_ids``): a ranked place is kept while the sum *before* it is < p,
    which keeps the shortest prefix reaching ≥ p, the crossing id included.

    How many places that is depends only on the sorted *values*, so it is found from
    ``torch.topk`` prefixes (1,024 values, then 8× more until every row reaches p) rather than
    a full sort; :func:`top_n_mask` then picks that many ids with the tie-break by id.
    """
    p = check_top_p(top_p)
    V = check_rows(probs, "probs").shape[-1]
    width = min(V, 1024)
    while True:
        values = torch.topk(probs, width, dim=-1).values           # [B, width], sorted
        cum = torch.cumsum(values.double(), dim=-1)                # left to right, float64
        if width == V or bool((cum[:, -1] >= p).all()):
            break
        width = min(V, width * 8)
    before = torch.cat([torch.zeros_like(cum[:, :1]), cum[:, :-1]], dim=-1)
    n = (before < p).sum(dim=-1, keepdim=True)                     # [B, 1] places kept, ≥ 1
    return top_n_mask(probs, n)


def gpt2_legacy_top_p_mask(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """GPT-2's old ``top_p_logits`` (``gpt2_legacy_top_p_ids``): cutoff index =
    max(count(cum ≤ p) − 1, 0); keep probabilities ≥ the value at that index."""
    p = check_top_p(top_p)
    values, _, cum = _running_sums(check_rows(probs, "probs"))
    cutoff = ((cum <= p).sum(dim=-1, keepdim=True) - 1).clamp(min=0)    # [B, 1]
    threshold = values.gather(-1, cutoff)                                # [B, 1]
    return probs >= threshold


def min_p_mask(probs: torch.Tensor, min_p: float) -> torch.Tensor:
    """Keep p ≥ min_p × (row maximum), compared in float64 (``min_p_ids``)."""
    m = check_min_p(min_p)
    q = check_rows(probs, "probs").double()
    return q >= m * q.max(dim=-1, keepdim=True).values


def renormalize_batched(probs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Kept probabilities divided by their mass (added in id order), others 0: float64 [B, V]."""
    kept = torch.where(mask, probs.double(), torch.zeros((), dtype=torch.float64))
    mass = torch.cumsum(kept, dim=-1)[:, -1:]                  # [B, 1], same order as the loop
    if (mass <= 0).any():
        raise ValueError("mask keeps no probability mass in some row")
    return kept / mass


def filter_batched(rule: SamplingRule, probs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``SamplingRule.filter`` for a batch: ``(keep-mask [B, V], renormalised float64 [B, V])``."""
    current = check_rows(probs, "probs").double()
    mask = torch.ones_like(current, dtype=torch.bool)
    stages = [(top_k_mask, rule.top_k), (top_p_mask, rule.top_p), (min_p_mask, rule.min_p)]
    if rule.greedy:
        stages = [(top_k_mask, 1)]
    for stage, value in stages:
        if value is None:
            continue
        mask &= stage(current, value)
        current = renormalize_batched(current, mask)
    return mask, current


def apply_batched(rule: SamplingRule, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Temperature (or greedy one-hot), then :func:`filter_batched`."""
    if rule.greedy:
        best = greedy_ids_batched(logits)
        probs = torch.nn.functional.one_hot(best, logits.shape[-1]).to(logits.dtype)
    else:
        probs = softmax_with_temperature_batched(logits, rule.temperature)
    return filter_batched(rule, probs)


def sample_interval_batched(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """``sample_interval`` per row: probs [B, V] (rows summing to 1), u [B] in [0, 1) -> ids [B].
    Boundaries from the last positive id onward are forced to 1.0, as in the teaching rule."""
    q = check_rows(probs, "probs").double()
    if (q < 0).any() or ((q.sum(dim=-1) - 1).abs() > 1e-5).any():
        raise ValueError("probs must be ≥ 0 and each row must sum to 1")
    u = torch.as_tensor(u, dtype=torch.float64).reshape(-1, 1)
    if u.shape[0] != q.shape[0] or (u < 0).any() or (u >= 1).any():
        raise ValueError("u must hold one number in [0, 1) per row")
    boundaries = torch.cumsum(q, dim=-1)
    ids = torch.arange(q.shape[-1])
    last_positive = torch.where(q > 0, ids, -1).max(dim=-1, keepdim=True).values
    boundaries = torch.where(ids >= last_positive, torch.ones((), dtype=torch.float64), boundaries)
    return torch.searchsorted(boundaries, u, right=True).squeeze(-1)


def sample_seeded_batched(probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One ``torch.multinomial`` draw per row with a seeded generator: [B, V] -> [B]."""
    q = check_rows(probs, "probs")
    return torch.multinomial(q, num_samples=1, generator=generator).squeeze(-1)


# Plain references for the benchmark: one Python-level top-k / top-p / min-p per row.


def reference_loop(probs: torch.Tensor, rule_name: str, value) -> torch.Tensor:
    """Apply the *teaching* rule row by row (lists of floats): the benchmark's baseline."""
    from . import sampling

    rule = {"top_k": sampling.top_k_ids, "top_p": sampling.top_p_ids,
            "min_p": sampling.min_p_ids}[rule_name]
    mask = torch.zeros_like(probs, dtype=torch.bool)
    for b in range(probs.shape[0]):
        mask[b, rule(probs[b].tolist(), value)] = True
    return mask
