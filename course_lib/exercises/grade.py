"""Grade a class: every submission in its own confined process, one gradebook row per exercise.

    python -m course_lib.exercises.grade alice/ bob/03_attention.ipynb --out grades.csv \\
        [--feedback DIR] [--timeout S] [--jobs N]

Not taught; the README's "Exercises: using them in a class" says how to use it. A PATH is a
notebook or a folder (every ``*.ipynb`` below it, each its own submission). A notebook named
``NN_*.ipynb`` is graded on chapter NN's exercises, any other on all 26. For each submission:

* a fresh process (forked from a zygote that has torch and course_lib imported:
  ``exercises.learner``), in an empty temporary folder, with an empty environment, CPU-time,
  memory and file-size limits; when the grader runs as root, also no network, a private /tmp
  and an unprivileged uid (``exercises.sandbox``);
* the notebook's code cells run there in order, as a kernel would (check cells aside), each
  cell's error noted in the feedback and the next cell run;
* the ordinary checkers run HERE, in the grader, calling the learner's functions through
  proxies; only plain data comes back (``exercises.wire``), so nothing the submission does can
  change its grade or another's;
* every outcome is a row ``submission,exercise,passed,reason,seconds``: passed, not attempted,
  the checker's hint, a time-out, a crash, invalid JSON (naming the file).

Exit status 0 when grading finished, whatever the grades (2: bad arguments).
"""
from __future__ import annotations

import argparse
import csv
import json
import multiprocessing
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

FIELDS = ["submission", "exercise", "passed", "reason", "seconds"]
NOT_ATTEMPTED = "not attempted"


@dataclass
class Row:
    submission: str
    exercise: str
    passed: bool
    reason: str
    seconds: float
    message: str = ""                 # what the learner would have seen (the feedback file)


def submissions(paths) -> list[Path]:
    """Every notebook the command line names, in order (a folder: its ``*.ipynb``, sorted)."""
    found = []
    for path in map(Path, paths):
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
        else:
            found.append(path)
    return found


def exercises_for(path: Path) -> list[str]:
    """Chapter NN's exercises for ``NN_*.ipynb``; all of them otherwise (course order)."""
    from . import EXERCISES
    chapter = re.match(r"(\d\d)_", path.name)
    names = [name for name, (ch, _) in EXERCISES.items() if chapter is None or ch == chapter.group(1)]
    return names or list(EXERCISES)


