"""Every notebook is committed executed, with outputs, top to bottom, ending with its checks.

nbval alone passes a notebook that has no stored outputs (there is nothing to compare), so
this test makes an unexecuted or half-executed notebook fail the suite.
"""
import json
from pathlib import Path

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
ENGLISH = ["01_tokenizer", "02_embeddings", "03_attention", "04_block", "05_lm_head", "06_loss", "07_sampling"]
# and their Chinese twins (tests/test_zh_edition.py lists which exist)
NOTEBOOKS = ENGLISH + [f"zh/{p.stem}" for p in sorted((NOTEBOOK_DIR / "zh").glob("*.ipynb"))]


def code_cells(name):
    path = NOTEBOOK_DIR / f"{name}.ipynb"
    assert path.is_file(), f"notebooks/{name}.ipynb is missing"
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["metadata"]["kernelspec"]["name"] == "python3", name
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def text_of(cell):
    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            parts.append("".join(out["text"]))
        elif "data" in out:
            parts.append("".join(out["data"].get("text/plain", "")))
    return "".join(parts)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_committed_executed_in_order(name):
    cells = code_cells(name)
    assert cells, f"{name} has no code cells"
    counts = [c["execution_count"] for c in cells]
    assert counts == list(range(1, len(cells) + 1)), (
        f"{name} was not executed top to bottom in one run (execution counts {counts}); "
        f"run Kernel → Restart Kernel and Run All Cells… and save")
    assert any(c["outputs"] for c in cells), f"{name} has no stored outputs"
    for c in cells:
        for out in c["outputs"]:
            assert out["output_type"] != "error", f"{name} stores an error: {out.get('ename')}"
            assert not (out["output_type"] == "stream" and out["name"] == "stderr"), (
                f"{name} stores stderr output: {''.join(out['text'])[:200]}")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_ends_with_its_figure_checks(name):
    last = code_cells(name)[-1]
    source = "".join(last["source"])
    assert "check_figure(" in source or "check_inline(" in source, f"{name}'s last cell does not check its figures"
    printed = text_of(last)
    assert "✓" in printed and "FigureMismatch" not in printed, f"{name}'s checks did not print ✓ lines"
