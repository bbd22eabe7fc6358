"""Every notebook's first cell is one call, ``start("NN", language=...)`` (course_lib.ui.start):
it does what the eleven-line header did (the language, the NameError hint, the map as the cell's
value), refuses a bad argument before changing anything, and names a missing package in one line
of the notebook's language, also in a Python that has course_lib but none of its dependencies."""
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from course_lib.ui import language, start as start_module
from course_lib.ui.pipeline_map import PipelineMap, pipeline_map
from course_lib.ui.start import NEEDED, OPTIONAL, start
from course_lib.ui.strings import STRINGS

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fresh_language(monkeypatch):
    """The language as a fresh kernel has it (English, not chosen); put back afterwards."""
    monkeypatch.setattr(language, "_current", "en")
    monkeypatch.setattr(language, "_chosen", False)


@pytest.fixture
def shell():
    interactive = pytest.importorskip("IPython.core.interactiveshell")
    shell = interactive.InteractiveShell.instance()
    try:
        yield shell
    finally:
        shell.set_custom_exc((), None)
        interactive.InteractiveShell.clear_instance()


def test_start_sets_the_language_installs_the_hint_and_returns_the_map(fresh_language, shell, capsys):
    assert shell.custom_exceptions == ()
    shown = start("03", language="zh")
    assert language.current_language() == "zh" and language.language_chosen()
    assert shell.custom_exceptions == (NameError,)
    assert isinstance(shown, PipelineMap) and shown.here == ["attention"]
    assert repr(shown) == repr(pipeline_map("03")) and "你在这里：注意力（笔记本 03）" in repr(shown)
    shell.run_cell("needs_an_earlier_cell")
    printed = capsys.readouterr().out
    assert STRINGS["zh"]["hints.name_error"].format(name="needs_an_earlier_cell") in printed
    assert STRINGS["en"]["hints.name_error"].format(name="needs_an_earlier_cell") not in printed


def test_without_a_notebook_there_is_no_map(fresh_language):
    assert start(language="en") is None
    assert language.current_language() == "en" and language.language_chosen()


@pytest.mark.parametrize("notebook, lang, says", [
    ("08", "zh", r"start\(notebook='08'\): the notebooks with a map are '01', .*'07'; None draws no map"),
    (3, "zh", r"start\(notebook=3\)"),
    (["03"], "zh", r"start\(notebook=\['03'\]\)"),
    ("03", "fr", r"start\(language='fr'\): course_lib speaks 'en', 'zh'"),
])
def test_a_bad_argument_is_refused_by_name_before_anything_changes(fresh_language, notebook, lang, says):
    with pytest.raises(ValueError, match=says):
        start(notebook, language=lang)
    assert language.current_language() == "en" and not language.language_chosen()


def test_a_missing_package_is_named_in_one_line_of_the_notebooks_language(fresh_language, monkeypatch):
    monkeypatch.setattr(start_module, "NEEDED", ("numpy", "no_such_package_h28"))
    with pytest.raises(ModuleNotFoundError) as raised:
        start("07", language="zh")
    assert str(raised.value) == STRINGS["zh"]["start.missing"].format(name="no_such_package_h28")
    assert raised.value.name == "no_such_package_h28"


@pytest.mark.parametrize("edition", ["03_attention.ipynb", "zh/03_attention.ipynb"])
def test_the_first_cell_in_a_python_with_course_lib_but_no_dependencies(edition, tmp_path):
    """-S: no site-packages (no torch, numpy, …); -I: no current folder; course_lib is put on the
    path by hand. The cell's last line names torch and the fix, in the edition's language."""
    cells = json.loads((ROOT / "notebooks" / edition).read_text(encoding="utf-8"))["cells"]
    first = "".join(next(c for c in cells if c["cell_type"] == "code")["source"])
    program = f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n" + first
    done = subprocess.run([sys.executable, "-S", "-I", "-c", program], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    lang = "zh" if edition.startswith("zh/") else "en"
    last = done.stderr.strip().splitlines()[-1]
    assert last == "ModuleNotFoundError: " + STRINGS[lang]["start.missing"].format(name="torch"), done.stderr


def test_needed_is_what_pyproject_installs_but_the_weights_fetcher():
    """huggingface_hub is imported only inside the functions that fetch pretrained GPT-2 (a
    learner without the weights never calls them). Every other dependency is imported under its
    distribution name (JupyterLab, which no cell imports, is the lab extra, not a dependency)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {re.split(r"[<>=!~;\[ ]", dep, maxsplit=1)[0].lower().replace("-", "_")
             for dep in project["dependencies"]}
    assert set(NEEDED) == names - set(OPTIONAL)
    assert set(OPTIONAL) <= names
    assert len(NEEDED) == len(set(NEEDED))
    for path in (ROOT / "course_lib").rglob("*.py"):              # never imported at a module's top
        for line in path.read_text(encoding="utf-8").splitlines():
            assert not re.match(r"(from|import) huggingface_hub", line), path
