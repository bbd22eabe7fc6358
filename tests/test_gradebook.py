"""The class grader's bookkeeping, without a sandbox: how submissions are found and named, what
--resume keeps, the feedback files and their index, the command line, and the batch's net.

The batch runs here with its pool of workers replaced by one that runs each submission in this
process and its grading replaced by functions that raise, return malformed data or are honest,
so every way one submission can fail is tried in a second (tests/test_grader_class_layout.py
grades a class for real).
"""
import concurrent.futures
import concurrent.futures.process
import csv
import hashlib
import os
from pathlib import Path

import pytest

from course_lib.grading import cli, feedback, gradebook, submissions
from course_lib.grading.submissions import Found

NB = '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'


def touch(path: Path, text: str = NB) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def placed(found) -> dict:
    return {f.shown: (f.student, f.assignment) for f in found}


# ---------------------------------------------------------------------------- layouts

def test_each_layout_names_a_student_and_an_assignment_and_every_skipped_notebook_gets_a_line(tmp_path):
    flat, lines = tmp_path / "flat", []
    touch(flat / "bob.ipynb")
    touch(flat / "alice" / "ps1.ipynb")
    touch(flat / "alice" / "ps2.ipynb")
    touch(flat / "carol" / "ps1" / "work.ipynb")
    touch(flat / "dan" / "ps1" / "extra" / "deeper.ipynb")
    touch(flat / ".ipynb_checkpoints" / "bob-checkpoint.ipynb")
    touch(flat / "__MACOSX" / "bob.ipynb")
    touch(flat / "notes.txt")
    (flat / "link.ipynb").symlink_to(flat / "bob.ipynb")
    os.mkfifo(flat / "pipe.ipynb")
    assert placed(submissions.find([str(flat)], lines.append)) == {
        "bob.ipynb": ("bob", ""), "alice/ps1.ipynb": ("alice", "ps1"), "alice/ps2.ipynb": ("alice", "ps2"),
        "carol/ps1/work.ipynb": ("carol", "ps1"), "dan/ps1/extra/deeper.ipynb": ("dan", "ps1")}
    said = "\n".join(lines)
    for skipped in (".ipynb_checkpoints/bob-checkpoint.ipynb: hidden", "__MACOSX/bob.ipynb: hidden",
                    "link.ipynb: a symbolic link", "pipe.ipynb: not a regular file"):
        assert skipped in said, said
    assert "graded " + str(flat / "dan/ps1/extra/deeper.ipynb") + " as dan's ps1: it is deeper than" in said, said
    assert "1 other files (not *.ipynb)" in said and "5 notebooks of 4 students" in said, said

    # an nbgrader course: its submitted/ tree only, student and assignment from the folders
    course = tmp_path / "course"
    for student in ("ann", "ben"):
        for assignment in ("ps1", "ps2"):
            touch(course / "submitted" / student / assignment / "notebook.ipynb")
    touch(course / "source" / "ps1" / "notebook.ipynb")
    tree = {f"{s}/{a}/notebook.ipynb": (s, a) for s in ("ann", "ben") for a in ("ps1", "ps2")}
    assert placed(submissions.find([str(course)], lines.append)) == tree
    assert placed(submissions.find([str(course / "submitted")], lines.append)) == tree
    # a shell's submitted/* (students' folders) or one notebook of the tree: still the tree's names
    assert placed(submissions.find([str(course / "submitted" / "ann"), str(course / "submitted" / "ben")], lines.append)) == tree
    assert placed(submissions.find([str(course / "submitted" / "ben" / "ps2" / "notebook.ipynb")])) == {
        "ben/ps2/notebook.ipynb": ("ben", "ps2")}


