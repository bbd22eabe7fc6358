"""Your answers never touch the course's notebooks: `make lab` first copies every notebook (both
editions, the solutions too) into my-notebooks/ — never over a file already there — and opens
that copy; `make test` re-runs notebooks/ only, so a solved, saved exercise in the copy leaves
it passing. `make refresh-copy` brings a notebook (or all) back from upstream, keeping yours
under a dated name.

Every test works on a copy of the Makefile and notebooks/ in a temporary folder: the checkout
itself is only read (it may be read-only, and the tests may run as any user)."""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p.relative_to(ROOT / "notebooks") for p in (ROOT / "notebooks").rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts)
NBVAL = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", ".ci/nbval_sanitize.cfg", "-p", "no:cacheprovider"]


@pytest.fixture
def checkout(tmp_path):
    """The Makefile, what its rules read, and notebooks/, in a folder of their own; a stand-in
    `jupyter` that writes down how it was called (and opens nothing); the install step marked
    done (STAMP), so `make lab` goes straight to the copy and JupyterLab."""
    if not shutil.which("make"):
        pytest.fail("make is not installed")
    folder = tmp_path / "course"
    for name in ("Makefile", "pyproject.toml", ".ci/constraints.txt", ".ci/nbval_sanitize.cfg",
                 ".ci/test_stages.py", ".ci/summary.py"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, folder / name)
    shutil.copytree(ROOT / "notebooks", folder / "notebooks",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for path in [folder, *folder.rglob("*")]:          # a read-only checkout's modes came along: a temp copy is ours
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    jupyter = fake_bin / "jupyter"
    jupyter.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{tmp_path / "jupyter-args"}"\n', encoding="utf-8")
    jupyter.chmod(jupyter.stat().st_mode | stat.S_IXUSR)
    stamp = tmp_path / "installed"
    stamp.touch()                                      # newer than the copied pyproject.toml
    return Checkout(folder, [f"BIN={fake_bin}", f"STAMP={stamp}"], tmp_path / "jupyter-args")


@dataclass
class Checkout:
    """The temporary folder, with the make variables that stand in for the install and JupyterLab."""
    path: Path
    make_args: list[str]
    jupyter_args: Path             # the stand-in jupyter's arguments, one a line


def make(checkout: Checkout, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["make", "-s", "-C", str(checkout.path), *checkout.make_args, *args],
                          capture_output=True, text=True, timeout=120)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def solutions() -> dict[str, str]:
    """Each exercise's worked solution, by function name, from the English solutions notebooks
    (one for the course or one per chapter: every notebooks/solutions/*.ipynb is read)."""
    solved = {}
    for path in sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and (name := re.match(r"def (\w+)\(", source)):
                solved[name.group(1)] = source
    assert solved, "no worked solution found in notebooks/solutions/*.ipynb"
    return solved


def solve(copy: Path) -> int:
    """Replace a notebook's exercise stubs with the worked solutions, as a learner who solved
    them and saved: returns how many were solved."""
    solved = solutions()
    nb = json.loads(copy.read_text(encoding="utf-8"))
    stubs = [c for c in nb["cells"] if "exercise" in c.get("metadata", {}).get("tags", [])]
    for cell in stubs:
        cell["source"] = solved[re.match(r"def (\w+)\(", "".join(cell["source"])).group(1)]
    copy.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return len(stubs)


def test_make_lab_makes_the_copy_first_and_opens_it_and_never_overwrites_it(checkout):
    course = tree(checkout.path / "notebooks")
    out = make(checkout, "lab").stdout
    assert f"my-notebooks/: {len(NOTEBOOKS)} notebook(s) copied, 0 already there" in out, out
    mine = checkout.path / "my-notebooks"
    assert tree(mine) == course                                  # every notebook, both editions, solutions
    (checkout.path / "notebooks" / "01_tokenizer.ipynb").chmod(0o444)   # a read-only notebook: the copy is still
    (mine / "01_tokenizer.ipynb").unlink()                              # the learner's to write
    make(checkout, "my-copy")
    assert (mine / "01_tokenizer.ipynb").stat().st_mode & stat.S_IWUSR
    called = checkout.jupyter_args.read_text(encoding="utf-8").split("\n")
    assert called[0] == "lab" and f"--ServerApp.root_dir={checkout.path}" in called
    assert "--LabApp.default_url=/lab/tree/my-notebooks/01_tokenizer.ipynb" in called, called

    assert solve(mine / "03_attention.ipynb") == 3
    saved = tree(mine)
    out = make(checkout, "lab-zh").stdout                        # the Chinese edition, the same copy
    assert f"0 notebook(s) copied, {len(NOTEBOOKS)} already there kept as they are" in out, out
    assert tree(mine) == saved and tree(checkout.path / "notebooks") == course
    called = checkout.jupyter_args.read_text(encoding="utf-8").split("\n")
    assert "--LabApp.default_url=/lab/tree/my-notebooks/zh/01_tokenizer.ipynb" in called, called

    (mine / "06_loss.ipynb").unlink()                            # a notebook missing from the copy comes back
    assert "1 notebook(s) copied" in make(checkout, "my-copy").stdout
    assert (mine / "06_loss.ipynb").read_bytes() == course["06_loss.ipynb"]


def test_a_saved_answer_in_the_copy_leaves_make_test_passing(checkout):
    make(checkout, "lab")
    course = tree(checkout.path / "notebooks")
    assert solve(checkout.path / "my-notebooks" / "03_attention.ipynb") == 3
    assert tree(checkout.path / "notebooks") == course                # the course's notebooks: byte for byte

    recipe = make(checkout, "-n", "test").stdout                 # what make test would run
    assert ".ci/test_stages.py" in recipe and "my-notebooks" not in recipe
    stages = subprocess.run([sys.executable, ".ci/test_stages.py", "test-all", "--dry-run"], cwd=checkout.path,
                            capture_output=True, text=True, check=True, timeout=60).stdout
    nbval_runs = [line for line in stages.splitlines() if "--nbval " in line]
    assert len(nbval_runs) == 2 and all(run.split()[-1] == "notebooks" for run in nbval_runs), stages
    assert "my-notebooks" not in stages
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", *NBVAL, "notebooks"],
                               cwd=checkout.path, capture_output=True, text=True, timeout=300).stdout
    items = [line for line in collected.splitlines() if "::" in line]
    assert any(item.startswith("notebooks/03_attention.ipynb::") for item in items), collected[-2000:]
    assert not [item for item in items if "my-notebooks" in item]

    # nbval, as make test runs it, on notebook 03 and on the solved copy: the course's passes,
    # the copy fails (its check cells now print ✓ where the stored outputs say "not attempted"),
    # which is what saving the answers in notebooks/ would have done to make test
    report = checkout.path / "nbval.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", *NBVAL, f"--junitxml={report}",
                    "notebooks/03_attention.ipynb", "my-notebooks/03_attention.ipynb"],
                   cwd=checkout.path, capture_output=True, text=True, timeout=600,
                   env={**os.environ, "COURSE_GPT2_WEIGHTS": "", "HF_HUB_CACHE": str(checkout.path / "no-hub")})
    cases = re.findall(r'<testcase classname="([^"]+)"[^>]*?(/>|>(.*?)</testcase>)', report.read_text(encoding="utf-8"), re.S)
    failed = {classname for classname, _, body in cases if "<failure" in body or "<error" in body}
    assert {c for c, _, _ in cases} == {"notebooks.03_attention.ipynb", "my-notebooks.03_attention.ipynb"}, cases[:3]
    assert failed == {"my-notebooks.03_attention.ipynb"}, failed


