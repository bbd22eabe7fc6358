"""Which notebooks a grading command names, whose they are, and what each is graded on.

Used by ``grading.cli``. Not taught. Each notebook gets a student and an assignment from where it
sits below its class folder (names normalised to Unicode NFC, so "José" typed on a Mac and on
Linux is one student):

* in an nbgrader tree, ``submitted/<student>/<assignment>/<notebook>.ipynb``: that student and
  assignment (a PATH may be the course folder, its ``submitted/``, a student's folder or a notebook);
* below a class folder (a folder PATH): ``bob.ipynb`` is student bob (no assignment);
  ``alice/ps1.ipynb`` is student alice, assignment ps1; ``alice/ps1/work.ipynb`` is student alice,
  assignment ps1 too;
* a folder PATH named beside other PATHs (a shell's ``class/*``) that holds notebooks only
  directly is one student's folder: ``class/uma`` holding ``ps1.ipynb`` is student uma, assignment ps1;
* a notebook PATH: its file name without ``.ipynb`` (no assignment).

A notebook deeper than its layout's place is graded as the student and assignment above it,
and :func:`find` says so in a line; a hidden file or folder (``.ipynb_checkpoints``, a Mac
archive's ``__MACOSX``), a symbolic link or something that is not a regular file is skipped,
each with a line saying why.

A submission is graded on its chapter's exercises: the chapter its metadata carries
(``metadata["course"]["chapter"]``, which every course notebook has and a renamed copy keeps),
else the ``NN_`` in its file name ("Copy of 03_attention.ipynb": 03), else the chapters whose
exercises its code defines (a notebook holding several chapters' exercises is graded on those),
else all of them. Its language is ``metadata["course"]["language"]``, else "zh" when a code cell
calls ``set_language("zh")`` or ``start(language="zh")``, else "en". nbformat 3 notebooks are
upgraded with nbformat's own converter. Its ``sha256`` (of the bytes graded) lets ``--resume``
tell a replaced notebook from the one it graded.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from .gradebook import visible

MAX_BYTES = 256 << 20          # a notebook larger than this is not read (course notebooks: a few MB)


@dataclass(frozen=True)
class Found:
    """A notebook the command names: where it is, whose it is, and its path below its class folder."""
    path: str
    student: str
    assignment: str = ""
    shown: str = ""                        # what the learner's feedback calls it (no host path)


@dataclass
class Submission:
    path: str
    student: str
    exercises: list[str] = field(default_factory=list)
    language: str = "en"
    cells: list[str] = field(default_factory=list)
    problem: str = ""                      # why it cannot be read ("" when it can)
    assignment: str = ""
    shown: str = ""
    sha256: str = ""


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _skip_reason(path: Path, parts: tuple[str, ...]) -> str:
    """Why the notebook at ``path`` (``parts`` below its class folder) is not graded, or ""."""
    if any(p.startswith(".") or p == "__MACOSX" for p in parts):
        return "hidden (an autosave in .ipynb_checkpoints, a Mac archive's copy, …): not a submission"
    if path.is_symlink():
        return "a symbolic link: the grader follows no links (name the notebook it points to)"
    if not path.is_file():
        return "not a regular file"
    return ""


def _walk(folder: Path, say) -> list[tuple[Path, tuple[str, ...]]]:
    """Every notebook below ``folder`` that is graded, with its parts below it; a line for each skipped."""
    kept, others = [], 0
    for top, dirs, files in os.walk(folder):
        dirs.sort()
        for name in dirs:
            if os.path.islink(os.path.join(top, name)):
                say(f"skipped {visible(os.path.join(top, name))}/: a symbolic link to a folder (not followed)")
        for name in sorted(files):
            path = Path(top) / name
            if not name.lower().endswith(".ipynb"):
                others += 1
                continue
            parts = path.relative_to(folder).parts
            why = _skip_reason(path, parts)
            if why:
                say(f"skipped {visible(path)}: {why}")
            else:
                kept.append((path, parts))
    if others:
        say(f"{visible(folder)}: {others} other files (not *.ipynb) are not submissions")
    return kept


def _nbgrader(path: Path) -> tuple[str, str, tuple[str, ...]] | None:
    """(student, assignment, parts below submitted/) of a notebook in an nbgrader tree, else None."""
    parts = path.absolute().parts
    for i in range(len(parts) - 4, -1, -1):
        if parts[i] == "submitted":
            return parts[i + 1], parts[i + 2], parts[i + 1:]
    return None


def _place(path: Path, parts: tuple[str, ...], own_folder: str | None, say) -> Found:
    """Student and assignment of the notebook ``path``: ``parts`` below its class folder, or in
    a student's ``own_folder``."""
    tree = _nbgrader(path)
    if tree is not None:
        student, assignment, parts = tree
        expected = "submitted/<student>/<assignment>/<notebook>"
    elif own_folder is not None:
        student, assignment, parts = own_folder, path.stem, (own_folder, *parts)
        expected = ""
    else:
        student = parts[0] if len(parts) > 1 else path.stem
        assignment = parts[1] if len(parts) > 2 else path.stem if len(parts) == 2 else ""
        expected = "<student>/<assignment>/<notebook>"
    if len(parts) > 3:
        say(f"graded {visible(path)} as {visible(nfc(student))}'s {visible(nfc(assignment))}: "
            f"it is deeper than {expected}")
    return Found(str(path), nfc(student), nfc(assignment), "/".join(parts))


