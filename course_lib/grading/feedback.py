"""The feedback files: one Markdown file per submission, and an index of whose each file is.

Used by ``grading.cli``. Not taught. Written for the instructor to hand out (files 0600, the
folder 0700):

* a file is named after the student (``alice.md``), with the assignment when a student has
  several (``alice_ps1.md``); a name is made of letters, digits, ``-``, ``_`` and ``.`` only, and
  names that would then be the same (``=cmd()`` and ``+cmd()``, ``Alice`` and ``alice``) each get
  a short hash of their notebook's path (``cmd-1f0c9a2e.md``): never one file for two
  submissions, never a name that depends on the order they were graded in;
* ``index.csv`` maps every file to its student, assignment and notebook (and says why a file
  could not be written);
* a file shows the notebook by its path below the class folder, never the host's path; every
  string that came from a submission is escaped or fenced (shows as text, never renders as HTML,
  control and bidi characters written as ``<U+202E>``), whatever its type.
"""
from __future__ import annotations

import hashlib
import html
import re
import unicodedata
from pathlib import Path

from .gradebook import open_private, refuse_symlink, visible, write_csv

INDEX = "index.csv"
INDEX_FIELDS = ["file", "student", "assignment", "submission", "passed", "total", "note"]


def safe_name(text: str) -> str:
    """A file name made of ``text``'s letters, digits, ``-``, ``_`` and ``.``: never hidden, never empty,
    never starting with ``-`` (an option to a shell command)."""
    name = re.sub(r"[^\w.-]+", "_", text).strip("._-") or "submission"
    return name[:100]


def names(found: list) -> dict[str, str]:
    """path -> feedback file name for each :class:`~grading.submissions.Found` (see the module's docstring)."""
    count: dict[str, int] = {}
    for f in found:
        count[f.student] = count.get(f.student, 0) + 1
    bases = {}
    for f in found:
        base = safe_name(f.student)
        if count[f.student] > 1:
            base += "_" + safe_name(f.assignment or unicodedata.normalize("NFC", Path(f.path).stem))
        bases[f.path] = base
    clashes: dict[str, int] = {}
    for base in bases.values():
        clashes[base.lower()] = clashes.get(base.lower(), 0) + 1
    out, used = {}, {INDEX.lower()}
    for f in found:
        name = bases[f.path]
        if clashes[name.lower()] > 1:
            name += "-" + hashlib.sha256(f.path.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        unique, n = name, 1
        while unique.lower() + ".md" in used:          # two paths with the same 8 hex digits
            n += 1
            unique = f"{name}_{n}"
        used.add(unique.lower() + ".md")
        out[f.path] = unique + ".md"
    return out


def _inline(text) -> str:
    """Learner text inside a Markdown line: visible, HTML escaped, Markdown's punctuation backslashed."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|~>])", r"\\\1", html.escape(visible(text)))


def _block(text) -> list[str]:
    """Learner text as a fenced block (longer than any run of backticks in it): shown, never rendered."""
    text = visible(text, keep="\n")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, text, fence]


def _cell_error(error) -> str:
    if isinstance(error, dict):
        return f"cell {error.get('cell', '?')}, line {error.get('line', '?')}: {error.get('error', '')}"
    return str(error)


# the feedback's own words, in the notebook's language (the hints come from the checkers)
FRAME = {"en": {"notebook": "Notebook", "passed": "exercises passed.", "cells": "Cells that raised an error"},
         "zh": {"notebook": "笔记本", "passed": "道练习通过。", "cells": "运行出错的单元格"}}


def markdown(sub, rows: list[dict], cell_errors) -> str:
    """What the learner would have seen, as Markdown: score, each check's lines, cell errors.
    ``sub``: the :class:`~grading.submissions.Found` (student, assignment, shown)."""
    words = FRAME.get(str(rows[0].get("language", "en")) if rows else "en", FRAME["en"])
    score = sum(str(r.get("passed")) == "True" for r in rows)
    lines = [f"# {_inline(sub.student)}", "",
             f"{words['notebook']}: {_inline(sub.shown or Path(sub.path).name)}", "",
             f"**{score}/{len(rows)}** {words['passed']}", ""]
    for row in rows:
        lines += [f"## {_inline(row.get('exercise', '?'))}", "", *_block(row.get("message") or row.get("reason", "")), ""]
    if not isinstance(cell_errors, (list, tuple)):
        cell_errors = [cell_errors] if cell_errors else []
    if cell_errors:
        lines += [f"## {words['cells']}", ""]
        lines += _block("\n".join(_cell_error(e) for e in cell_errors)) + [""]
    return "\n".join(lines)


def write(target: Path, text: str) -> None:
    refuse_symlink(target, "the feedback file")
    with open_private(target, append=False) as out:
        out.write(text)


def write_index(folder: Path, entries: list[list]) -> None:
    """``index.csv``: one line per submission, ``file,student,assignment,submission,passed,total,note``."""
    write_csv(folder / INDEX, INDEX_FIELDS, entries, "the feedback index")
