"""A small, readable GPT: the one model file of the course.

Taught in notebooks 02 (embeddings), 03 (attention), 04 (block), 05 (lm_head), 06 (loss)
and 07 (sampling, where the KV cache appears). The same code runs three models:

* the interface article's hand-set five-token model (``course_lib.toys.five_token``),
* the lab article's hand-set twelve-token model (``course_lib.toys.lab``),
* GPT-2 small's architecture (``course_lib.gpt2``).

The layout follows GPT-2 / nanoGPT: token + learned absolute position embeddings, Pre-Norm
blocks ``x + attn(ln_1(x))`` then ``x + mlp(ln_2(x))``, a final LayerNorm and an output layer.

Shapes use B = batch, T = sequence length, D = width (n_embd), H = heads, d = D / H,
V = vocabulary size.

Note for maintainers: the hand-set models run in float64 and reproduce published float32
digits as the float32 rounding of their results, each far from any rounding boundary
(``course_lib.figures.margins``, ``tests/test_margins.py``). Change an operation and run
``pytest tests`` to see whether the figures and their margins still hold.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class GPTConfig:
    """Everything that fixes the shape of a model (not its weights)."""

    vocab_size: int = 5          # V: number of token ids
    n_positions: int = 8         # rows of the position table = longest sequence
    n_embd: int = 4              # D: features per position
    n_head: int = 1              # H: attention heads, each of width D / H
    n_layer: int = 1             # number of Pre-Norm blocks
    mlp_hidden: int = 16         # width of the MLP's hidden layer (GPT-2: 4 × D)
    activation: str = "relu"     # "relu", "gelu" (exact erf) or "gelu_tanh" (GPT-2)
    layer_norm_eps: float = 1e-5
    bias: bool = True            # biases in the attention and MLP Linear layers
    head_bias: bool = True       # bias in lm_head (the toys have one; GPT-2 has none)
    tie_weights: bool = False    # lm_head.weight is the token table (GPT-2: True)

    def __post_init__(self):
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd={self.n_embd} must be divisible by n_head={self.n_head}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}")

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


ACTIVATIONS = {
    "relu": nn.ReLU,
    "gelu": lambda: nn.GELU(approximate="none"),
    "gelu_tanh": lambda: nn.GELU(approximate="tanh"),
}


class KVCache:
    """Keys and values of the positions seen so far, one (k, v) pair per layer.

    Each layer's keys and values are (B, H, T_past, d). With the cache, a new token computes
    one row instead of re-running the whole sequence (notebook 07). Numbers kept per token:
    2 (k and v) × n_layer × n_embd.

    Storage is allocated once per layer for ``length`` positions (``model.new_cache(length)``;
    without it, for what the first call needs) and grows by doubling when full: appending a
    token writes one row in place instead of copying every earlier row (``torch.cat``).
    """

    def __init__(self, n_layer: int, length: int | None = None):
        self.length = length                 # positions to make room for (None: grow as needed)
        self.store: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * n_layer  # (B, H, room, d)
        self.filled = [0] * n_layer          # positions held, per layer
        self.owner: int | None = None        # id() of the model that first filled it

    @property
    def layers(self) -> list[tuple[torch.Tensor, torch.Tensor] | None]:
        """Per layer, (k, v) of the positions held, each (B, H, T_past, d) (views of the storage)."""
        return [None if kv is None else (kv[0][:, :, :n], kv[1][:, :, :n])
                for kv, n in zip(self.store, self.filled)]

    def check_use(self, model, batch: int) -> None:
        """A cache holds one model's keys for one batch: reusing it with another model or
        another batch size raises a ``ValueError`` that says so (not torch's size mismatch)."""
        if len(self.store) != model.config.n_layer:
            raise ValueError(f"cache was made for a model with {len(self.store)} layers, this model "
                             f"has {model.config.n_layer}: use model.new_cache()")
        if self.owner is not None and self.owner != id(model):
            raise ValueError("cache belongs to another model: a KV cache holds one model's keys and "
                             "values; use this model's own model.new_cache()")
        if len(self) and self.store[-1][0].shape[0] != batch:
            raise ValueError(f"cache holds a batch of {self.store[-1][0].shape[0]} sequence(s), the ids "
                             f"have {batch}: a KV cache serves one batch; start a new one with "
                             f"model.new_cache()")
        self.owner = id(model)

    def __len__(self) -> int:
        """How many positions the cache holds.

        Read from the last layer, which is filled last: while a forward pass is running,
        the layers before it already hold the new positions.
        """
        return self.filled[-1]

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        """Add the new positions' k, v (B, H, T, d) to layer ``layer``; return all keys and
        values, (B, H, T_past + T, d)."""
        old, n, T = self.store[layer], self.filled[layer], k.shape[2]
        if old is None or n + T > old[0].shape[2]:            # first call, or full: make room
            room = max(n + T, self.length or 0, 2 * old[0].shape[2] if old is not None else 0)
            grown = tuple(t.new_empty(t.shape[:2] + (room,) + t.shape[3:]) for t in (k, v))
            if old is not None:
                grown[0][:, :, :n] = old[0][:, :, :n]
                grown[1][:, :, :n] = old[1][:, :, :n]
            self.store[layer] = old = grown
        old[0][:, :, n:n + T] = k
        old[1][:, :, n:n + T] = v
        self.filled[layer] = n + T
        return old[0][:, :, :n + T], old[1][:, :, :n + T]

    def numbers_per_token(self) -> int:
        """Floats stored for each cached token, over all layers, heads, keys and values."""
        total = 0
        for kv in self.store:
            if kv is not None:
                total += 2 * kv[0].shape[1] * kv[0].shape[3]
        return total


class CausalSelfAttention(nn.Module):
    """Masked multi-head self-attention (notebook 03)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        D = config.n_embd
        self.n_head = config.n_head
        self.head_dim = config.head_dim
        self.query = nn.Linear(D, D, bias=config.bias)   # W_q
        self.key = nn.Linear(D, D, bias=config.bias)     # W_k
        self.value = nn.Linear(D, D, bias=config.bias)   # W_v
        self.output = nn.Linear(D, D, bias=config.bias)  # W_o: heads back to D features

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, D) -> (B, H, T, d)"""
        B, T, _ = x.shape
        return x.view(B, T, self.n_head, self.head_dim).transpose(1, 2)

    def forward(self, x, cache: KVCache | None = None, layer: int = 0, trace: dict | None = None,
                last_only: bool = False):
        """``last_only=True``: only the last position asks (its query), (B, 1, D) out; every
        position still gives its key and value."""
        B, T, D = x.shape                                   # x is LN_1's output, (B, T, D)
        past = len(cache) if cache is not None else 0       # positions already cached
        q = self.split_heads(self.query(x[:, -1:] if last_only else x))   # (B, H, T, d) or (B, H, 1, d)
        k = self.split_heads(self.key(x))                   # (B, H, T, d)
        v = self.split_heads(self.value(x))                 # (B, H, T, d)
        if cache is not None:
            k, v = cache.append(layer, k, v)                # (B, H, past + T, d)
        # every query against every key, scaled by sqrt(d)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)  # (B, H, T, past + T)
        # causal mask: query at absolute position past + i may read keys 0 .. past + i
        if q.shape[2] == 1:
            masked = scores               # one query, the last position: every key is its past or itself
        else:
            q_pos = torch.arange(past, past + T, device=x.device).unsqueeze(1)   # (T, 1)
            k_pos = torch.arange(past + T, device=x.device).unsqueeze(0)         # (1, past + T)
            future = k_pos > q_pos                                               # (T, past + T)
            masked = scores.masked_fill(future, float("-inf"))
        weights = torch.softmax(masked, dim=-1)             # each row sums to 1
        heads = weights @ v                                 # (B, H, T, d)
        merged = heads.transpose(1, 2).contiguous().view(B, q.shape[2], D)  # heads side by side
        out = self.output(merged)                           # (B, T, D)
        if trace is not None:
            trace.update(q=q, k=k, v=v, scores=scores, masked_scores=masked,
                         attention_weights=weights, heads=heads, attention_output=out)
        return out


class MLP(nn.Module):
    """Position-wise feed-forward network: Linear D→hidden, activation, Linear hidden→D (notebook 04)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.up = nn.Linear(config.n_embd, config.mlp_hidden, bias=config.bias)
        self.act = ACTIVATIONS[config.activation]()
        self.down = nn.Linear(config.mlp_hidden, config.n_embd, bias=config.bias)

    def forward(self, x, trace: dict | None = None):
        pre = self.up(x)              # (B, T, hidden)
        hidden = self.act(pre)        # (B, T, hidden)
        out = self.down(hidden)       # (B, T, D)
        if trace is not None:
            trace.update(mlp_pre=pre, mlp_hidden=hidden, mlp_output=out)
        return out


class Block(nn.Module):
    """One Pre-Norm Transformer block: X₁ = X₀ + Attn(LN₁(X₀)); X₂ = X₁ + MLP(LN₂(X₁))."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_eps)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_eps)
        self.mlp = MLP(config)

    def forward(self, x, cache: KVCache | None = None, layer: int = 0, trace: dict | None = None,
                last_only: bool = False):
        """``last_only=True``: the output of the last position only, (B, 1, D)."""
        ln1 = self.ln_1(x)                                         # (B, T, D)
        attended = self.attn(ln1, cache=cache, layer=layer, trace=trace, last_only=last_only)
        x1 = (x[:, -1:] if last_only else x) + attended            # residual add
        ln2 = self.ln_2(x1)                                        # (B, T, D)
        x2 = x1 + self.mlp(ln2, trace=trace)                       # residual add
        if trace is not None:
            trace.update(ln1=ln1, x1=x1, ln2=ln2, x2=x2)
        return x2


class GPT(nn.Module):
    """Token ids (B, T) -> logits (B, T, V)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.n_embd)      # E: (V, D)
        self.position_embedding = nn.Embedding(config.n_positions, config.n_embd)  # P: (n_positions, D)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_eps)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=config.head_bias)  # W_head: (V, D)
        if config.tie_weights:
            self.lm_head.weight = self.token_embedding.weight    # one table, two roles

    def check_ids(self, ids, past: int = 0) -> torch.Tensor:
        """Return ``ids`` as a (B, T) long tensor, or raise a ValueError that says what is wrong."""
        if not isinstance(ids, torch.Tensor):
            ids = torch.as_tensor(ids)
        if ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
            raise ValueError(f"token ids must be integers, got dtype {ids.dtype}")
        if ids.dim() == 1:
            ids = ids.unsqueeze(0)
        if ids.dim() != 2:
            raise ValueError(f"token ids must have shape (B, T) or (T,), got {tuple(ids.shape)}")
        if ids.shape[1] == 0:
            raise ValueError("token ids are empty: give at least one id")
        V = self.config.vocab_size
        if ids.numel() and (ids.min() < 0 or ids.max() >= V):
            bad = ids[(ids < 0) | (ids >= V)].unique().tolist()
            raise ValueError(f"token ids {bad} are outside the vocabulary 0..{V - 1}")
        if past + ids.shape[1] > self.config.n_positions:
            raise ValueError(
                f"sequence of {past + ids.shape[1]} positions is longer than the position "
                f"table ({self.config.n_positions} rows)")
        return ids.long()

    def forward(self, ids, cache: KVCache | None = None, trace: dict | None = None,
                last_only: bool = False):
        """Logits for every position, (B, T, V).

        ``cache``: a :class:`KVCache`; the ids are then the *new* tokens only, placed after
        the cached ones. ``trace``: a dict that is filled with every intermediate (see
        :meth:`forward_trace`). ``last_only=True``: logits of the last position only,
        (B, 1, V) — all that generation reads: the output layer and the last block (after its
        keys and values) run on one row (for GPT-2 it skips T − 1 products of a 768-vector with
        the 50,257-row table). Earlier rows are not needed there: nothing after reads them.
        """
        past = len(cache) if cache is not None else 0
        ids = self.check_ids(ids, past)
        if cache is not None:
            cache.check_use(self, ids.shape[0])
        T = ids.shape[1]
        positions = torch.arange(past, past + T, device=ids.device)   # (T,)
        token_vectors = self.token_embedding(ids)                     # (B, T, D): rows E[id]
        position_vectors = self.position_embedding(positions)         # (T, D): rows P[t]
        x = token_vectors + position_vectors                          # X₀ (B, T, D), broadcast over B
        if trace is not None:
            trace.update(ids=ids, token_vectors=token_vectors,
                         position_vectors=position_vectors, x0=x, layers=[])
        for i, block in enumerate(self.blocks):
            layer_trace = {} if trace is not None else None
            last = last_only and i == len(self.blocks) - 1            # the last block: one row out
            x = block(x, cache=cache, layer=i, trace=layer_trace, last_only=last)   # (B, T or 1, D)
            if trace is not None:
                trace["layers"].append(layer_trace)
        h = self.ln_f(x)                                              # H (B, T, D)
        logits = self.lm_head(h)                                      # Z = H W_headᵀ + b, (B, T, V)
        if trace is not None:
            trace.update(h=h, logits=logits)
        return logits

    def forward_trace(self, ids, cache: KVCache | None = None):
        """Run the model and return ``(logits, trace)``.

        ``trace`` holds, by name: ``ids``, ``token_vectors``, ``position_vectors``, ``x0``;
        ``layers[i]`` with ``ln1``, ``q``, ``k``, ``v`` (B, H, T, d), ``scores``,
        ``masked_scores``, ``attention_weights`` (B, H, T, T), ``heads``,
        ``attention_output``, ``x1``, ``ln2``, ``mlp_pre``, ``mlp_hidden``, ``mlp_output``,
        ``x2``; then ``h`` (after LN_f) and ``logits``.
        """
        trace: dict = {}
        logits = self.forward(ids, cache=cache, trace=trace)
        return logits, trace

    def new_cache(self, length: int | None = None) -> KVCache:
        """An empty KV cache for this model (room for ``length`` positions made at the first
        call; it grows when needed)."""
        return KVCache(self.config.n_layer, length)

    def num_parameters(self) -> int:
        """Distinct parameters (a tied table counts once)."""
        return sum(p.numel() for p in self.parameters())