def read_cells(path: Path) -> list[str]:
    """The notebook's code cells' sources; ValueError naming the file when it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot be read ({type(error).__name__}: {error})") from None
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON (line {error.lineno}, column {error.colno}): not a notebook") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise ValueError(f"{path} is JSON but not a notebook (no list of cells)")
    sources = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            sources.append("".join(source) if isinstance(source, list) else str(source))
    return sources


def _missing_reason(name: str, cells: list[str], cell_errors: list[dict]) -> str:
    for error in cell_errors:
        if re.search(rf"^\s*def\s+{name}\s*\(", cells[error["cell"] - 1], re.M):
            return f"no function {name}: its cell {error['cell']} raised {error['error']} (line {error['line']})"
    return f"no function named {name} in the notebook"


def grade_submission(path: Path, limits, uid: int, zygote) -> tuple[list[Row], list[dict], dict]:
    """(rows, the cells' errors, the confinement achieved) for one notebook."""
    from . import EXERCISES
    from .guard import Ended
    from .sandbox import Session
    names, start = exercises_for(path), time.monotonic()
    try:
        cells = read_cells(path)
    except ValueError as error:
        return [Row(str(path), name, False, f"invalid notebook: {error}", 0.0, f"✗ {name}: {error}") for name in names], [], {}
    session = Session(zygote, cells, limits, uid, start + limits.submission_seconds)
    rows, cell_errors, state = [], [], None
    try:
        for name in names:
            began = time.monotonic()
            try:
                if not session.alive:
                    state = session.start()
                    cell_errors = cell_errors or state["cell_errors"]
            except Ended as ended:
                rows.append(Row(str(path), name, False, str(ended), round(time.monotonic() - began, 3), f"✗ {name}: {ended}"))
                continue
            if state["defined"].get(name) != "function":
                reason = _missing_reason(name, cells, state["cell_errors"])
                rows.append(Row(str(path), name, False, reason, 0.0, f"✗ {name}: {reason}"))
                continue
            session.exercise_deadline = min(began + limits.exercise_seconds, session.deadline)
            result = EXERCISES[name][1](session.function(name))
            reason = "passed" if result.passed else (NOT_ATTEMPTED if not result.attempted else
                                                     ("course problem: " if result.course_problem else "") + (result.hint or ""))
            rows.append(Row(str(path), name, result.passed, reason, round(time.monotonic() - began, 3), result.message))
    finally:
        confinement = session.confinement
        session.close()
    return rows, cell_errors, confinement


# ---------------------------------------------------------------------------- the worker pool

_worker: dict = {}


def _start_worker(limits) -> None:
    from .sandbox import Zygote, claim_uid
    _worker["uid"], _worker["limits"], _worker["zygote"] = claim_uid(), limits, Zygote()


def _grade_one(path: str):
    rows, cell_errors, confinement = grade_submission(Path(path), _worker["limits"], _worker["uid"], _worker["zygote"])
    return [asdict(r) for r in rows], cell_errors, confinement


def feedback_markdown(path: str, rows: list[Row], cell_errors: list[dict]) -> str:
    """What the learner would have seen, as Markdown: score, each check's lines, cell errors."""
    score = sum(r.passed for r in rows)
    lines = [f"# {path}", "", f"**{score}/{len(rows)}** exercises passed.", ""]
    for row in rows:
        lines += [f"## {row.exercise}", "", "```", row.message or row.reason, "```", ""]
    if cell_errors:
        lines += ["## Cells that raised an error", ""]
        lines += [f"- cell {e['cell']}, line {e['line']}: {e['error']}" for e in cell_errors] + [""]
    return "\n".join(lines)


def main(argv=None) -> int:
    from .sandbox import Limits
    parser = argparse.ArgumentParser(prog="python -m course_lib.exercises.grade", description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", metavar="PATH", help="notebooks, or folders of notebooks")
    parser.add_argument("--out", required=True, help="the gradebook CSV to write")
    parser.add_argument("--feedback", help="a folder for one Markdown feedback file per submission")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per call of a learner's function (10)")
    parser.add_argument("--exercise-timeout", type=float, default=60.0, help="seconds per exercise (60)")
    parser.add_argument("--submission-timeout", type=float, default=600.0, help="seconds per submission, cells included (600)")
    parser.add_argument("--memory", type=float, default=4.0, help="GiB of data (heap, anonymous memory) a submission may allocate, beyond what Python and torch hold before it runs (4)")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded side by side (1)")
    args = parser.parse_args(argv)
    limits = Limits(args.timeout, args.exercise_timeout, args.submission_timeout, int(args.memory * (1 << 30)))
    paths = [str(p) for p in submissions(args.paths)]
    started = time.monotonic()
    context = multiprocessing.get_context("spawn")
    results = {}
    with ProcessPoolExecutor(max(1, args.jobs), mp_context=context, initializer=_start_worker,
                             initargs=(limits,)) as pool:
        futures = {path: pool.submit(_grade_one, path) for path in paths}
        for path, future in futures.items():
            try:
                results[path] = future.result()
            except Exception as error:          # the grader's own failure: still a row, never a lost batch
                reason = f"the grader failed on this submission ({type(error).__name__}: {error})"
                results[path] = ([asdict(Row(path, n, False, reason, 0.0)) for n in exercises_for(Path(path))], [], {})
    rows = [Row(**r) for path in paths for r in results[path][0]]
    with open(args.out, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(FIELDS)
        writer.writerows([r.submission, r.exercise, r.passed, r.reason, r.seconds] for r in rows)
    if args.feedback:
        folder = Path(args.feedback)
        folder.mkdir(parents=True, exist_ok=True)
        for i, path in enumerate(paths):
            own = [r for r in rows if r.submission == path]
            name = f"{i + 1:04d}_{Path(path).stem}.md"
            (folder / name).write_text(feedback_markdown(path, own, results[path][1]), encoding="utf-8")
    confinement = next((c for _, _, c in results.values() if c), {})
    elapsed = time.monotonic() - started
    timeouts = sum("did not return within" in r.reason or "did not finish within" in r.reason for r in rows)
    crashes = sum("process ended" in r.reason for r in rows)
    print(f"graded {len(paths)} submissions ({len(rows)} rows) in {elapsed:.1f} s with {args.jobs} job(s): "
          f"{sum(r.passed for r in rows)} passed, {sum(r.reason == NOT_ATTEMPTED for r in rows)} not attempted, "
          f"{timeouts} timed out, {crashes} crashed; {_describe(confinement)} -> {args.out}")
    return 0


def _describe(confinement: dict) -> str:
    if not confinement:
        return "no submission process started"
    return (f"submissions ran as uid {confinement.get('uid')}, "
            f"{'without' if confinement.get('network') is False else 'WITH'} network, "
            f"{'a private' if confinement.get('private_tmp') else 'the shared'} /tmp")


if __name__ == "__main__":
    sys.exit(main())
