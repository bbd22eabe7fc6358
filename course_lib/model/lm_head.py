"""From a context vector to one score per vocabulary entry: the output layer.

Taught in notebook 05 (lm_head).
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn


def logit_terms(h: torch.Tensor, weight_row: torch.Tensor, bias: float):
    """z[j] written out: the products h[i]·W[j, i], then their sum plus the bias.

    Returns ``(terms, logit)`` as Python floats, computed in float64 for display.
    """
    terms = [float(a) * float(b) for a, b in zip(h.tolist(), weight_row.tolist())]
    return terms, math.fsum(terms) + float(bias)


def dot_and_cosine(h: torch.Tensor, w: torch.Tensor) -> dict:
    """The dot product h·w next to its parts ‖h‖, ‖w‖ and cos θ (float64)."""
    h, w = h.double(), w.double()
    dot = float(h @ w)
    norm_h, norm_w = float(h.norm()), float(w.norm())
    cosine = float(torch.nn.functional.cosine_similarity(h, w, dim=0))
    return {"dot": dot, "norm_h": norm_h, "norm_w": norm_w, "cosine": cosine,
            "norms_times_cosine": norm_h * norm_w * cosine}


def output_table_parameters(vocab_size: int, width: int, tied: bool) -> int:
    """Weights in the input table plus the output layer, counting a shared table once.

    Built on the ``meta`` device: the tables have their real shapes but no memory. The input
    table starts from an empty (V, D) tensor: ``nn.Embedding(V, D, device="meta")`` would draw
    its random start on that device, which loads torch's compiler first (a second or two).
    """
    token_embedding = nn.Embedding.from_pretrained(torch.empty(vocab_size, width, device="meta"),
                                                   freeze=False)                # (V, D)
    lm_head = nn.Linear(width, vocab_size, bias=False, device="meta")      # weight (V, D)
    if tied:
        lm_head.weight = token_embedding.weight                            # one table, two roles
    params = {id(p): p for m in (token_embedding, lm_head) for p in m.parameters()}
    return sum(p.numel() for p in params.values())


def softmax_steps(scores) -> dict:
    """Scores -> exponentials -> probabilities, each step kept (float64)."""
    scores = torch.as_tensor(scores, dtype=torch.float64)
    exponentials = torch.exp(scores)
    probs = exponentials / exponentials.sum()
    return {"scores": scores, "exponentials": exponentials, "probs": probs}
