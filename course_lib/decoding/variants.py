"""Rules other code uses, for comparison: nanoGPT's top-k cut and GPT-2's legacy top-p.

Taught in notebook 07 (sampling: "top-k and ties", "GPT-2's own top-p"). Not part of the
pipeline (``rules.FILTERS``); each has a per-row version and a batched [B, V] one.
"""
from __future__ import annotations

import torch

from .checks import as_float_list, check_logits, check_rows, check_top_k, check_top_p
from .probs import ranked_batched, ranked_ids

# --------------------------------------------------------------------------- one row


def top_k_strict_cut(logits, top_k: int) -> list[int]:
    """nanoGPT's rule: find the k-th largest logit v, set every logit ``< v`` to −inf.

    Ties with v survive, so more than k ids can stay. Returned in ranked order (largest
    logit first, ties by smaller id). k is clipped to the vocabulary size, as nanoGPT does.
    """
    z = check_logits(logits)
    k = min(check_top_k(top_k), len(z))
    kth = sorted(z, reverse=True)[k - 1]
    kept = [i for i, v in enumerate(z) if not v < kth]
    return sorted(kept, key=lambda i: (-z[i], i))


def gpt2_legacy_cutoff(probs, top_p: float) -> tuple[int, int]:
    """GPT-2's ``top_p_logits`` (openai/gpt-2 src/sample.py, commit 9b63575):
    count = how many running sums (sorted, highest first) are ≤ p;
    cutoff index = max(count − 1, 0). Returns ``(count, cutoff_index)``."""
    p = check_top_p(top_p)
    q = as_float_list(probs, "probs")
    count, mass = 0, 0.0
    for token_id in ranked_ids(q):
        mass += q[token_id]
        if mass <= p:
            count += 1
    return count, max(count - 1, 0)


def gpt2_legacy_top_p_ids(probs, top_p: float) -> list[int]:
    """GPT-2's old rule: the value at the cutoff index becomes a threshold and every id with
    probability ≥ that threshold stays (``logits < min_value`` are removed). Where the paper
    keeps the id that crosses p, this keeps one id fewer."""
    q = as_float_list(probs, "probs")
    _, cutoff = gpt2_legacy_cutoff(q, top_p)
    threshold = q[ranked_ids(q)[cutoff]]
    return [i for i in ranked_ids(q) if q[i] >= threshold]


# --------------------------------------------------------------------------- a batch [B, V]


def top_k_strict_cut_mask(logits: torch.Tensor, top_k: int) -> torch.Tensor:
    """nanoGPT's cut: keep logits not below the k-th largest (ties kept) (``top_k_strict_cut``)."""
    k = min(check_top_k(top_k), check_rows(logits).shape[-1])
    kth = torch.topk(logits, k, dim=-1).values[:, -1:]         # [B, 1]
    return ~(logits < kth)


def gpt2_legacy_top_p_mask(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """GPT-2's old ``top_p_logits`` (``gpt2_legacy_top_p_ids``): cutoff index =
    max(count(cum ≤ p) − 1, 0); keep probabilities ≥ the value at that index."""
    p = check_top_p(top_p)
    values, _ = ranked_batched(check_rows(probs, "probs"))
    cum = torch.cumsum(values.double(), dim=-1)                          # float64 running sums
    cutoff = ((cum <= p).sum(dim=-1, keepdim=True) - 1).clamp(min=0)    # [B, 1]
    threshold = values.gather(-1, cutoff)                                # [B, 1]
    return probs >= threshold
