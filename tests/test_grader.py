"""The class grader (python -m course_lib.grading): a class graded in sandboxes, as root and as a normal user.

Two classes, each graded once with --jobs 2 and small budgets (a call: 1 CPU second): one by
root (skipped, with the reason, when the tests run as a normal user), one by an unprivileged
user (as root: the user ``probeuser`` — or $COURSE_TEST_USER, else ``nobody`` — through setpriv;
as a normal user: the tests' own user) from an nbgrader ``submitted/<student>/<assignment>/``
tree. Each holds a function that never returns and two hostile submissions: one leaves a SysV
shared-memory segment and a /dev/shm file, tries a fork bomb (every fork refused), ``kill(-1)``,
writes files everywhere and fills its /tmp; the other looks (at its first call) for that segment and file —
graded after the writer in root's class, beside it in the normal user's —, the writer's
notebook, the gradebook, the feedback, the solutions, the grader's processes and the network.
Beside them, honest copies of chapter 03's worked solutions pass every exercise. The normal
user's class has one whose cell waits several times its small CPU budget, and every
exercise's worked solution: the code cells of notebooks/solutions/*.ipynb (found with a glob) in
one notebook, graded while that cell waits. Root's class, with a CPU hog running until its slow notebook is
graded, has that slow notebook (graded first: a cell that uses more CPU than a call's and an
exercise's budget, a call that uses most of its CPU budget and more than that in wall time
under the hog), a renamed copy in nbformat 3 named like a formula, Colab's "Copy of
03_attention.ipynb" (its summary row and feedback file are checked), a Chinese notebook with a
student's HTML, and a cell that never ends (in the submission whose function never returns).
Small tests: a symlinked --out, --resume, no bwrap, a kernel that refuses namespaces, a file
named like an option, the rules that name and read submissions (tests/test_grader_options.py).
"""
import csv
import json
import os
import pwd
import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from course_lib.exercises import EXERCISES
from course_lib.grading.session import IDLE_GRACE
from course_lib.grading.submissions import code_cells, read_notebook
from _grading import (CH03, IS_ROOT, ROOT, SOLUTIONS, CpuHog, chapter03, guarded_mask, needs_bwrap, notebook, rows_by,
                      run_grader, solution, unprivileged_user)

pytestmark = [pytest.mark.sandbox, needs_bwrap]      # every test here grades in real sandboxes

SHM_KEY = 0x0C0FFEE0 + os.getpid() % 1000
SHM_FILE = Path(f"/dev/shm/answer-{os.getpid()}")
CALL = 1                # CPU seconds per call of a learner's function (an exercise: 1.25)
LIMITS = ["--jobs", "2", "--timeout", str(CALL), "--exercise-timeout", "1.25", "--memory", "3"]
CELL = 2.5              # root's class: CPU seconds per cell (its slow cell computes 1.75)
CELL_SMALL = 1          # the normal user's class: a cell that waits WAIT s keeps its grade; the
                        # writer's cells must finish too (256 MiB written): 0.5 CPU s was too
                        # little on a busy machine
WAIT = CELL_SMALL + IDLE_GRACE - 3           # a wait longer than its CPU budget, within what a cell may wait


SHM_WRITE = f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
segment = libc.shmget({SHM_KEY}, 4096, 0o1666)
if segment != -1:                        # the sandbox refuses SysV shared memory (seccomp): in case it did not
    ctypes.memmove(libc.shmat(segment, None, 0), b"the answer: triu(diagonal=1)", 29)
open("{SHM_FILE}", "w").write("triu")
"""

SHM_READ = f"""
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
for _ in range(10):                      # the writer is graded before it, or beside it: wait for it
    if libc.shmget({SHM_KEY}, 0, 0) != -1 or os.path.exists("{SHM_FILE}"):
        raise AssertionError("another submission's shared memory is visible")
    time.sleep(0.2)