def test_a_shell_glob_of_student_folders_names_each_student_by_the_folder(tmp_path):
    for student in ("alice", "uma"):
        touch(tmp_path / "class" / student / "ps1.ipynb")
    touch(tmp_path / "class" / "zoe.ipynb")
    paths = sorted(str(p) for p in (tmp_path / "class").iterdir())            # class/*
    assert placed(submissions.find(paths, print)) == {
        "alice/ps1.ipynb": ("alice", "ps1"), "uma/ps1.ipynb": ("uma", "ps1"), "zoe.ipynb": ("zoe", "")}
    # one folder named alone is the class: its notebooks are its students
    assert placed(submissions.find([str(tmp_path / "class" / "alice")], print)) == {"ps1.ipynb": ("ps1", "")}


def test_names_are_nfc_so_one_student_typed_on_two_systems_is_one_student(tmp_path):
    touch(tmp_path / "c" / "Jose\u0301" / "ps1.ipynb")        # NFD, as a Mac writes it
    touch(tmp_path / "c" / "Jos\u00e9" / "ps2.ipynb")         # NFC
    found = submissions.find([str(tmp_path / "c")], print)
    assert {f.student for f in found} == {"Jos\u00e9"}
    rows = [{"student": f.student, "assignment": "", "passed": "True", "reason": "passed"} for f in found]
    gradebook.write_summary(str(tmp_path / "summary.csv"), rows)
    assert list(csv.DictReader((tmp_path / "summary.csv").open(encoding="utf-8"))) == [
        {"student": "Jos\u00e9", "assignment": "", "passed": "2", "attempted": "2", "total": "2"}]


def test_a_notebook_that_cannot_be_read_is_a_problem_named_never_an_exception(tmp_path, monkeypatch):
    deep = touch(tmp_path / "deep.ipynb", "[" * 100_000)
    sub = submissions.load(Found(str(deep), "deep"))
    assert "nested too deeply" in sub.problem and sub.exercises and sub.sha256
    os.mkfifo(tmp_path / "pipe.ipynb")                  # opened without blocking, then refused
    assert "not a regular file" in submissions.load(Found(str(tmp_path / "pipe.ipynb"), "p")).problem
    monkeypatch.setattr(submissions, "MAX_BYTES", 100)
    assert "larger than" in submissions.load(Found(str(touch(tmp_path / "big.ipynb", " " * 200 + NB)), "b")).problem


# ---------------------------------------------------------------------------- what is written

def test_control_bidi_and_zero_width_characters_are_shown_and_formulas_stay_text():
    assert gradebook.visible("ev\u202eil\u200b\x07") == "ev<U+202E>il<U+200B><U+0007>"
    assert gradebook.visible("a\nb\udcff", keep="\n") == "a\nb<U+DCFF>"          # a file name that is not UTF-8
    assert gradebook.visible("Jos\u00e9 \u674e\u96f7 \U0001f600") == "Jos\u00e9 \u674e\u96f7 \U0001f600"
    assert gradebook.csv_line(["=cmd()", "\u202e=x", "\tx"]) == '"\'=cmd()","<U+202E>=x","<U+0009>x"\n'


def test_feedback_names_never_collide_depend_on_no_order_and_an_index_maps_each(tmp_path):
    students = ["=cmd()", "+cmd()", "-cmd()", "Alice", "alice", "bob", "index"]
    found = [Found(f"class/{s}.ipynb", s) for s in students] + [Found("class/bob/ps2.ipynb", "bob", "ps2")]
    names = feedback.names(found)
    assert len(set(n.lower() for n in names.values())) == len(found)
    assert names["class/bob/ps2.ipynb"] == "bob_ps2.md" and names["class/index.ipynb"] == "index.md"
    assert all(names[f"class/{s}.ipynb"].startswith(("cmd-", "Alice-", "alice-")) for s in students[:5])
    assert feedback.names(found[::-1]) == names
    entries = [[names[f.path], f.student, f.assignment, f.path, 0, 3, ""] for f in found]
    feedback.write_index(tmp_path, entries)
    index = list(csv.DictReader((tmp_path / "index.csv").open(encoding="utf-8")))
    assert {r["file"]: r["student"] for r in index}[names["class/=cmd().ipynb"]] == "'=cmd()"
    assert os.stat(tmp_path / "index.csv").st_mode & 0o077 == 0


