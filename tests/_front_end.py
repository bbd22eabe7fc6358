"""The install front end this environment has: pip, or uv (a venv made by ``uv venv`` holds no
pip). The tests that build the course's wheel or install into a venv of their own ask here, so
they run with either (docs/install.md). pip when it is there, else uv (on PATH or beside this
Python); COURSE_FRONT_END=pip or =uv chooses."""
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest


@cache
def _pip_works() -> bool:
    return subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode == 0


def _uv() -> str | None:
    beside = Path(sys.executable).parent / "uv"
    return shutil.which("uv") or (str(beside) if beside.is_file() else None)


def front_end() -> str:
    """'pip' or 'uv'."""
    chosen = os.environ.get("COURSE_FRONT_END")
    if chosen not in (None, "", "pip", "uv"):
        pytest.fail(f"COURSE_FRONT_END={chosen!r}: it is pip or uv")
    if chosen == "uv" or (not chosen and not _pip_works() and _uv()):
        if not _uv():
            pytest.fail("COURSE_FRONT_END=uv, and no uv on PATH")
        return "uv"
    if not _pip_works():
        pytest.fail(f"{sys.executable} has no pip, and no uv is on PATH: install one of them")
    return "pip"


def build_wheel(source: Path, dist: Path) -> list[str]:
    """The command that builds ``source``'s wheel into ``dist`` with this Python's own setuptools
    (no build isolation: nothing is downloaded)."""
    if front_end() == "uv":
        return [_uv(), "build", "--wheel", "--no-build-isolation", "--offline", "--python", sys.executable,
                "-q", "--out-dir", str(dist), str(source)]
    return [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(source)]


def install_into(python: Path, *args: str) -> list[str]:
    """The command that installs ``args`` (pip install's own) into the environment of ``python``."""
    if front_end() == "uv":
        return [_uv(), "pip", "install", "--python", str(python), *args]
    return [sys.executable, "-m", "pip", "--python", str(python), "install", *args]
