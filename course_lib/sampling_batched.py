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

Rank by logits, not by rounded probabilities. :func:`apply_batched` (logits in) computes the
probabilities in float64 and hands the logits to every filter (``logits=``): the ranking is by
logit, ties by id, and an id whose logit is −inf is never kept. A float32 softmax would round
every token more than ~104 nats behind the leader to exactly 0 (a leader of +60 at T = 0.5 is
120 nats ahead), and ranking those zeros by id would keep ids 0, 1, 2, … instead of the next
largest logits. The filters given only probabilities rank by probability, exactly like the
per-row functions given only probabilities. The differences from transformers' logits
processors are listed in ``course_lib.sampling``'s docstring.
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


def softmax64_batched(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """The per-row rule's softmax for a batch, in float64: exp((z − max z) / τ) divided by the
    sum added left to right (``softmax_with_temperature``; equal to its values up to the last
    bit of ``exp``)."""
    t = check_temperature(temperature)
    z = check_rows(logits).double()
    return _softmax64(z, t)


def _softmax64(z: torch.Tensor, t: float) -> torch.Tensor:
    z = z.double()
    weights = torch.exp((z - z.max(dim=-1, keepdim=True).values) / t)
    return weights / torch.cumsum(weights, dim=-1)[:, -1:]


def _key_and_allowed(probs: torch.Tensor, logits: torch.Tensor | None):
    """What to rank by (the logits when given, else the probabilities) and which ids may be
    kept at all (finite logits; None: every id)."""
    if logits is None:
        return probs, None
    check_rows(logits)
    if logits.shape != probs.shape:
        raise ValueError(f"logits has shape {tuple(logits.shape)} but probs has {tuple(probs.shape)}")
    return logits, ~torch.isneginf(logits)


def _only_allowed(mask: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
    return mask if allowed is None else mask & allowed


def greedy_ids_batched(logits: torch.Tensor) -> torch.Tensor:
    """[B, V] -> [B]: argmax per row, first (smallest) id among ties."""
    return torch.argmax(check_rows(logits), dim=-1)


def ranked_batched(probs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Sorted values and ids per row, highest first, ties by smaller id: ([B, V], [B, V]).
    (Any scores: ``ranked_batched(logits)`` ranks by logit.)"""
    return torch.sort(probs, dim=-1, descending=True, stable=True)


def _mask_from_sorted(keep_sorted: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """Move a keep-flag per *rank* back to its token id: [B, V] bool."""
    return torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)


def top_n_mask(probs: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """The first n[b] ids of each row's ranking (ties by smaller id), without a full sort:
    keep everything above the n-th value, then the smallest ids equal to it until n are kept.
    ``n``: [B, 1] integers in 1..V. ``probs`` may be any scores (logits rank the same way)."""
    kth = torch.topk(probs, int(n.max()), dim=-1).values.gather(-1, n - 1)   # [B, 1] n-th value
    above = probs > kth                                           # all of these are kept
    room = n - above.sum(dim=-1, keepdim=True)                    # places left for ties
    tied = probs == kth
    return above | (tied & (torch.cumsum(tied.int(), dim=-1) <= room))


def top_k_mask(probs: torch.Tensor, top_k: int, logits: torch.Tensor | None = None) -> torch.Tensor:
    """Exactly k ids per row, ties by smaller id (``top_k_ids``). With ``logits``: the k
    largest logits, never one that is −inf (k above the finite count keeps the finite ones)."""
    k = check_top_k(top_k)
    return _top_k(check_rows(probs, "probs"), k, *_key_and_allowed(probs, logits))


# The filters' work, on checked inputs, given what to rank by (``key``) and the ids allowed at
# all (None: every id); filter_batched checks its inputs once and calls these directly.

def _top_k(probs, k, key, allowed):
    k = min(k, probs.shape[-1])
    return _only_allowed(top_n_mask(key, torch.full((probs.shape[0], 1), k)), allowed)


def top_k_strict_cut_mask(logits: torch.Tensor, top_k: int) -> torch.Tensor:
    """nanoGPT's cut: keep logits not below the k-th largest (ties kept) (``top_k_strict_cut``)."""
    k = min(check_top_k(top_k), check_rows(logits).shape[-1])
    kth = torch.topk(logits, k, dim=-1).values[:, -1:]         # [B, 1]
    return ~(logits < kth)


def _running_sums(probs: torch.Tensor):
    """Sorted probabilities, their ids and float64 running sums (left to right)."""
    values, order = ranked_batched(probs)
    return values, order, torch.cumsum(values.double(), dim=-1)


def top_p_mask(probs: torch.Tensor, top_p: float, logits: torch.Tensor | None = None) -> torch.Tensor:
    """Nucleus rule (``top_p_ids``): a ranked place is kept while the sum *before* it is < p,
    which keeps the shortest prefix reaching ≥ p, the crossing id included.

    How many places that is depends only on the sorted *values*, so it is found from
    ``torch.topk`` prefixes (1,024 values, then 8× more until every row reaches p) rather than
    a full sort; :func:`top_n_mask` then picks that many ids with the tie-break by id. With
    ``logits`` (those ``probs`` came from), it picks them by logit (softmax never reverses an
    order, so the sorted values, and the count, are the same) and never keeps a −inf logit.
    """
    p = check_top_p(top_p)
    return _top_p(check_rows(probs, "probs"), p, *_key_and_allowed(probs, logits))


def _top_p(probs, p, key, allowed):
    V = probs.shape[-1]
    width = min(V, 1024)
    while True:
        values = torch.topk(probs, width, dim=-1).values           # [B, width], sorted
        cum = torch.cumsum(values.double(), dim=-1)                # left to right, float64
        if width == V or bool((cum[:, -1] >= p).all()):
            break
        width = min(V, width * 8)
    before = torch.cat([torch.zeros_like(cum[:, :1]), cum[:, :-1]], dim=-1)
    n = (before < p).sum(dim=-1, keepdim=True)                     # [B, 1] places kept, ≥ 1
    return _only_allowed(top_n_mask(key, n), allowed)


def gpt2_legacy_top_p_mask(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """GPT-2's old ``top_p_logits`` (``gpt2_legacy_top_p_ids``): cutoff index =
    max(count(cum ≤ p) − 1, 0); keep probabilities ≥ the value at that index."""
    p = check_top_p(top_p)
    values, _, cum = _running_sums(check_rows(probs, "probs"))
    cutoff = ((cum <= p).sum(dim=-1, keepdim=True) - 1).clamp(min=0)    # [B, 1]
    threshold = values.gather(-1, cutoff)                                # [B, 1]
    return probs >= threshold


def min_p_mask(probs: torch.Tensor, min_p: float, logits: torch.Tensor | None = None) -> torch.Tensor:
    """Keep p ≥ min_p × (row maximum), compared in float64 (``min_p_ids``). With ``logits``:
    never an id whose logit is −inf (min_p = 0 keeps the finite ones)."""
    m = check_min_p(min_p)
    return _min_p(check_rows(probs, "probs"), m, *_key_and_allowed(probs, logits))


def _min_p(probs, m, key, allowed):
    q = probs.double()
    return _only_allowed(q >= m * q.max(dim=-1, keepdim=True).values, allowed)


def renormalize_batched(probs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Kept probabilities divided by their mass (added in id order), others 0: float64 [B, V]."""
    kept = torch.where(mask, probs.double(), torch.zeros((), dtype=torch.float64))
    mass = torch.cumsum(kept, dim=-1)[:, -1:]                  # [B, 1], same order as the loop
    if (mass <= 0).any():
        raise ValueError("mask keeps no probability mass in some row")
    return kept / mass


def filter_batched(rule: SamplingRule, probs: torch.Tensor,
                   logits: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``SamplingRule.filter`` for a batch: ``(keep-mask [B, V], renormalised float64 [B, V])``.
    With ``logits`` (those ``probs`` came from) every stage ranks by logit and a −inf logit is
    never kept, as in ``SamplingRule.filter(probs, logits=...)``."""
    current = check_rows(probs, "probs").double()
    return _filter(rule, current, *_key_and_allowed(current, logits))   # inputs checked once


def _filter(rule: SamplingRule, current: torch.Tensor, key, allowed):
    mask = torch.ones_like(current, dtype=torch.bool) if allowed is None else allowed.clone()
    # the stages of top_k_mask, top_p_mask and min_p_mask
    stages = [(_top_k, rule.top_k), (_top_p, rule.top_p), (_min_p, rule.min_p)]
    if rule.greedy:
        stages = [(_top_k, 1)]
    for stage, value in stages:
        if value is None:
            continue
        mask &= stage(current, value, key, allowed)
        current = renormalize_batched(current, mask)
    return mask, current


def apply_batched(rule: SamplingRule, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``SamplingRule.apply`` for a batch of logits [B, V]: float64 softmax at the rule's
    temperature (or a greedy one-hot), then :func:`filter_batched` ranking by the logits.
    Keeps, row for row, the ids ``rule.apply(logits[b]).kept`` keeps — also when a float32
    softmax would underflow."""
    z = check_rows(logits)
    if rule.greedy:
        best = torch.argmax(z, dim=-1)
        probs = torch.nn.functional.one_hot(best, z.shape[-1]).double()
    else:
        probs = _softmax64(z, rule.temperature)            # rule's temperature checked by SamplingRule
    return _filter(rule, probs, z, ~torch.isneginf(z))


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
