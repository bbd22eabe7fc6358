"""The class grader against submissions that try to end, stall or read it: one class, graded once.

Each submission below is a copy of chapter 03's worked solutions plus one attack; the class is
graded with --jobs 2 and small budgets (a cell: CELL CPU seconds, --memory 0.5 GiB, --disk
16 MiB), with a canary variable in the grader's environment. Every submission must get its
three rows with a reason, the gradebook, summary and feedback are written, and ``--resume``
finishes too:

* a learner function raising BaseException, a GeneratorExit subclass, a KeyboardInterrupt
  subclass, a SystemExit subclass (the checkers' verdict, never the grader's exception);
* a notebook of JSON nested 100,000 deep ("invalid notebook");
* forged and truncated messages on the runner's socket: a ``done`` message with malformed
  errors, a fake ``{"cell": 9999}`` sent every 0.2 s while the cell computes, half a frame then
  sleep: each is stopped within its cell's budget (plus the waiting grace), not held;
* a cell that sleeps far longer than its budget: stopped after its budget + IDLE_GRACE (then
  skipped; the rest passes);
* memory: three threads of 300 MiB each (together more than --memory: the kernel refuses the
  rest), and everything a per-process limit would not count, refused: a fork, a subprocess,
  shared anonymous memory, a shared map of /dev/zero, SysV shared memory, a memfd, a file in
  /dev (read-only), more than /dev/shm's size; 30,000 empty files (more than the 10,000 allowed:
  the submission ends, with the reason);
* the grader's environment and the host's mounts, looked for everywhere the sandbox can read
  (/proc/1/environ, every process's environ, mountinfo): the canary appears in no output;
* a feedback file that is a symbolic link: refused with a line, the rest written.

test_no_orphans_after_the_grader_is_killed SIGKILLs a grader in the middle of a batch and finds
none of its processes; where a memory cgroup can be made (root), every process of a sandbox is
in one, limited to what the whole sandbox may hold.
"""
import csv
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course_lib.grading.session import IDLE_GRACE
from _grading import CH03, GRADE, chapter03, guarded_mask, needs_bwrap, rows_by, run_grader

pytestmark = [needs_bwrap, pytest.mark.sandbox]

CELL = 3                      # CPU seconds per cell
LIMITS = ["--jobs", "2", "--timeout", "2", "--exercise-timeout", "4", "--cell-timeout", str(CELL),
          "--memory", "0.5", "--disk", "16"]
CANARY = "s3cret"             # run_grader's GRADER_SECRET

RAISES = """
class Quit(SystemExit): pass
class Stop(KeyboardInterrupt): pass
class Gone(GeneratorExit): pass
"""

FRAME = """
import json, os, struct, sys
def frame(message):
    head = json.dumps(message).encode()
    return struct.pack("<QI", len(head), 0) + head
control = int(sys.argv[1])                # the runner's socket: the learner's code can write to it
"""

FORGED_DONE = FRAME + """os.write(control, frame({"done": {"cell_errors": ["boom", 7], "defined": {"make_causal_mask": "function"}}}))
os.write(control, frame({"cell": 2, "error": ["boom", 7], "line": "x"}))
"""

FAKE_CELLS = FRAME + """import time
start = time.process_time()
last = 0
while time.process_time() - start < 60:  # 60 CPU s, a fake cell frame every 0.2 s
    if time.monotonic() - last > 0.2:
        os.write(control, frame({"cell": 9999}))
        last = time.monotonic()
"""

HALF_FRAME = FRAME + """import time
os.write(control, frame({"cell": 9999})[:7])
time.sleep(1000)
"""

MEMORY_THREADS = """
import threading
held = []
def hold():
    try:
        held.append(b"x" * (300 << 20))     # 300 MiB each, written: resident
    except MemoryError:
        pass
threads = [threading.Thread(target=hold) for _ in range(3)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
"""

MEMORY_OTHER = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
import mmap, subprocess
got = []
for name, attempt in (("a fork", os.fork), ("a subprocess", lambda: subprocess.run(["/bin/true"])),
                      ("shared anonymous memory", lambda: mmap.mmap(-1, 1 << 30)),
                      ("a shared map of /dev/zero", lambda: mmap.mmap(os.open("/dev/zero", os.O_RDWR), 1 << 30))):
    try:
        if attempt() == 0:
            os._exit(0)                     # the child of a fork the sandbox let through
        got.append(name)
    except OSError:
        pass
