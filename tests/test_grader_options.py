"""The class grader's options and rules, each in a small run: a symlinked --out, --resume, a file
named like an option, no bwrap, a kernel that refuses namespaces, how submissions are named and
read, how its workers start.
"""
import hashlib
import os
import subprocess
import sys

import pytest

from course_lib.exercises import EXERCISES
from course_lib.grading import gradebook, submissions
from _grading import (CH03, GRADE, IMPORTS, IS_ROOT, SOLUTIONS, SOLUTIONS_ZH, chapter03, needs_bwrap, notebook, rows_by,
                      run_grader)

pytestmark = pytest.mark.sandbox        # the class grader's runs: make test-all


@needs_bwrap
@pytest.mark.sandbox
def test_an_out_that_is_a_symlink_is_refused_and_its_target_kept(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (tmp_path / "grades.csv").symlink_to(target)
    run = run_grader([str(notebook(tmp_path / "a.ipynb", [IMPORTS])), "--out", str(tmp_path / "grades.csv")])
    assert run.returncode == 2 and "symbolic link" in run.stderr, run.stderr
    assert target.read_text() == "keep me"


@needs_bwrap
@pytest.mark.sandbox
def test_resume_keeps_the_rows_of_an_unchanged_notebook_and_a_file_named_like_an_option_is_graded(tmp_path):
    done = chapter03(tmp_path / "done" / "03_attention.ipynb")
    replaced = chapter03(tmp_path / "replaced" / "03_attention.ipynb")
    notebook(tmp_path / "-2+3.ipynb", [IMPORTS, "def split_heads(x, n_head):\n    raise NotImplementedError"])
    kept = [{"student": student, "assignment": "03_attention", "submission": f"{student}/03_attention.ipynb", "exercise": n,
             "passed": True, "reason": "passed", "seconds": 0.5, "sha256": hashlib.sha256(done.read_bytes()).hexdigest()}
            for student in ("done", "replaced") for n in CH03]
    (tmp_path / "grades.csv.partial").write_text(gradebook.csv_line(gradebook.FIELDS)
                                                 + "".join(gradebook.csv_line(r.values()) for r in kept))
    replaced.write_text(replaced.read_text().replace("diagonal=1", "diagonal=0"))     # after it was graded
    run = run_grader(["done", "replaced", "-2+3.ipynb", "--out", "grades.csv", "--resume"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "graded 2 submissions now, kept 1 from before" in run.stdout, run.stdout
    by = rows_by(tmp_path / "grades.csv")
    assert [r["seconds"] for r in by["done"].values()] == ["0.5"] * 3                 # not graded again
    assert by["replaced"]["make_causal_mask"]["passed"] == "False"                    # graded again: it changed
    assert by["'-2+3"]["split_heads"]["reason"] == "not attempted"                    # escaped, and graded
    assert by["'-2+3"]["make_causal_mask"]["reason"] == "no function named make_causal_mask in the notebook"
    assert not (tmp_path / "grades.csv.partial").exists()


def test_without_bwrap_the_grader_says_how_to_install_it_and_a_refusing_kernel_is_said_in_one_line(tmp_path):
    stub = notebook(tmp_path / "a" / "03_attention.ipynb", [IMPORTS])
    missing = subprocess.run([*GRADE, str(stub), "--out", str(tmp_path / "g.csv")], capture_output=True, text=True,
                             env={**os.environ, "COURSE_GRADER_BWRAP": str(tmp_path / "no-bwrap")}, timeout=300)
    assert missing.returncode == 2 and "apt-get install bubblewrap" in missing.stderr, missing.stderr
    refusing = tmp_path / "bwrap"
    refusing.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    refusing.chmod(0o755)
    run = subprocess.run([*GRADE, str(stub), "--out", str(tmp_path / "g.csv")], capture_output=True, text=True,
                         env={**os.environ, "COURSE_GRADER_BWRAP": str(refusing)}, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [line for line in run.stdout.splitlines() if line.startswith("isolation: WEAKER ISOLATION")]
    assert lines and "No permissions to create new namespace" in lines[0], run.stdout
    reason = rows_by(tmp_path / "g.csv")["03_attention"]["make_causal_mask"]["reason"]
    if IS_ROOT:        # still not as root: as a uid of its own, which may not reach a Python or checkout under /root
        assert "as uid 6" in lines[0], lines[0]
        # where the checkout is closed to that uid (under /root), the reason says what it could not reach
        assert (reason == "no function named make_causal_mask in the notebook" or "could not start" in reason
                or "Permission denied: '/root/" in reason or "No module named 'course_lib'" in reason), reason
    else:
        assert reason == "no function named make_causal_mask in the notebook", reason


def test_submissions_are_named_and_read_by_their_folder_metadata_name_or_content(tmp_path):
    nbgrader = chapter03(tmp_path / "course" / "submitted" / "alice" / "ps1" / "03_attention.ipynb")
    flat = chapter03(tmp_path / "flat" / "-2+3.ipynb", chapter=None)
    named = lambda paths: [(f.path, f.student, f.assignment) for f in submissions.find(paths)]
    assert named([tmp_path / "course"]) == [(str(nbgrader), "alice", "ps1")]
    assert named([tmp_path / "flat"]) == [(str(flat), "-2+3", "")]                   # the class folder
    # named beside another PATH (a shell's class/*), a folder of notebooks is one student's
    assert named([nbgrader, tmp_path / "flat"]) == [(str(nbgrader), "alice", "ps1"), (str(flat), "flat", "-2+3")]
    load = lambda path: submissions.load(submissions.Found(str(path), "s"))
    assert load(flat).exercises == CH03                                                # by its code
    other = notebook(tmp_path / "x.ipynb", ["def layer_norm(x):\n    pass"], chapter="03")
    assert load(other).exercises == CH03                                               # metadata first
    for path in SOLUTIONS:                          # one notebook per chapter, or one holding them all
        assert load(path).exercises, path
    assert sorted(n for p in SOLUTIONS for n in load(p).exercises) == sorted(EXERCISES)
    assert {load(p).language for p in SOLUTIONS_ZH} == {"zh"}
    assert gradebook.escape_cell("=1+1") == "'=1+1" and gradebook.escape_cell("passed") == "passed"


def test_a_submission_that_dies_at_start_is_named_by_its_error_not_by_traceback_s_first_line():
    import time
    from types import SimpleNamespace

    from course_lib.grading.sandbox import Sandbox

    def ended(code: str):
        """A Sandbox-like object whose process is a real Python running ``code``, its stderr a pipe."""
        process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return SimpleNamespace(process=process)

    assert Sandbox.error_text(ended("open('/nonexistent-dir/c', 'w')")) == \
        "FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent-dir/c'"
    assert Sandbox.error_text(ended("import sys; sys.stderr.write('bwrap: No permissions to create new "
                                    "namespace\\nmore\\n')")) == "bwrap: No permissions to create new namespace"
    assert Sandbox.error_text(ended("pass")) == ""
    assert Sandbox.error_text(ended("import time; time.sleep(30)")) == ""          # still running after 2 s
    # it ended, but a process it started keeps its stderr open and never writes: read what is there
    orphan = ("import os, sys, time\n"
              "if os.fork() == 0:\n    time.sleep(30)\n    os._exit(0)\n"
              "sys.stderr.write('Traceback (most recent call last):\\n  x\\nMemoryError: out\\n'); sys.stderr.flush(); os._exit(1)")
    start = time.monotonic()
    assert Sandbox.error_text(ended(orphan)) == "MemoryError: out"
    assert time.monotonic() - start < 10
