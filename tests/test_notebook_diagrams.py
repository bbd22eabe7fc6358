"""The four pictures of ``course_lib.ui.diagrams`` sit in the notebooks where their idea is taught,
in both editions, with a PNG stored under the cell so a static view (GitHub, nbviewer)
shows them. The Chinese edition's PNG is drawn with its own labels, so it differs from the
English one. (What each picture draws is tested in tests/test_diagrams.py.)"""
import base64
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
PLACES = {"merge_loop_diagram": "01_tokenizer", "causal_mask_diagram": "03_attention",
          "head_split_diagram": "03_attention", "kv_cache_diagram": "07_sampling"}
PNG_START = b"\x89PNG\r\n\x1a\n"


def drawing_cell(edition: str, function: str) -> dict:
    path = NOTEBOOK_DIR / edition / f"{PLACES[function]}.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    calls = [c for c in cells if c["cell_type"] == "code"
             and any(line.lstrip().startswith(f"{function}(") for line in "".join(c["source"]).splitlines())]
    assert len(calls) == 1, f"{path.name}: expected one cell that draws {function}, found {len(calls)}"
    return calls[0]


def stored_png(cell: dict) -> bytes:
    pngs = [o["data"]["image/png"] for o in cell["outputs"] if "image/png" in o.get("data", {})]
    assert len(pngs) == 1, "the cell stores exactly one picture (re-execute the notebook)"
    return base64.b64decode(pngs[0])


@pytest.mark.parametrize("function", PLACES)
@pytest.mark.parametrize("edition", [".", "zh"])
def test_each_picture_is_drawn_and_stored_where_its_idea_is_taught(edition, function):
    cell = drawing_cell(edition, function)
    png = stored_png(cell)
    assert png.startswith(PNG_START)
    assert not [o for o in cell["outputs"] if o["output_type"] == "error" or o.get("name") == "stderr"]


@pytest.mark.parametrize("function", PLACES)
def test_the_chinese_edition_stores_its_own_drawing(function):
    assert stored_png(drawing_cell("zh", function)) != stored_png(drawing_cell(".", function))


# A picture is shown at its own size (tests/test_browser_layout.py), matplotlib's 100 dpi:
# 8 pt = 11 px, so every text at 8 pt or more is at least 10 px on screen.
FONT_SIZE = re.compile(r"fontsize\s*=\s*(?:([\d.]+)|[\"']([\w-]+)[\"'])")
PICTURE_CODE = [ROOT / "course_lib" / "ui" / name for name in ("plots.py", "diagrams.py", "recorded.py", "pipeline_map.py")]


def font_sizes(text: str) -> list[str]:
    return [number or named for number, named in FONT_SIZE.findall(text)]


def too_small(size: str) -> bool:
    return size in ("xx-small", "x-small") or (size[0].isdigit() and float(size) < 8)


def test_no_text_of_a_picture_is_smaller_than_8_points():
    found = [(path.name, size) for path in PICTURE_CODE for size in font_sizes(path.read_text(encoding="utf-8"))]
    for path in sorted(NOTEBOOK_DIR.rglob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        found += [(path.name, size) for c in cells if c["cell_type"] == "code" for size in font_sizes("".join(c["source"]))]
    assert len(found) > 20, found                      # the sizes are found where they are written
    assert not [f for f in found if too_small(f[1])], [f for f in found if too_small(f[1])]
    assert too_small("7") and too_small("x-small") and not too_small("8") and not too_small("small")
