"""Grade a class: every submission in its own sandbox, one gradebook row per exercise.

    python -m course_lib.grading PATH... --out grades.csv [--summary summary.csv] \\
        [--feedback DIR] [--jobs N] [--resume]

Not taught; docs/instructors.md ("Grading a class") says how to use it. PATHs are notebooks,
folders of notebooks, or an nbgrader course (its ``submitted/<student>/<assignment>/`` tree):
``grading.submissions`` says how each is named and which exercises it is graded on. For each
submission:

* a fresh process in its own bubblewrap sandbox (``grading.sandbox``), which sees only the
  read-only runtime and a private /tmp: no checkout, no solutions, no other submission, no
  gradebook; with its own user, PID, IPC and network namespaces and limits on processes,
  memory, file size and CPU time;
* the notebook's code cells run there in order, as a kernel would (check cells aside), each
  cell's error noted and the next cell run; each cell has its own CPU time (``--cell-timeout``);
* the ordinary checkers run HERE, in the grader, calling the learner's functions through
  proxies (``grading.session``); only plain data comes back (``grading.wire``), so nothing the
  submission does can change its grade or another's; a Chinese notebook's hints are in Chinese;
* every outcome is a row ``student,submission,exercise,passed,reason,seconds``, appended to the
  gradebook as soon as the submission is graded (``grading.gradebook``).

Exit status 0 when grading finished, whatever the grades (2: bad arguments or no bwrap).
"""
from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from . import gradebook, submissions
from .gradebook import NOT_ATTEMPTED

_worker: dict = {}


def _row(sub, name: str, passed: bool, reason: str, seconds: float, message: str = "") -> dict:
    return {"student": sub.student, "submission": sub.path, "exercise": name, "passed": passed,
            "reason": reason, "seconds": round(seconds, 3), "message": message or f"✗ {name}: {reason}",
            "language": sub.language}


def _missing_reason(name: str, cells: list[str], cell_errors: list[dict]) -> str:
    import re
    for error in cell_errors:
        cell = error["cell"]
        if isinstance(cell, int) and 0 < cell <= len(cells) and re.search(rf"^\s*def\s+{name}\s*\(", cells[cell - 1], re.M):
            return f"no function {name}: its cell {cell} raised {error['error']} (line {error['line']})"
    return f"no function named {name} in the notebook"


def grade_submission(sub, limits, uid: int, namespaces: bool) -> tuple[list[dict], list[dict]]:
    """(rows, the cells' errors) of one submission."""
    from ..exercises import EXERCISES, guard
    from ..ui import language
    from .session import Session
    if sub.problem:
        return [_row(sub, name, False, f"invalid notebook: {sub.problem}", 0.0) for name in sub.exercises], []
    session = Session(sub.cells, limits, uid, namespaces)
    rows, cell_errors, state = [], [], None
    before = language.current_language()
    language.set_language(sub.language)
    try:
        for name in sub.exercises:
            began = time.monotonic()
            try:
                if not session.alive:
                    state = session.start()
                    cell_errors = cell_errors or state["cell_errors"]
            except guard.Ended as ended:
                rows.append(_row(sub, name, False, str(ended), time.monotonic() - began))
                continue
            if state["defined"].get(name) != "function":
                rows.append(_row(sub, name, False, _missing_reason(name, sub.cells, state["cell_errors"]), 0.0))
                continue
            session.begin_exercise()
            result = EXERCISES[name][1](session.function(name))
            reason = "passed" if result.passed else (NOT_ATTEMPTED if not result.attempted else
                                                     ("course problem: " if result.course_problem else "") + (result.hint or ""))
            rows.append(_row(sub, name, result.passed, reason, time.monotonic() - began, result.message))
    finally:
        language.set_language(before)
        session.close()
    return rows, cell_errors


# What each worker needs before its first submission (torch and the checkers): imported once, by
# the fork server, which forks every worker from that state. The server is a fresh Python that
# runs nothing else (no torch operation, so no thread pool, before it forks); spawn would import
# all of it again in each worker.
# The first one ties the server's life to the grader's.
WORKER_PRELOAD = ["course_lib.grading.lifeline", "course_lib.grading.session", "course_lib.exercises",
                  "course_lib.ui.language"]


