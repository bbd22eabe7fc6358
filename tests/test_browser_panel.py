"""The notebooks in a real browser: JupyterLab + Debian's Chromium driven by Playwright.

Serves a copy of the notebooks on localhost (random free port, no token, no browser opened);
one Chromium page loads JupyterLab once and every test opens its notebook in it (helpers:
``tests/_browser.py``; the server and the page are those of tests/test_browser_layout.py too).

* Every notebook opens showing the pipeline map (its stored output: nothing runs; 07 is opened
  connected to its idle kernel, and the panel test goes on in that tab, the others without one);
  screenshots of notebooks 01, 05 and 07 go to ``artifacts/notebook_01.png`` etc. Notebook 01's
  你 renders as a glyph, not as the missing-glyph box: drawn in the token span's own font, its
  pixels differ from those of U+10FFFD, a code point no font has (the fonts come from
  ``apt.txt``; ``.ci/run`` installs them). Notebook 05 shows GPT-2's recorded top-5. While each
  notebook is open, what the layout test checks is measured for it (tests/_layout.py).
* The Chinese edition's notebook 05 (notebooks/zh/) opens with its Chinese text drawn
  as glyphs (the same pixel test, on a heading and on the Checks line); its chart of GPT-2's
  recorded top-5, whose title and axis label are Chinese, is the PNG matplotlib draws with the
  course's fonts, and that PNG differs from the one drawn without the CJK font (which warns of
  missing glyphs): the labels are glyphs, not boxes. Screenshots: ``artifacts/zh_notebook_05.png``,
  ``artifacts/zh_chart.png``.
* Notebook 07 runs all cells, the panel's u control moves and the panel's text follows.
  Screenshots: ``artifacts/browser_panel.png``, ``artifacts/browser_lab.png`` (gitignored).
* The Chinese notebook 07 (notebooks/zh/) runs all cells too: every label, button and readout
  of its panel shows its whole text (no element's text is wider than its box: nothing cut off
  with "…"), and no English word of the panel's controls remains. Screenshot:
  ``artifacts/zh_panel.png``.

Needs ``/usr/bin/chromium`` (``apt-get install -y chromium``) and ``playwright`` from PyPI; no
browser is ever downloaded. Without them the test is skipped on a learner's machine and FAILS
when the ``CI`` environment variable is set.

A cell that raises stops the test within a second of its traceback appearing — never a silent
wait for a timeout: the failure names the cell, prints its source and traceback, and saves a
screenshot of it to ``artifacts/browser_error.png`` (:func:`_browser.wait_until`).
``test_a_failing_cell_stops_the_browser_test_within_seconds`` proves that on a copy of
notebook 07 with one deliberately failing cell. The kernels of notebook 07, of that copy and of
the Chinese 07 start before the module's first test, so no test waits for a kernel to start.
``BROWSER_TEST_NOTEBOOK=/path/to/copy.ipynb`` points the panel test at another copy.
"""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _browser import (ARTIFACTS, GLYPH_JS, ROOT, CellError, broken_copy, failure_screenshot, has_text_js,
                      open_and_run_all, open_notebook, settled, start_sessions, wait_until)
from _copies import writable_copy
from _layout import record_layout

# Chromium and JupyterLab: make test-all; both browser files on one xdist worker, one JupyterLab
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("lab")]

NOTEBOOK = Path(os.environ.get("BROWSER_TEST_NOTEBOOK", ROOT / "notebooks" / "07_sampling.ipynb"))
BROKEN = "07_sampling_broken_copy.ipynb"          # served beside it: one cell made to fail
ZH07 = "zh/07_sampling.ipynb"                     # the Chinese twin: its panel's labels


@pytest.fixture(scope="module")
def page(lab):
    """The page of the shared JupyterLab (tests/conftest.py's ``lab``); each test first makes its
    notebook the only tab (:func:`_browser.show`). Beside both editions it serves notebook 07
    (or ``NOTEBOOK``) and a broken copy of it, and starts the kernels of these two and of the
    Chinese 07 at once."""
    served = lab.root / NOTEBOOK.name
    original = served.read_bytes() if served.is_file() else None
    writable_copy(NOTEBOOK, served)
    broken_copy(NOTEBOOK, lab.root / BROKEN)
    start_sessions(lab.url, [NOTEBOOK.name, BROKEN, ZH07])
    yield lab.page
    if original is not None:                    # the other browser tests see the course's own 07
        served.write_bytes(original)


def summary_text(panel) -> str:
    return panel.locator(".sampling-panel-summary").inner_text()


