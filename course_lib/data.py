"""The one place that finds ``data/`` and reads its files, and the errors every reader shares.

Used by every layer that reads a shipped file: ``tokens.bpe`` (GPT-2's tokenizer files,
notebook 01), ``toys.weights`` (the toy models' weight files, notebooks 02–07),
``figures.registry`` (``data/figures.json``, every notebook's closing cell) and ``gpt2.loader``
(GPT-2's checkpoint, notebooks 05 and 07).

Where ``data/`` is, first match wins: ``$COURSE_DATA_DIR`` when set; the copy an installed
wheel carries inside the package (``course_lib/_data/``, found with ``importlib.resources``;
``.ci/course_build.py`` puts it there when the wheel is built); otherwise the nearest folder,
walking up from this package, that holds ``data/figures.json`` (the checkout an editable
install belongs to). Git holds the files once, in the checkout's ``data/``. When none exists
the error says so; the package never guesses a path that is not there.

One error type per kind of failure, whatever the file:

* :class:`MissingFileError` — a file the course needs is not there (a ``FileNotFoundError``);
* :class:`UnreadableFileError` — it is there but cannot be read (a folder, no permission);
* :class:`ChecksumError` — a file is there but is not the one the course ships or expects;
* :class:`DamagedFileError` — a file is there but cannot be read as what it should be;
* :class:`UnknownNameError` — a name (figure id, value name, piece, computer) that does not exist.
"""
from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from importlib import resources
from pathlib import Path

DATA_ENV = "COURSE_DATA_DIR"
MARKER = Path("data") / "figures.json"        # the file that says "this is the course's data/"
PACKAGED = "_data"                            # data/'s copy inside an installed wheel (course_lib/_data)


class MissingFileError(FileNotFoundError):
    """A file the course needs is missing; the message says which and how to get it back."""


class UnreadableFileError(OSError):
    """A path the course needs is there but cannot be read: a folder where a file should be, or
    no permission to read it; the message names the path and what to do."""


class ChecksumError(ValueError):
    """A file's SHA-256 is not the one the course expects (corrupted, or another file)."""


class DamagedFileError(ValueError):
    """A file is there but cannot be read as what it should be (truncated, wrong format, wrong config)."""


class UnknownNameError(KeyError):
    """A name that does not exist: a figure id, a value of a figure, a piece of a vocabulary."""

    def __str__(self) -> str:                 # the message, not KeyError's quoted repr
        return str(self.args[0]) if self.args else ""


@lru_cache(maxsize=None)
def _find_data_dir(env_value: str | None) -> Path:
    if env_value:
        return Path(env_value)
    packaged = resources.files("course_lib") / PACKAGED
    if isinstance(packaged, Path) and (packaged / "figures.json").is_file():
        return packaged                           # an installed wheel: its own copy of data/
    here = Path(__file__).resolve().parent
    for folder in (here, *here.parents):
        if (folder / MARKER).is_file():
            return folder / "data"                # a checkout (editable install, or run in place)
    raise MissingFileError(
        f"cannot find the course's data/ folder: course_lib has no {PACKAGED}/ of its own (an "
        f"editable install or a copy of the sources) and no folder above {here} holds {MARKER}. "
        f"Run from a checkout of the course, install its wheel (pip install .), or set {DATA_ENV} "
        f"to the folder that holds figures.json.")


def data_dir() -> Path:
    """The course's ``data/`` folder: $COURSE_DATA_DIR, else the wheel's own copy
    (``course_lib/_data``), else the checkout's ``data/`` found above this package."""
    return _find_data_dir(os.environ.get(DATA_ENV) or None)


def data_path(*parts: str) -> Path:
    """A path inside ``data/``: ``data_path("gpt2_tokenizer", "vocab.bpe")``."""
    return data_dir().joinpath(*parts)


def read_bytes(path: Path, what: str, fix: str = "") -> bytes:
    """A file's bytes; a :class:`MissingFileError` that names ``what`` (and says ``fix``) if it
    is not there, an :class:`UnreadableFileError` if it cannot be read (a folder, no permission,
    another error of the operating system)."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise MissingFileError(
            f"{what} is missing ({path}); it ships with the course in data/ (restore it with "
            f"git checkout -- data/, or set {DATA_ENV} if you moved data/). {fix}".rstrip()) from None
    except OSError as err:
        raise unreadable(path, what, err, fix) from None


def unreadable(path, what: str, err: OSError, fix: str = "") -> UnreadableFileError:
    """The error for a ``path`` that is there but could not be read (``err``), naming ``what``
    it should be and what to do."""
    if isinstance(err, IsADirectoryError):
        problem, todo = "is a folder, not a file", "remove or rename that folder and restore the file"
    elif isinstance(err, PermissionError):
        problem, todo = "cannot be read: permission denied", f"make it readable (chmod u+r {path})"
    else:
        problem, todo = f"cannot be read ({err.strerror or err})", "check the disk and restore the file"
    return UnreadableFileError(f"{what} ({path}) {problem}; {todo}. {fix}".rstrip())


def restore_hint(path) -> str:
    """How to get a shipped file back: ``git checkout -- data/lab_model.json`` (its path inside
    data/; a copy elsewhere is named by the shipped file of the same name)."""
    path = Path(path)
    try:
        inside = path.resolve().relative_to(data_dir().resolve())
    except (ValueError, OSError, MissingFileError):
        inside = Path(path.name)
    return f"restore it with git checkout -- {(Path('data') / inside).as_posix()}"


def read_json(path: Path, what: str) -> dict:
    """A JSON file the course ships in data/; a clear error names ``what`` is missing, and a
    file that is not valid JSON (cut short, edited by hand) raises :class:`DamagedFileError`
    naming the file, where it breaks and how to restore it."""
    raw = read_bytes(path, what)
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise DamagedFileError(f"{what} ({path}) is not UTF-8 text ({e.reason} at byte {e.start}); "
                               f"{restore_hint(path)}") from None
    except json.JSONDecodeError as e:
        raise DamagedFileError(f"{what} ({path}) is not valid JSON: {e.msg} at line {e.lineno} "
                               f"column {e.colno} (cut short or edited?); {restore_hint(path)}") from None


def sha256_of(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """The SHA-256 of a file, read in chunks (GPT-2's checkpoint is 548 MB)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()