if libc.shmget(0, 1 << 30, 0o1600) != -1:
    got.append("SysV shared memory")
try:
    os.memfd_create("hold")
    got.append("a memfd")
except OSError:
    pass
try:
    with open("/dev/hold", "wb") as hold:
        hold.write(b"x" * (1 << 20))
    got.append("a file in /dev")
except OSError:
    pass
try:
    with open("/dev/shm/hold", "wb") as hold:
        for _ in range(32):
            hold.write(b"x" * (1 << 20))
    got.append("32 MiB in /dev/shm")
except OSError:
    pass
"""

MANY_FILES = """
import os
os.mkdir("/tmp/many")
for i in range(30_000):                     # empty: no tmpfs space, a kilobyte of the kernel's memory each
    open(f"/tmp/many/{i}", "w").close()
"""

SNOOP_ENV = f"""
import os
seen = [open("/proc/self/mountinfo").read(), repr(dict(os.environ))]
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        seen.append(open(f"/proc/{{pid}}/environ").read())
    except OSError:
        pass
leaked = [text[:200] for text in seen if {CANARY[::-1]!r}[::-1] in text or "GRADER_" + "SECRET" in text]
host = [line.split()[4] for line in seen[0].splitlines() if line.split()[4].startswith(("/sys/fs", "/run", "/home", "/boot"))]
"""


def _notebooks(subs: Path) -> dict:
    return {
        "base": chapter03(subs / "base.ipynb", RAISES, replace={
            "make_causal_mask": "def make_causal_mask(T):\n    raise BaseException('bye')",
            "attention_head": "def attention_head(*args):\n    raise Gone('generator')",
            "split_heads": "def split_heads(*args):\n    raise Stop('stop')"}),
        "quits": chapter03(subs / "quits.ipynb", RAISES, replace={
            "make_causal_mask": "def make_causal_mask(T):\n    raise Quit(3)",
            "attention_head": "def attention_head(*args):\n    raise GeneratorExit()"}),
        "forged": chapter03(subs / "forged.ipynb", FORGED_DONE),
        "fake_cells": chapter03(subs / "fake_cells.ipynb", FAKE_CELLS),
        "half_frame": chapter03(subs / "half_frame.ipynb", HALF_FRAME),
        "asleep": chapter03(subs / "asleep.ipynb", "import time\ntime.sleep(1000)"),
        "threads": chapter03(subs / "threads.ipynb", MEMORY_THREADS, replace={"make_causal_mask": guarded_mask(
            "if len(held) != 1:\n    raise AssertionError(f'held {len(held)} x 300 MiB')")}),
        "files": chapter03(subs / "files.ipynb", MANY_FILES),
        "memory": chapter03(subs / "memory.ipynb", MEMORY_OTHER,
                            replace={"make_causal_mask": guarded_mask("if got:\n    raise AssertionError('got ' + ', '.join(got))")}),
        "snoop": chapter03(subs / "snoop.ipynb", SNOOP_ENV, replace={"make_causal_mask": guarded_mask(
            "if leaked or host:\n    raise AssertionError(f'leaked {leaked} {host}')")}),
        "victim": chapter03(subs / "victim.ipynb"),
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("attacks")
    subs = root / "class"
    paths = _notebooks(subs)
    (subs / "03_deep.ipynb").write_text("[" * 100_000 + "]" * 100_000)
    out = root / "out" / "grades.csv"
    feedback = out.parent / "feedback"
    feedback.mkdir(parents=True, mode=0o700)
    target = root / "elsewhere.md"
    (feedback / "victim.md").symlink_to(target)
    args = [str(subs), "--out", str(out), "--summary", str(out.parent / "summary.csv"), "--feedback", str(feedback), *LIMITS]
    run = run_grader(args)
    return {"run": run, "out": out, "feedback": feedback, "target": target, "paths": paths, "args": args}


def test_every_submission_gets_its_rows_and_every_output_is_written(graded):
    run, out = graded["run"], graded["out"]
    assert run.returncode == 0, run.stderr[-3000:]
    by = rows_by(out)
    students = set(graded["paths"]) | {"03_deep"}
    assert set(by) == students, (sorted(by), run.stderr[-2000:])
    for student in students:
        assert sorted(by[student]) == sorted(CH03), (student, by[student])
        assert all(row["reason"] for row in by[student].values())
    with (out.parent / "summary.csv").open(encoding="utf-8") as handle:
        assert {row["student"] for row in csv.DictReader(handle)} == students
    written = {p.name for p in graded["feedback"].iterdir()}
    assert {"base.md", "forged.md", "snoop.md"} <= written, written


def test_what_a_learner_function_raises_is_its_own_failure(graded):
    by = rows_by(graded["out"])
    assert by["base"]["make_causal_mask"]["passed"] == "False"
    assert "BaseException" in by["base"]["make_causal_mask"]["reason"], by["base"]
    assert "Gone" in by["base"]["attention_head"]["reason"], by["base"]
    assert "Stop" in by["base"]["split_heads"]["reason"], by["base"]
    assert "Quit" in by["quits"]["make_causal_mask"]["reason"], by["quits"]
    assert "GeneratorExit" in by["quits"]["attention_head"]["reason"], by["quits"]
    assert by["quits"]["split_heads"]["passed"] == "True", by["quits"]


def test_a_notebook_nested_too_deeply_is_an_invalid_notebook(graded):
    rows = rows_by(graded["out"])["03_deep"]
    assert all("invalid notebook" in r["reason"] and "nested too deeply" in r["reason"] for r in rows.values()), rows


def test_forged_messages_end_that_submission_only(graded):
    by = rows_by(graded["out"])
    for row in by["forged"].values():
        assert row["passed"] == "False" and "not the reply" in row["reason"] and "not cell 2's" in row["reason"], by["forged"]
    assert all(r["passed"] == "True" for r in by["victim"].values()), by["victim"]


def test_no_frame_the_submission_sends_extends_its_time(graded):
    """A fake cell frame every 0.2 s while the cell computes 60 CPU s, and half a frame then a
    sleep, are stopped at once (a message that is not the cell's reply ends the process); a cell
    that sleeps is stopped after its budget plus the waiting grace, then skipped."""
    by = rows_by(graded["out"])
    limit = CELL + IDLE_GRACE + 5
    fake = by["fake_cells"]["make_causal_mask"]
    assert fake["passed"] == "False" and "not the reply" in fake["reason"], fake
    for student in ("half_frame", "asleep"):
        rows = by[student]
        assert all(r["passed"] == "True" for r in rows.values()), rows
    # the first row's seconds hold two sandbox start-ups (each well under a minute) and the stop
    for student in ("fake_cells", "half_frame", "asleep"):
        assert float(by[student]["make_causal_mask"]["seconds"]) < limit + 120, by[student]
    feedback = graded["feedback"]
    asleep = (feedback / "asleep.md").read_text(encoding="utf-8")
    assert f"cell 2 ran longer than {CELL:g} s" in asleep, asleep


def test_memory_is_one_limit_for_the_whole_sandbox(graded):
    """Three threads of 300 MiB each against --memory 0.5 GiB: one gets its memory, the kernel
    refuses the other two (one process, RLIMIT_DATA), and the cell's MemoryError is the cell's own; a fork, a
    subprocess, shared anonymous memory, a shared map of /dev/zero, SysV shared memory, a memfd
    and a file in /dev are refused, and /dev/shm holds only --disk."""
    by = rows_by(graded["out"])
    for student in ("threads", "memory"):
        assert all(r["passed"] == "True" for r in by[student].values()), by[student]


def test_more_files_than_allowed_end_the_submission_with_the_reason(graded):
    rows = rows_by(graded["out"])["files"]
    for row in rows.values():
        assert row["passed"] == "False" and "more than 10,000 files and folders" in row["reason"], rows


def test_the_grader_environment_and_host_mounts_stay_outside(graded):
    by = rows_by(graded["out"])
    assert all(r["passed"] == "True" for r in by["snoop"].values()), by["snoop"]
    outputs = [graded["out"], graded["out"].parent / "summary.csv", *graded["feedback"].iterdir()]
    for path in outputs:
        if not path.is_symlink():
            assert CANARY not in path.read_text(encoding="utf-8"), path
    assert CANARY not in graded["run"].stdout + graded["run"].stderr


def test_a_symlinked_feedback_file_is_refused_and_the_rest_written(graded):
    assert not graded["target"].exists()
    assert (graded["feedback"] / "victim.md").is_symlink()
    said = graded["run"].stdout + graded["run"].stderr
    assert "victim" in said and "symbolic link" in said, said[-2000:]
    index = (graded["feedback"] / "index.csv").read_text(encoding="utf-8")
    assert any("victim" in line and "symbolic link" in line for line in index.splitlines()), index


def test_resume_finishes_over_the_same_class(graded):
    run = run_grader([*graded["args"], "--resume"])
    assert run.returncode == 0, run.stderr[-3000:]
    assert set(rows_by(graded["out"])) == set(graded["paths"]) | {"03_deep"}


def _descendants(pid: int) -> dict[int, bytes]:
    """pid -> its start time (/proc/PID/stat field 22), for every process below ``pid``."""
    from course_lib.grading.usage import processes
    found = {}
    for child in processes(pid)[1:]:
        try:
            found[child] = Path(f"/proc/{child}/stat").read_bytes().rsplit(b")", 1)[1].split()[19]
        except (OSError, IndexError):
            pass
    return found


def test_no_orphans_after_the_grader_is_killed(tmp_path):
    """SIGKILL the grader while two submissions sleep in their cells: its resource
    tracker, workers and sandboxes all end with it."""
    for name in ("one", "two", "three"):
        chapter03(tmp_path / "class" / f"{name}.ipynb", "import time\ntime.sleep(300)")
    grader = subprocess.Popen([*GRADE, str(tmp_path / "class"), "--out", str(tmp_path / "out" / "g.csv"), "--jobs", "2"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    seen: dict[int, bytes] = {}
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            seen.update(_descendants(grader.pid))
            if len([p for p in seen if _is_learner(p)]) >= 2:
                break
            time.sleep(0.5)
        assert len([p for p in seen if _is_learner(p)]) >= 2, "no sandbox started"
        seen.update(_descendants(grader.pid))
    finally:
        grader.send_signal(signal.SIGKILL)
        grader.wait()
    left = {}
    for _ in range(40):
        left = {p: _cmdline(p)[:120] for p, start in seen.items() if _start_time(p) == start}
        if not left:
            break
        time.sleep(0.25)
    assert not left, f"{len(left)} of the grader's {len(seen)} processes outlived it: {left}"


def _is_learner(pid: int) -> bool:
    """The learner's Python itself (not the shell that joins a cgroup, which names it)."""
    return _cmdline(pid).startswith(sys.executable.encode() + b"\0-I\0-m\0course_lib.grading.learner")


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _start_time(pid: int):
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def test_a_sandbox_is_one_memory_cgroup_where_the_system_allows_one():
    """As root (or with a delegated cgroup v2), every process of a sandbox is in a memory cgroup
    of its own, limited to what the whole sandbox may hold; the cgroup goes with the sandbox."""
    from course_lib.grading import cgroup
    from course_lib.grading.sandbox import Limits, Sandbox, claim_uid
    from course_lib.grading.usage import processes
    trial = cgroup.make(1 << 30)
    if trial is None:
        pytest.skip("no memory cgroup can be made here (a normal user; cgroup v2 not delegated): "
                    "the one process's own limit and the grader's count hold the sandbox's memory (tested above)")
    cgroup.remove(trial)
    limits = Limits(memory_bytes=512 << 20, disk_bytes=16 << 20)
    box = Sandbox(claim_uid(), limits.disk_bytes, True, limits.sandbox_bytes())
    path = box.cgroup
    try:
        assert path is not None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(_is_learner(p) for p in processes(box.root_pid)):
            time.sleep(0.2)
        inside = set((path / "cgroup.procs").read_text().split())
        assert {str(p) for p in processes(box.root_pid)} <= inside
        assert any(_is_learner(int(p)) for p in inside)
        limit_file = path / ("memory.limit_in_bytes" if (path / "memory.limit_in_bytes").exists() else "memory.max")
        assert int(limit_file.read_text()) == (512 << 20) + 2 * (16 << 20) + (1 << 30)
    finally:
        box.kill()
    assert not path.exists()