def panel_flow(page, name: str) -> None:
    """Run notebook ``name``, then drive the five-token model's sampling panel."""
    open_and_run_all(page, name)
    timeout = float(os.environ.get("BROWSER_TEST_TIMEOUT_MS", 120_000)) / 1000
    wait_until(page, has_text_js(".sampling-panel .sampling-panel-summary", "u="),
               "the sampling panel to render", timeout)
    wait_until(page, has_text_js(".jp-OutputArea-output pre", "✓ lab.temp_210"),
               "the last figure check (✓ lab.temp_210)", timeout)
    panel = page.locator(".sampling-panel").first        # the five-token model's panel
    summary = panel.locator(".sampling-panel-summary")
    before = summary_text(panel)
    assert "u=0.500" in before and "→ b (id 1)" in before, before

    # move the u slider: focus its handle and press Home (u = 0)
    u_box = panel.locator(".widget-slider").filter(
        has=page.locator(".widget-label", has_text=re.compile(r"^u$")))
    u_box.scroll_into_view_if_needed()
    u_box.locator(".noUi-handle").focus()
    page.keyboard.press("Home")
    wait_until(page, has_text_js(".sampling-panel .sampling-panel-summary", "u=0.000"), "u to move to 0", 30)
    after = summary.inner_text()
    assert after != before
    assert "u=0.000 lands in [0.000, 0.242) → a (id 0)" in after, after

    # the append button adds the chosen token (a) and runs the model one more step
    panel.locator("button", has_text="append chosen token").click()
    wait_until(page, has_text_js(".sampling-panel", "ids [0, 1, 0, 0]"), "the appended token", 30)
    panel.screenshot(path=str(ARTIFACTS / "browser_panel.png"))
    page.screenshot(path=str(ARTIFACTS / "browser_lab.png"))


def test_every_notebook_opens_with_the_map_and_every_character_readable(lab, page):
    names = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert len(names) == 7
    with failure_screenshot(page):
        for name in names:
            # 07 connected to its kernel (nothing runs): the panel test goes on in this tab
            open_notebook(page, name, kernel=name == NOTEBOOK.name)       # waits for the map
            if name[:2] in ("01", "05", "07"):
                settled(page)
                page.screenshot(path=str(ARTIFACTS / f"notebook_{name[:2]}.png"))
            if name.startswith("01"):
                glyph = page.evaluate(GLYPH_JS, [".jp-OutputArea-output span", "你"])
                assert glyph is not None, "no token span holding 你 in notebook 01's outputs"
                print("你 in the token span:", glyph)
                assert glyph["inked"] and glyph["differ"], (
                    f"你 renders as the missing-glyph box in {glyph['font']} "
                    f"(install fonts-noto-cjk, as apt.txt and .ci/run do)")
                assert page.locator(".jp-OutputArea-output", has_text="U+4F60").count()
                span = page.locator(".jp-OutputArea-output span", has_text="你").first
                span.scroll_into_view_if_needed()
                span.screenshot(path=str(ARTIFACTS / "glyph_ni.png"))
                # the Checks cell: one summary line, the ✓ lines folded in a closed <details>
                checks = page.locator(".jp-OutputArea-output:has(details)")
                assert checks.count() == 1
                assert checks.first.locator("details").get_attribute("open") is None
                shown = checks.first.inner_text()
                assert re.match(r"✓ \d+ values of \d+ figures match the articles", shown), shown
                assert "✓ interface.tok.hi_ni · ids" not in shown          # folded away
            if name.startswith("05"):
                recorded = page.locator(".jp-OutputArea-output", has_text="RECORDED by the article")
                assert recorded.count(), "notebook 05 does not show GPT-2's recorded top-5"
                assert "0.108805" in recorded.first.inner_text()
                recorded.first.scroll_into_view_if_needed()
                settled(page)
                page.screenshot(path=str(ARTIFACTS / "notebook_05_recorded.png"))
            record_layout(lab, name)        # for the layout test (tests/_layout.py): one visit serves both
    for number in ("01", "05", "07"):
        assert (ARTIFACTS / f"notebook_{number}.png").stat().st_size > 10_000


def test_panel_in_jupyterlab(page):
    with failure_screenshot(page):
        panel_flow(page, NOTEBOOK.name)


# Every element of the first sampling panel that shows a text in a box of its own (the controls'
# labels, the checkbox's, the buttons, the sliders' readouts): its text, and its text's width
# (scrollWidth) against its box's (clientWidth). A cut-off label ("top-k（0=…") is wider.
PANEL_LABELS_JS = r"""() => {
  const panel = document.querySelector('.sampling-panel');
  const boxes = panel.querySelectorAll('.widget-label, .widget-label-basic, .widget-readout, button');
  return [...boxes].filter(e => e.offsetParent !== null && e.innerText.trim())
    .map(e => ({text: e.innerText.trim(), scroll: e.scrollWidth, client: e.clientWidth,
                display: getComputedStyle(e).display}));
}"""

