"""A class graded for real (bubblewrap sandboxes): students' folders and an nbgrader course with
two assignments side by side, a notebook one folder deeper, and submissions that try to end the
batch — a function that raises BaseException, JSON nested 100,000 deep, a cell that forges the
runner's "done" message with malformed cell errors, a feedback file that is a symbolic link.

Every submission gets its rows with a reason, students are named by their folders, each
assignment is its own summary row, and the gradebook, summary, feedback and its index are
written. The same rules without a sandbox, case by case: tests/test_gradebook.py.
"""
import csv
import os
from pathlib import Path

import pytest

from _grading import CH03, IMPORTS, chapter03, needs_bwrap, notebook, run_grader, solution

pytestmark = [needs_bwrap, pytest.mark.sandbox]

FORGE = """
import socket, sys
from course_lib.grading import wire
try:
    conn = socket.socket(fileno=int(sys.argv[1]))
    wire.send(conn, {"done": {"cell_errors": ["boom", 7, {"cell": None}], "defined": {"make_causal_mask": "function"}}})
except Exception:
    pass                                  # no such channel within reach: nothing forged
"""


def test_a_class_of_folders_and_an_nbgrader_course_is_named_and_no_submission_ends_the_batch(tmp_path):
    cls, course, out = tmp_path / "class", tmp_path / "course", tmp_path / "grading"
    chapter03(cls / "alice" / "ps1.ipynb")
    chapter03(cls / "uma" / "ps1.ipynb")
    chapter03(cls / "deep" / "ps1" / "drafts" / "03_attention.ipynb")
    chapter03(course / "submitted" / "ann" / "ps1" / "03_attention.ipynb")
    chapter03(course / "submitted" / "ann" / "ps2" / "03_attention.ipynb",
              replace={"make_causal_mask": solution("make_causal_mask").replace("diagonal=1", "diagonal=0")})
    chapter03(cls / "bye" / "ps1.ipynb", replace={"split_heads": "def split_heads(x, n_head):\n    raise BaseException('bye')"})
    notebook(cls / "nested.ipynb", []).write_text("[" * 100_000)
    chapter03(cls / "forger" / "ps1.ipynb", FORGE)
    (out / "feedback").mkdir(parents=True)
    (out / "feedback" / "linked.md").symlink_to(tmp_path / "precious.md")
    chapter03(cls / "linked.ipynb")
    run = run_grader([str(cls), "--out", str(out / "grades.csv"), "--summary", str(out / "summary.csv"),
                      "--feedback", str(out / "feedback"), "--jobs", "2", "--timeout", "5", "--", str(course)])
    assert run.returncode == 0, run.stderr[-3000:]
    rows = list(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))
    by = {}
    for row in rows:
        by.setdefault((row["student"], row["assignment"]), {})[row["exercise"]] = row
    assert sorted(by) == [("alice", "ps1"), ("ann", "ps1"), ("ann", "ps2"), ("bye", "ps1"), ("deep", "ps1"),
                          ("forger", "ps1"), ("linked", ""), ("nested", ""), ("uma", "ps1")], sorted(by)
    for honest in (("alice", "ps1"), ("uma", "ps1"), ("ann", "ps1"), ("deep", "ps1"), ("linked", "")):
        assert {n: r["passed"] for n, r in by[honest].items()} == dict.fromkeys(CH03, "True"), by[honest]
    assert by["ann", "ps2"]["make_causal_mask"]["passed"] == "False"
    assert "graded " + str(cls / "deep" / "ps1" / "drafts" / "03_attention.ipynb") + " as deep's ps1" in run.stdout
    bye = by["bye", "ps1"]
    assert bye["split_heads"]["passed"] == "False" and "bye" in bye["split_heads"]["reason"], bye
    assert bye["make_causal_mask"]["passed"] == bye["attention_head"]["passed"] == "True", bye
    assert all("nested too deeply" in r["reason"] for r in by["nested", ""].values()), by["nested", ""]
    assert sorted(by["forger", "ps1"]) == sorted(CH03) and all(r["reason"] for r in by["forger", "ps1"].values())

    summary = {(r["student"], r["assignment"]): r for r in csv.DictReader((out / "summary.csv").open(encoding="utf-8"))}
    assert summary["ann", "ps1"]["passed"] == "3" and summary["ann", "ps2"]["passed"] != "3", summary
    index = {r["student"] + "/" + r["assignment"]: r for r in csv.DictReader((out / "feedback" / "index.csv").open(encoding="utf-8"))}
    assert len(index) == len(by) and index["linked/"]["file"] == "" and "symbolic link" in index["linked/"]["note"]
    assert not (tmp_path / "precious.md").exists()
    for entry in index.values():
        if entry["file"]:
            text = (out / "feedback" / entry["file"]).read_text(encoding="utf-8")
            assert str(tmp_path) not in text, entry                    # the notebook below its class folder only
    assert (index["ann/ps1"]["file"], index["ann/ps2"]["file"]) == ("ann_ps1.md", "ann_ps2.md")
    assert "9 submissions" in run.stdout and "s per submission on average, not in the rows' seconds" in run.stdout
    assert not os.path.exists(str(out / "grades.csv.partial"))
