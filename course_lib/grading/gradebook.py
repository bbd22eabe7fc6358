"""The grader's output: the gradebook CSV, the per-student summary and the feedback files.

Used by ``grading.cli``. Not taught. Everything is written for the instructor's eyes only
(files 0600, folders 0700) and nothing of it is ever inside a submission's sandbox.

* Every cell is escaped by OWASP's CSV-injection rule: a value that begins with ``=``, ``+``,
  ``-``, ``@``, a tab or a carriage return gets a leading ``'``, and every field is quoted.
* Rows are appended to ``<out>.partial`` as each submission finishes (flushed, fsynced);
  ``--resume`` keeps the submissions already complete there. At the end the rows are written, in
  command-line order, to a temporary file beside ``--out`` and renamed onto it (atomic). A
  ``--out`` (or its ``.partial``) that is a symbolic link is refused, never followed.
* The summary has one row per student: ``student,passed,attempted,total``.
* A feedback file is named after the student (and the notebook when a student has several);
  every string that came from a submission is escaped so that it shows as text.
"""
from __future__ import annotations

import csv
import html
import io
import os
import re
from pathlib import Path

FIELDS = ["student", "submission", "exercise", "passed", "reason", "seconds"]
SUMMARY_FIELDS = ["student", "passed", "attempted", "total"]
NOT_ATTEMPTED = "not attempted"
RISKY = ("=", "+", "-", "@", "\t", "\r")


def escape_cell(value) -> str:
    """A CSV cell a spreadsheet shows as text, never runs as a formula (OWASP)."""
    text = str(value)
    return "'" + text if text.startswith(RISKY) else text


def unescape_cell(text: str) -> str:
    return text[1:] if text.startswith("'") and text[1:].startswith(RISKY) else text


def csv_line(values) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow([escape_cell(v) for v in values])
    return buffer.getvalue()


def refuse_symlink(path: Path, what: str) -> None:
    if path.is_symlink():
        raise ValueError(f"{what} {path} is a symbolic link: the grader does not write through links; "
                         f"name a regular file (or remove the link)")


def open_private(path: Path, append: bool):
    """``path`` opened for writing, 0600, never through a symbolic link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8", newline="")


def private_folder(path: Path) -> Path:
    refuse_symlink(path, "the folder")
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


class Gradebook:
    """``--out``: rows appended to ``<out>.partial`` as they come, the finished file renamed in."""

    def __init__(self, out: str, resume: bool):
        self.out = Path(out)
        self.partial = self.out.with_name(self.out.name + ".partial")
        refuse_symlink(self.out, "--out")
        refuse_symlink(self.partial, "the partial gradebook")
        self.out.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.done: dict[str, list[dict]] = {}          # submission path -> its rows already there
        if resume:
            self.done = self._read_partial()
        elif self.partial.exists():
            self.partial.unlink()
        fresh = not self.partial.exists()
        self.file = open_private(self.partial, append=True)
        if fresh:
            self.file.write(csv_line(FIELDS))

    def _read_partial(self) -> dict[str, list[dict]]:
        source = self.partial if self.partial.exists() else self.out
        if not source.exists():
            return {}
        refuse_symlink(source, "the gradebook to resume")
        rows: dict[str, list[dict]] = {}
        with source.open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                if all(row.get(k) is not None for k in FIELDS):          # a line cut short by a crash: dropped
                    row = {k: unescape_cell(row[k] or "") for k in FIELDS}
                    rows.setdefault(row["submission"], []).append(row)
        if source == self.out:                       # a finished gradebook: carried into a new partial
            with open_private(self.partial, append=False) as partial:
                partial.write(csv_line(FIELDS))
                for own in rows.values():
                    partial.writelines(csv_line(r[k] for k in FIELDS) for r in own)
        return rows

    def add(self, rows: list[dict]) -> None:
        """One submission's rows, on disk before the next submission's."""
        self.file.writelines(csv_line(r[k] for k in FIELDS) for r in rows)
        self.file.flush()
        os.fsync(self.file.fileno())

    def finish(self, order: list[str], rows_by_path: dict[str, list[dict]]) -> None:
        """All rows, in command-line order, renamed onto ``--out`` in one step."""
        self.file.close()
        temporary = self.out.with_name(f".{self.out.name}.{os.getpid()}.tmp")
        with open_private(temporary, append=False) as final:
            final.write(csv_line(FIELDS))
            for path in order:
                final.writelines(csv_line(r[k] for k in FIELDS) for r in rows_by_path.get(path, []))
            final.flush()
            os.fsync(final.fileno())
        refuse_symlink(self.out, "--out")
        os.replace(temporary, self.out)
        self.partial.unlink(missing_ok=True)


def write_summary(path: str, rows: list[dict]) -> None:
    """One row per student: exercises passed, attempted (not "not attempted"), graded."""
    target = Path(path)
    refuse_symlink(target, "--summary")
    per: dict[str, list[int]] = {}
    for row in rows:
        counts = per.setdefault(row["student"], [0, 0, 0])
        counts[0] += str(row["passed"]) == "True"
        counts[1] += row["reason"] != NOT_ATTEMPTED
        counts[2] += 1
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with open_private(temporary, append=False) as out:
        out.write(csv_line(SUMMARY_FIELDS))
        out.writelines(csv_line([student, *counts]) for student, counts in per.items())
    os.replace(temporary, target)


# ---------------------------------------------------------------------------- feedback

def safe_name(text: str) -> str:
    """A file name made of ``text``'s letters, digits, ``-``, ``_`` and ``.``; never hidden, never empty."""
    name = re.sub(r"[^\w.-]+", "_", text).strip("._") or "submission"
    return name[:100]


