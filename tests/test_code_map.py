"""docs/code.md names every module of course_lib, each with one line on what it is for.

A module without its line fails here, naming the file; so does a line whose module is gone.
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "course_lib"
# a module's line in docs/code.md: "- `decoding/probs.py` — what it is for"
LINE = re.compile(r"^- `([\w/]+\.py)` — (\S.*)$", re.M)


def map_lines() -> dict[str, str]:
    lines = LINE.findall((ROOT / "docs" / "code.md").read_text(encoding="utf-8"))
    listed = [path for path, _ in lines]
    assert len(listed) == len(set(listed)), f"modules with two lines: {sorted({p for p in listed if listed.count(p) > 1})}"
    return dict(lines)


def modules() -> set[str]:
    return {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}


def test_every_module_of_course_lib_has_its_line():
    missing = sorted(modules() - set(map_lines()))
    assert not missing, ("modules of course_lib without a line in docs/code.md "
                         "(add `- `<path>` — what it is for` under its package):\n" + "\n".join(missing))


def test_every_line_names_a_module_that_exists_and_says_what_it_is_for():
    lines = map_lines()
    assert not sorted(set(lines) - modules()), f"docs/code.md names modules that are gone: {sorted(set(lines) - modules())}"
    short = [path for path, text in lines.items() if len(text.split()) < 3]
    assert not short, f"lines that do not say what the module is for: {short}"
