"""Grade a class: every submission in its own sandbox, one gradebook row per exercise.

    python -m course_lib.grading CLASS_FOLDER --out grades.csv [--summary summary.csv] \\
        [--feedback DIR] [--jobs N] [--resume] [-- NOTEBOOK...]

Not taught; docs/instructors.md ("Grading a class") says how to use it. CLASS_FOLDER is a folder
of notebooks, of students' folders, or an nbgrader course (its ``submitted/<student>/<assignment>/``
tree); notebooks may also be named one by one, after ``--`` (so that a file named ``--out=x.ipynb``
is a notebook, never an option): ``grading.submissions`` says how each is named (student and
assignment) and which exercises it is graded on. For each submission:

* a fresh process in its own bubblewrap sandbox (``grading.sandbox``), which sees only the
  read-only runtime and a private /tmp: no checkout, no solutions, no other submission, no
  gradebook; with its own user, PID, IPC and network namespaces and limits on processes,
  memory, file size and CPU time;
* the notebook's code cells run there in order, as a kernel would (check cells aside), each
  cell's error noted and the next cell run; each cell has its own CPU time (``--cell-timeout``);
* the ordinary checkers run HERE, in the grader, calling the learner's functions through
  proxies (``grading.session``); only plain data comes back (``grading.wire``), so nothing the
  submission does can change its grade or another's; a Chinese notebook's hints are in Chinese;
* every outcome is a row ``student,assignment,submission,exercise,passed,reason,seconds,sha256``,
  appended to the gradebook as soon as the submission is graded (``grading.gradebook``); its
  seconds are the check's, the sandbox's start-up and the notebook's cells are counted apart;
* whatever a submission does, an exception while grading it (the instructor's Ctrl-C aside)
  becomes its rows with the reason, and the gradebook, summary and feedback are written.

Exit status 0 when grading finished, whatever the grades (2: bad arguments, no notebook, no bwrap).
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from . import feedback, gradebook, submissions
from .gradebook import GRADER_FAILED, NOT_ATTEMPTED, visible

_worker: dict = {}


def _row(sub, name: str, passed: bool, reason: str, seconds: float, message: str = "") -> dict:
    return {"student": sub.student, "assignment": sub.assignment, "submission": sub.path, "exercise": name,
            "passed": passed, "reason": reason, "seconds": round(seconds, 3), "sha256": sub.sha256,
            "message": message or f"✗ {name}: {reason}", "language": sub.language}


def _missing_reason(name: str, cells: list[str], cell_errors) -> str:
    import re
    for error in cell_errors if isinstance(cell_errors, list) else []:
        cell = error.get("cell") if isinstance(error, dict) else None
        if type(cell) is int and 0 < cell <= len(cells) and re.search(rf"^\s*def\s+{name}\s*\(", cells[cell - 1], re.M):
            return f"no function {name}: its cell {cell} raised {error.get('error')} (line {error.get('line')})"
    return f"no function named {name} in the notebook"


def _first_line(error: BaseException) -> str:
    try:
        text = str(error)
    except Exception:                                   # a __str__ that raises
        text = ""
    return f"{type(error).__name__}: {text.splitlines()[0][:200] if text.strip() else '(no message)'}"


def grade_submission(sub, limits, uid: int, namespaces: bool) -> tuple[list[dict], list, float]:
    """(rows, the cells' errors, seconds spent starting the sandbox and running the cells) of one
    submission. A row's seconds are its check's alone."""
    from ..exercises import EXERCISES, guard
    from ..ui import language
    from .session import Session
    if sub.problem:
        return [_row(sub, name, False, f"invalid notebook: {sub.problem}", 0.0) for name in sub.exercises], [], 0.0
    session = Session(sub.cells, limits, uid, namespaces)
    rows, cell_errors, state, startup = [], [], None, 0.0
    before = language.current_language()
    language.set_language(sub.language)
    try:
        for name in sub.exercises:
            if not session.alive:
                began = time.monotonic()
                try:
                    state = session.start()
                    cell_errors = cell_errors or state["cell_errors"]
                except guard.Ended as ended:
                    rows.append(_row(sub, name, False, str(ended), 0.0))
                    continue
                finally:
                    startup += time.monotonic() - began
            if state["defined"].get(name) != "function":
                rows.append(_row(sub, name, False, _missing_reason(name, sub.cells, state["cell_errors"]), 0.0))
                continue
            began = time.monotonic()
            try:
                session.begin_exercise()
                result = EXERCISES[name][1](session.function(name))
            except KeyboardInterrupt:
                raise
            except BaseException as error:      # what the check itself let through: this exercise's row
                session.kill()
                rows.append(_row(sub, name, False, f"the check could not finish ({_first_line(error)})",
                                 time.monotonic() - began))
                continue
            reason = "passed" if result.passed else (NOT_ATTEMPTED if not result.attempted else
                                                     ("course problem: " if result.course_problem else "") + (result.hint or ""))
            rows.append(_row(sub, name, result.passed, reason, time.monotonic() - began, result.message))
    finally:
        language.set_language(before)
        session.close()
    return rows, cell_errors, startup


def die_with_parent() -> None:
    """This process gets SIGKILL when its parent ends, SIGKILL included (Linux's
    PR_SET_PDEATHSIG; elsewhere nothing). Called by each worker: when the grader ends, its
    workers end, then their sandboxes (bwrap's --die-with-parent), then the resource tracker
    (its pipe closes)."""
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
    _worker.update(uid=claim_uid(), limits=limits, namespaces=namespaces)


def _grade_one(found):
    """One submission's (rows, cell errors, start-up seconds) in a worker: whatever grading it
    raises, the instructor's Ctrl-C aside, becomes its rows."""
    sub = None
    try:
        sub = submissions.load(found)
        return grade_submission(sub, _worker["limits"], _worker["uid"], _worker["namespaces"])
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        return _grader_failed(found, error, sub), [], 0.0


def _grader_failed(found, error: BaseException, sub=None) -> list[dict]:
    """A row per exercise of a submission the grader could not grade, saying why."""
    if sub is None:
        try:
            sub = submissions.load(found)             # which exercises (a notebook that cannot be read: a problem, not a raise)
        except Exception:
            sub = submissions.Submission(found.path, found.student, ["(all)"], assignment=found.assignment, shown=found.shown)
    reason = f"{GRADER_FAILED} ({_first_line(error)})"
    return [_row(sub, name, False, reason, 0.0) for name in sub.exercises]


USAGE = ("python -m course_lib.grading CLASS_FOLDER --out FILE [options]\n"
         "       python -m course_lib.grading --out FILE [options] -- NOTEBOOK_OR_FOLDER...")


def parse(argv):
    """The options and PATHs. Everything after ``--`` is a PATH. Before it, a token that is one of
    the grader's options and also an existing file (a shell's ``*.ipynb`` expanding to
    ``--out=x.ipynb``) is refused as ambiguous; a file named like no option (``-2+3.ipynb``) is a PATH."""
    argv = list(sys.argv[1:] if argv is None else argv)
    head, tail = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(prog="python -m course_lib.grading", usage=USAGE, allow_abbrev=False,
                                     description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="the class folder (notebooks, students' folders, or an nbgrader course holding "
                             "submitted/<student>/<assignment>/), or notebooks; after -- nothing is read as an option")
    parser.add_argument("--out", required=True, help="the gradebook CSV to write (0600)")
    parser.add_argument("--summary", help="also write one row per student and assignment: student,assignment,passed,attempted,total")
    parser.add_argument("--feedback", help="a folder (0700) for one Markdown feedback file per submission, and index.csv")
    parser.add_argument("--resume", action="store_true",
                        help="keep the submissions already graded in OUT.partial (or OUT) whose notebook is unchanged")
    parser.add_argument("--timeout", type=float, default=10.0, help="CPU seconds per call of a learner's function (10)")
    parser.add_argument("--exercise-timeout", type=float, default=60.0, help="CPU seconds per exercise (60)")
    parser.add_argument("--cell-timeout", type=float, default=120.0, help="CPU seconds per cell of the notebook (120)")
    parser.add_argument("--submission-timeout", type=float, default=1800.0, help="CPU seconds per submission in all (1800)")
    parser.add_argument("--memory", type=float, default=4.0, help="GiB of data a submission may allocate beyond what Python and torch hold (4)")
    parser.add_argument("--disk", type=float, default=256.0, help="MiB of the submission's private /tmp (256)")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded side by side (1)")
    options = {name for action in parser._actions for name in action.option_strings}
    for token in head:
        if token.startswith("-") and token.split("=", 1)[0] in options and os.path.lexists(token):
            parser.error(f"{visible(token)!r} is both an option and a file here (a shell's * expands to file names): "
                         f"name the class folder instead (python -m course_lib.grading CLASS_FOLDER --out …), "
                         f"or put the notebooks after -- (… --out grades.csv -- *.ipynb)")
    args, unknown = parser.parse_known_args(head)
    stray = [u for u in unknown if not os.path.lexists(u)]
    if stray:
        parser.error(f"unrecognized arguments: {visible(' '.join(stray))}")
    named = set(args.paths) | set(unknown)            # a file named like an option ("-2+3.ipynb") is a PATH
    args.paths = list(dict.fromkeys([t for t in head if t in named] + tail))
    missing = [p for p in args.paths if not os.path.lexists(p)]
    if missing:
        parser.error(f"no such file or folder: {visible(', '.join(missing))}")
    if not args.paths:
        parser.error("name the class folder (or notebooks after --)")
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
            Path(args.summary).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except (sandbox.MissingBwrap, ValueError, OSError) as error:
        print(f"python -m course_lib.grading: {error}", file=sys.stderr)
        return 2
    print(f"isolation: {isolation}", flush=True)
    found = submissions.find(args.paths)
    if not found:
        print(f"python -m course_lib.grading: no notebook (*.ipynb) to grade in {visible(', '.join(args.paths))}",
              file=sys.stderr)
        return 2
    results: dict[str, tuple] = {}               # path -> (rows, cell errors, start-up seconds)
    for f in found:                              # --resume: the rows of each notebook graded before, unchanged since
        if visible(f.path) in book.done:
            sub = submissions.load(f)
            kept = book.kept(f.path, sub.sha256, len(sub.exercises))
            if kept is not None:
                results[f.path] = (kept, [], 0.0)
    book.start([results[f.path][0] for f in found if f.path in results])
    todo = [f for f in found if f.path not in results]
    names = feedback.names(found) if folder is not None else {}
    notes: dict[str, str] = {}                   # path -> why its feedback file was not written
    started = time.monotonic()
    with ProcessPoolExecutor(max(1, args.jobs), mp_context=multiprocessing.get_context("spawn"),
                             initializer=_start_worker, initargs=(limits, namespaces)) as pool:
        futures = {pool.submit(_grade_one, f): f for f in todo}
        for future in _progress(as_completed(futures), len(futures), len(results)):
            f = futures[future]
            try:
                results[f.path] = future.result()
            except KeyboardInterrupt:           # the instructor's Ctrl-C (the workers turn the learner's into rows)
                raise
            except BaseException as error:      # the grader's own failure: still rows, never a lost batch
                results[f.path] = (_grader_failed(f, error), [], 0.0)
            book.add(results[f.path][0])
            if folder is not None:
                notes[f.path] = _write_feedback(folder / names[f.path], f, *results[f.path][:2])
    if folder is not None:                      # resumed submissions had theirs written before
        for f in found:
            target = folder / names[f.path]
            if f.path not in notes and (target.is_symlink() or not target.exists()):
                notes[f.path] = _write_feedback(target, f, *results[f.path][:2])
    order = [f.path for f in found]
    rows = [row for path in order for row in results[path][0]]
    try:
        book.finish(order, {path: result[0] for path, result in results.items()})
        if args.summary:
            gradebook.write_summary(args.summary, rows)
        if folder is not None:
            feedback.write_index(folder, [_index_line(f, names[f.path], results[f.path][0], notes.get(f.path, ""))
                                          for f in found])
    except (ValueError, OSError) as error:
        print(f"python -m course_lib.grading: {error}", file=sys.stderr)
        return 1
    _print_summary(rows, len(todo), len(found) - len(todo), [results[f.path][2] for f in todo],
                   time.monotonic() - started, args, isolation)
    return 0


def _progress(iterable, total: int, already: int):
    try:
        from tqdm import tqdm
    except ImportError:                          # tqdm is in the course's environment; a bare install still grades
        return iterable
    return tqdm(iterable, total=total, initial=0, desc=f"grading ({already} kept from before)" if already else "grading",
                unit="submission", file=sys.stderr)


def _write_feedback(target: Path, found, rows: list[dict], cell_errors) -> str:
    """Write one feedback file; "" or, when it cannot be written (a symbolic link there, a full
    disk), why not (said in a line and in the index): never the end of the batch."""
    try:
        feedback.write(target, feedback.markdown(found, rows, cell_errors))
        return ""
    except Exception as error:
        note = f"not written: {_first_line(error)}"
        print(f"feedback for {visible(found.path)}: {visible(note)}", flush=True)
        return note


def _index_line(found, name: str, rows: list[dict], note: str) -> list:
    return [name if not note else "", found.student, found.assignment, found.path,
            sum(str(r["passed"]) == "True" for r in rows), len(rows), note]


def _print_summary(rows: list[dict], graded: int, kept: int, startups: list[float], elapsed: float, args,
                   isolation: str) -> None:
    timeouts = sum("did not return within" in r["reason"] or "ran longer than" in r["reason"] for r in rows)
    crashes = sum("process ended" in r["reason"] for r in rows)
    count = f"graded {graded} submissions now, kept {kept} from before" if kept else f"graded {graded} submissions"
    print(f"{count} ({len(rows)} rows in all) in {elapsed:.1f} s with {args.jobs} job(s): "
          f"{sum(str(r['passed']) == 'True' for r in rows)} passed, {sum(r['reason'] == NOT_ATTEMPTED for r in rows)} "
          f"not attempted, {timeouts} timed out, {crashes} crashed -> {args.out}"
          + (f", {args.summary}" if args.summary else "") + (f", {args.feedback}/" if args.feedback else ""))
    startups = [s for s in startups if s > 0]          # those that started a sandbox
    if startups:
        print(f"start-up (sandbox, imports, the notebook's cells): {sum(startups) / len(startups):.1f} s per submission "
              f"on average, not in the rows' seconds")
    print(f"isolation: {isolation}")


if __name__ == "__main__":
    sys.exit(main())
