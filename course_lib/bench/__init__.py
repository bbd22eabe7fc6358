"""Benchmarks: scripts, not tests (they use random weights or logits), each side by side with
Hugging Face ``transformers`` when it is installed.

* ``sampling`` — batched temperature / top-k / top-p / min-p and the pipeline with its draw vs
  transformers' logits processors (``python -m course_lib.bench.sampling``)
* ``generate`` — GPT-2 small greedy generation, with and without the KV cache, vs
  ``GPT2LMHeadModel.generate`` (``python -m course_lib.bench.generate``)
* ``memory`` — peak memory of loading GPT-2 + a first forward pass, and of generating
  (``python -m course_lib.bench.memory``)
* ``kv_cache`` — GPT-2 small, with and without the KV cache, measured vs the count of
  multiply-adds (``python -m course_lib.bench.kv_cache``)
* ``gpt2_file`` — writes the random-weight GPT-2 checkpoint the others load
* ``report`` — the Markdown tables (``--markdown``) and the rule that publishes only the figures
  several runs reproduce within 20 % (``--repeat N``)
* ``tables`` — the section "Current tables" of docs/benchmarks.md in one command
  (``python -m course_lib.bench.tables``)
"""
import math
import os
import statistics
import time

NO_TRANSFORMERS = "transformers is not installed: the HF columns are skipped (pip install transformers)"


def interleaved(fns, rounds: int, warm_up: bool = True, min_round: float = 0.005,
                clock=time.perf_counter) -> list[list[float]]:
    """Seconds per call of each function, called in turn ``rounds`` times, so that noise from
    other work hits every side. The order turns by one place each round (a b c, b c a, c a b, …):
    a call runs slower right after a heavy one (the caches hold the other side's data and code),
    and in a fixed order one side would always follow the same neighbour. After one warm-up call
    each (unless ``warm_up=False``), a round of a quick function makes several calls — as many as
    the quickest warm-up call fits in ``min_round`` seconds, the same number for every side — and
    records their mean: a [1, V] call lasts ~50 µs, shorter than the timer's noise. ``clock``:
    wall time by default; ``time.thread_time`` counts only this thread's CPU time (on a shared
    machine, the time other work takes the core away is left out; right for one torch thread)."""
    calls = 1
    if warm_up:
        quickest = math.inf
        for fn in fns:
            start = clock()
            fn()
            quickest = min(quickest, clock() - start)
        calls = max(1, min(1000, int(min_round / max(quickest, 1e-7))))
    times = [[] for _ in fns]
    for r in range(rounds):
        for i in range(len(fns)):
            side = (i + r) % len(fns)                      # this round's order, turned by r
            fn = fns[side]
            start = clock()
            for _ in range(calls):
                fn()
            times[side].append((clock() - start) / calls)
    return times


def per_round(times: list[float], base: list[float], goal: float | None = None) -> str:
    """``times`` / ``base`` round by round (the two sides of each ratio ran in the same round of
    :func:`interleaved`, under the same conditions): their median and, with a ``goal``, in how many
    rounds the ratio was at most the goal — how far from its line a cell sits when the medians'
    ratio is close to it."""
    if len(times) != len(base) or not times:
        raise ValueError(f"per_round needs one time of each side per round, got {len(times)} and {len(base)}")
    ratios = [t / b for t, b in zip(times, base)]
    line = f"median {statistics.median(ratios):.2f}×"
    if goal is not None:
        line += f", {sum(r <= goal for r in ratios)} of {len(ratios)} rounds ≤ {goal:g}×"
    return line


def machine_line() -> str:
    """The CPU model, the core count and the load average: timings depend on all three."""
    from .report import cpu_model                # (report imports torch: only when asked)
    try:
        load = "load average %.2f %.2f %.2f (1, 5, 15 min)" % os.getloadavg()
    except OSError:
        load = "load average unknown"
    return f"{cpu_model()}, {os.cpu_count()} logical CPUs, {load}"
