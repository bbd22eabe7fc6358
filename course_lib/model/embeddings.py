"""Token ids become vectors: table lookups, one-hot products and GPT-2-sized shapes.

Taught in notebook 02 (embeddings).
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


def one_hot_lookup(ids, table: torch.Tensor) -> torch.Tensor:
    """``one_hot(ids) @ table``: the same rows as ``table[ids]``, written as a matrix product.

    ids (T,) -> one-hot (T, V) -> (T, V) @ (V, D) = (T, D). Each one-hot row has a single 1,
    so the product copies one row of the table: the id is an index, not a number to compute with.
    """
    ids = torch.as_tensor(ids, dtype=torch.long)
    one_hot = F.one_hot(ids, num_classes=table.shape[0]).to(table.dtype)   # (T, V)
    return one_hot @ table                                                  # (T, D)


def rows_read(ids, table: torch.Tensor, vectors: torch.Tensor) -> list[int]:
    """For each looked-up vector, which row of ``table`` it equals (checks lookup = indexing)."""
    found = []
    for vector in vectors.reshape(-1, table.shape[1]):
        matches = [i for i in range(table.shape[0]) if torch.equal(table[i], vector)]
        if not matches:
            raise ValueError("a looked-up vector is not a row of the table")
        found.append(matches[0])
    return found


def positions_of(ids, token_id: int) -> list[int]:
    """Positions t where ids[t] == token_id."""
    return [t for t, i in enumerate(torch.as_tensor(ids).reshape(-1).tolist()) if i == token_id]


def dropout_rate(model: nn.Module) -> float:
    """The largest dropout probability anywhere in ``model`` (0.0 when it has no Dropout)."""
    return max((m.p for m in model.modules() if isinstance(m, nn.Dropout)), default=0.0)


def gpt2_sized_lookup(ids, config, seed: int = 0, device: str = "cpu") -> dict:
    """GPT-2-shaped tables with *random* numbers: only the shapes mean anything.

    Looks ``ids`` up in a (V, D) token table and scores the last position against every row
    of an output table of the same shape. Returns the tensors by name:
    ``lookup`` (T, D), ``last_context`` (1, D), ``scores`` (1, V).

    ``device="meta"``: torch's meta device, tensors with their shapes and no numbers, so no
    memory (GPT-2's float32 table alone takes 154 MB); notebook 02 shows only the shapes.
    """
    if device not in ("cpu", "meta"):
        raise ValueError(f"device must be 'cpu' (random numbers) or 'meta' (shapes only), got {device!r}")
    V, D = config.vocab_size, config.n_embd
    if device == "meta":
        token_table = torch.empty(V, D, dtype=torch.float32, device="meta")             # (V, D), no numbers
    else:
        generator = torch.Generator().manual_seed(seed)
        token_table = torch.randn(V, D, generator=generator, dtype=torch.float32).mul_(0.02)   # (V, D), like GPT-2's init
    lookup = token_table[torch.as_tensor(ids, dtype=torch.long)]        # (T, D)
    last_context = lookup[-1:]                                          # (1, D)
    scores = last_context @ token_table.T                               # (1, D) @ (D, V) = (1, V)
    return {"token_table": token_table, "lookup": lookup,
            "last_context": last_context, "scores": scores}


def the_one(values):
    """The single distinct value of ``values`` (a list when they differ, so a check fails):
    ``the_one(rows_read(...))`` is "both a's read the same row"."""
    distinct = sorted(set(values))
    return distinct[0] if len(distinct) == 1 else distinct
