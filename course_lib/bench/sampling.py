"""Benchmark: batched top-k / top-p / min-p on [64, 50257] float32 logits vs the per-row loop.

Not taught: a script beside notebook 07's last section. Run:

    python -m course_lib.bench.sampling            # B = 64, V = 50,257
    python -m course_lib.bench.sampling --rows 8   # quicker

For every filter of ``course_lib.decoding.rules.FILTERS``, the reference (:func:`reference_loop`)
applies the rule's per-row teaching version to each row (Python lists); the batched version is
the rule's ``mask``. Both must keep the same ids (checked before timing). Timings depend on the
machine: this is a script, not a test.
"""
from __future__ import annotations

import argparse
import time

import torch

from ..decoding.probs import softmax_with_temperature_batched
from ..decoding.rules import FILTERS, keep_ids, keep_mask

# the value each filter is timed with (a filter missing here is not timed)
BENCH_VALUES = {"top_k": 50, "top_p": 0.9, "min_p": 0.05}


def reference_loop(probs: torch.Tensor, rule, value) -> torch.Tensor:
    """Apply ``rule``'s per-row teaching version row by row (lists of floats): the baseline, [B, V] bool."""
    mask = torch.zeros_like(probs, dtype=torch.bool)
    for b in range(probs.shape[0]):
        mask[b, keep_ids(rule, probs[b].tolist(), value, None)] = True
    return mask


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
    probs = softmax_with_temperature_batched(logits, 1.0)             # float32 [B, V]
    print(f"B = {args.rows}, V = {args.vocab:,}, float32, {args.threads} thread(s), best of {args.repeats}")
    print(f"{'rule':<8}{'per-row loop':>14}{'batched':>12}{'speed-up':>11}")
    for rule in FILTERS:
        if rule.field not in BENCH_VALUES:
            continue
        name, value = rule.field, BENCH_VALUES[rule.field]
        if not torch.equal(keep_mask(rule, probs, value, None), reference_loop(probs, rule, value)):
            raise SystemExit(f"{name}: batched and per-row kept sets differ")
        slow = best_time(lambda: reference_loop(probs, rule, value), max(1, args.repeats - 2))
        fast = best_time(lambda: keep_mask(rule, probs, value, None), args.repeats)
        print(f"{name:<8}{slow:>12.3f} s{fast:>10.3f} s{slow / fast:>10.1f}×")


if __name__ == "__main__":
    main()
