"""The wheel on its own: built from the sources, installed into a fresh venv in a
temporary folder (no checkout above it, no $COURSE_DATA_DIR), it reproduces every offline
figure and runs every notebook under nbval.

Slow (a wheel build, a venv, every notebook: a few minutes) and it installs an environment, so
it is not part of `make test`: `make test-wheel` runs it (marker ``install``).

The venv gets the wheel with ``--no-deps``; its third-party packages (torch, numpy, jupyter…)
are the lock's, from the running test environment, added to its ``sys.path`` by a ``.pth``
file (nothing is downloaded). A ``.pth`` line adds a folder to the path but runs none of the
``.pth`` files inside it, so the test environment's editable course_lib stays out of reach:
``course_lib`` can only come from the wheel, which the script below asserts.
"""
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from _copies import writable_copy
from _front_end import build_wheel, install_into

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["course_lib", "data", ".ci/course_build.py", "pyproject.toml", "README.md", "LICENSE"]

# Runs in the fresh venv, cwd a temporary folder: the package and its data come from the wheel;
# every offline figure from its registry computer, through check_figure.
REPRODUCE = r"""
import io, contextlib, json, sys
from pathlib import Path
import course_lib
from course_lib.data import data_dir
site = Path(sys.argv[1]).resolve()
assert Path(course_lib.__file__).resolve().is_relative_to(site), course_lib.__file__
assert data_dir().resolve() == site / "course_lib" / "_data", data_dir()
from matplotlib import font_manager
from course_lib.ui import fonts
assert fonts.use_readable_fonts()[1] == fonts.COURSE_CJK_FAMILY   # the Chinese labels' font, from the wheel
for weight in ("normal", "bold"):
    path = font_manager.findfont(font_manager.FontProperties(family=fonts.COURSE_CJK_FAMILY, weight=weight),
                                 fallback_to_default=False)
    assert Path(path).resolve().is_relative_to(site / "course_lib" / "_data" / "fonts"), path
from course_lib.figures import check_figure, figure, load_registry
from course_lib.figures.computers import compute, computed_figures
from course_lib.gpt2 import random_gpt2
from course_lib.tokens.bpe import gpt2_encoding
offline = sorted(fid for fid, e in load_registry().items() if not e["needs_pretrained_weights"])
values = computed_figures()
values["gpt2.logits_shape"] = compute("gpt2.logits_shape", random_gpt2(), gpt2_encoding())
assert sorted(values) == offline, sorted(set(values) ^ set(offline))
lines = 0
for fid in offline:
    assert set(values[fid]) == set(figure(fid)["values"]), fid
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        check_figure(fid, **values[fid])
    lines += len(out.getvalue().splitlines())
print(json.dumps({"figures": len(offline), "values": lines}))
"""

OVERRIDE = r"""
import os
from course_lib.data import data_dir
print(data_dir())
"""


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory):
    """(venv python, its site-packages, the built wheel) — the wheel built from a copy of the
    sources, the venv made by the base interpreter of this one."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src"
    for name in SOURCES:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        writable_copy(ROOT / name, source / name)
    subprocess.run(build_wheel(source, tmp / "dist"), check=True, capture_output=True, timeout=600)
    wheel, = (tmp / "dist").glob("course_lib-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    subprocess.run(install_into(python, "--no-deps", "--no-index", "-q", str(wheel)),
                   check=True, capture_output=True, timeout=600)
    # the lock's third-party packages, from this test environment (see the module docstring)
    (site / "course-test-deps.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    return python, site, wheel


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "COURSE_DATA_DIR", "COURSE_GPT2_WEIGHTS", "VIRTUAL_ENV")}
    return {**env, **extra}


def test_the_wheel_carries_every_file_of_data(wheel_venv):
    _, _, wheel = wheel_venv
    names = set(zipfile.ZipFile(wheel).namelist())
    in_git = {p.relative_to(ROOT / "data").as_posix() for p in (ROOT / "data").rglob("*") if p.is_file()}
    assert in_git and {f"course_lib/_data/{n}" for n in in_git} <= names
    with zipfile.ZipFile(wheel) as whl:
        for name in in_git:
            assert whl.read(f"course_lib/_data/{name}") == (ROOT / "data" / name).read_bytes(), name


def test_the_wheel_alone_reproduces_every_offline_figure(wheel_venv, tmp_path):
    python, site, _ = wheel_venv
    done = subprocess.run([str(python), "-c", REPRODUCE, str(site)], cwd=tmp_path, env=clean_env(),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    import json
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts["figures"] == 49 and counts["values"] >= 49, counts


def test_course_data_dir_still_overrides_the_wheels_copy(wheel_venv, tmp_path):
    python, _, _ = wheel_venv
    mine = tmp_path / "my-data"
    writable_copy(ROOT / "data", mine)
    done = subprocess.run([str(python), "-c", OVERRIDE], cwd=tmp_path, env=clean_env(COURSE_DATA_DIR=str(mine)),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == str(mine), done.stdout + done.stderr


def test_every_notebook_runs_against_the_wheel(wheel_venv, tmp_path):
    """nbval, strict, on copies of both editions and the solutions, in a folder that is not a
    checkout: the kernel is the venv's Python, so the notebooks import the wheel's course_lib.
    Run as docs/instructors.md says, `python -m course_lib.check` (its sanitize file is the wheel's)."""
    python, _, _ = wheel_venv
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    subprocess.run([str(python), "-c", "import matplotlib.font_manager"], env=clean_env(), check=True,
                   capture_output=True, timeout=300)
    done = subprocess.run([str(python), "-m", "course_lib.check", "-q", "-rfE", "-n", "2", "--dist", "loadfile"],
                          cwd=tmp_path, env=clean_env(HF_HUB_CACHE=str(tmp_path / "hf-cache")),
                          capture_output=True, text=True, timeout=1800)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0 and " passed" in summary and "failed" not in summary, (
        done.stdout[-6000:] + done.stderr[-3000:])
