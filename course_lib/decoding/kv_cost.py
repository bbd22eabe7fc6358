"""What the KV cache stores and what it saves, counted: numbers per token, multiply-adds, speed-up.

Taught in notebook 07 (sampling: "the KV cache", the lab's cache size and GPT-2's predicted
speed-up); ``course_lib.bench.kv_cache`` times the same two ways of generating and prints its
measurement next to :func:`predicted_speedup`.

The count: for one position in one block, the four attention matrices cost 4·D² and the MLP
2·D·4D = 8·D², so 12·D² for the weights; attending to L positions costs 2·L·D (q·k for every
key, then weights·v). The output layer costs V·D per position. A forward pass over L positions
without a cache costs

    full(L)   = L·(n_layer·12·D² + V·D) + n_layer·2·L²·D     (our attention scores all L×L pairs)

and one cached step at length L costs

    cached(L) = n_layer·12·D² + V·D + n_layer·2·L·D.

Generating N tokens after a P-token prompt, the predicted speed-up is

    Σ_{L=P}^{P+N-1} full(L)  /  (full(P) + Σ_{L=P+1}^{P+N-1} cached(L)),

roughly the average sequence length (P + N/2) because the weight matrices dominate at this
length (131× for P = 5, N = 256).
"""
from __future__ import annotations

from ..model import GPTConfig


def kv_numbers_per_token(config: GPTConfig) -> int:
    """Floats a KV cache stores per token: 2 (K and V) × layers × heads × head width."""
    return 2 * config.n_layer * config.n_head * config.head_dim


def full_pass_cost(config: GPTConfig, length: int) -> int:
    """Multiply-adds of one uncached forward pass over ``length`` positions."""
    D, V, n = config.n_embd, config.vocab_size, config.n_layer
    weights = n * (4 * D * D + 2 * D * config.mlp_hidden) + V * D      # per position
    return length * weights + n * 2 * length * length * D


def cached_step_cost(config: GPTConfig, length: int) -> int:
    """Multiply-adds of one cached step: one new position attending to ``length`` positions."""
    D, V, n = config.n_embd, config.vocab_size, config.n_layer
    return n * (4 * D * D + 2 * D * config.mlp_hidden) + V * D + n * 2 * length * D


def work_without_and_with_cache(config: GPTConfig, prompt_len: int, new_tokens: int) -> tuple[int, int]:
    """Multiply-adds to generate ``new_tokens`` greedy tokens, without and with the cache."""
    lengths = range(prompt_len, prompt_len + new_tokens)          # sequence length at each step
    without = sum(full_pass_cost(config, L) for L in lengths)
    with_cache = full_pass_cost(config, prompt_len) + sum(
        cached_step_cost(config, L) for L in lengths if L > prompt_len)
    return without, with_cache


def predicted_speedup(config: GPTConfig, prompt_len: int, new_tokens: int) -> float:
    """Work without the cache divided by work with it."""
    without, with_cache = work_without_and_with_cache(config, prompt_len, new_tokens)
    return without / with_cache
