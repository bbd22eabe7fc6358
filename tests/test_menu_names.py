"""The menu item the course tells a learner to click is the one JupyterLab shows.

Every chapter notebook's third cell (both editions), the NameError hint and the docs name
"Kernel → <item>". The item's label is read from the installed JupyterLab: its main-menu schema
puts the semantic command ``runmenu:restart-and-run-all`` in the Kernel menu, and in a notebook
that command shows the label of ``notebook:restart-run-all``, which lives in JupyterLab's
compiled front end (``static/jlab_core.*.js``). Both editions use the English label: the Chinese
notebooks name JupyterLab's menu items in English, as JupyterLab shows them without a language pack.
"""
import json
import re
from pathlib import Path

import pytest
from jupyterlab.commands import get_app_dir

from course_lib.ui.strings import STRINGS

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "notebooks").glob("0*.ipynb")) + sorted((ROOT / "notebooks" / "zh").glob("0*.ipynb"))
# "Kernel → <item>" wherever the course names a Kernel menu item; the item ends at a closing
# bracket, an emphasis mark, a colon or the end of the line
NAMED = re.compile(r"Kernel → ([^)）*:：\n\"]+)")


@pytest.fixture(scope="module")
def run_all_label() -> str:
    app_dir = Path(get_app_dir())
    schema = json.loads((app_dir / "schemas" / "@jupyterlab" / "mainmenu-extension" / "plugin.json")
                        .read_text(encoding="utf-8"))
    kernel_menu = next(m for m in schema["jupyter.lab.menus"]["main"] if m["id"] == "jp-mainmenu-kernel")
    assert any(item.get("command") == "runmenu:restart-and-run-all" for item in kernel_menu["items"]), (
        "JupyterLab's Kernel menu no longer holds runmenu:restart-and-run-all: find the item that "
        "restarts the kernel and runs every cell, and name it in the notebooks")
    labels = {m.group(1) for bundle in (app_dir / "static").glob("jlab_core.*.js")
              for m in re.finditer(r"restartRunAll,\{label:\w+\.__\(\"([^\"]+)\"\)",
                                   bundle.read_text(encoding="utf-8"))}
    assert len(labels) == 1, f"notebook:restart-run-all's label not found once in {app_dir / 'static'}: {labels}"
    return labels.pop()


def test_the_label_is_read_from_jupyterlab(run_all_label):
    assert run_all_label.startswith("Restart Kernel and Run All")


def test_fourteen_chapter_notebooks():
    assert len(CHAPTERS) == 14


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_each_chapter_names_the_menu_item_jupyterlab_shows(path, run_all_label):
    cell = json.loads(path.read_text(encoding="utf-8"))["cells"][2]
    text = "".join(cell["source"])
    assert cell["cell_type"] == "markdown" and f"Kernel → {run_all_label}" in text, (
        f"{path.name}'s third cell should say to run from the top with Kernel → {run_all_label}")


def course_texts():
    """(where, text) of every place a reader meets a menu name: notebooks' markdown, course_lib, docs."""
    for path in sorted((ROOT / "notebooks").rglob("*.ipynb")):
        for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] == "markdown":
                yield f"{path.relative_to(ROOT)} cell {index}", "".join(cell["source"])
    for path in sorted((ROOT / "course_lib").rglob("*.py")) + sorted((ROOT / "docs").glob("*.md")):
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    for name in ("README.md", "README.zh-CN.md"):
        yield name, (ROOT / name).read_text(encoding="utf-8")


def test_every_kernel_menu_item_named_is_jupyterlabs(run_all_label):
    named = [(where, m.group(1).strip()) for where, text in course_texts() for m in NAMED.finditer(text)]
    assert len(named) >= 14 + 2
    wrong = [f"{where}: {item!r}" for where, item in named if item != run_all_label]
    assert not wrong, f"JupyterLab's Kernel menu item is {run_all_label!r}; elsewhere: " + "; ".join(wrong)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_name_error_hint_names_it(language, run_all_label):
    assert f"Kernel → {run_all_label}" in STRINGS[language]["hints.name_error"]
