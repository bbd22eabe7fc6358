"""What the layout test (tests/test_browser_layout.py) measures in a notebook shown in the shared
JupyterLab page: its pictures' widths, its first cell's editor, its printed lines.

The test of every notebook (tests/test_browser_panel.py) opens the English notebooks before the
layout test does: it measures each one here while it has it open and leaves the result in
``lab.layouts`` (tests/_browser.py's :class:`Lab`), so the layout test need not open those seven
notebooks again; a notebook it finds no measure for, it opens and measures itself.
"""
from pathlib import Path

from _browser import ARTIFACTS, ROOT, settled, wait_until

# Every picture in the shown notebook's outputs: its cell's source, its width in the page and in
# pixels; every code cell's editor that scrolls sideways; every printed output line that wraps.
PAGE_JS = r"""() => {
  const panel = [...document.querySelectorAll('.jp-NotebookPanel')].find(p => !p.classList.contains('lm-mod-hidden'));
  const cells = [...panel.querySelectorAll('.jp-Notebook .jp-CodeCell')];
  const source = c => c.querySelector('.jp-InputArea-editor').textContent;
  const pictures = [];
  for (const c of cells) for (const img of c.querySelectorAll('.jp-OutputArea-output img'))
    pictures.push({source: source(c), shown: img.getBoundingClientRect().width, natural: img.naturalWidth});
  const first = cells[0] && cells[0].querySelector('.cm-scroller');
  const wrapped = [];
  for (const pre of panel.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stdout"] pre')) {
    const lines = pre.textContent.replace(/\n$/, '').split('\n').length;
    const lineHeight = parseFloat(getComputedStyle(pre).lineHeight);
    const shownLines = Math.round(pre.getBoundingClientRect().height / lineHeight);
    if (shownLines > lines) wrapped.push({text: pre.textContent.slice(0, 300), lines, shownLines});
  }
  return {pictures, firstScroll: first ? first.scrollWidth : 0, firstClient: first ? first.clientWidth : 0, wrapped};
}"""

# JupyterLab lays out every cell in the browser tests' settings (no virtual scrolling), so each
# picture's <img> is in the page once the notebook is open; wait until all are loaded
IMAGES_LOADED_JS = r"""() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output img')]
  .every(img => img.complete && img.naturalWidth > 0)"""


def measure_layout(page, path: str) -> dict:
    """:data:`PAGE_JS`'s measures of notebook ``path``, the one the page shows, once its pictures
    are loaded; in chapters 03 and 07 also the layout test's screenshots
    (``artifacts/layout_map_<edition>.png``, ``artifacts/layout_kv_cache_<edition>.png``)."""
    language = "zh" if path.startswith("zh/") else "en"
    wait_until(page, IMAGES_LOADED_JS, f"the pictures of {path}", 60)
    settled(page)
    shown = page.evaluate(PAGE_JS)
    chapter = Path(path).name
    if chapter.startswith("03"):
        page.screenshot(path=str(ARTIFACTS / f"layout_map_{language}.png"))
    if chapter.startswith("07"):
        page.locator(".jp-CodeCell", has_text="kv_cache_diagram(").locator("img").first.scroll_into_view_if_needed()
        settled(page)
        page.screenshot(path=str(ARTIFACTS / f"layout_kv_cache_{language}.png"))
    return shown


def record_layout(lab, path: str) -> None:
    """Measure notebook ``path`` (shown in ``lab``'s page) for the layout test, if the file served
    is the course's own (``BROWSER_TEST_NOTEBOOK`` may serve another copy as 07)."""
    if (lab.root / path).read_bytes() == (ROOT / "notebooks" / path).read_bytes():
        lab.layouts[path] = measure_layout(lab.page, path)
