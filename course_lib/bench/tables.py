"""The section "Current tables" of docs/benchmarks.md, in one command: the sampling and the
generation benches, each run N times in fresh processes one after the other, each figure
published only if the N runs reproduce it within 20 % (``report.py``).

Not taught. Run on a quiet machine (nothing else running) and paste the output:

    python -m course_lib.bench.tables                # 3 runs of each bench
    python -m course_lib.bench.tables --repeat 1     # one run of each (a quick look)
"""
from __future__ import annotations

import argparse

from . import generate, report, sampling


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each bench (default 3)")
    args = parser.parse_args(argv)
    print("## Current tables\n", flush=True)
    for i, (module, title) in enumerate((("course_lib.bench.sampling", sampling.TITLE),
                                         ("course_lib.bench.generate", generate.TITLE))):
        section = report.markdown(report.repeat(module, [], args.repeat), title)
        print(("\n" if i else "") + section, end="", flush=True)       # each bench's tables as soon as they are made


if __name__ == "__main__":
    main()
