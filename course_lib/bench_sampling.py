"""Benchmark: batched top-k / top-p / min-p on [64, 50257] float32 logits vs the per-row loop.

Run from notebook 07's last section or a shell:

    python -m course_lib.bench_sampling            # B = 64, V = 50,257
    python -m course_lib.bench_sampling --rows 8   # quicker

The reference applies the teaching rule of ``course_lib.sampling`` to each row (Python lists);
the batched version is ``course_lib.sampling_batched``. Both must keep the same ids (checked
before timing). Timings depend on the machine: this is a script, not a test.
"""
from __future__ import annotations

import argparse
import time

import torch

from . import sampling_batched as SB

RULES = [("top_k", SB.top_k_mask, 50), ("top_p", SB.top_p_mask, 0.9), ("min_p", SB.min_p_mask, 0.05)]


def best_time(fn, repeats: int) -> float:
    """The fastest of ``repeats`` runs, in seconds (the least disturbed by other work)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=64, help="batch size B (default 64)")
    parser.add_argument("--vocab", type=int, default=50_257, help="vocabulary size V (default 50,257)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    logits = torch.randn(args.rows, args.vocab, generator=torch.Generator().manual_seed(0)) * 3
    probs = SB.softmax_with_temperature_batched(logits, 1.0)          # float32 [B, V]
    print(f"B = {args.rows}, V = {args.vocab:,}, float32, {args.threads} thread(s), best of {args.repeats}")
    print(f"{'rule':<8}{'per-row loop':>14}{'batched':>12}{'speed-up':>11}")
    for name, batched, value in RULES:
        if not torch.equal(batched(probs, value), SB.reference_loop(probs, name, value)):
            raise SystemExit(f"{name}: batched and per-row kept sets differ")
        slow = best_time(lambda: SB.reference_loop(probs, name, value), max(1, args.repeats - 2))
        fast = best_time(lambda: batched(probs, value), args.repeats)
        print(f"{name:<8}{slow:>12.3f} s{fast:>10.3f} s{slow / fast:>10.1f}×")


if __name__ == "__main__":
    main()
