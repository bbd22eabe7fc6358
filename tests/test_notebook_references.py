"""Every repository path, ``course_lib`` module and ``course_lib`` name a notebook mentions exists
(both editions and the solutions; markdown and code). A renamed file or function otherwise
leaves a learner following a dead pointer."""
import importlib
import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").rglob("*.ipynb"))
PATH = re.compile(r"(?<![\w/.])((?:course_lib|data|notebooks|tests|\.ci)/[\w./-]*[\w/])")
DOTTED = re.compile(r"(?<![\w.])(course_lib(?:\.\w+)+)")


def texts(notebook: Path):
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        yield "".join(cell["source"])


def resolves(dotted: str) -> bool:
    """``course_lib.a.b.c``: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            obj = importlib.import_module(name)
            for attr in parts[cut:]:
                if not hasattr(obj, attr):
                    return False
                obj = getattr(obj, attr)
            return True
    return False


def test_the_scan_finds_pointers_and_catches_a_dead_one():
    sample = "see `course_lib/lab_derivation.py` and course_lib.toys.derive_lab.main, data/figures.json"
    assert PATH.findall(sample) == ["course_lib/lab_derivation.py", "data/figures.json"]
    assert DOTTED.findall(sample) == ["course_lib.toys.derive_lab.main"]
    assert not (ROOT / "course_lib/lab_derivation.py").exists()
    assert resolves("course_lib.toys.derive_lab") and not resolves("course_lib.toys.derive_lab.no_such_name")
    assert not resolves("course_lib.lab_derivation")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_module_and_name_a_notebook_mentions_exists(notebook):
    dead = set()
    for text in texts(notebook):
        for path in PATH.findall(text):
            if not (ROOT / path).exists():
                dead.add(path)
        for dotted in DOTTED.findall(text):
            if not resolves(dotted):
                dead.add(dotted)
    assert not dead, f"{notebook.relative_to(ROOT)} mentions what does not exist: {sorted(dead)}"
