"""The benchmarks' published form: a Markdown table per run, and the rule that decides which
figures are published — only those that several quiet runs reproduce within 20 %.

Not taught. Each bench (``sampling``, ``generate``) collects its figures as :class:`Figure`\\ s.
``--markdown`` prints one run's tables with the machine, the date, the threads and the load average
before and after; ``--repeat N`` runs the bench N times, each in a fresh Python process one after
the other, and prints each figure as the median of the N runs when the largest is at most 1.2 ×
the smallest, else "not reproduced" with the range (tests/test_bench_order.py).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy
import torch

SPREAD = 1.2            # a figure is published when max / min over the runs is at most this


@dataclass(frozen=True)
class Figure:
    table: str              # e.g. "[64, 50257] float32, 1 thread"
    row: str                # e.g. "top-p 0.9"
    column: str             # e.g. "course / floor"
    value: float
    unit: str = "×"         # "×" or "ms"
    goal: float | None = None   # the largest value that meets the goal, if any


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def numpy_simd() -> str:
    """The vector extensions numpy dispatches to here (its partition and sort run in them)."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
        found = [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]
        return " ".join(found) or "none (scalar code)"
    except ImportError:                      # pragma: no cover - numpy's layout may move
        return "unknown"


def load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:                          # pragma: no cover - no load average on this OS
        return []


def machine() -> dict:
    return {"cpu": cpu_model(), "logical_cpus": os.cpu_count(), "torch": torch.__version__,
            "torch_capability": torch.backends.cpu.get_cpu_capability(), "numpy": numpy.__version__,
            "numpy_simd": numpy_simd(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def run_record(figures: list[Figure], load_before: list[float], extra: dict | None = None) -> dict:
    """One run: the machine, the load average before and after, the figures."""
    return {"machine": machine(), "load_before": load_before, "load_after": load(),
            "figures": [asdict(f) for f in figures], **(extra or {})}


def reproduced(values: list[float]) -> bool:
    """Whether the runs agree: the largest value at most :data:`SPREAD` × the smallest."""
    return min(values) > 0 and max(values) <= SPREAD * min(values)


def _cell(values: list[float], unit: str, goal: float | None) -> str:
    digits = 2 if unit == "×" else (3 if max(values) < 0.1 else 2)
    show = (lambda v: f"{v:.{digits}f}{unit if unit == '×' else ' ms'}")
    if len(values) > 1 and not reproduced(values):
        return f"not reproduced ({show(min(values))}–{show(max(values))})"
    value = statistics.median(values)
    mark = "" if goal is None else (" ✓" if value <= goal else " ✗")
    return show(value) + mark


def markdown(records: list[dict], title: str) -> str:
    """The tables of one or more runs of the same bench, in Markdown: each figure the median of
    the runs if they reproduce it within 20 %, else marked; ✓ / ✗: its goal met or missed."""
    first = records[0]["machine"]
    lines = [f"### {title}", "",
             f"{first['cpu']}, {first['logical_cpus']} logical CPUs; torch {first['torch']} "
             f"(CPU capability {first['torch_capability']}), numpy {first['numpy']} (SIMD: {first['numpy_simd']})."]
    for i, r in enumerate(records, 1):
        lines.append(f"Run {i}: {r['machine']['date']}, load average {_loads(r['load_before'])} before, "
                     f"{_loads(r['load_after'])} after.")
    if len(records) > 1:
        lines.append(f"Each figure: the median of the {len(records)} runs when the largest is at most "
                     f"{SPREAD:g} × the smallest; otherwise not reproduced, with the range.")
    tables: dict[str, dict[str, dict[str, list]]] = {}
    columns: dict[str, list[str]] = {}
    for r in records:
        for f in r["figures"]:
            cell = tables.setdefault(f["table"], {}).setdefault(f["row"], {})
            cell.setdefault(f["column"], [f["unit"], f["goal"], []])[2].append(f["value"])
            if f["column"] not in columns.setdefault(f["table"], []):
                columns[f["table"]].append(f["column"])
    for table, rows in tables.items():
        lines += ["", f"| {table} | " + " | ".join(columns[table]) + " |",
                  "|---" * (len(columns[table]) + 1) + "|"]
        for row, cells in rows.items():
            lines.append(f"| {row} | " + " | ".join(
                _cell(cells[c][2], cells[c][0], cells[c][1]) if c in cells else "" for c in columns[table]) + " |")
    return "\n".join(lines) + "\n"


def _loads(values: list[float]) -> str:
    return " ".join(f"{v:.2f}" for v in values) or "unknown"


def repeat(module: str, argv: list[str], runs: int) -> list[dict]:
    """Run ``python -m module argv --json`` ``runs`` times, one after the other, each in a fresh
    process; their records. Each run's own printout goes to stderr as it runs."""
    records = []
    for i in range(runs):
        print(f"== run {i + 1} of {runs}: python -m {module} {' '.join(argv)}", file=sys.stderr, flush=True)
        done = subprocess.run([sys.executable, "-m", module, *argv, "--json"], stdout=subprocess.PIPE,
                              text=True, check=True)
        records.append(json.loads(done.stdout))
    return records


def without(argv: list[str], *flags: str, valued: tuple[str, ...] = ()) -> list[str]:
    """``argv`` without the given flags (and the flags in ``valued`` with their value)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in valued:
            skip = True
        elif arg not in flags and not any(arg.startswith(v + "=") for v in valued):
            out.append(arg)
    return out


def add_options(parser: argparse.ArgumentParser) -> None:
    """The publishing options every bench takes: --markdown, --repeat N (and --json, internal)."""
    parser.add_argument("--markdown", action="store_true", help="then the tables in Markdown")
    parser.add_argument("--repeat", type=int, default=0, metavar="N",
                        help="N runs in fresh processes; the figures they reproduce within 20 %%, in Markdown")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)     # one run's record (--repeat)


def publish(module: str, title: str, argv: list[str], args, measure) -> None:
    """A bench's main after its arguments: ``measure(args)`` once (its figures), then its record
    as JSON (``--json``, for :func:`repeat`) or its tables in Markdown (``--markdown``); or, with
    ``--repeat N``, N fresh runs of ``module`` and the figures they reproduce."""
    if args.repeat:
        print(markdown(repeat(module, without(argv, "--markdown", valued=("--repeat",)), args.repeat), title), end="")
        return
    load_before = load()
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        figures = measure(args)
    if args.json:
        print(json.dumps(run_record(figures, load_before)))
    elif args.markdown:
        print("\n" + markdown([run_record(figures, load_before)], title), end="")
