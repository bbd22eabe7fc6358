"""What a learner meets in every notebook (issue 14): the pipeline map at the top, short code
cells, one summary line for the checks (every ✓ line still stored in text/plain, which nbval
compares), a "what you now know / next" cell at the end; notebook 07's contents and optional
GPT-2 part; notebook 05's recorded GPT-2 output without weights."""
import json
import re
from pathlib import Path

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(p.stem for p in NOTEBOOK_DIR.glob("*.ipynb"))
MAX_CODE_LINES = 15


def cells(name):
    return json.loads((NOTEBOOK_DIR / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]


def source(cell):
    return "".join(cell["source"])


def plain(output):
    return "".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))


def test_seven_notebooks():
    assert len(NOTEBOOKS) == 7


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_map_is_at_the_top(name):
    nb = cells(name)
    first_code = next(c for c in nb if c["cell_type"] == "code")
    assert nb.index(first_code) == 1, "the map comes right after the title"
    assert "explain_name_errors()" in source(first_code)
    assert f'pipeline_map("{name[:2]}")' in source(first_code)
    [output] = first_code["outputs"]
    assert "image/png" in output["data"], "the map is drawn"
    assert f"you are here: " in plain(output) and f"(notebook {name[:2]})" in plain(output)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_code_cells_are_short(name):
    """No code cell over 15 lines; the closing Checks cell (a list of one-line check calls,
    shown as one summary line) is the one exception."""
    long = [(i, len(source(c).splitlines())) for i, c in enumerate(cells(name))
            if c["cell_type"] == "code" and len(source(c).splitlines()) > MAX_CODE_LINES
            and "with checks_summary():" not in source(c)]
    assert not long, f"{name}: cells over {MAX_CODE_LINES} lines (index, lines): {long}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_checks_show_one_summary_line_and_store_every_value(name):
    code = [c for c in cells(name) if c["cell_type"] == "code"]
    last = code[-1]
    assert "with checks_summary():" in source(last)
    [output] = [o for o in last["outputs"] if o["output_type"] == "display_data"]
    text = plain(output).splitlines()
    headline = re.fullmatch(r"✓ (\d+) values? of (\d+) figures? match the articles", text[0])
    assert headline, text[0]
    checked = [line for line in text if line.startswith("✓ ") and " · " in line]
    assert len(checked) == int(headline.group(1)) > 0
    assert len({line.split()[1] for line in checked}) == int(headline.group(2))
    # the same lines, folded, in the HTML a browser shows
    html = "".join(output["data"]["text/html"])
    assert "<details>" in html and html.count("✓ ") == len(checked) + 1


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_each_notebook_ends_with_what_you_now_know_and_the_next_step(name):
    last = cells(name)[-1]
    assert last["cell_type"] == "markdown" and source(last).startswith("## What you now know")
    following = [n for n in NOTEBOOKS if n > name]
    if following:
        assert f"({following[0]}.ipynb)" in source(last)


def test_07_has_contents_that_link_to_its_headings_and_an_optional_part():
    nb = cells("07_sampling")
    headings = {re.match(r"#+ (.*)", line).group(1).replace(" ", "-")       # JupyterLab's heading ids
                for c in nb if c["cell_type"] == "markdown"
                for line in source(c).splitlines() if re.match(r"#+ ", line)}
    toc = next(c for c in nb if source(c).startswith("## Contents"))
    links = re.findall(r"^\s*\* \[.*?\]\(#(.*)\)$", source(toc), re.M)
    assert len(links) >= 12
    assert set(links) <= headings, set(links) - headings
    parts = [h for h in headings if h.startswith("Part-")]
    assert len(parts) == 3 and any("optional" in p for p in parts)
    optional = next(i for i, c in enumerate(nb) if source(c).startswith("# Part 3 (optional)"))
    later = "".join(source(c) for c in nb[optional:])
    assert "gpt2_or_hint" in later and "random_logit_batch" in later
    assert "gpt2_or_hint" not in "".join(source(c) for c in nb[:optional])


def test_05_shows_the_recorded_gpt2_output_without_weights():
    cell = next(c for c in cells("05_lm_head") if "recorded_top5_text()" in source(c))
    text = "".join(plain(o) for o in cell["outputs"])
    assert "course_lib.gpt2.download()" in text
    assert "RECORDED by the article with pretrained GPT-2, not computed here" in text
    assert "' not'    0.108805" in text and "' a'      0.039578" in text
    assert any("image/png" in o.get("data", {}) for o in cell["outputs"])        # the bar chart


def test_no_output_line_is_wider_than_an_88_column_cell_except_checks():
    """Long reprs are formatted for the cell (the ✓ lines, folded in the Checks cell, aside)."""
    wide = []
    for name in NOTEBOOKS:
        for i, c in enumerate(cells(name)):
            if c["cell_type"] != "code" or "with checks_summary():" in source(c):
                continue
            for o in c.get("outputs", []):
                if o.get("output_type") in ("stream", "execute_result", "display_data"):
                    wide += [(name, i, line[:60]) for line in plain(o).splitlines() if len(line) > 88]
    assert not wide, wide
