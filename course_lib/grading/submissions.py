"""Which notebooks a grading command names, whose they are, and what each is graded on.

Used by ``grading.cli``. Not taught. A PATH on the command line is:

* a notebook: one submission; its student is its folder's name when that folder is an
  nbgrader ``submitted/<student>/<assignment>/`` folder, else the file's stem;
* an nbgrader course folder (holding ``submitted/``) or its ``submitted/`` folder: every
  ``submitted/<student>/<assignment>/*.ipynb``, the student being the folder's name;
* any other folder: every ``*.ipynb`` below it; the student is the name of the first folder
  below PATH (``class/alice/03_attention.ipynb``: alice), or the file's stem for a notebook
  directly in PATH.

A submission is graded on its chapter's exercises: the chapter its metadata carries
(``metadata["course"]["chapter"]``, which every course notebook has and a renamed copy keeps),
else the ``NN_`` in its file name ("Copy of 03_attention.ipynb": 03), else the chapters whose
exercises its code defines (a notebook holding several chapters' exercises is graded on those),
else all of them. Its language is ``metadata["course"]["language"]``, else "zh" when a code cell
calls ``set_language("zh")`` or ``start(language="zh")``, else "en". nbformat 3 notebooks are upgraded with nbformat's own
converter.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Submission:
    path: str
    student: str
    exercises: list[str] = field(default_factory=list)
    language: str = "en"
    cells: list[str] = field(default_factory=list)
    problem: str = ""                      # why it cannot be read ("" when it can)


def _notebooks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts and p.is_file())


def _nbgrader_student(path: Path) -> str | None:
    """``<student>`` of ``…/submitted/<student>/<assignment>/<notebook>``, else None."""
    parts = path.parts
    return parts[-3] if len(parts) >= 4 and parts[-4] == "submitted" else None


def find(paths) -> list[tuple[str, str]]:
    """(notebook path, student) of every submission the command line names, in order, each once."""
    found: list[tuple[str, str]] = []
    for path in map(Path, paths):
        if path.is_dir():
            submitted = path if path.name == "submitted" else path / "submitted"
            if submitted.is_dir():
                found += [(str(p), p.relative_to(submitted).parts[0]) for p in _notebooks(submitted)
                          if len(p.relative_to(submitted).parts) == 3]
            else:
                for p in _notebooks(path):
                    inner = p.relative_to(path).parts
                    found.append((str(p), inner[0] if len(inner) > 1 else p.stem))
        else:
            found.append((str(path), _nbgrader_student(path) or path.stem))
    seen, unique = set(), []
    for item in found:
        if item[0] not in seen:
            seen.add(item[0])
            unique.append(item)
    return unique


def read_notebook(path: str) -> dict:
    """The notebook as nbformat 4 (a version 3 one upgraded); ValueError naming the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot be read ({type(error).__name__}: {error})") from None
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON (line {error.lineno}, column {error.colno}): not a notebook") from None
    except RecursionError:                   # JSON nested thousands deep: no notebook is
        raise ValueError(f"{path} is JSON nested too deeply to read: not a notebook") from None
    if not isinstance(notebook, dict):
        raise ValueError(f"{path} is JSON but not a notebook (not an object)")
    if notebook.get("nbformat") == 3 and isinstance(notebook.get("worksheets"), list):
        try:
            import nbformat                  # JupyterLab's own; needed only for nbformat 3
            notebook = nbformat.convert(nbformat.from_dict(notebook), 4)
        except Exception as error:                                  # nbformat's own message
            raise ValueError(f"{path} is an nbformat 3 notebook nbformat cannot upgrade ({error})") from None
    if not isinstance(notebook.get("cells"), list):
        raise ValueError(f"{path} is JSON but not a notebook (no list of cells)")
    return notebook


def code_cells(notebook: dict) -> list[str]:
    sources = []
    for cell in notebook["cells"]:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            sources.append("".join(map(str, source)) if isinstance(source, list) else str(source))
    return sources


def _course_metadata(notebook: dict) -> dict:
    metadata = notebook.get("metadata")
    course = metadata.get("course") if isinstance(metadata, dict) else None
    return course if isinstance(course, dict) else {}


def exercises_for(path: str, notebook: dict | None, cells: list[str]) -> list[str]:
    """The exercises a submission is graded on (course order); see the module's docstring."""
    from ..exercises import EXERCISES
    chapter = _course_metadata(notebook or {}).get("chapter")
    chapters = {chapter} if isinstance(chapter, str) else set(map(str, chapter)) if isinstance(chapter, list) else set()
    chapters &= {ch for ch, _ in EXERCISES.values()}
    if not chapters:
        named = re.search(r"(?:^|[^0-9])(0[1-9])_", Path(path).name)
        chapters = {named.group(1)} if named and any(ch == named.group(1) for ch, _ in EXERCISES.values()) else set()
    if not chapters:
        code = "\n".join(cells)
        chapters = {ch for name, (ch, _) in EXERCISES.items() if re.search(rf"^\s*def\s+{name}\s*\(", code, re.M)}
    return [name for name, (ch, _) in EXERCISES.items() if not chapters or ch in chapters]


def language_of(notebook: dict, cells: list[str]) -> str:
    language = _course_metadata(notebook).get("language")
    if language in ("en", "zh"):
        return language
    said = re.compile(r"(?:set_language\(\s*|\blanguage\s*=\s*)['\"]zh['\"]")       # set_language("zh"), start(language="zh")
    return "zh" if any(said.search(c) for c in cells) else "en"


def load(path: str, student: str) -> Submission:
    """A :class:`Submission` with its cells, exercises and language (``problem`` when unreadable)."""
    try:
        notebook = read_notebook(path)
    except ValueError as error:
        return Submission(path, student, exercises_for(path, None, []), problem=str(error))
    cells = code_cells(notebook)
    return Submission(path, student, exercises_for(path, notebook, cells), language_of(notebook, cells), cells)