def _inline(text: str) -> str:
    """Learner text inside a Markdown line: HTML escaped, Markdown's punctuation backslashed."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|~>])", r"\\\1", html.escape(str(text))).replace("\n", " ")


def _block(text: str) -> list[str]:
    """Learner text as a fenced block (longer than any run of backticks in it): shown, never rendered."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, text, fence]


# the feedback's own words, in the notebook's language (the hints come from the checkers)
FRAME = {"en": {"notebook": "Notebook", "passed": "exercises passed.", "cells": "Cells that raised an error"},
         "zh": {"notebook": "笔记本", "passed": "道练习通过。", "cells": "运行出错的单元格"}}


def feedback_markdown(student: str, path: str, rows: list[dict], cell_errors: list[dict]) -> str:
    """What the learner would have seen, as Markdown: score, each check's lines, cell errors."""
    words = FRAME.get(rows[0].get("language", "en") if rows else "en", FRAME["en"])
    score = sum(str(r["passed"]) == "True" for r in rows)
    lines = [f"# {_inline(student)}", "", f"{words['notebook']}: {_inline(path)}", "",
             f"**{score}/{len(rows)}** {words['passed']}", ""]
    for row in rows:
        lines += [f"## {_inline(row['exercise'])}", "", *_block(row.get("message") or row["reason"]), ""]
    if cell_errors:
        lines += [f"## {words['cells']}", ""]
        lines += _block("\n".join(f"cell {e['cell']}, line {e['line']}: {e['error']}" for e in cell_errors)) + [""]
    return "\n".join(lines)


def feedback_names(submissions: list[tuple[str, str]]) -> dict[str, str]:
    """path -> file name: ``<student>.md``, or ``<student>_<notebook>.md`` for a student with several."""
    count: dict[str, int] = {}
    for _, student in submissions:
        count[student] = count.get(student, 0) + 1
    names, used = {}, set()
    for path, student in submissions:
        base = safe_name(student) + ("" if count[student] == 1 else "_" + safe_name(Path(path).stem))
        name, n = base, 1
        while name.lower() in used:
            n += 1
            name = f"{base}_{n}"
        used.add(name.lower())
        names[path] = name + ".md"
    return names


def write_feedback(target: Path, text: str) -> None:
    refuse_symlink(target, "the feedback file")
    with open_private(target, append=False) as out:
        out.write(text)
