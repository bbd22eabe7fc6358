"""Benchmark: the course's batched sampling rules side by side with Hugging Face ``transformers``.

Not taught: a script beside notebook 07's last section. Run:

    python -m course_lib.bench.sampling                  # [64, 50257] and [1, 50257], 1 and 2 threads
    python -m course_lib.bench.sampling --threads 1 --rows 64 --rounds 9
    python -m course_lib.bench.sampling --markdown       # the same, then its tables in Markdown
    python -m course_lib.bench.sampling --repeat 3       # three runs (fresh processes): the figures
                                                         # they reproduce within 20 %, in Markdown
    python -m course_lib.bench.sampling --threads 1 --cpu-time   # CPU time, not wall (a shared machine)

In one process, for float32 logits of GPT-2's width (for [1, V], each call takes the next of 64
different rows, as generation brings a new row each step: one row called again and again lets the
CPU's branch predictor learn where its kept values are), each row of the table times the course's
batched version, ``transformers``' logits processor and the floor — one float32 softmax pass over
the same batch (``torch.softmax``), the least any rule that reads the logits costs — *interleaved*
(course, HF, floor; HF, floor, course; floor, course, HF; …) so that noise from other work hits
all three, and each follows each of the others as often (a call right after transformers'
top-p, which sorts whole rows, runs slower: in a fixed order the floor would always pay that). It prints
the median and the minimum of the rounds, the ratio course / HF of the medians (< 1: the course
is faster), the course as a multiple of the floor, and the goal each is held to (every rule ≤ 1×
transformers, the temperature — the same torch kernels as transformers — within 1.1×; top-k and
min-p ≤ 3× the floor; top-p ≤ 5× on [64, V] and ≤ 7× on [1, V]; the pipeline with its draw ≤ 6×),
met or MISSED. Under it, the same ratios round by round (each round's course time over
that round's HF or floor time): their median, and in how many rounds each was within its goal —
on a shared machine a cell whose medians sit near its line is met in some rounds and not others.
The first lines name the CPU model, the vector extensions numpy dispatches to (numpy's partitions
and comparisons, behind top-k, top-p and min-p, run several times slower without them), the load
average and the date.

* temperature 0.8: the course's float32 softmax of z / τ vs ``TemperatureLogitsWarper`` + softmax;
* top-k 50, top-p 0.9, min-p 0.05: from the logits, the course's softmax + ``keep_mask`` (ranked by
  the logits) vs ``TopKLogitsWarper`` / ``TopPLogitsWarper`` / ``MinPLogitsWarper``;
* the pipeline τ 0.8 → top-k 50 → top-p 0.9 → min-p 0.05 → one draw per row: ``sample_batched``
  (the float64 softmax, the filters on the top-k candidates, ``torch.multinomial``) vs
  ``LogitsProcessorList`` + softmax + ``torch.multinomial``.

Before timing, each row checks that both sides did the same work: the kept sets are compared row
by row (``same kept sets 64/64``). They can differ by design (``course_lib.decoding.rules``'
docstring): top-k ties (transformers keeps every id tied with the k-th), the tie order and the
float32 precision of transformers' top-p. Random float32 logits have no ties, so a difference
is printed with its reason, never hidden. Without ``transformers`` the HF columns are skipped
with a line saying so. Timings depend on the machine: this is a script, not a test.
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time

import torch

from ..decoding.pipeline import SamplingRule, apply_batched, sample_batched
from ..decoding.probs import softmax_with_temperature_batched
from ..decoding.rules import MIN_P, TOP_K, TOP_P, keep_mask
from . import NO_TRANSFORMERS, interleaved, machine_line, per_round, report

try:                                             # the comparison is optional
    from transformers import (LogitsProcessorList, MinPLogitsWarper, TemperatureLogitsWarper,
                              TopKLogitsWarper, TopPLogitsWarper)
except ImportError:                              # pragma: no cover - depends on the environment
    LogitsProcessorList = None

TAU, K, P, M = 0.8, 50, 0.9, 0.05
ROW_POOL = 64            # [1, V]: the different rows the calls take in turn


def cases(batches: list[torch.Tensor]):
    """(name, course fn, HF fn or None, course kept-mask fn, HF kept-mask fn or None). Each call
    of a timed fn takes the next of ``batches`` in turn (one row in generation is a new row each
    step: repeating one row would let the CPU's branch predictor learn it); the kept-mask fns
    read the first."""
    z = batches[0]
    turn = itertools.cycle(batches).__next__
    ids = torch.zeros(z.shape[0], 1, dtype=torch.long)
    hf = LogitsProcessorList is not None
    rule = SamplingRule(temperature=TAU, top_k=K, top_p=P, min_p=M)
    if hf:
        warpers = {"t": TemperatureLogitsWarper(TAU), "k": TopKLogitsWarper(K),
                   "p": TopPLogitsWarper(P), "m": MinPLogitsWarper(M)}
        chain = LogitsProcessorList([warpers["t"], warpers["k"], warpers["p"], warpers["m"]])
    else:
        warpers, chain = {}, None

    def course_rule(rule, value):
        if rule is TOP_K:                        # ranks by the logits: no softmax needed
            return lambda x: keep_mask(rule, None, value, x)
        return lambda x: keep_mask(rule, softmax_with_temperature_batched(x, 1.0), value, x)

    def course_temperature(x):
        return softmax_with_temperature_batched(x, TAU)

    def hf_temperature(x):
        return torch.softmax(warpers["t"](ids, x), dim=-1)

    def course_pipeline(x, seed=0):
        return sample_batched(rule, x, torch.Generator().manual_seed(seed))

    def hf_pipeline(x, seed=0):
        probs = torch.softmax(chain(ids, x), dim=-1)
        return torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(seed)).squeeze(-1)

    def course_kept_draw(x):
        mask, final = apply_batched(rule, x)
        return mask, final, course_pipeline(x)

    def hf_kept_draw(x):
        scores = chain(ids, x)
        return torch.isfinite(scores), torch.softmax(scores, dim=-1), hf_pipeline(x)

    def timed(fn):                               # a new batch each call
        return (lambda: fn(turn())) if fn else None

    def first(fn):                               # the first batch: the kept sets compared
        return (lambda: fn(z)) if fn else None

    def hf_fn(warper, kept=False):
        if not hf:
            return None
        return (lambda x: torch.isfinite(warper(ids, x))) if kept else (lambda x: warper(ids, x))

    table = [(f"temperature {TAU} (incl. softmax)", course_temperature, hf_temperature if hf else None,
              course_temperature, hf_temperature if hf else None)]
    for name, r, value, key in ((f"top-k {K}", TOP_K, K, "k"), (f"top-p {P}", TOP_P, P, "p"), (f"min-p {M}", MIN_P, M, "m")):
        table.append((name, course_rule(r, value), hf_fn(warpers.get(key)), course_rule(r, value),
                      hf_fn(warpers.get(key), kept=True)))
    table.append((f"τ {TAU} → top-k → top-p → min-p → draw", course_pipeline, hf_pipeline if hf else None,
                  course_kept_draw, hf_kept_draw if hf else None))
    return [(name, timed(c), timed(h), first(ck), first(hk)) for name, c, h, ck, hk in table]


def same_work(name, course_fn, hf_fn) -> str:
    """A line saying whether both sides kept the same ids (and drew the same ids)."""
    if hf_fn is None:
        return ""
    c, h = course_fn(), hf_fn()
    if isinstance(c, torch.Tensor) and c.is_floating_point():
        return f"same probabilities up to float32 rounding (max |diff| {float((c - h).abs().max()):.1e})"
    if isinstance(c, tuple):
        (cm, cp, cids), (hm, hp, hids) = c, h
        rows = int((cm == hm).all(dim=-1).sum())
        inside = int(cm.gather(1, cids[:, None]).sum() + 0) , int(hm.gather(1, hids[:, None]).sum())
        return (f"same kept sets {rows}/{cm.shape[0]} rows; final probabilities max |diff| "
                f"{float((cp - hp.double()).abs().max()):.1e}; drawn ids in the kept sets "
                f"{inside[0]}/{cm.shape[0]} and {inside[1]}/{cm.shape[0]} (not compared id for id: the "
                f"course draws from float64 probabilities, transformers from float32 ones)")
    rows = int((c == h).all(dim=-1).sum())
    line = f"same kept sets {rows}/{c.shape[0]} rows"
    if rows != c.shape[0]:
        line += " (differences: transformers' float32 top-p / tie conventions, see rules.py)"
    return line


# the goals: (course / HF at most, course / floor at most) per case, by name start; top-p's
# floor goal is 5× for a batch and 7× for one row. The whole pipeline (τ → …) has no floor goal:
# to return exactly the per-row rule's probabilities it takes the float64 softmax of every whole
# row and sums it left to right, more work than one float32 pass by design.
GOALS = {"temperature": (1.1, None), "top-k": (1.0, 3.0), "top-p": (1.0, 5.0), "min-p": (1.0, 3.0), "τ": (1.0, None)}
ONE_ROW_GOALS = {"top-p": (1.0, 7.0)}


def goal_of(name: str, rows: int = 64):
    table = {**GOALS, **ONE_ROW_GOALS} if rows == 1 else GOALS
    return next(goal for start, goal in table.items() if name.startswith(start))


def run(rows: int, vocab: int, threads: int, rounds: int, clock=time.perf_counter) -> list[tuple]:
    """Each case interleaved with transformers and with the floor (one float32 softmax pass over
    the batch): (name, course ms, HF ms or None, floor ms) per case, medians of the rounds."""
    torch.set_num_threads(threads)
    # float32 logits; one row: 64 different rows, a new one each call (as in generation)
    pool = torch.randn(max(rows, ROW_POOL), vocab, generator=torch.Generator().manual_seed(0)) * 3
    batches = [pool[:rows]] if rows > 1 else [pool[b:b + 1] for b in range(ROW_POOL)]
    turn = itertools.cycle(batches).__next__
    print(f"\n[{rows}, {vocab}] float32, {threads} thread(s), {rounds} interleaved rounds (course, HF, floor)"
          f"{', CPU time of this thread' if clock is time.thread_time else ''}"
          f"{f'; each call takes the next of {ROW_POOL} different rows' if rows == 1 else ''}")
    print(f"{'':<40}{'course med / min':>20}{'HF med / min':>20}{'course/HF':>11}{'/ floor':>9}  goal")
    results, floors = [], []
    for name, course, hf, course_kept, hf_kept in cases(batches):
        check = same_work(name, course_kept, hf_kept)
        fns = [course] + ([hf] if hf else []) + [lambda: torch.softmax(turn(), dim=-1)]
        times = interleaved(fns, rounds, clock=clock)
        cm, cmin = statistics.median(times[0]) * 1e3, min(times[0]) * 1e3
        fm = statistics.median(times[-1]) * 1e3
        floors.append(times[-1])
        hf_goal, floor_goal = goal_of(name, rows)
        met = (floor_goal is None or cm / fm <= floor_goal)
        if hf:
            hm, hmin = statistics.median(times[1]) * 1e3, min(times[1]) * 1e3
            met = met and cm / hm <= hf_goal
            print(f"{name:<40}{cm:>9.2f} /{cmin:>7.2f} ms{hm:>9.2f} /{hmin:>7.2f} ms{cm / hm:>10.2f}×{cm / fm:>8.1f}×  "
                  f"≤ {hf_goal:g}× HF{f', ≤ {floor_goal:g}× floor' if floor_goal else ''}: {'met' if met else 'MISSED'}")
        else:
            hm = None
            print(f"{name:<40}{cm:>9.2f} /{cmin:>7.2f} ms{'':>31}{cm / fm:>8.1f}×")
        by_round = [f"course / floor {per_round(times[0], times[-1], floor_goal)}"] if floor_goal else []
        if hf:
            by_round.insert(0, f"course / HF {per_round(times[0], times[1], hf_goal)}")
        print(f"{'':<4}round by round: {'; '.join(by_round)}")
        if check:
            print(f"{'':<4}{check}")
        results.append((name, cm, hm, fm))
    every = [t for f in floors for t in f]
    print(f"{'one float32 softmax pass (the floor)':<40}{statistics.median(every) * 1e3:>9.2f} /"
          f"{min(every) * 1e3:>7.2f} ms  (all rounds above)")
    return results


def figures_of(rows: int, vocab: int, threads: int, results: list[tuple], cpu_time: bool = False) -> list[report.Figure]:
    """The published figures of one table: per case the course's time, course / HF and course /
    floor (with their goals), and the floor's time."""
    table = f"[{rows}, {vocab}], {threads} thread{'s' if threads > 1 else ''}{', CPU time' if cpu_time else ''}"
    out = []
    for name, cm, hm, fm in results:
        hf_goal, floor_goal = goal_of(name, rows)
        out.append(report.Figure(table, name, "course, ms", cm, "ms"))
        if hm is not None:
            out.append(report.Figure(table, name, "course / HF", cm / hm, "×", hf_goal))
        out.append(report.Figure(table, name, "course / floor", cm / fm, "×", floor_goal))
    every = [fm for *_, fm in results]
    out.append(report.Figure(table, "the floor (one float32 softmax)", "course, ms", statistics.median(every), "ms"))
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[64, 1], help="batch sizes B (default 64 1)")
    parser.add_argument("--vocab", type=int, default=50_257, help="vocabulary size V (default 50,257)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch threads (default 1 2)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time this thread's CPU time, not the wall clock (a shared machine; needs --threads 1)")
    report.add_options(parser)
    args = parser.parse_args(argv)
    if args.cpu_time and args.threads != [1]:
        parser.error("--cpu-time counts one thread's CPU time: use it with --threads 1")
    report.publish("course_lib.bench.sampling", TITLE, argv, args, measure)


TITLE = "Sampling rules: the course vs transformers (python -m course_lib.bench.sampling)"


def measure(args) -> list[report.Figure]:
    facts = report.machine()
    print(f"CPU: {machine_line()}")
    print(f"torch {facts['torch']}, CPU capability {facts['torch_capability']}, numpy {facts['numpy']} "
          f"(SIMD: {facts['numpy_simd']}); {facts['date']}")
    if LogitsProcessorList is None:
        print(NO_TRANSFORMERS)
    else:
        import transformers
        print(f"transformers {transformers.__version__}")
    figures = []
    for threads in args.threads:
        for rows in args.rows:
            clock = time.thread_time if args.cpu_time else time.perf_counter
            figures += figures_of(rows, args.vocab, threads, run(rows, args.vocab, threads, args.rounds, clock),
                                  args.cpu_time)
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in report.load())}")
    return figures


if __name__ == "__main__":
    main()