def find(paths, say=print) -> list[Found]:
    """Every notebook the command line names, in order, each once (see the module's docstring);
    ``say`` gets a line for every notebook skipped or placed unusually, and one per folder."""
    found: list[Found] = []
    several = len(paths) > 1
    for path in map(Path, paths):
        if path.is_symlink():
            say(f"skipped {visible(path)}: {_skip_reason(path, ())}")
        elif path.is_dir():
            submitted = path if path.name == "submitted" else path / "submitted"
            root = submitted if submitted.is_dir() and not submitted.is_symlink() else path
            notebooks = _walk(root, say)
            own = path.name if several and notebooks and all(len(p) == 1 for _, p in notebooks) and _nbgrader(
                notebooks[0][0]) is None else None
            placed = [_place(p, parts, own, say) for p, parts in notebooks]
            found += placed
            if placed:
                first = placed[0]
                say(f"{visible(path)}: {len(placed)} notebooks of {len({f.student for f in placed})} students; "
                    f"e.g. {visible(first.shown)}: student {visible(first.student)}"
                    + (f", assignment {visible(first.assignment)}" if first.assignment else ""))
            else:
                say(f"{visible(path)}: no notebooks (*.ipynb) in it")
        elif not path.name.lower().endswith(".ipynb"):
            say(f"skipped {visible(path)}: not a notebook (*.ipynb)")
        elif why := _skip_reason(path, ()):
            say(f"skipped {visible(path)}: {why}")
        else:
            found.append(_place(path, (path.name,), None, say))
    seen, unique = set(), []
    for item in found:
        key = os.path.abspath(item.path)
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique


def read_bytes(path: str, name: str = "") -> bytes:
    """The file's bytes: never through a link, never blocking on a FIFO, never more than :data:`MAX_BYTES`;
    ValueError naming it ``name`` (its path below the class folder), else its path."""
    name = name or path
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        raise ValueError(f"{name}: cannot be read ({type(error).__name__}: {error.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{name} is not a regular file")
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"{name} is larger than {MAX_BYTES >> 20} MiB: not a notebook the grader reads")
    return data


def read_notebook(path: str, data: bytes | None = None, name: str = "") -> dict:
    """The notebook as nbformat 4 (a version 3 one upgraded); ValueError naming the file (``name``, else its path)."""
    name = name or path
    try:
        text = (read_bytes(path, name) if data is None else data).decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{name}: cannot be read (UnicodeDecodeError: {error})") from None
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{name} is not valid JSON (line {error.lineno}, column {error.colno}): not a notebook") from None
    except RecursionError:
        raise ValueError(f"{name} is JSON nested too deeply to read: not a notebook") from None
    if not isinstance(notebook, dict):
        raise ValueError(f"{name} is JSON but not a notebook (not an object)")
    if notebook.get("nbformat") == 3 and isinstance(notebook.get("worksheets"), list):
        try:
            import nbformat                  # JupyterLab's own; needed only for nbformat 3
            notebook = nbformat.convert(nbformat.from_dict(notebook), 4)
        except Exception as error:                                  # nbformat's own message
            raise ValueError(f"{name} is an nbformat 3 notebook nbformat cannot upgrade ({error})") from None
    if not isinstance(notebook.get("cells"), list):
        raise ValueError(f"{name} is JSON but not a notebook (no list of cells)")
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


def load(found: Found) -> Submission:
    """A :class:`Submission` with its cells, exercises, language and sha256 (``problem`` when unreadable)."""
    where = dict(student=found.student, assignment=found.assignment, shown=found.shown or Path(found.path).name)
    try:
        data = read_bytes(found.path, where["shown"])
    except ValueError as error:
        return Submission(found.path, exercises=exercises_for(found.path, None, []), problem=str(error), **where)
    digest = hashlib.sha256(data).hexdigest()
    try:
        notebook = read_notebook(found.path, data, where["shown"])
    except ValueError as error:
        return Submission(found.path, exercises=exercises_for(found.path, None, []), problem=str(error), sha256=digest, **where)
    cells = code_cells(notebook)
    return Submission(found.path, exercises=exercises_for(found.path, notebook, cells), language=language_of(notebook, cells),
                      cells=cells, sha256=digest, **where)
