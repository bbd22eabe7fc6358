"""The wheel holds every subpackage and the data it reads: build a real one and import every
module from it (tests/test_wheel_install.py, `make test-wheel`, goes further: a fresh venv, every
figure and notebook).

An editable install finds any folder under course_lib/, so it would hide a subpackage missing
from ``[tool.setuptools] packages``; this test builds the wheel from a copy of the sources and
imports every module in a Python that sees only the wheel and the venv's third-party packages.
The wheel also carries the course's built JupyterLab extension, as data installed into
``share/jupyter/labextensions/``. It builds with pip, or with uv where the venv has no pip (tests/_front_end.py). Marked slow (a few seconds): part of ``make test``.
"""
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from _copies import writable_copy
from _front_end import build_wheel

ROOT = Path(__file__).resolve().parent.parent

IMPORT_EVERY_MODULE = """
import importlib, pkgutil, sys
import course_lib
assert course_lib.__file__.startswith(sys.argv[1]), course_lib.__file__
names = [m.name for m in pkgutil.walk_packages(course_lib.__path__, "course_lib.")]
for name in names:
    module = importlib.import_module(name)
    assert module.__file__.startswith(sys.argv[1]), module.__file__
print(len(names))
"""

DATA_NOT_FOUND = """
from course_lib.data import MissingFileError, data_dir
try:
    print("found:", data_dir())
except MissingFileError as err:
    print("missing:", err)
"""


@pytest.mark.slow
def test_the_wheel_holds_every_module(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for name in ["course_lib", "data", ".ci", "pyproject.toml", "README.md", "LICENSE"]:
        writable_copy(ROOT / name, source / name)
    # pip, or uv in a venv uv made (it has no pip): tests/_front_end.py
    built = subprocess.run(build_wheel(source, tmp_path / "dist"), capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    wheel, = (tmp_path / "dist").glob("course_lib-*.whl")
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    in_source = {p.relative_to(ROOT).as_posix() for p in (ROOT / "course_lib").rglob("*.py")}
    in_wheel = {n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".py")}
    assert in_source == in_wheel, sorted(in_source ^ in_wheel)

    # -S: no site module, so no .pth file (the editable install's finder) is read; the path is
    # the unpacked wheel, the standard library and the venv's packages, nothing else
    paths = [str(unpacked), sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib"),
             str(Path(sysconfig.get_path("stdlib")) / "lib-dynload"), sysconfig.get_path("purelib")]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COURSE_DATA_DIR")}
    env["PYTHONPATH"] = os.pathsep.join(paths)
    done = subprocess.run([sys.executable, "-S", "-c", IMPORT_EVERY_MODULE, str(unpacked)], env=env,
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout) >= 40
    # the wheel carries data/ as course_lib/_data, and data_dir() finds it there, away from a checkout
    in_data = {p.relative_to(ROOT).as_posix() for p in (ROOT / "data").rglob("*") if p.is_file()}
    assert {"course_lib/_" + n for n in in_data} <= set(zipfile.ZipFile(wheel).namelist())
    # python -m course_lib.check's nbval sanitize file (docs/instructors.md)
    assert "course_lib/nbval_sanitize.cfg" in zipfile.ZipFile(wheel).namelist()
    done = subprocess.run([sys.executable, "-S", "-c", DATA_NOT_FOUND], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.stdout.strip() == f"found: {unpacked / 'course_lib' / '_data'}", done.stdout + done.stderr
    # the wheel carries the built JupyterLab extension once, as data pip installs into
    # share/jupyter/labextensions/ (tests/test_labextension.py)
    built = ROOT / "course_lib" / "ui" / "labextension"
    extension = {p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file()} | {"install.json"}
    data = "-".join(wheel.name.split("-")[:2]) + ".data"           # course_lib-<version>.data
    prefix = f"{data}/data/share/jupyter/labextensions/course-lib-solution-links/"
    names = zipfile.ZipFile(wheel).namelist()
    assert {n[len(prefix):] for n in names if n.startswith(prefix)} == extension, sorted(names)
    assert not [n for n in names if n.startswith("course_lib/ui/labextension")], sorted(names)
    # a bare copy of the package (no _data, no checkout above it): a clear error says what to do
    bare = tmp_path / "bare"
    bare.mkdir(exist_ok=True)
    subprocess.run(["cp", "-r", str(ROOT / "course_lib"), str(bare)], check=True)
    env["PYTHONPATH"] = os.pathsep.join([str(bare), *paths[1:]])
    done = subprocess.run([sys.executable, "-S", "-c", DATA_NOT_FOUND], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert "missing: cannot find the course's data/ folder" in done.stdout and "COURSE_DATA_DIR" in done.stdout, (
        done.stdout + done.stderr)
