"""Keeping your work and still running the tests (issue 25): `make my-copy` copies every notebook
(both editions, the solutions too) into my-notebooks/, never overwriting a copy, and `make test`
re-runs notebooks/ only, so a solved, saved copy of 03 there is not what nbval compares."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p.relative_to(ROOT / "notebooks") for p in (ROOT / "notebooks").rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts)


@pytest.fixture
def checkout(tmp_path):
    """The Makefile and notebooks/ in a folder of their own (the real checkout stays untouched)."""
    if not shutil.which("make"):
        pytest.fail("make is not installed")
    for name in ("Makefile", "pyproject.toml", ".ci/constraints.txt"):       # what `make -n test` reads
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    return tmp_path


def make(folder: Path, *args: str) -> str:
    return subprocess.run(["make", "-s", "-C", str(folder), *args], check=True, capture_output=True,
                          text=True, timeout=60).stdout


def solve_03(copy: Path) -> None:
    """Replace 03's three stubs with the worked solutions, as a learner who solved them and saved."""
    solutions = json.loads((ROOT / "notebooks" / "solutions" / "exercise_solutions.ipynb").read_text(encoding="utf-8"))
    solved = {"".join(c["source"]).split("(")[0][4:]: c["source"] for c in solutions["cells"]
              if c["cell_type"] == "code" and "".join(c["source"]).startswith("def ")}
    nb = json.loads(copy.read_text(encoding="utf-8"))
    stubs = [c for c in nb["cells"] if "exercise" in c.get("metadata", {}).get("tags", [])]
    assert len(stubs) == 3
    for cell in stubs:
        cell["source"] = solved["".join(cell["source"]).split("(")[0][4:]]
    copy.write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")


def test_make_my_copy_copies_every_notebook_and_never_overwrites_one(checkout):
    out = make(checkout, "my-copy")
    assert f"{len(NOTEBOOKS)} notebook(s) copied, 0 already there" in out
    assert "make lab LAB_URL=/lab/tree/my-notebooks/01_tokenizer.ipynb" in out
    copies = sorted(p.relative_to(checkout / "my-notebooks") for p in (checkout / "my-notebooks").rglob("*.ipynb"))
    assert copies == NOTEBOOKS
    mine = checkout / "my-notebooks" / "03_attention.ipynb"
    solve_03(mine)
    solved = mine.read_bytes()
    out = make(checkout, "my-copy")
    assert f"0 notebook(s) copied, {len(NOTEBOOKS)} already there kept as they are" in out
    assert mine.read_bytes() == solved


def test_make_test_compares_notebooks_only_never_a_copy(checkout):
    make(checkout, "my-copy")
    solve_03(checkout / "my-notebooks" / "03_attention.ipynb")
    recipe = subprocess.run(["make", "-n", "-C", str(checkout), "test"], capture_output=True, text=True,
                            timeout=60).stdout
    nbval_runs = [line for line in recipe.split(";") if "--nbval " in line]
    assert len(nbval_runs) == 2 and all(run.split("||")[0].split()[-1] == "notebooks" for run in nbval_runs)
    assert "my-notebooks" not in recipe
    for other in (checkout / "notebooks").rglob("*.ipynb"):        # a quicker collection: 03 alone
        if other.name != "03_attention.ipynb" or "zh" in other.parts:
            other.unlink()
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                "--nbval", "--nbval-current-env", "notebooks"], cwd=checkout,
                               capture_output=True, text=True, timeout=120).stdout
    items = [line for line in collected.splitlines() if "::" in line]
    assert any(item.startswith("notebooks/03_attention.ipynb::") for item in items)
    assert not [item for item in items if "my-notebooks" in item]