def test_feedback_reads_malformed_data_and_shows_no_host_path(tmp_path):
    sub = Found("/home/teacher/course/submitted/ev\u202eil/ps1/03.ipynb", "ev\u202eil", "ps1", "ev\u202eil/ps1/03.ipynb")
    rows = [{"exercise": "make_causal_mask", "passed": True, "reason": "passed", "message": 7},
            {"exercise": "split_heads", "passed": "False", "reason": "<b>\u202eno</b>"}]
    text = feedback.markdown(sub, rows, ["boom", 7, {"cell": "x"}, {"cell": 3, "line": 2, "error": "\u202eNameError"}])
    assert "/home/teacher" not in text and "\u202e" not in text and "ev&lt;U\\+202E&gt;il/ps1/03\\.ipynb" in text
    assert "**1/2**" in text and "boom\n7\ncell x, line ?: \ncell 3, line 2: <U+202E>NameError" in text
    assert feedback.markdown(sub, [], "a string, not a list").count("a string, not a list") == 1
    target = tmp_path / "alice.md"
    target.symlink_to(tmp_path / "elsewhere.md")
    with pytest.raises(ValueError, match="symbolic link"):
        feedback.write(target, text)
    assert not (tmp_path / "elsewhere.md").exists()


# ---------------------------------------------------------------------------- --resume

def test_resume_keeps_only_complete_rows_of_the_very_same_notebook(tmp_path):
    rows = lambda path, sha, reason="passed": [{"student": "s", "assignment": "", "submission": path, "exercise": n,
                                                "passed": reason == "passed", "reason": reason, "seconds": 0.5,
                                                "sha256": sha} for n in ("a", "b")]
    book = gradebook.Gradebook(str(tmp_path / "g.csv"), resume=False)
    book.start([])
    for path, sha, reason in (("same.ipynb", "1" * 64, "passed"), ("replaced.ipynb", "2" * 64, "passed"),
                              ("\u202efailed.ipynb", "3" * 64, gradebook.GRADER_FAILED + " (BrokenProcessPool: …)")):
        book.add(rows(path, sha, reason))
    book.add(rows("cut.ipynb", "4" * 64)[:1])                 # a crash between a submission's rows
    book.file.close()
    again = gradebook.Gradebook(str(tmp_path / "g.csv"), resume=True)
    assert [r["seconds"] for r in again.kept("same.ipynb", "1" * 64, 2)] == ["0.5", "0.5"]
    assert again.kept("replaced.ipynb", "f" * 64, 2) is None          # its notebook changed since
    assert again.kept("\u202efailed.ipynb", "3" * 64, 2) is None      # the grader's own failure: graded again
    assert again.kept("cut.ipynb", "4" * 64, 2) is None
    again.start([again.kept("same.ipynb", "1" * 64, 2)])
    again.finish(["same.ipynb"], {"same.ipynb": again.kept("same.ipynb", "1" * 64, 2)})
    kept = list(csv.DictReader((tmp_path / "g.csv").open(encoding="utf-8")))
    assert [r["submission"] for r in kept] == ["same.ipynb"] * 2 and not (tmp_path / "g.csv.partial").exists()


# ---------------------------------------------------------------------------- the command line

