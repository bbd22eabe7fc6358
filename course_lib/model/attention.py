"""Inside one Transformer block, written out step by step: causal attention and LayerNorm.

Taught in notebooks 03 (attention) and 04 (block). ``course_lib.model.gpt`` does the same
computations in its forward pass; these helpers repeat them one line at a time so a
notebook can show each intermediate and compare it with the model's trace.
"""
from __future__ import annotations

import math

import torch


def causal_mask(T: int) -> torch.Tensor:
    """(T, T) booleans, True where the key is in the query's future (column > row)."""
    rows = torch.arange(T).unsqueeze(1)      # (T, 1) query positions
    cols = torch.arange(T).unsqueeze(0)      # (1, T) key positions
    return cols > rows


def attention_by_hand(x: torch.Tensor, attn) -> dict:
    """One head of causal self-attention on x (T, D), with ``attn``'s weights.

    Returns ``q``, ``k``, ``v`` (T, d), ``scores`` = q kᵀ / sqrt(d), ``masked`` (future = −∞),
    ``weights`` (row softmax), ``heads`` = weights @ v and ``output`` (after W_o), all (T, ·).
    Needs a single-head module (the five-token model has one head).
    """
    if attn.n_head != 1:
        raise ValueError("attention_by_hand shows one head; this module has several")
    T = x.shape[0]
    q = attn.query(x)                                        # (T, d)
    k = attn.key(x)                                          # (T, d)
    v = attn.value(x)                                        # (T, d)
    scores = (q @ k.T) / math.sqrt(attn.head_dim)            # (T, T)
    masked = scores.masked_fill(causal_mask(T), float("-inf"))
    weights = torch.softmax(masked, dim=-1)                  # each row sums to 1
    heads = weights @ v                                      # (T, d): weighted sum of values
    output = attn.output(heads)                              # (T, D)
    return {"q": q, "k": k, "v": v, "scores": scores, "masked": masked,
            "weights": weights, "heads": heads, "output": output}


def future_is_zero(weights: torch.Tensor) -> bool:
    """Is every attention weight on a future position exactly 0? weights (..., T, T)."""
    T = weights.shape[-1]
    return bool((weights[..., causal_mask(T)] == 0).all())


def layer_norm_by_hand(x: torch.Tensor, eps: float = 1e-5) -> dict:
    """LayerNorm with scale 1 and offset 0, per position: x (T, D).

    ``mean`` and ``var`` (biased, divide by D) are over the D features of each row only;
    ``out`` = (x − mean) / sqrt(var + eps).
    """
    mean = x.mean(dim=-1, keepdim=True)                          # (T, 1)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)           # (T, 1)
    out = (x - mean) / torch.sqrt(var + eps)                     # (T, D)
    return {"mean": mean.squeeze(-1), "var": var.squeeze(-1), "out": out}


def layer_norm_is_per_position(layer_norm, x: torch.Tensor) -> bool:
    """Does normalising all rows at once equal normalising each row on its own? x (T, D)."""
    with torch.no_grad():
        together = layer_norm(x)
        alone = torch.cat([layer_norm(x[t:t + 1]) for t in range(x.shape[0])])
    return torch.equal(together, alone)