"""


def snoop(secrets: list[Path]) -> str:
    """A check that nothing of the grader, the checkout or another submission is visible."""
    return f"""
import os, socket
for path in {[str(p) for p in secrets]!r}:
    if os.path.exists(path):
        raise AssertionError("visible: " + path)
others = [p for p in os.listdir("/proc") if p.isdigit()]
for pid in others:
    try:
        if b"--out" in open(f"/proc/{{pid}}/cmdline", "rb").read():
            raise AssertionError("the grader's command line is visible")
    except OSError:
        pass
if len(others) > 5:
    raise AssertionError(f"{{len(others)}} processes visible")
if "GRADER_SECRET" in os.environ or os.getuid() == 0:
    raise AssertionError("the grader's environment, or root")
try:
    socket.create_connection(("10.255.255.1", 80), timeout=0.5)
    raise AssertionError("network reachable")
except OSError:
    pass
"""


FORK_BOMB = """
import os, signal, time
forks = 0
for _ in range(300):
    try:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        forks += 1
    except OSError:
        break
os.kill(-1, signal.SIGKILL)              # everything this submission started; never the grader
"""

DISK_FILL = """
written = 0
for i in range(6):                       # 360 MiB, in files of 60 MiB, into a /tmp of 256 MiB
    try:
        with open(f"/tmp/fill{i}", "wb") as fill:
            for _ in range(60):
                fill.write(b"x" * (1 << 20))
                written += 1 << 20
    except OSError:
        break
"""

ESCAPES = """
import os, subprocess, pathlib
for target in {targets!r}:
    for attempt in (lambda: pathlib.Path(target).write_text("escaped"), lambda: os.system(f"touch {{target}}")):
        try:
            attempt()
        except Exception:
            pass