def test_a_file_named_like_an_option_is_refused_as_ambiguous_or_graded_after_dashes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name in ("--out=hijack.ipynb", "--jobs=2.ipynb", "-2+3.ipynb", "a.ipynb"):
        touch(tmp_path / name)
    for token in ("--out=hijack.ipynb", "--jobs=2.ipynb"):
        with pytest.raises(SystemExit) as stopped:
            cli.parse(["a.ipynb", token, "--out", "g.csv"])
        assert stopped.value.code == 2 and "both an option and a file" in capsys.readouterr().err
    args = cli.parse(["--out", "g.csv", "--jobs", "2", "--", "--out=hijack.ipynb", "--jobs=2.ipynb", "a.ipynb"])
    assert (args.out, args.jobs, args.paths) == ("g.csv", 2, ["--out=hijack.ipynb", "--jobs=2.ipynb", "a.ipynb"])
    assert cli.parse(["-2+3.ipynb", "--out", "g.csv", "a.ipynb"]).paths == ["-2+3.ipynb", "a.ipynb"]    # no option's name
    # the folder form: the grader lists the files itself, whatever their names
    assert sorted(f.student for f in submissions.find(cli.parse([".", "--out", "g.csv"]).paths, print)) == [
        "--jobs=2", "--out=hijack", "-2+3", "a"]
    for argv, said in ((["missing/", "--out", "g.csv"], "no such file or folder: missing/"),
                       (["a.ipynb", "--ou=g.csv"], "the following arguments are required: --out")):
        with pytest.raises(SystemExit):
            cli.parse(argv)
        assert said in capsys.readouterr().err


# ---------------------------------------------------------------------------- the batch's net

class InProcess:
    """A stand-in for the pool of grading processes: each submission graded here, at once."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, *args):
        future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args))
        except BaseException as error:          # what a dead worker process would deliver
            future.set_exception(error)
        return future


class Bye(BaseException):
    pass


def fake_grade(sub, *limits):
    """Grading by the student's name: each one fails a different way."""
    rows = [cli._row(sub, name, True, "passed", 0.1) for name in sub.exercises]
    how = sub.student
    if how == "baseexception":
        raise Bye("bye")
    if how == "systemexit":
        raise SystemExit(3)
    if how == "recursion":
        raise RecursionError("deep")
    if how == "malformed":
        return rows, ["boom", 7, {"cell": None}], 1.0
    if how == "interrupt":
        raise KeyboardInterrupt
    return rows, [], 1.0


def run_batch(tmp_path, monkeypatch, students, *options):
    monkeypatch.setattr(cli, "ProcessPoolExecutor", InProcess)
    monkeypatch.setattr(cli, "grade_submission", fake_grade)
    grade_one = cli._grade_one

    def worker(found):                          # a worker process killed under one submission
        if found.student == "brokenpool":
            raise concurrent.futures.process.BrokenProcessPool("a worker died")
        return grade_one(found)
    monkeypatch.setattr(cli, "_grade_one", worker)
    monkeypatch.setattr("course_lib.grading.sandbox.probe", lambda uid, disk: (True, "test sandbox"))
    monkeypatch.setitem(cli._worker, "limits", None)
    monkeypatch.setitem(cli._worker, "uid", 0)
    monkeypatch.setitem(cli._worker, "namespaces", True)
    for student in students:
        touch(tmp_path / "class" / f"{student}.ipynb",
              '{"cells": [], "metadata": {"course": {"chapter": "03"}}, "nbformat": 4, "nbformat_minor": 5}')
    out = tmp_path / "out"
    return cli.main([str(tmp_path / "class"), "--out", str(out / "g.csv"), "--summary", str(out / "s.csv"),
                     "--feedback", str(out / "fb"), *options]), out