def _workers_context():
    """The grader's workers: forked from a server that has imported :data:`WORKER_PRELOAD`
    (``forkserver``, POSIX), else started fresh (``spawn``)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(WORKER_PRELOAD)
    return context


def die_with_parent() -> None:
    """This process gets SIGKILL when its parent ends, SIGKILL included (Linux's
    PR_SET_PDEATHSIG; elsewhere nothing). Called by the fork server (``grading.lifeline``) and
    each worker: when the grader ends, the fork server ends, then its workers, then their
    sandboxes (bwrap's --die-with-parent), then the resource tracker (its pipe closes)."""
    import ctypes
    import signal
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)          # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:                              # the parent ended before that
        os.kill(os.getpid(), signal.SIGKILL)


def _start_worker(limits, namespaces: bool) -> None:
    from .sandbox import claim_uid
    die_with_parent()
    gc.freeze()         # what the fork server imported: never walked by this worker's collections
    _worker.update(uid=claim_uid(), limits=limits, namespaces=namespaces)


def _grade_one(path: str, student: str):
    try:
        sub = submissions.load(path, student)
        return grade_submission(sub, _worker["limits"], _worker["uid"], _worker["namespaces"])
    except KeyboardInterrupt:            # the instructor's Ctrl-C (a learner's is rebuilt as a plain failure)
        raise
    except BaseException as error:       # whatever a submission makes the grader raise: its rows, not a lost batch
        return _grader_failed(path, student, error), []


def _grader_failed(path: str, student: str, error: BaseException) -> list[dict]:
    reason = f"the grader failed on this submission ({type(error).__name__}: {str(error)[:300]})"
    try:
        sub = submissions.load(path, student)
        return [_row(sub, name, False, reason, 0.0) for name in sub.exercises]
    except BaseException as again:
        sub = submissions.Submission(path=path, student=student, problem=type(again).__name__)
        return [_row(sub, "-", False, reason, 0.0)]


def parse(argv):
    parser = argparse.ArgumentParser(prog="python -m course_lib.grading", description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="notebooks, folders of notebooks, or an nbgrader course folder (submitted/<student>/<assignment>/)")
    parser.add_argument("--out", required=True, help="the gradebook CSV to write (a new file, 0600)")
    parser.add_argument("--summary", help="also write one row per student: student,passed,attempted,total")
    parser.add_argument("--feedback", help="a folder (0700) for one Markdown feedback file per submission")
    parser.add_argument("--resume", action="store_true", help="keep the submissions already graded in OUT.partial (or OUT)")
    parser.add_argument("--timeout", type=float, default=10.0, help="CPU seconds per call of a learner's function (10)")
    parser.add_argument("--exercise-timeout", type=float, default=60.0, help="CPU seconds per exercise (60)")
    parser.add_argument("--cell-timeout", type=float, default=120.0, help="CPU seconds per cell of the notebook (120)")
    parser.add_argument("--submission-timeout", type=float, default=1800.0, help="CPU seconds per submission in all (1800)")
    parser.add_argument("--memory", type=float, default=4.0, help="GiB of data a submission may allocate beyond what Python and torch hold (4)")
    parser.add_argument("--disk", type=float, default=256.0, help="MiB of the submission's private /tmp (256)")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded side by side (1)")
    args, unknown = parser.parse_known_args(argv)
    # a submission named like an option ("-2+3.ipynb", from a shell's *.ipynb) is a PATH, not an error
    args.paths += [u for u in unknown if os.path.exists(u)]
    if any(not os.path.exists(u) for u in unknown):
        parser.error(f"unrecognized arguments: {' '.join(u for u in unknown if not os.path.exists(u))}")
    if not args.paths:
        parser.error("name at least one PATH (a notebook, a folder of notebooks, or an nbgrader course)")
    return args


