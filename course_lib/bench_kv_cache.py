"""How much the KV cache saves on GPT-2 small: time it, and compare with a count of the work.

Taught in notebook 07 (sampling), where the KV cache appears on the toy model. Run:

    python -m course_lib.bench_kv_cache            # 256 new tokens, 1 thread (a few minutes)
    python -m course_lib.bench_kv_cache --tokens 64 --threads 2

GPT-2 small's architecture with random (seeded) weights generates the same greedy tokens twice:

* without the cache, every step reruns the whole sequence (the gpt2 article's loop);
* with the cache, the prompt runs once and every later step feeds only the newest token.

The theory: count multiply-adds. For one position in one block, the four attention matrices
cost 4·D² and the MLP 2·D·4D = 8·D², so 12·D² for the weights; attending to L positions costs
2·L·D (q·k for every key, then weights·v). The output layer costs V·D per position. A forward
pass over L positions without a cache costs

    full(L)   = L·(n_layer·12·D² + V·D) + n_layer·2·L²·D     (our attention scores all L×L pairs)

and one cached step at length L costs

    cached(L) = n_layer·12·D² + V·D + n_layer·2·L·D.

Generating N tokens after a P-token prompt, the predicted speed-up is

    Σ_{L=P}^{P+N-1} full(L)  /  (full(P) + Σ_{L=P+1}^{P+N-1} cached(L)),

roughly the average sequence length (P + N/2) because the weight matrices dominate at this
length (131× for P = 5, N = 256). The measured speed-up is lower, and the script shows why: it
equals the predicted one times (arithmetic rate with the cache) / (rate without). A one-token
step multiplies one row by each weight matrix, so it spends its time reading the 500 MB of
weights (and in Python overhead) rather than multiplying, while the uncached passes are large
matrix products that run near the CPU's peak. (On one CPU thread we measured about 13×.)
"""
from __future__ import annotations

import argparse
import time

import torch

from course_lib.gpt2 import GPT2_SMALL_CONFIG, random_gpt2
from course_lib.model import GPTConfig

PROMPT_IDS = [464, 3616, 286, 1204, 318]     # "The meaning of life is"


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


@torch.no_grad()
def generate(model, ids: torch.Tensor, new_tokens: int, use_cache: bool) -> tuple[torch.Tensor, float]:
    """Greedy ids (1, P + new_tokens) and the seconds it took."""
    start = time.perf_counter()
    cache = model.new_cache() if use_cache else None
    generated, step_input = ids, ids
    for _ in range(new_tokens):
        logits = model(step_input if use_cache else generated, cache=cache)   # (1, T_in, V)
        next_id = logits[:, -1, :].argmax(dim=-1, keepdim=True)               # (1, 1)
        generated = torch.cat([generated, next_id], dim=1)
        step_input = next_id
    return generated, time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=256, help="new tokens to generate")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = GPT2_SMALL_CONFIG
    model = random_gpt2(config, seed=args.seed)
    ids = torch.tensor([PROMPT_IDS])
    print(f"GPT-2 small architecture, random weights, {config.n_layer} layers, D = {config.n_embd}, "
          f"V = {config.vocab_size}; prompt {ids.shape[1]} tokens, {args.tokens} new tokens, "
          f"{args.threads} thread(s)")
    generate(model, ids, 2, use_cache=True)                      # warm-up
    with_cache, t_cache = generate(model, ids, args.tokens, use_cache=True)
    print(f"  with the KV cache:    {t_cache:8.2f} s  ({args.tokens / t_cache:7.1f} tokens/s)")
    without, t_full = generate(model, ids, args.tokens, use_cache=False)
    print(f"  without (rerun all):  {t_full:8.2f} s  ({args.tokens / t_full:7.1f} tokens/s)")
    print(f"  same tokens both ways: {'yes' if torch.equal(with_cache, without) else 'NO'}")
    work_full, work_cache = work_without_and_with_cache(config, ids.shape[1], args.tokens)
    print(f"measured speed-up {t_full / t_cache:6.1f}x   |   predicted by counting "
          f"multiply-adds {work_full / work_cache:6.1f}x")
    # measured = predicted × (arithmetic rate with the cache / rate without): the gap is the rate
    rate_full, rate_cache = 2 * work_full / t_full / 1e9, 2 * work_cache / t_cache / 1e9
    print(f"arithmetic rate: {rate_full:6.1f} GFLOP/s rerunning everything, {rate_cache:6.1f} GFLOP/s "
          f"one token at a time (reading every weight for one row of work)")


if __name__ == "__main__":
    main()