def test_refresh_copy_brings_notebooks_back_and_keeps_yours_under_a_dated_name(checkout):
    make(checkout, "my-copy")
    mine = checkout.path / "my-notebooks"
    course = tree(checkout.path / "notebooks")
    solve(mine / "03_attention.ipynb")
    solve(mine / "zh" / "03_attention.ipynb")
    solved_en, solved_zh = (mine / "03_attention.ipynb").read_bytes(), (mine / "zh" / "03_attention.ipynb").read_bytes()

    out = make(checkout, "refresh-copy", "NOTEBOOK=03_attention").stdout        # one notebook
    assert (mine / "03_attention.ipynb").read_bytes() == course["03_attention.ipynb"]
    [kept] = mine.glob("03_attention.*-*.ipynb")
    assert re.fullmatch(r"03_attention\.\d{8}-\d{6}\.ipynb", kept.name) and kept.read_bytes() == solved_en
    assert f"is now my-notebooks/{kept.name}" in out and "1 notebook(s) copied" in out, out
    assert (mine / "zh" / "03_attention.ipynb").read_bytes() == solved_zh           # the other edition untouched

    bad = make(checkout, "refresh-copy", "NOTEBOOK=03_attenton", check=False)
    assert bad.returncode != 0 and "there is no notebooks/03_attenton.ipynb" in bad.stdout, bad.stdout

    before = tree(mine)
    first = make(checkout, "refresh-copy").stdout                                  # the whole copy, twice
    second = make(checkout, "refresh-copy").stdout
    assert tree(mine) == course
    old = sorted(p for p in checkout.path.iterdir() if p.name.startswith("my-notebooks."))
    assert len(old) == 2 and tree(old[0]) == before and tree(old[1]) == course, [p.name for p in old]
    assert f"is now my-notebooks.{old[0].name.split('.', 1)[1]}/" in first
    assert f"{len(NOTEBOOKS)} notebook(s) copied" in second
    assert tree(checkout.path / "notebooks") == course


def test_a_copy_that_cannot_be_written_says_so(checkout):
    blocked = checkout.path / "notebooks" / "01_tokenizer.ipynb" / "mine"        # under a file: no user can mkdir it
    done = make(checkout, "lab", f"MY_COPY={blocked}", check=False)
    assert done.returncode != 0 and f"cannot write {blocked}/" in done.stdout, done.stdout + done.stderr
    assert not checkout.jupyter_args.exists()                              # JupyterLab was not started


def test_git_ignores_the_copy_and_the_copies_refresh_keeps():
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    assert "my-notebooks/" in ignored and "my-notebooks.*/" in ignored
    in_git = shutil.which("git") and subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--git-dir"],
                                                     capture_output=True).returncode == 0
    if in_git:                                      # (an unpacked archive, or a checkout git will not read)
        for path in ["my-notebooks/03_attention.ipynb", "my-notebooks.20261203-081910/03_attention.ipynb"]:
            assert subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", path]).returncode == 0, path