def main(argv=None) -> int:
    from . import sandbox
    from .sandbox import Limits
    args = parse(argv)
    os.umask(0o077)                                 # everything the grader writes is the instructor's only
    limits = Limits(args.timeout, args.exercise_timeout, args.cell_timeout, args.submission_timeout,
                    int(args.memory * (1 << 30)), disk_bytes=int(args.disk * (1 << 20)))
    try:
        namespaces, isolation = sandbox.probe(sandbox.claim_uid(), limits.disk_bytes)
        book = gradebook.Gradebook(args.out, args.resume)
        folder = gradebook.private_folder(Path(args.feedback)) if args.feedback else None
        if args.summary:
            gradebook.refuse_symlink(Path(args.summary), "--summary")
    except (sandbox.MissingBwrap, ValueError, OSError) as error:
        print(f"python -m course_lib.grading: {error}", file=sys.stderr)
        return 2
    print(f"isolation: {isolation}", flush=True)
    found = submissions.find(args.paths)
    names = gradebook.feedback_names(found)
    results = {path: (rows, []) for path, rows in book.done.items()
               if path in dict(found) and len(rows) == len(submissions.load(path, "").exercises)}
    todo = [(path, student) for path, student in found if path not in results]
    started = time.monotonic()
    with ProcessPoolExecutor(max(1, args.jobs), mp_context=_workers_context(),
                             initializer=_start_worker, initargs=(limits, namespaces)) as pool:
        futures = {pool.submit(_grade_one, path, student): (path, student) for path, student in todo}
        todo_paths = {path for path, _ in todo}
        for future in _progress(as_completed(futures), len(futures), len(results)):
            path, student = futures[future]
            try:
                results[path] = future.result()
            except Exception as error:          # the grader's own failure: still rows, never a lost batch
                results[path] = (_grader_failed(path, student, error), [])
            book.add(results[path][0])
            if folder is not None:
                _write_feedback(folder / names[path], path, student, *results[path])
    if folder is not None:                      # resumed submissions had theirs written before
        for path, student in found:
            if path not in todo_paths and not (folder / names[path]).exists():
                _write_feedback(folder / names[path], path, student, *results[path])
    order = [path for path, _ in found]
    book.finish(order, {path: rows for path, (rows, _) in results.items()})
    rows = [row for path in order for row in results[path][0]]
    if args.summary:
        gradebook.write_summary(args.summary, rows)
    _print_summary(rows, len(order), time.monotonic() - started, args, isolation)
    return 0


def _progress(iterable, total: int, already: int):
    try:
        from tqdm import tqdm
    except ImportError:                          # tqdm is in the course's environment; a bare install still grades
        return iterable
    return tqdm(iterable, total=total, initial=0, desc=f"grading ({already} already done)" if already else "grading",
                unit="submission", file=sys.stderr)


def _write_feedback(target: Path, path: str, student: str, rows: list[dict], cell_errors: list[dict]) -> None:
    try:
        gradebook.write_feedback(target, gradebook.feedback_markdown(student, path, rows, cell_errors))
    except (OSError, ValueError) as error:          # e.g. a symbolic link in its place: said, never followed
        print(f"python -m course_lib.grading: feedback for {path} not written: {error}", file=sys.stderr, flush=True)


def _print_summary(rows: list[dict], count: int, elapsed: float, args, isolation: str) -> None:
    timeouts = sum("did not return within" in r["reason"] or "ran longer than" in r["reason"] for r in rows)
    crashes = sum("process ended" in r["reason"] for r in rows)
    print(f"graded {count} submissions ({len(rows)} rows) in {elapsed:.1f} s with {args.jobs} job(s): "
          f"{sum(str(r['passed']) == 'True' for r in rows)} passed, {sum(r['reason'] == NOT_ATTEMPTED for r in rows)} "
          f"not attempted, {timeouts} timed out, {crashes} crashed -> {args.out}"
          + (f", {args.summary}" if args.summary else "") + (f", {args.feedback}/" if args.feedback else ""))
    print(f"isolation: {isolation}")


if __name__ == "__main__":
    sys.exit(main())