def test_whatever_grading_one_submission_raises_the_batch_writes_everything(tmp_path, monkeypatch, capsys):
    students = ["baseexception", "systemexit", "recursion", "malformed", "honest", "linked", "brokenpool"]
    (tmp_path / "out" / "fb").mkdir(parents=True)
    (tmp_path / "out" / "fb" / "linked.md").symlink_to(tmp_path / "precious.md")
    status, out = run_batch(tmp_path, monkeypatch, students)
    assert status == 0
    rows = list(csv.DictReader((out / "g.csv").open(encoding="utf-8")))
    by = {}
    for row in rows:
        by.setdefault(row["student"], []).append(row)
    assert sorted(by) == sorted(students) and all(len(r) == 3 for r in by.values())
    for student, kind in (("baseexception", "Bye: bye"), ("systemexit", "SystemExit: 3"), ("recursion", "RecursionError: deep"),
                          ("brokenpool", "BrokenProcessPool: a worker died")):
        assert {r["reason"] for r in by[student]} == {f"{gradebook.GRADER_FAILED} ({kind})"}, by[student]
    assert {r["passed"] for r in by["honest"] + by["malformed"] + by["linked"]} == {"True"}
    assert "cell None, line ?: " in (out / "fb" / "malformed.md").read_text(encoding="utf-8")
    index = {r["student"]: r for r in csv.DictReader((out / "fb" / "index.csv").open(encoding="utf-8"))}
    assert index["linked"]["file"] == "" and "symbolic link" in index["linked"]["note"]
    assert index["honest"]["file"] == "honest.md" and index["honest"]["passed"] == "3"
    assert not (tmp_path / "precious.md").exists() and (out / "s.csv").is_file()
    said = capsys.readouterr().out
    assert "graded 7 submissions (21 rows in all)" in said and "1.0 s per submission on average" in said, said

    # --resume after one notebook is replaced: only it is graded again, and the line says so
    (tmp_path / "class" / "honest.ipynb").write_text(NB.replace("[]", '[{"cell_type": "markdown", "source": "v2"}]'))
    status, out = run_batch(tmp_path, monkeypatch, [], "--resume")
    said = capsys.readouterr().out
    assert status == 0 and "graded 5 submissions now, kept 2 from before" in said, said      # 4 failures again
    index = {r["student"]: r for r in csv.DictReader((out / "fb" / "index.csv").open(encoding="utf-8"))}
    assert "symbolic link" in index["linked"]["note"] and index["malformed"]["file"] == "malformed.md"   # kept ones too
    shas = {r["student"]: r["sha256"] for r in csv.DictReader((out / "g.csv").open(encoding="utf-8"))}
    assert shas["honest"] == hashlib.sha256((tmp_path / "class" / "honest.ipynb").read_bytes()).hexdigest()


def test_the_instructors_ctrl_c_still_stops_the_batch(tmp_path, monkeypatch):
    with pytest.raises(KeyboardInterrupt):
        run_batch(tmp_path, monkeypatch, ["honest", "interrupt"])


class Clock:
    """The grader's clock in the test below: it moves only when a session starts (100 s each)."""
    now = 0.0

    @classmethod
    def monotonic(cls):
        return cls.now


class SlowToStart:
    """A stand-in for a submission's session: 100 s of the test's clock to start, functions that
    answer at once (split_heads raises BaseException, as a learner's rebuilt exception may)."""
    starts = 0

    def __init__(self, *args):
        self.alive = False

    def start(self):
        SlowToStart.starts += 1
        Clock.now += 100.0
        self.alive = True
        return {"cell_errors": [], "defined": dict.fromkeys(["make_causal_mask", "attention_head", "split_heads"], "function")}

    def begin_exercise(self):
        pass

    def function(self, name):
        def learner(*args, **kwargs):
            raise Bye("bye") if name == "split_heads" else NotImplementedError
        return learner

    def kill(self):
        self.alive = False

    close = kill


def test_a_rows_seconds_are_its_check_alone_and_an_exception_past_the_check_fails_that_exercise(monkeypatch):
    monkeypatch.setattr("course_lib.grading.session.Session", SlowToStart)
    monkeypatch.setattr(cli, "time", Clock)
    sub = submissions.Submission("x.ipynb", "x", ["make_causal_mask", "split_heads", "attention_head"], cells=["pass"])
    rows, errors, startup = cli.grade_submission(sub, None, 0, True)
    assert [(r["exercise"], r["reason"]) for r in rows] == [
        ("make_causal_mask", "not attempted"), ("split_heads", "the check could not finish (Bye: bye)"),
        ("attention_head", "not attempted")]
    assert SlowToStart.starts == 2 and startup == 200.0          # a fresh session after the exception
    assert all(r["seconds"] == 0.0 for r in rows), rows         # neither start-up is in any row
