"""Next-token training loss: shifted targets, −log p of each target, their mean, gradients.

Taught in notebook 06 (loss).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def shift_for_next_token(text_ids):
    """a|b|a|b -> inputs [a, b, a] and targets [b, a, b]: each position's answer is the next id."""
    text_ids = list(text_ids)
    return text_ids[:-1], text_ids[1:]


def position_losses(logits: torch.Tensor, targets) -> torch.Tensor:
    """−log p(target) at every position: logits (B, T, V), targets (B, T) -> (B·T,)."""
    V = logits.shape[-1]
    targets = torch.as_tensor(targets, dtype=torch.long)
    return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), reduction="none")


def mean_loss(logits: torch.Tensor, targets) -> torch.Tensor:
    """The training loss: ``F.cross_entropy`` over all positions, averaged."""
    V = logits.shape[-1]
    targets = torch.as_tensor(targets, dtype=torch.long)
    return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))


def cross_entropy_by_hand(logits: torch.Tensor, targets) -> torch.Tensor:
    """The same loss written out: a stable log-softmax, pick the target, negate, average."""
    V = logits.shape[-1]
    z = logits.reshape(-1, V)                                      # (N, V)
    targets = torch.as_tensor(targets, dtype=torch.long).reshape(-1)
    shifted = z - z.max(dim=-1, keepdim=True).values               # largest logit becomes 0
    log_probs = shifted - shifted.exp().sum(dim=-1, keepdim=True).log()
    picked = log_probs[torch.arange(len(targets)), targets]        # log p(target) per position
    return -picked.mean()


# Which parameters the article checks, by the names of course_lib.model.GPT.
GRADIENT_GROUPS = {
    "token_embedding": ["token_embedding.weight"],
    "position_embedding": ["position_embedding.weight"],
    "query": ["blocks.0.attn.query.weight"],
    "key": ["blocks.0.attn.key.weight"],
    "value": ["blocks.0.attn.value.weight"],
    "mlp": ["blocks.0.mlp.up.weight", "blocks.0.mlp.down.weight"],
    "lm_head": ["lm_head.weight"],
}


def gradient_table(model) -> list[dict]:
    """After ``loss.backward()``: every parameter's gradient norm and whether any entry is nonzero."""
    rows = []
    for name, p in model.named_parameters():
        grad = p.grad
        rows.append({"name": name, "shape": list(p.shape),
                     "grad_norm": 0.0 if grad is None else float(grad.norm()),
                     "nonzero": grad is not None and bool((grad != 0).any())})
    return rows


def gradient_groups_nonzero(model) -> dict:
    """For each group the article names: did every weight in it get a nonzero gradient?"""
    nonzero = {row["name"]: row["nonzero"] for row in gradient_table(model)}
    return {group: all(nonzero[name] for name in names) for group, names in GRADIENT_GROUPS.items()}


def backward_without_step(model, ids, targets) -> dict:
    """Run forward, ``loss.backward()`` and no optimizer step.

    Returns ``loss``, ``groups`` (see :func:`gradient_groups_nonzero`), ``table`` and
    ``weights_unchanged`` (every parameter equals its value before the backward pass).
    """
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    logits = model(ids)
    loss = mean_loss(logits, targets)
    loss.backward()
    unchanged = all(torch.equal(before[name], p.detach()) for name, p in model.named_parameters())
    return {"loss": loss.detach(), "groups": gradient_groups_nonzero(model),
            "table": gradient_table(model), "weights_unchanged": unchanged}