subprocess.Popen(["sh", "-c", "sleep 1; touch {late}"], start_new_session=True)
"""


def hostile_class(subs: Path, out: Path, layout, *hang_cells: str) -> tuple[dict, list[Path]]:
    """The isolation probes, each at ``layout(subs, student)``; (student -> path, canaries). ``hang_cells``
    go before the cells of "hang" (whose make_causal_mask never returns)."""
    canaries = [Path("/tmp") / f"canary-{os.getpid()}-{subs.name}", ROOT / f"canary-{os.getpid()}", out.parent / "canary",
                SHM_FILE]
    late = Path("/tmp") / f"canary-late-{os.getpid()}-{subs.name}"
    # a SysV segment and a /dev/shm file left behind (first: they exist while the rest runs), a fork
    # bomb (every fork refused), kill(-1), files written everywhere, a full /tmp
    writer = chapter03(layout(subs, "writer"), SHM_WRITE, FORK_BOMB, ESCAPES.format(targets=[str(c) for c in canaries], late=late),
                       DISK_FILL, replace={"make_causal_mask": guarded_mask(
                           "if forks:\n    raise AssertionError(f'{forks} processes started')\n"
                           "if not 200 << 20 < written <= 256 << 20:\n    raise AssertionError(f'{written} bytes written')")})
    secrets = [out, out.with_name(out.name + ".partial"), out.parent / "feedback", *SOLUTIONS, ROOT / "README.md", writer, subs]
    paths = {
        "writer": writer,
        # another submission's shared memory and notebook, the gradebook, feedback, solutions, processes, network
        "reader": chapter03(layout(subs, "reader"), replace={"make_causal_mask": guarded_mask(SHM_READ + snoop(secrets))}),
        # its attention_head builds its own mask: it passes in the fresh process after the hang
        "hang": chapter03(layout(subs, "hang"), *hang_cells, replace={
            "make_causal_mask": "def make_causal_mask(T):\n    while True:\n        pass",
            "attention_head": solution("attention_head").replace("make_causal_mask(T)", "torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)")}),
    }
    return paths, canaries + [late]


def learners_running(uid: int) -> list[str]:
    """Submission processes of ``uid`` that outlived their grader: no ancestor is a grader still
    running (another test's grader, running meanwhile as the same uid, keeps its own)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid and b"course_lib.grading.learner" in Path(f"/proc/{pid}/cmdline").read_bytes():
                if not grader_above(pid):
                    found.append(pid)
        except OSError:
            pass
    return found


def grader_above(pid: str) -> bool:
    """Whether an ancestor of ``pid`` is a grader (``python -m course_lib.grading``) still running."""
    while pid not in ("0", "1"):
        try:
            pid = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
            if b"\0-m\0course_lib.grading\0" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except (OSError, IndexError):
            return False
    return False


def processes_naming(path: Path) -> list[str]:
    """Processes whose command line names ``path``: the writer's late sleeper, had it left its sandbox."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if str(path).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            pass
    return found


def until_gone(find, seconds: float = 10) -> list[str]:
    """What ``find()`` still finds after up to ``seconds`` (at once when it finds nothing)."""
    deadline = time.monotonic() + seconds
    while (found := find()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def shm_segment_left() -> bool:
    return any(line.split()[0] == str(SHM_KEY) for line in Path("/proc/sysvipc/shm").read_text().splitlines()[1:])


def check_isolation(by: dict, canaries: list[Path], run, uid: int) -> list[str]:
    """Every isolation probe of :func:`hostile_class`; the problems found."""
    problems = []
    for who in ("writer", "reader"):
        failed = {n: r["reason"] for n, r in by.get(who, {}).items() if r["passed"] != "True"}
        if sorted(by.get(who, {})) != sorted(CH03) or failed:
            problems.append(f"{who}: {failed or sorted(by.get(who, {}))}")
    hang = by.get("hang", {})
    if not (f"did not return within {CALL} s" in hang.get("make_causal_mask", {}).get("reason", "")
            and hang.get("attention_head", {}).get("passed") == hang.get("split_heads", {}).get("passed") == "True"):
        problems.append(f"hang: {hang}")
    late = until_gone(lambda: processes_naming(canaries[-1]))      # an escaped late sleeper: once it has written
    if late:
        problems.append(f"the late sleeper outlived its sandbox: {late}")
    problems += [f"written outside the sandbox: {c}" for c in canaries if c.exists()]
    if shm_segment_left():
        problems.append("a SysV shared-memory segment outlived its submission")
    running = until_gone(lambda: learners_running(uid))
    if running:
        problems.append(f"submission processes still running: {running}")
    if "bubblewrap sandbox" not in run.stdout:
        problems.append(f"isolation line: {run.stdout[-500:]}")
    return problems


# ---------------------------------------------------------------------------- a normal user's class

def test_a_class_graded_by_a_normal_user_from_an_nbgrader_tree_is_isolated(tmp_path):
    user = unprivileged_user() if IS_ROOT else None
    work = Path(tempfile.mkdtemp(prefix="grader-class-"))
    try:
        subs, out = work / "course" / "submitted", work / "grading" / "grades.csv"
        paths, canaries = hostile_class(subs, out, lambda folder, student: folder / student / "ps1" / "03_attention.ipynb")
        # honest, the tree's first: a cell that waits (sleeps) several times its CPU budget,
        # then defines what its first call needs (were the cell stopped and skipped, the grade would fall)
        paths["asleep"] = chapter03(subs / "asleep" / "ps1" / "03_attention.ipynb", f"import time\ntime.sleep({WAIT})\nwoke = True",
                                    replace={"make_causal_mask": guarded_mask("assert woke")})
        # every checker through the sandbox: every chapter's worked solutions, their code cells in one
        # notebook, graded on the exercises its code defines (each file as a learner's: tests/test_exercises.py)
        paths["solutions"] = notebook(subs / "solutions" / "ps1" / "worked_solutions.ipynb",
                                      [c for p in SOLUTIONS for c in code_cells(read_notebook(str(p)))], chapter=None)
        uid = os.getuid()
        if user is not None:
            uid = pwd.getpwnam(user).pw_uid
            for folder, dirs, files in os.walk(work):
                for name in [folder, *(os.path.join(folder, f) for f in dirs + files)]:
                    os.chown(name, uid, pwd.getpwnam(user).pw_gid)
        # the writer and the reader first, side by side (named by their folders in the tree): the
        # reader looks while the writer's segment exists; then the rest of the tree
        run = run_grader([str(paths["writer"]), str(paths["reader"]), str(work / "course"), "--out", str(out),
                          "--feedback", str(out.parent / "feedback"), *LIMITS, "--cell-timeout", str(CELL_SMALL)], user)
        assert run.returncode == 0, run.stderr[-3000:]
        by = rows_by(out)
        problems = check_isolation(by, canaries, run, uid)
        if sorted(by) != sorted(paths):
            problems.append(f"students from the nbgrader tree: {sorted(by)}")
        graded = by.get("solutions", {})
        if sorted(graded) != sorted(EXERCISES) or any(r["passed"] != "True" for r in graded.values()):
            problems.append(f"solutions: {sorted(graded)}, {[(n, r['reason']) for n, r in graded.items() if r['passed'] != 'True']}")
        if sorted(by.get("asleep", {})) != sorted(CH03) or any(r["passed"] != "True" for r in by["asleep"].values()):
            problems.append(f"a cell that waited {WAIT} s: {by.get('asleep')}")
        if f"your uid {uid}" not in run.stdout:
            problems.append(f"not graded as uid {uid}: {run.stdout[-400:]}")
        assert not problems, "\n".join(problems) + "\n" + run.stdout[-1500:]
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------- root's class

FORMULA_NAME = "=HYPERLINK(1)"          # "-2+3": the --resume test


@pytest.mark.skipif(not IS_ROOT, reason="the grader as root needs the tests to run as root; the normal-user test runs")
def test_a_class_graded_by_root_is_isolated_and_honest_work_keeps_its_grade_under_load(tmp_path):
    subs, out, first = tmp_path / "class", tmp_path / "grading" / "grades.csv", tmp_path / "first"
    # "hang" also has a cell that never ends: skipped when its cells run again, named in its feedback.
    # first/ is graded first: "hang" (the longest) beside "slow", then "writer" (its segment and files
    # would outlive it: "reader" comes later)
    paths, canaries = hostile_class(subs, out, lambda folder, student: (first if student in ("hang", "writer") else folder)
                                    / student / "03_attention.ipynb", "while True:\n    pass")
    # a renamed copy, in nbformat 3, named like a formula: its chapter from its metadata, upgraded by nbformat
    renamed = subs / f"{FORMULA_NAME}.ipynb"
    v3 = json.loads(chapter03(renamed).read_text())
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": v3["metadata"], "worksheets": [{"metadata": {}, "cells": [
        {"cell_type": "code", "language": "python", "input": c["source"], "outputs": [], "metadata": {}} for c in v3["cells"]]}]}
    renamed.write_text(json.dumps(v3))
    paths |= {
        "'" + FORMULA_NAME: renamed,
        "colab": chapter03(subs / "colab" / "Copy of 03_attention.ipynb", chapter=None, metadata={"colab": {"provenance": []}}),
        "<b>zh": chapter03(subs / "<b>zh" / "03_attention.ipynb", "from course_lib.ui.language import set_language\nset_language('zh')",
                           language="zh", replace={"make_causal_mask": solution("make_causal_mask").replace("diagonal=1", "diagonal=0"),
                                                   "split_heads": "def split_heads(x, n_head):\n    raise ValueError('<img src=x onerror=alert(1)>')"}),
    }
    # honest and slow, started first: a cell of 1.75 CPU seconds (more than a call's 1 and an
    # exercise's 1.25), a first call of 0.75 of its 1 CPU second (more in wall time under the hog).
    # The cell defines what the call needs: were the cell stopped and skipped, the grade would fall
    paths["slow"] = chapter03(first / "slow" / "03_attention.ipynb", "import time",
                              "start = time.process_time()\nwhile time.process_time() - start < 1.75:\n    pass\nworked = True",
                              replace={"make_causal_mask": guarded_mask(
                                  "assert worked\nstart = time.process_time()\nwhile time.process_time() - start < 0.75:\n    pass")})
    args = [str(first), str(subs), "--out", str(out), "--summary", str(out.parent / "summary.csv"),
            "--feedback", str(out.parent / "feedback"), *LIMITS, "--cell-timeout", str(CELL)]
    with CpuHog(out, str(paths["slow"])) as hog:          # the hog runs until the slow one is graded
        run = run_grader(args)
    assert run.returncode == 0, run.stderr[-3000:]
    assert hog.saw_it, "the CPU hog ended before the slow submission was graded"
    by = rows_by(out)
    problems = check_isolation({k: by.get(k, {}) for k in paths}, canaries, run, -1)
    problems += [f"root's submissions still running: {learners_running(u)}" for u in range(61000, 61010) if learners_running(u)]
    for who in ("slow", "'" + FORMULA_NAME, "colab"):
        if sorted(by.get(who, {})) != sorted(CH03) or any(r["passed"] != "True" for r in by[who].values()):
            problems.append(f"{who}: {by.get(who)}")
    hang = by.get("hang", {})           # its other two pass (check_isolation): the cell skipped costs no grade
    said = out.parent / "feedback" / "hang.md"
    if len(hang) != 3 or (
            f"cell 2 ran longer than {CELL} s" not in (said.read_text(encoding="utf-8") if said.is_file() else "")):
        problems.append(f"the cell that never ends: {hang}")
    zh = by.get("<b>zh", {}).get("make_causal_mask", {})
    if zh.get("passed") != "False" or not re.search(r"[\u4e00-\u9fff]", zh.get("reason", "")):
        problems.append(f"zh: a Chinese hint expected, got {zh}")
    if [k for k in by if k.startswith("'")] != ["'" + FORMULA_NAME]:
        problems.append(f"formula names in the student column: {sorted(by)}")
    raw = out.read_text(encoding="utf-8")
    if re.search(r'(^|,)"[=+\-@]', raw, re.M):
        problems.append("a cell of the gradebook begins with = + - or @")
    problems += check_outputs(out, by)
    assert not problems, "\n".join(problems) + "\n" + run.stdout[-1500:]


def check_outputs(out: Path, by: dict) -> list[str]:
    """Private files, a summary row per student, feedback named after students and escaped."""
    problems = []
    for path in (out, out.parent / "summary.csv", out.parent / "feedback"):
        if os.stat(path).st_mode & 0o077:
            problems.append(f"{path} is readable by others")
    summary = {r["student"]: r for r in csv.DictReader((out.parent / "summary.csv").open(encoding="utf-8"))}
    if summary.get("colab") != {"student": "colab", "assignment": "Copy of 03_attention", "passed": "3", "attempted": "3",
                                "total": "3"}:
        problems.append(f"summary: {summary.get('colab')}")
    feedback = out.parent / "feedback"
    if not (feedback / "colab.md").is_file():
        problems.append(f"feedback files: {sorted(p.name for p in feedback.iterdir())}")
    html = (feedback / "b_zh.md").read_text(encoding="utf-8") if (feedback / "b_zh.md").is_file() else ""
    outside_fences, fenced = [], False
    for line in html.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            outside_fences.append(line)
    if not html or "<" in "\n".join(outside_fences) or "onerror" not in html or "道练习通过" not in html:
        problems.append(f"the student's HTML is not escaped in its Chinese feedback:\n{html[:800]}")
    return problems
