"""What the grader's tests share: notebooks made for them, and the grader run as root or as another user.

Used by tests/test_grader.py and tests/test_grader_options.py.
"""
import csv
import json
import os
import pwd
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from course_lib.grading import sandbox

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))
SOLUTIONS_ZH = sorted((ROOT / "notebooks" / "zh" / "solutions").glob("*.ipynb"))
CH03 = ["make_causal_mask", "attention_head", "split_heads"]
IMPORTS = "import math\nimport torch\nimport torch.nn.functional as F"
GRADE = [sys.executable, "-m", "course_lib.grading"]
IS_ROOT = os.getuid() == 0


def solution(name: str) -> str:
    """The worked solution's cell that defines ``name``, from whichever solutions notebook holds it."""
    for path in SOLUTIONS:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and source.startswith(f"def {name}("):
                return source
    raise LookupError(f"no solution of {name} in {[p.name for p in SOLUTIONS]}")


def notebook(path: Path, cells: list[str], metadata: dict | None = None, chapter: str | None = "03", language="en") -> Path:
    """A notebook at ``path`` with these code cells; the course's metadata unless ``chapter`` is None."""
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = dict(metadata or {})
    if chapter:
        meta["course"] = {"chapter": chapter, "language": language, "kind": "exercises"}
    nb_cells = [{"cell_type": "code", "metadata": {}, "source": src, "outputs": [], "execution_count": None} for src in cells]
    path.write_text(json.dumps({"cells": nb_cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def chapter03(path: Path, *extra: str, replace: dict | None = None, **options) -> Path:
    """Chapter 03's worked solutions (some replaced), ``extra`` cells first, a check cell after each."""
    cells = [IMPORTS, *extra]
    for name in CH03:
        cells += [(replace or {}).get(name, solution(name)), f"from course_lib.exercises import check_{name}\ncheck_{name}({name})"]
    return notebook(path, cells, **options)


def guarded_mask(check: str) -> str:
    """A correct make_causal_mask that runs ``check`` (which raises when isolation failed) at its
    first call, the one the checker makes first (T = 3): a failed check fails the exercise."""
    body = "\n".join("        " + line for line in check.strip().splitlines())
    return ("def make_causal_mask(T):\n    if not getattr(make_causal_mask, 'checked', False):\n"
            f"        make_causal_mask.checked = True\n{body}\n"
            "    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)")


HOG = """
import os, sys, time
gradebook, until = sys.argv[1], sys.argv[2].encode()
def learner_started():
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if b"\\0-m\\0course_lib.grading.learner\\0" in open(f"/proc/{pid}/cmdline", "rb").read():
                return True
        except OSError:
            pass
    return False
while not learner_started():             # idle while the grader starts: its workers import torch
    time.sleep(0.1)
def others_running():                    # runnable tasks on the machine, this one aside
    with open("/proc/stat") as stat:
        return next(int(line.split()[1]) for line in stat if line.startswith("procs_running")) - 1
cores = len(os.sched_getaffinity(0))
while True:
    if others_running() > cores:         # oversubscribed already (make test's other work): wait
        time.sleep(0.2)
    else:
        end = time.monotonic() + 0.2
        while time.monotonic() < end:
            pass
    for path in (gradebook + ".partial", gradebook):
        try:
            if until in open(path, "rb").read():
                sys.exit(0)
        except OSError:
            pass
"""


class CpuHog:
    """More runnable tasks than cores, from the start of the first submission's process until the
    gradebook ``out`` (or its .partial) holds ``until``: the rows of the submission that must keep
    its grade under load, started first. The hog spins on one core in steps of 0.2 s, except a
    step in which more tasks than cores are already runnable (under ``make test``, the other
    worker's tests often are): it waits then, spinning adds nothing to that load. ``saw_it``: the
    hog ended by itself, so it ran for as long as that submission was graded."""

    def __init__(self, out: Path, until: str):
        self.command = [sys.executable, "-c", HOG, str(out), until]

    def __enter__(self):
        self.process = subprocess.Popen(self.command)
        return self

    def __exit__(self, *exc):
        self.saw_it = self.process.poll() == 0
        self.process.kill()
        self.process.wait()


def run_grader(args: list[str], user: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    command = [*GRADE, *args]
    if user is not None:
        command = as_user(user, command)
    return subprocess.run(command, cwd=cwd or Path(tempfile.gettempdir()), capture_output=True, text=True, timeout=900,
                          env={**os.environ, "GRADER_SECRET": "s3cret"})


def as_user(user: str, command: list[str]) -> list[str]:
    """``command`` as ``user`` (from root), able to reach Python and the checkout (sandbox.as_user)."""
    entry = pwd.getpwnam(user)
    return sandbox.as_user("bwrap", entry.pw_uid, entry.pw_gid, [os.path.realpath(sys.base_prefix), sys.prefix, ROOT]) + command


def unprivileged_user() -> str:
    for name in (os.environ.get("COURSE_TEST_USER"), "probeuser", "nobody"):
        if name:
            try:
                pwd.getpwnam(name)
                return name
            except KeyError:
                continue
    pytest.skip("no unprivileged user to run the grader as (set COURSE_TEST_USER)")


def rows_by(out: Path, column: str = "student") -> dict:
    """The gradebook's rows: ``by[student][exercise]`` (or by another column)."""
    by = {}
    with out.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            by.setdefault(row[column], {})[row["exercise"]] = row
    return by


def _bwrap_missing() -> str:
    try:
        sandbox.require_bwrap()
        return ""
    except sandbox.MissingBwrap:
        return "the grader's sandbox needs bubblewrap (`apt-get install bubblewrap`), not installed here"


# The tests that grade in a real sandbox: skipped where bwrap is not installed (a learner's
# machine, a chroot), failing under CI (``CI`` set: .ci/run installs it)
needs_bwrap = pytest.mark.skipif(bool(_bwrap_missing()) and not os.environ.get("CI"), reason=_bwrap_missing() or "-")