# Every interval strip on the page (both panels of 07): each name shown inside an interval, its
# text's width against its interval's, and its box against the red u line's.
STRIP_JS = r"""() => [...document.querySelectorAll('.sampling-strip')].map(strip => {
  const u = strip.querySelector('.sampling-strip-u').getBoundingClientRect();
  return [...strip.querySelectorAll('.sampling-strip-label')].filter(s => s.innerText.trim()).map(s => {
    const box = s.getBoundingClientRect(), cell = s.parentElement;
    return {text: s.innerText.trim(), scroll: cell.scrollWidth, client: cell.clientWidth,
            crossed: u.left < box.right && u.right > box.left && u.top < box.bottom && u.bottom > box.top};
  });
})"""

# the English words of the panel's own strings (course_lib.ui.strings, "panel.*"); "top-k",
# "top-p", "min-p", "argmax", "id", "u", "T", "p" are notation, the same in both editions
ENGLISH_CONTROL_WORDS = re.compile(r"\b(temperature|greedy|off|strip|order|ranked|append|chosen|token|ids|reset|"
                                   r"kept|lands|more|stopped|grey|colour|renormalised|interval|red|line)\b",
                                   re.IGNORECASE)


def test_the_chinese_panel_fits_its_labels_and_speaks_chinese(page):
    with failure_screenshot(page):
        open_and_run_all(page, ZH07)
        timeout = float(os.environ.get("BROWSER_TEST_TIMEOUT_MS", 120_000)) / 1000
        wait_until(page, has_text_js(".sampling-panel .sampling-panel-summary", "u="),
                   "the Chinese sampling panel to render", timeout)
        panel = page.locator(".sampling-panel").first
        panel.scroll_into_view_if_needed()
        settled(page)
        panel.screenshot(path=str(ARTIFACTS / "zh_panel.png"))
        labels = page.evaluate(PANEL_LABELS_JS)
        print("the Chinese panel's labels:", labels)
        shown = [label["text"] for label in labels]
        for expected in ("温度", "贪心（argmax）", "top-k（0=关）", "top-p（1=关）", "min-p（0=关）", "区间条顺序",
                         "按 id", "按概率", "追加选中的词元", "重置"):
            assert expected in shown, f"{expected!r} is not among the panel's labels: {shown}"
        # an inline element has no box of its own (clientWidth 0) and cannot cut its text off
        assert all(label["client"] > 0 or label["display"] == "inline" for label in labels), labels
        cut = [label for label in labels if label["client"] > 0 and label["scroll"] > label["client"]]
        assert not cut, f"labels cut off in the Chinese panel (text wider than its box): {cut}"
        words = ENGLISH_CONTROL_WORDS.findall(panel.inner_text())
        assert not words, f"English left in the Chinese panel: {sorted(set(words))}"
        strips = page.evaluate(STRIP_JS)
        assert len(strips) >= 2 and all(strips), strips          # the five-token panel's and the lab's
        cut = [name for strip in strips for name in strip if name["scroll"] > name["client"]]
        assert not cut, f"interval names cut off in the strip: {cut}"
        crossed = [name["text"] for strip in strips for name in strip if name["crossed"]]
        assert not crossed, f"the u line crosses {crossed}"
    assert (ARTIFACTS / "zh_panel.png").stat().st_size > 10_000


def test_a_failing_cell_stops_the_browser_test_within_seconds(page):
    """On a copy of notebook 07 with one failing cell, the panel flow stops at that cell's
    traceback (not after the 120-s wait) and shows its source, traceback and screenshot."""
    shot = ARTIFACTS / "browser_error.png"
    shot.unlink(missing_ok=True)
    open_and_run_all(page, BROKEN)
    start = time.monotonic()
    with pytest.raises(CellError) as caught:
        wait_until(page, has_text_js(".sampling-panel .sampling-panel-summary", "u="),
                   "the sampling panel to render", timeout_s=120)
    waited = time.monotonic() - start
    text = str(caught.value)
    print(f"reported after {waited:.1f} s:\n{text}")
    assert waited < 30, f"the failing cell was reported only after {waited:.0f} s"
    assert "deliberately broken copy" in text and "RuntimeError" in text, text
    assert 'raise RuntimeError("deliberately broken copy' in text, text       # the cell's source
    assert "artifacts/browser_error.png" in text and shot.is_file()


# the src of the <img> of the first output whose cell's source contains `code` (a data: URL)
CHART_SRC_JS = r"""(code) => {
  const cell = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')]
    .find(c => c.querySelector('.jp-InputArea-editor').textContent.includes(code));
  const img = cell && cell.querySelector('.jp-OutputArea-output img');
  if (!img) return null;
  img.scrollIntoView();
  return img.src;
}"""

