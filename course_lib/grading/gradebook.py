"""The grader's output: the gradebook CSV and the summary (``grading.feedback``: the feedback files).

Used by ``grading.cli``. Not taught. Everything is written for the instructor's eyes only
(files 0600, folders 0700) and nothing of it is ever inside a submission's sandbox.

* :func:`visible`: control, bidi-override and zero-width characters (a name that reads
  backwards, or two names that look the same) are written as ``<U+202E>`` in every output.
* Every cell is escaped by OWASP's CSV-injection rule: a value that begins with ``=``, ``+``,
  ``-``, ``@``, a tab or a carriage return gets a leading ``'``, and every field is quoted.
* Rows are appended to ``<out>.partial`` as each submission finishes (flushed, fsynced);
  ``--resume`` keeps the submissions already complete there whose notebook is unchanged (same
  path, same sha256). At the end the rows are written, in command-line order, to a temporary
  file beside ``--out`` and renamed onto it (atomic). A ``--out`` (or its ``.partial``) that is
  a symbolic link is refused, never followed.
* The summary has one row per student and assignment: ``student,assignment,passed,attempted,total``.
"""
from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path

FIELDS = ["student", "assignment", "submission", "exercise", "passed", "reason", "seconds", "sha256"]
SUMMARY_FIELDS = ["student", "assignment", "passed", "attempted", "total"]
NOT_ATTEMPTED = "not attempted"
GRADER_FAILED = "the grader failed on this submission"     # a reason --resume never keeps: graded again
RISKY = ("=", "+", "-", "@", "\t", "\r")
# C0 and C1 controls, soft hyphen, Arabic letter mark, Mongolian vowel separator, zero-width
# space/joiners and LRM/RLM, line and paragraph separators, bidi embeddings and overrides, word
# joiner, invisible operators and bidi isolates, BOM, interlinear annotations, tags, and lone
# surrogates (a file name that is not UTF-8): a fixed list, the same on every Python
INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
                       "\ufeff\ufff9-\ufffb\U000e0000-\U000e007f\ud800-\udfff]")


def visible(text, keep: str = "") -> str:
    """``text`` with every :data:`INVISIBLE` character but those in ``keep`` written as ``<U+XXXX>``."""
    return INVISIBLE.sub(lambda m: m.group() if m.group() in keep else f"<U+{ord(m.group()):04X}>", str(text))


def escape_cell(value) -> str:
    """A CSV cell a spreadsheet shows as text, never runs as a formula (OWASP), every character visible."""
    text = visible(value)
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
    """``--out``: rows appended to ``<out>.partial`` as they come, the finished file renamed in.
    With ``resume``, :attr:`done` holds the rows already in ``<out>.partial`` (or a finished
    ``<out>``); :meth:`start` writes a fresh partial with the rows kept, then rows are added."""

    def __init__(self, out: str, resume: bool):
        self.out = Path(out)
        self.partial = self.out.with_name(self.out.name + ".partial")
        refuse_symlink(self.out, "--out")
        refuse_symlink(self.partial, "the partial gradebook")
        self.out.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.done: dict[str, list[dict]] = self._read() if resume else {}    # submission (as written) -> rows
        self.file = None

    def _read(self) -> dict[str, list[dict]]:
        source = self.partial if self.partial.exists() else self.out
        if not source.exists():
            return {}
        refuse_symlink(source, "the gradebook to resume")
        rows: dict[str, list[dict]] = {}
        with source.open(encoding="utf-8", newline="", errors="replace") as handle:
            for row in csv.DictReader(handle):
                if all(row.get(k) is not None for k in FIELDS):          # a line cut short by a crash: dropped
                    row = {k: unescape_cell(row[k] or "") for k in FIELDS}
                    rows.setdefault(row["submission"], []).append(row)
        return rows

    def kept(self, path: str, sha256: str, count: int) -> list[dict] | None:
        """The rows to keep for the notebook at ``path`` whose bytes have ``sha256`` and which is
        graded on ``count`` exercises: those already there when they are complete, of these very
        bytes and none a failure of the grader's own; else None (graded again)."""
        rows = self.done.get(visible(path))
        if (rows and sha256 and len(rows) == count and all(r["sha256"] == sha256 for r in rows)
                and not any(r["reason"].startswith(GRADER_FAILED) for r in rows)):
            return rows
        return None

    def start(self, kept: list[list[dict]]) -> None:
        """A fresh ``<out>.partial`` holding the rows kept from before (renamed in: a crash meanwhile
        leaves the old one); rows are added to it."""
        write_csv(self.partial, FIELDS, ([r[k] for k in FIELDS] for rows in kept for r in rows), "the partial gradebook")
        self.file = open_private(self.partial, append=True)

    def add(self, rows: list[dict]) -> None:
        """One submission's rows, on disk before the next submission's."""
        self.file.writelines(csv_line(r[k] for k in FIELDS) for r in rows)
        self.file.flush()
        os.fsync(self.file.fileno())

    def finish(self, order: list[str], rows_by_path: dict[str, list[dict]]) -> None:
        """All rows, in command-line order, renamed onto ``--out`` in one step."""
        if self.file is not None:
            self.file.close()
        write_csv(self.out, FIELDS, ([r[k] for k in FIELDS] for path in order for r in rows_by_path.get(path, [])), "--out")
        self.partial.unlink(missing_ok=True)


def write_summary(path: str, rows: list[dict]) -> None:
    """One row per student and assignment: exercises passed, attempted (not "not attempted"), graded."""
    target = Path(path)
    per: dict[tuple[str, str], list[int]] = {}
    for row in rows:
        counts = per.setdefault((visible(row["student"]), visible(row.get("assignment", ""))), [0, 0, 0])
        counts[0] += str(row["passed"]) == "True"
        counts[1] += row["reason"] != NOT_ATTEMPTED
        counts[2] += 1
    write_csv(target, SUMMARY_FIELDS, [[*key, *counts] for key, counts in per.items()], "--summary")


def write_csv(target: Path, header: list[str], lines, what: str) -> None:
    """A whole CSV file (escaped), written beside ``target``, on disk, then renamed onto it in one
    step (a reader never sees half of it); a ``target`` that is a symbolic link is refused."""
    refuse_symlink(target, what)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with open_private(temporary, append=False) as out:
        out.write(csv_line(header))
        out.writelines(csv_line(line) for line in lines)
        out.flush()
        os.fsync(out.fileno())
    refuse_symlink(target, what)
    os.replace(temporary, target)
