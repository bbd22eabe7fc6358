"""How much the KV cache saves on GPT-2 small: time it, and compare with a count of the work.

Not taught: a script beside notebook 07 (sampling), where the KV cache appears on the toy model. Run:

    python -m course_lib.bench.kv_cache            # 256 new tokens, 1 thread (a few minutes)
    python -m course_lib.bench.kv_cache --tokens 64 --threads 2

GPT-2 small's architecture with random (seeded) weights generates the same greedy tokens twice:

* without the cache, every step reruns the whole sequence (the gpt2 article's loop);
* with the cache, the prompt runs once and every later step feeds only the newest token.

The theory (``course_lib.decoding.kv_cost``, taught in notebook 07) counts multiply-adds and
predicts roughly the average sequence length (131× for P = 5, N = 256). The measured speed-up is lower, and the script shows why: it
equals the predicted one times (arithmetic rate with the cache) / (rate without). A one-token
step multiplies one row by each weight matrix, so it spends its time reading the 500 MB of
weights (and in Python overhead) rather than multiplying, while the uncached passes are large
matrix products that run near the CPU's peak (docs/benchmarks.md).
"""
from __future__ import annotations

import argparse
import time

import torch

from ..decoding.generate import generate
from ..decoding.kv_cost import work_without_and_with_cache
from ..gpt2.config import GPT2_SMALL_CONFIG, random_gpt2

PROMPT_IDS = [464, 3616, 286, 1204, 318]     # "The meaning of life is"


def timed_generate(model, ids: list[int], new_tokens: int, use_cache: bool) -> tuple[list[int], float]:
    """Greedy ids (prompt + new_tokens) from ``decoding.generate``, and the seconds it took."""
    start = time.perf_counter()
    run = generate(model, ids, new_tokens, use_cache=use_cache)
    return run.ids, time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=256, help="new tokens to generate")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = GPT2_SMALL_CONFIG
    model = random_gpt2(config, seed=args.seed)
    ids = PROMPT_IDS
    print(f"GPT-2 small architecture, random weights, {config.n_layer} layers, D = {config.n_embd}, "
          f"V = {config.vocab_size}; prompt {len(ids)} tokens, {args.tokens} new tokens, "
          f"{args.threads} thread(s)")
    timed_generate(model, ids, 2, use_cache=True)                # warm-up
    with_cache, t_cache = timed_generate(model, ids, args.tokens, use_cache=True)
    print(f"  with the KV cache:    {t_cache:8.2f} s  ({args.tokens / t_cache:7.1f} tokens/s)")
    without, t_full = timed_generate(model, ids, args.tokens, use_cache=False)
    print(f"  without (rerun all):  {t_full:8.2f} s  ({args.tokens / t_full:7.1f} tokens/s)")
    print(f"  same tokens both ways: {'yes' if with_cache == without else 'NO'}")
    work_full, work_cache = work_without_and_with_cache(config, len(ids), args.tokens)
    print(f"measured speed-up {t_full / t_cache:6.1f}x   |   predicted by counting "
          f"multiply-adds {work_full / work_cache:6.1f}x")
    # measured = predicted × (arithmetic rate with the cache / rate without): the gap is the rate
    rate_full, rate_cache = 2 * work_full / t_full / 1e9, 2 * work_cache / t_cache / 1e9
    print(f"arithmetic rate: {rate_full:6.1f} GFLOP/s rerunning everything, {rate_cache:6.1f} GFLOP/s "
          f"one token at a time (reading every weight for one row of work)")


if __name__ == "__main__":
    main()
