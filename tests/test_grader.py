"""The class grader (python -m course_lib.exercises.grade), issue 24: one batch, graded once.

A dozen submissions, each a mutated copy of the committed notebooks (the worked solutions of one
chapter, then one hostile or broken change), plus the solutions notebooks of both editions and
the committed learner notebooks (stubs), graded together with --jobs 2 as an instructor would.
Each hostile or broken submission gets its own rows with the right reason; the honest copies
graded after the hostile ones keep their full grade; nothing is written outside a
submission's own temporary folder; the solutions score 26/26 and the stubs 0/26, "not attempted".
"""
import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from course_lib.exercises import EXERCISES

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = NOTEBOOKS / "solutions" / "exercise_solutions.ipynb"
SOLUTIONS_ZH = NOTEBOOKS / "zh" / "solutions" / "exercise_solutions.ipynb"
STUBS = sorted(NOTEBOOKS.glob("0*.ipynb"))
CH03 = ["make_causal_mask", "attention_head", "split_heads"]
IMPORTS = "import math\nimport torch\nimport torch.nn.functional as F"


def solution(name: str) -> str:
    """The worked solution's cell that defines ``name`` (read from the committed notebook)."""
    cells = ["".join(c["source"]) for c in json.loads(SOLUTIONS.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    return next(c for c in cells if c.startswith(f"def {name}("))


def notebook(folder: Path, name: str, cells: list[str]) -> Path:
    """A learner's notebook ``folder/name`` with these code cells, each followed by its check cell."""
    folder.mkdir(parents=True, exist_ok=True)
    nb_cells = [{"cell_type": "code", "metadata": {}, "source": src, "outputs": [], "execution_count": None} for src in cells]
    path = folder / name
    path.write_text(json.dumps({"cells": nb_cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def chapter03(folder: Path, *extra: str, replace: dict | None = None) -> Path:
    """Chapter 03's worked solutions (some replaced), ``extra`` cells run first, check cells after each."""
    replace = replace or {}
    cells = [IMPORTS, *extra]
    for name in CH03:
        cells += [replace.get(name, solution(name)), f"from course_lib.exercises import check_{name}\ncheck_{name}({name})"]
    return notebook(folder, "03_attention.ipynb", cells)


HOSTILE_PATCHES = """
import torch, course_lib.exercises as ex, course_lib.figures.registry as reg, course_lib.model.attention as att
from course_lib.exercises.core import Result
torch.softmax = lambda *a, **k: torch.zeros(1)                 # breaks softmax for whoever comes next?
for name in list(ex.EXERCISES):
    ex.EXERCISES[name] = (ex.EXERCISES[name][0], lambda fn, name=name: Result(name, True, "✓"))
reg.figure_problem = lambda *a, **k: None
att.causal_mask = lambda T: torch.tril(torch.ones(T, T, dtype=torch.bool), -1)
"""

ESCAPES = """
import os, subprocess, pathlib
for target in {targets!r}:
    for attempt in (lambda: pathlib.Path(target).write_text("escaped"), lambda: os.system(f"touch {{target}}")):
        try:
            attempt()
        except Exception:
            pass
subprocess.Popen(["sh", "-c", "sleep 4; touch {late}"], start_new_session=True)
"""

CONFINED_MASK = """
def make_causal_mask(T):
    import os, socket
    assert "GRADER_SECRET" not in os.environ, "the grader's environment leaked"
    assert os.getuid() != 0, "running as root"
    try:
        socket.create_connection(("10.255.255.1", 80), timeout=0.5)
        raise AssertionError("network reachable")
    except OSError:
        pass
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
"""


def grade_the_class(root: Path) -> dict:
    """Build the class in ``root``, grade it with --jobs 2; the rows by submission and exercise."""
    canaries = [root / "canary-cwd", Path("/tmp") / f"canary-{os.getpid()}", ROOT / f"canary-{os.getpid()}", root.parent / "canary-up"]
    late = Path("/tmp") / f"canary-late-{os.getpid()}"
    subs = root / "subs"
    paths = {
        "patcher": chapter03(subs / "01-patcher", HOSTILE_PATCHES, replace={
            "make_causal_mask": "def make_causal_mask(T):\n    return torch.tril(torch.ones(T, T, dtype=torch.bool), -1)"}),
        "reference": chapter03(subs / "02-reference", replace={
            "make_causal_mask": "from course_lib.model.attention import causal_mask as cm\ndef make_causal_mask(T):\n    return cm(T)"}),
        "hang": chapter03(subs / "03-hang", replace={"make_causal_mask": "def make_causal_mask(T):\n    while True:\n        pass"}),
        "crash": chapter03(subs / "04-crash", replace={"make_causal_mask": "def make_causal_mask(T):\n    import os\n    os._exit(0)"}),
        "exit": chapter03(subs / "05-exit", "import sys\nsys.exit('bye')", "raise SystemExit(3)"),
        "syntax": chapter03(subs / "06-syntax", "x = undefined_name + 1", replace={"attention_head": "def attention_head(q, k, v)\n    return q"}),
        "spam": chapter03(subs / "07-spam", "for _ in range(200):\n    print('x' * 100_000)", replace={
            "split_heads": solution("split_heads").replace("    B, T, D = x.shape", "    print('y' * 5_000_000)\n    B, T, D = x.shape")}),
        "escape": chapter03(subs / "08-escape", ESCAPES.format(targets=[str(c) for c in canaries], late=late),
                            replace={"make_causal_mask": CONFINED_MASK}),
        "helper": chapter03(subs / "09-helper", replace={"attention_head": solution("attention_head").replace(
            "torch.softmax(scores, dim=-1)", "row_softmax(scores)")}),
        "rigged": notebook(subs / "10-rigged", "01_tokenizer.ipynb", [
            "class Always(list):\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n        return False",
            "def bpe_merge(word, ranks):\n    return Always(list(word))",
            "def byte_table():\n    from course_lib.tokens.bpe import byte_to_char\n    return byte_to_char()",
            solution("stream_decode")]),
        "memory": chapter03(subs / "11-memory", replace={"split_heads": "def split_heads(x, n_head):\n    return torch.empty(10**11)"}),
    }
    # the helper lives in a later, untagged cell, as a learner might put it
    helper = json.loads(paths["helper"].read_text())
    helper["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                            "source": "def row_softmax(s):\n    e = (s - s.amax(-1, keepdim=True)).exp()\n    return e / e.sum(-1, keepdim=True)"})
    paths["helper"].write_text(json.dumps(helper))
    paths["broken"] = subs / "12-broken" / "02_embeddings.ipynb"
    paths["broken"].parent.mkdir()
    paths["broken"].write_text(SOLUTIONS.read_text(encoding="utf-8")[:5000], encoding="utf-8")
    for k in (1, 2):                                      # honest copies, graded after the hostile ones
        paths[f"honest{k}"] = chapter03(subs / f"9{k}-honest")
    args = [str(p) for p in paths.values()] + [str(SOLUTIONS), str(SOLUTIONS_ZH)] + [str(p) for p in STUBS]
    out = root / "grades.csv"
    env = {**os.environ, "GRADER_SECRET": "s3cret"}
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "course_lib.exercises.grade", *args, "--out", str(out), "--feedback",
                          str(root / "feedback"), "--jobs", "2", "--timeout", "3", "--memory", "3"],
                         cwd=root, env=env, capture_output=True, text=True, timeout=600)
    time.sleep(max(0.0, started + 5 - time.monotonic()))  # the escaped sleeper would have written by now
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    by = {}
    for row in rows:
        by.setdefault(row["submission"], {})[row["exercise"]] = row
    return {"run": run, "rows": rows, "by": {k: by.get(str(p), {}) for k, p in paths.items()} | {
        "solutions": by.get(str(SOLUTIONS), {}), "solutions_zh": by.get(str(SOLUTIONS_ZH), {}),
        "stubs": {name: row for p in STUBS for name, row in by.get(str(p), {}).items()}},
        "canaries": canaries + [late], "root": root}


def test_a_class_is_graded_each_submission_isolated_and_reported(tmp_path):
    """One grading run (a minute of two cores), then every check below; all failures reported
    together. One test, not one per check: pytest-xdist would grade the class once per worker."""
    graded = grade_the_class(tmp_path)
    failures = []
    for check in CHECKS:
        try:
            check(graded)
        except AssertionError as error:
            failures.append(f"{check.__name__}: {str(error)[:1500]}")
    assert not failures, "\n\n".join(failures)


def reason(graded, who, name):
    return graded["by"][who][name]["reason"]


def passed(graded, who, name):
    return graded["by"][who][name]["passed"] == "True"


def check_the_batch_finishes_with_exit_0_a_summary_line_and_one_row_per_submission_and_exercise(graded):
    run = graded["run"]
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("graded 23 submissions") and "job(s)" in run.stdout, run.stdout
    header = (graded["root"] / "grades.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == "submission,exercise,passed,reason,seconds"
    for who in ("patcher", "hang", "crash", "exit", "syntax", "spam", "escape", "helper", "memory", "honest1", "honest2"):
        assert sorted(graded["by"][who]) == sorted(CH03), who
    assert len(graded["rows"]) == 13 * 3 + 3 + 26 * 3


def check_the_honest_copies_keep_their_full_grade_after_the_hostile_ones(graded):
    for who in ("honest1", "honest2", "helper", "exit"):
        assert all(passed(graded, who, n) for n in CH03), (who, graded["by"][who])


def check_patching_torch_and_the_checkers_inside_a_submission_changes_nothing(graded):
    assert "upper- or lower-triangular" in reason(graded, "patcher", "make_causal_mask")
    assert not passed(graded, "patcher", "attention_head")        # its own torch.softmax is broken, in its own process


def check_the_courses_answer_and_a_rigged_list_do_not_pass(graded):
    assert "write it from scratch" in reason(graded, "reference", "make_causal_mask")
    assert passed(graded, "reference", "attention_head")             # the course's mask inside a head is allowed
    assert "LOWEST rank" in reason(graded, "rigged", "bpe_merge")
    assert "byte_to_char" in reason(graded, "rigged", "byte_table") and "from scratch" in reason(graded, "rigged", "byte_table")
    assert passed(graded, "rigged", "stream_decode")


def check_a_hang_a_crash_and_a_memory_hog_each_get_their_reason_and_the_rest_is_graded(graded):
    assert "did not return within 3 s" in reason(graded, "hang", "make_causal_mask")
    assert "process ended" in reason(graded, "crash", "make_causal_mask")
    assert not passed(graded, "memory", "split_heads") and "raised" in reason(graded, "memory", "split_heads")
    for who, why in (("hang", "did not return within 3 s"), ("crash", "process ended")):
        assert why in reason(graded, who, "attention_head")           # it calls the learner's own mask
        assert passed(graded, who, "split_heads"), graded["by"][who]  # graded in a fresh process


def check_syntax_errors_stray_name_errors_output_and_invalid_json_are_rows(graded):
    assert reason(graded, "syntax", "attention_head").startswith("no function attention_head: its cell")
    assert "SyntaxError" in reason(graded, "syntax", "attention_head")
    assert passed(graded, "syntax", "make_causal_mask") and passed(graded, "syntax", "split_heads")
    assert all(passed(graded, "spam", n) for n in CH03)
    broken = graded["by"]["broken"]
    assert sorted(broken) == ["embed", "last_scores", "one_hot_rows"]
    assert all("02_embeddings.ipynb is not valid JSON (line" in r["reason"] for r in broken.values())


def check_a_submission_runs_confined_and_writes_nothing_outside_its_folder(graded):
    assert passed(graded, "escape", "make_causal_mask"), reason(graded, "escape", "make_causal_mask")
    assert [c for c in graded["canaries"] if c.exists()] == []
    assert "without network, a private /tmp" in graded["run"].stdout
    assert re.search(r"ran as uid 61\d\d\d,", graded["run"].stdout), graded["run"].stdout


def check_the_solutions_score_26_of_26_and_the_stubs_0_of_26_not_attempted(graded):
    for who in ("solutions", "solutions_zh"):
        assert sorted(graded["by"][who]) == sorted(EXERCISES)
        failed = {name: r["reason"] for name, r in graded["by"][who].items() if r["passed"] != "True"}
        assert not failed, f"{who}: {failed}"
    stubs = graded["by"]["stubs"]
    assert sorted(stubs) == sorted(EXERCISES)
    other = {name: (r["passed"], r["reason"]) for name, r in stubs.items()
             if (r["passed"], r["reason"]) != ("False", "not attempted")}
    assert not other, f"stubs: {other}"


def check_the_feedback_shows_what_the_learner_would_have_seen(graded):
    files = sorted((graded["root"] / "feedback").glob("*.md"))
    assert len(files) == 23
    syntax = next(f.read_text(encoding="utf-8") for f in files if "06-syntax" in f.read_text(encoding="utf-8").splitlines()[0])
    assert "**2/3** exercises passed." in syntax and "✓ make_causal_mask" in syntax
    assert "NameError: name 'undefined_name' is not defined" in syntax


CHECKS = [
    check_the_batch_finishes_with_exit_0_a_summary_line_and_one_row_per_submission_and_exercise,
    check_the_honest_copies_keep_their_full_grade_after_the_hostile_ones,
    check_patching_torch_and_the_checkers_inside_a_submission_changes_nothing,
    check_the_courses_answer_and_a_rigged_list_do_not_pass,
    check_a_hang_a_crash_and_a_memory_hog_each_get_their_reason_and_the_rest_is_graded,
    check_syntax_errors_stray_name_errors_output_and_invalid_json_are_rows,
    check_a_submission_runs_confined_and_writes_nothing_outside_its_folder,
    check_the_solutions_score_26_of_26_and_the_stubs_0_of_26_not_attempted,
    check_the_feedback_shows_what_the_learner_would_have_seen,
]