# The recorded top-5 chart of zh/05, drawn the way the kernel draws it (inline backend, Chinese
# labels): with the course's fonts, then with DejaVu Sans alone (no CJK font). Prints JSON: both
# PNGs (base64) and how many missing-glyph warnings each drawing raised.
ZH_CHART_SCRIPT = r"""
import base64, json, warnings
import matplotlib
from IPython.core.pylabtools import print_figure
from course_lib.ui.language import set_language
from course_lib.ui import plots, recorded   # plots: the course's fonts (DejaVu Sans + a CJK font)
set_language("zh")
out = {}
for name, family in [("course", list(matplotlib.rcParams["font.family"])), ("no_cjk", ["DejaVu Sans"])]:
    matplotlib.rcParams["font.family"] = family
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ax = recorded.recorded_top5_chart()
        png = print_figure(ax.figure, "png", bbox_inches="tight")
    out[name] = {"png": base64.b64encode(png).decode(), "family": family,
                 "missing": sum("missing from" in str(w.message) for w in caught),
                 "title": ax.get_title(), "ylabel": ax.get_ylabel()}
print(json.dumps(out))
"""


def start_zh_chart_renderings() -> subprocess.Popen:
    """Run :data:`ZH_CHART_SCRIPT` in a fresh process (it changes matplotlib's fonts);
    :func:`zh_chart_renderings` reads its result."""
    env = dict(os.environ, MPLBACKEND="module://matplotlib_inline.backend_inline")
    return subprocess.Popen([sys.executable, "-c", ZH_CHART_SCRIPT], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)


def zh_chart_renderings(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return json.loads(out.splitlines()[-1])


@pytest.fixture(scope="module", autouse=True)
def zh_chart_renderer(page):
    """The reference renderings of zh/05's chart, started once JupyterLab is loaded, before the
    module's first test: they run beside the other tests and are done when the Chinese notebook's
    test reads them."""
    process = start_zh_chart_renderings()
    yield process
    if process.poll() is None:                      # not read: a test before it failed
        process.kill()
        process.communicate()


def test_a_chinese_notebook_shows_chinese_text_and_chart_labels_as_glyphs(page, zh_chart_renderer):
    zh05 = ROOT / "notebooks" / "zh" / "05_lm_head.ipynb"
    assert zh05.is_file(), "notebooks/zh/05_lm_head.ipynb is missing"
    cells = json.loads(zh05.read_text(encoding="utf-8"))["cells"]
    title = "".join(cells[0]["source"]).splitlines()[0].lstrip("# ")
    han = next(ch for ch in title if "\u4e00" <= ch <= "\u9fff")          # a Chinese character of the title
    with failure_screenshot(page):
        open_notebook(page, "zh/05_lm_head.ipynb")                     # waits for the map
        # the Chinese twin's own title (the English 05 has the same tab label)
        page.wait_for_function("""(han) => [...document.querySelectorAll('.jp-RenderedMarkdown h1')]
                                   .some(h => h.textContent.includes(han))""", arg=han, timeout=60_000)
        settled(page)
        page.screenshot(path=str(ARTIFACTS / "zh_notebook_05.png"))
        for selector, text in [(".jp-RenderedMarkdown h1", han), (".jp-OutputArea-output b", "与文章一致")]:
            glyph = page.evaluate(GLYPH_JS, [selector, text])
            assert glyph is not None, f"no {selector} holding {text!r} in zh/05"
            print(text, "in", selector, glyph)
            assert glyph["inked"] and glyph["differ"], f"{text!r} renders as the missing-glyph box in {glyph['font']}"
        src = page.evaluate(CHART_SRC_JS, "recorded_top5_chart()")
        assert src and src.startswith("data:image/png;base64,"), src
        settled(page)
        page.screenshot(path=str(ARTIFACTS / "zh_chart.png"))
    rendered = zh_chart_renderings(zh_chart_renderer)
    course, no_cjk = rendered["course"], rendered["no_cjk"]
    print("chart title:", course["title"], "| y label:", course["ylabel"], "| fonts:", course["family"])
    assert re.search(r"[\u4e00-\u9fff]", course["title"]) and course["ylabel"] == "概率"
    assert course["family"][:2] == ["DejaVu Sans", "Course CJK SC"], f"not the course's CJK font behind DejaVu Sans: {course['family']}"
    assert course["missing"] == 0, "matplotlib drew a missing-glyph box with the course's fonts"
    assert no_cjk["missing"] > 0, "without the CJK font the Chinese labels should be missing glyphs"
    shown = "".join(src.split(",", 1)[1].split())
    assert shown == course["png"], "the chart in the browser is not the one drawn with the course's fonts"
    assert shown != no_cjk["png"], "the chart in the browser is the one drawn without a CJK font"
