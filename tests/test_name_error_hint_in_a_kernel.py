"""What the notebooks promise about a cell run on its own after a kernel restart,
checked in a fresh Jupyter kernel with cells taken from notebook 03 of both editions:

* a cell that imports nothing from course_lib, run first, shows Python's plain NameError;
* a check cell imports its checker, which turns the hint on: its NameError comes with the line
  "run the notebook from the top", in both languages (no notebook has chosen one yet);
* after the first code cell of the Chinese edition (whose value is the map, in Chinese), a cell's
  NameError gets the Chinese line only.
"""
import json
from pathlib import Path

import pytest

from course_lib.ui.strings import STRINGS

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def code_cells(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
            if c["cell_type"] == "code"]


@pytest.fixture(scope="module")
def kernel():
    manager = pytest.importorskip("jupyter_client.manager")
    km, kc = manager.start_new_kernel(kernel_name="python3", cwd=str(NOTEBOOKS))
    yield kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def run(kc, source: str) -> tuple[str, list[str]]:
    """What a cell printed (stdout, and the text of its value) and the names of the errors it raised."""
    printed, errors = [], []

    def collect(message):
        kind, content = message["msg_type"], message["content"]
        if kind == "stream" and content["name"] == "stdout":
            printed.append(content["text"])
        elif kind == "execute_result":
            printed.append(content["data"].get("text/plain", ""))
        elif kind == "error":
            errors.append(content["ename"])
    kc.execute_interactive(source, output_hook=collect, timeout=120)
    return "".join(printed), errors


def hint(language: str, name: str) -> str:
    return STRINGS[language]["hints.name_error"].format(name=name)


def test_a_cell_run_alone_after_a_restart_gets_what_the_notebook_says(kernel):
    english, chinese = code_cells(NOTEBOOKS / "03_attention.ipynb"), code_cells(NOTEBOOKS / "zh" / "03_attention.ipynb")
    plain = next(c for c in english if c.startswith("print(causal_mask(3))"))
    check_cell = next(c for c in english if c.startswith("from course_lib.exercises import check_make_causal_mask"))
    assert "course_lib" not in plain

    printed, errors = run(kernel, plain)                   # the kernel has imported nothing yet
    assert errors == ["NameError"] and "Restart Kernel and Run All Cells…" not in printed

    printed, errors = run(kernel, check_cell)              # imports course_lib, then needs make_causal_mask
    assert errors == ["NameError"]
    assert hint("en", "make_causal_mask") in printed and hint("zh", "make_causal_mask") in printed

    printed, errors = run(kernel, chinese[0])              # the Chinese edition's first cell: start("03", language="zh")
    assert errors == [] and "你在这里：注意力（笔记本 03）" in printed      # its value: the map, in Chinese
    printed, errors = run(kernel, plain)
    assert errors == ["NameError"]
    assert hint("zh", "causal_mask") in printed and hint("en", "causal_mask") not in printed
