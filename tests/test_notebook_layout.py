"""What a learner meets in every notebook: the pipeline map at the top, short code
cells, one summary line for the checks (every ✓ line still stored in text/plain, which nbval
compares), a "what you now know / next" cell at the end; notebook 07's contents and optional
GPT-2 part; notebook 05's recorded GPT-2 output without weights. The same rules hold for the
Chinese edition (notebooks/zh/), read in its language's strings."""
import json
import re
from pathlib import Path

import unicodedata

import pytest

from course_lib.ui.strings import STRINGS

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(p.stem for p in NOTEBOOK_DIR.glob("*.ipynb"))
# both editions: "01_tokenizer", …, "zh/01_tokenizer", …
EDITIONS = NOTEBOOKS + sorted(f"zh/{p.stem}" for p in (NOTEBOOK_DIR / "zh").glob("*.ipynb"))
MAX_CODE_LINES = 15


def cells(name):
    return json.loads((NOTEBOOK_DIR / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]


def strings(name):
    """The course_lib strings the notebook's outputs are written in (its edition's language)."""
    return STRINGS["zh" if name.startswith("zh/") else "en"]


def stem(name):
    return name.split("/")[-1]


def width(line):
    """Columns a line takes in a cell: a wide (CJK) character takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


def source(cell):
    return "".join(cell["source"])


def plain(output):
    return "".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))


def test_seven_notebooks():
    assert len(NOTEBOOKS) == 7
    assert {stem(n) for n in EDITIONS if n.startswith("zh/")} <= set(NOTEBOOKS)


@pytest.mark.parametrize("name", EDITIONS)
def test_the_map_is_at_the_top(name):
    nb = cells(name)
    first_code = next(c for c in nb if c["cell_type"] == "code")
    assert nb.index(first_code) == 1, "the map comes right after the title"
    language = "zh" if name.startswith("zh/") else "en"
    assert source(first_code).splitlines()[-1].startswith(f'start("{stem(name)[:2]}", language="{language}")'), \
        "the cell ends with start(...): language, NameError hint, and the map as its value (course_lib.ui.start)"
    [output] = first_code["outputs"]
    assert "image/png" in output["data"], "the map is drawn"
    here = strings(name)["map.text"].split("\n")[-1].split("{")[0]               # "you are here: "
    number = strings(name)["map.text"].split("{here}")[1].replace("{notebooks}", stem(name)[:2])
    assert here in plain(output) and number in plain(output), plain(output)


@pytest.mark.parametrize("name", EDITIONS)
def test_code_cells_are_short(name):
    """No code cell over 15 lines; the closing Checks cell (a list of one-line check calls,
    shown as one summary line) is the one exception."""
    long = [(i, len(source(c).splitlines())) for i, c in enumerate(cells(name))
            if c["cell_type"] == "code" and len(source(c).splitlines()) > MAX_CODE_LINES
            and "with checks_summary():" not in source(c)]
    assert not long, f"{name}: cells over {MAX_CODE_LINES} lines (index, lines): {long}"


def headline_pattern(name):
    """The Checks cell's summary line as a regex: its two counts as groups."""
    template = re.escape(strings(name)["checks.headline"])
    for field, pattern in [("n", r"(\d+)"), ("f", r"(\d+)"), ("s_n", "s?"), ("s_f", "s?")]:
        template = template.replace(re.escape("{%s}" % field), pattern)
    return template


def test_the_headline_pattern_reads_both_languages():
    assert re.fullmatch(headline_pattern("01_tokenizer"), "✓ 1 value of 1 figure match the articles")
    assert re.fullmatch(headline_pattern("zh/01_tokenizer"), "✓ 18 个数值（7 个图表）与文章一致").groups() == ("18", "7")


@pytest.mark.parametrize("name", EDITIONS)
def test_checks_show_one_summary_line_and_store_every_value(name):
    code = [c for c in cells(name) if c["cell_type"] == "code"]
    last = code[-1]
    assert "with checks_summary():" in source(last)
    [output] = [o for o in last["outputs"] if o["output_type"] == "display_data"]
    text = plain(output).splitlines()
    headline = re.fullmatch(headline_pattern(name), text[0])
    assert headline, text[0]
    checked = [line for line in text if line.startswith("✓ ") and " · " in line]
    assert len(checked) == int(headline.group(1)) > 0
    assert len({line.split()[1] for line in checked}) == int(headline.group(2))
    # the same lines, folded, in the HTML a browser shows
    html = "".join(output["data"]["text/html"])
    assert "<details>" in html and html.count("✓ ") == len(checked) + 1


@pytest.mark.parametrize("name", EDITIONS)
def test_each_notebook_ends_with_what_you_now_know_and_the_next_step(name):
    last = cells(name)[-1]
    english = cells(stem(name))[-1]
    assert last["cell_type"] == "markdown" and source(english).startswith("## What you now know")
    assert source(last).startswith("## ")                    # the same closing section, translated
    following = [n for n in NOTEBOOKS if n > stem(name)]
    if following:
        assert f"({following[0]}.ipynb)" in source(last)      # the twin in the same folder


def heading_ids(nb):
    return {re.match(r"#+ (.*)", line).group(1).strip().replace(" ", "-")     # JupyterLab's heading ids
            for c in nb if c["cell_type"] == "markdown"
            for line in source(c).splitlines() if re.match(r"#+ ", line)}


@pytest.mark.parametrize("name", EDITIONS)
def test_every_link_to_a_heading_finds_it(name):
    """A contents list or a "skip to" link (#anchor) names a heading of the same notebook (in
    the Chinese edition: the translated heading)."""
    nb = cells(name)
    links = {link for c in nb if c["cell_type"] == "markdown"
             for link in re.findall(r"\]\(#((?:[^()\s]|\([^()\s]*\))*)\)", source(c))}
    assert links <= heading_ids(nb), links - heading_ids(nb)


def test_07_has_contents_that_link_to_its_headings_and_an_optional_part():
    nb = cells("07_sampling")
    headings = heading_ids(nb)
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


@pytest.mark.parametrize("name", ["05_lm_head", "zh/05_lm_head"])
def test_05_shows_the_recorded_gpt2_output_without_weights(name):
    if name not in EDITIONS:
        pytest.fail(f"notebooks/{name}.ipynb is missing")
    cell = next(c for c in cells(name) if "recorded_top5_text()" in source(c))
    text = "".join(plain(o) for o in cell["outputs"])
    assert "course_lib.gpt2.download()" in text
    assert strings(name)["recorded.label"].splitlines()[0] in text
    assert "' not'    0.108805" in text and "' a'      0.039578" in text
    assert any("image/png" in o.get("data", {}) for o in cell["outputs"])        # the bar chart


def test_no_output_line_is_wider_than_an_88_column_cell_except_checks():
    """Long reprs are formatted for the cell (the ✓ lines, folded in the Checks cell, aside)."""
    wide = []
    for name in EDITIONS:
        for i, c in enumerate(cells(name)):
            if c["cell_type"] != "code" or "with checks_summary():" in source(c):
                continue
            for o in c.get("outputs", []):
                if o.get("output_type") in ("stream", "execute_result", "display_data"):
                    wide += [(name, i, line[:60]) for line in plain(o).splitlines() if width(line) > 88]
    assert not wide, wide
