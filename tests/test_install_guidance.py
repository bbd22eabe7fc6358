"""Where a learner installs the course: docs/install.md's section for environments they already
have (the READMEs keep a short one, which every notebook's first cell points to), and the one
line that first cell prints when its kernel cannot import course_lib."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib.ui.strings import STRINGS

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").rglob("*.ipynb"))


def first_code_cell(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return "".join(next(c for c in nb["cells"] if c["cell_type"] == "code")["source"])


def test_every_notebook_is_covered():
    assert len(NOTEBOOKS) == 28          # 7 chapters and their 7 solutions notebooks, in each edition


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_the_first_cell_says_in_one_line_what_to_install(path, tmp_path):
    """Run the first cell's guard in a Python that cannot see course_lib (-S: no site-packages,
    -I: no current folder): the last line of the error names the missing module and the command."""
    guard = first_code_cell(path).split("\nstart(")[0]
    assert guard.startswith("try:\n    from course_lib.ui.start import start\n")
    done = subprocess.run([sys.executable, "-S", "-I", "-c", guard], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: ") and "course_lib" in last and "`pip install -e .`" in last, last
    assert ("README.zh-CN.md" in last) == ("/zh/" in path.as_posix()), last
    # the cell writes out the line start() says for a missing dependency (course_lib cannot say it)
    language = "zh" if "/zh/" in path.as_posix() else "en"
    assert last == "ModuleNotFoundError: " + STRINGS[language]["start.missing"].format(name="course_lib"), last
    assert "During handling" not in done.stderr          # `from None`: the import's own traceback is gone


def test_the_docs_say_how_to_install_where_learners_already_are():
    install = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    section = install[install.index("## Install where you already are"):install.index("## Versions")]
    for needed in ["Colab", "Kaggle", "conda", "venv", "pip install -e .", "git+https://", "--dry-run",
                   "COURSE_DATA_DIR", "*existing*", "make my-copy"]:
        assert needed in section, needed
    versions = install[install.index("## Versions"):install.index("## GPT-2's weights")]
    assert "| torch | 2.7.0 |" in versions and "torch.multinomial" in versions and "make test-matrix" in versions
    assert "| existing | Python 3.11.7, torch 2.14.1, numpy 2.3.5," in versions    # the row the section cites
    # the first cells point to "README: Install where you already are" and its Chinese twin
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "### Install where you already are" in readme and "](docs/install.md)" in readme
    assert "Install where you already are" in STRINGS["en"]["start.missing"]
    zh = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    assert "### 在已有的环境中安装" in zh and "在已有的环境中安装" in STRINGS["zh"]["start.missing"]
    assert "固定版本" not in zh


# Colab or Kaggle, as the first cell sees them, in a Python that cannot see course_lib (-S -I):
# `pip install` stands in for the real one (nothing is downloaded): it records the command and
# makes a stand-in course_lib importable, as the install would
ON_A_PLATFORM = r"""
import os, sys, types
platform, installed, guard = sys.argv[1:]
if platform == "colab":
    sys.modules["google.colab"] = types.ModuleType("google.colab")
elif platform == "kaggle":
    os.environ["KAGGLE_KERNEL_RUN_TYPE"] = "Interactive"
fake = types.ModuleType("subprocess")
def run(command, check):
    print("RAN", command)
    if os.environ.get("PIP_FAILS"):       # pip's own message reaches the notebook (the kernel shows
        raise RuntimeError("pip failed")   # a subprocess's output); check=True stops the cell here
    sys.path.insert(0, installed)
fake.run = run
sys.modules["subprocess"] = fake
exec(guard)
print("START", start())
"""


def stand_in_course_lib(folder: Path, start_body: str = "return 'started'") -> Path:
    (folder / "course_lib" / "ui").mkdir(parents=True)
    (folder / "course_lib" / "__init__.py").write_text("")
    (folder / "course_lib" / "ui" / "__init__.py").write_text("")
    (folder / "course_lib" / "ui" / "start.py").write_text(f"def start():\n    {start_body}\n")
    return folder


@pytest.mark.parametrize("platform", ["colab", "kaggle"])
@pytest.mark.parametrize("path", [NOTEBOOKS[0], next(p for p in NOTEBOOKS if "/zh/" in p.as_posix())],
                         ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_on_colab_and_kaggle_the_first_cell_installs_the_course_saying_so_in_one_line(path, platform, tmp_path):
    guard = first_code_cell(path).split("\nstart(")[0]
    installed = stand_in_course_lib(tmp_path / "site")
    done = subprocess.run([sys.executable, "-S", "-I", "-c", ON_A_PLATFORM, platform, str(installed), guard],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    said, ran, started = done.stdout.strip().splitlines()
    assert said.startswith("Colab/Kaggle") and "course_lib" in said
    assert ran == "RAN " + str([sys.executable, "-m", "pip", "install", "-q",
                                "course_lib @ git+https://github.com/gpt2-course/next-token@main"])
    assert started == "START started"          # the cell goes on with the installed course


def test_a_failed_install_stops_the_cell_and_the_line_before_says_what_kaggle_needs(tmp_path):
    guard = first_code_cell(NOTEBOOKS[0]).split("\nstart(")[0]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-S", "-I", "-c", ON_A_PLATFORM, "kaggle", str(tmp_path / "none"), guard],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, env={**env, "PIP_FAILS": "1"})
    assert done.returncode == 1 and "START" not in done.stdout and "RuntimeError: pip failed" in done.stderr
    assert "Internet" in done.stdout.splitlines()[0]


def test_on_a_platform_a_missing_dependency_is_installed_with_the_course(tmp_path):
    """course_lib is there but a package it imports is not: pip's install of the course adds it,
    and the cell goes on."""
    guard = first_code_cell(NOTEBOOKS[0]).split("\nstart(")[0]
    course = stand_in_course_lib(tmp_path / "course")
    (course / "course_lib" / "ui" / "start.py").write_text("import a_dependency\ndef start():\n    return 'started'\n")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "a_dependency.py").write_text("")          # what pip's install brings
    done = subprocess.run([sys.executable, "-S", "-I", "-c", f"import sys; sys.path.insert(0, {str(course)!r})\n"
                           + ON_A_PLATFORM, "kaggle", str(tmp_path / "site"), guard],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    said, ran, started = done.stdout.strip().splitlines()
    assert said.startswith("Colab/Kaggle") and ran.startswith("RAN ") and started == "START started"
