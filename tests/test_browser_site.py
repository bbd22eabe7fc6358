"""The course's website (``make site``, docs/site.md) as a reader meets it, in Chromium.

The site is built afresh into a temporary folder (docs/site/build_site.py: both editions, from the
notebooks' stored outputs) and served from 127.0.0.1; every request to another host is refused
and fails the test. Every page (both editions, the landing pages, every chapter and solutions
notebook, search and index pages) is opened at 1400 px and at 390 px (a phone):

* it loads with no console error, no page error, no failed request and no request elsewhere;
* every picture loads, and its smallest label is at least 10 px on screen: the README's picture
  (an SVG: its smallest font size × shown width / viewBox width), the course's diagrams and the
  pipeline map (their smallest label in the PNG, drawn here as tests/test_browser_layout.py does,
  × shown width / PNG width), the charts of course_lib.ui.plots (8 pt at 100 dpi = 11.1 px in the
  PNG, × the same ratio);
* (at 1400 px) every link inside the site leads to a page that exists and to an anchor that page
  holds; the language switch leads to the same page in the other edition; each notebook page
  offers Binder and Colab on the notebook's path in the repository pyproject.toml names, and a
  download of the notebook, byte for byte as stored, in the header's menus and in a row under its
  title;
* (the Chinese edition) the theme's words are Chinese: no Latin word of the page's chrome
  (header, sidebars, buttons, their tooltips) that is not one of the course's own words.

And once: the widgets (01's token display, 07's two sampling panels) show their saved state and a
line saying they run in JupyterLab, never an empty box or a widget's repr; MathJax (served by the
site) typesets 05's formula; a search in either edition finds pages of both.

Needs Chromium and Playwright (as the other browser tests), and the `site` extra with MathJax
(`make site-setup`); skipped without them, failing under ``CI``.
"""
import functools
import http.server
import re
import subprocess
import sys
import threading
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path

import pytest

from _browser import ROOT, need_browser
from test_browser_layout import DIAGRAMS, MIN_LABEL_PX, smallest_label_px

pytestmark = pytest.mark.browser

sys.path.insert(0, str(ROOT / "docs" / "site"))
import build_site as site_build  # noqa: E402
from course_site import EDITIONS, repository  # noqa: E402

WIDTHS = [1400, 390]
CHART_LABEL_PX = 8 * 100 / 72          # course_lib.ui.plots: its smallest text, 8 pt, at 100 dpi
# Latin words a Chinese page may show outside the course's own text: brand and file-type names
# (the launch menu's Binder and Colab, the download menu's .ipynb/.md/.pdf) and the keys of the
# search shortcut
ALLOWED_LATIN = {"Binder", "Colab", "ipynb", "md", "pdf", "Ctrl", "K", "GitHub"}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    need_browser()
    missing = [m for m in ("sphinx", "myst_nb", "sphinx_book_theme") if not _importable(m)]
    if not (site_build.MATHJAX / "tex-chtml.js").is_file():
        missing.append("MathJax in artifacts/site-vendor")
    if missing:
        message = f"the site test needs {', '.join(missing)}: run make site-setup"
        if __import__("os").environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    out = tmp_path_factory.mktemp("site") / "site"
    subprocess.run([sys.executable, str(ROOT / "docs" / "site" / "build_site.py"), str(out)], check=True, cwd=ROOT)
    return out


def _importable(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def base(site) -> str:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser(chromium, base):
    """The process's one Chromium (tests/conftest.py), once the site is served."""
    return chromium


def pages(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                  if not {"_static", "_sources"} & set(p.relative_to(site).parts))


class _Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        self.ids.update(value for name, value in attrs if name in ("id", "name") and value)


@functools.cache
def anchors(path: Path) -> frozenset:
    parser = _Ids()
    parser.feed(path.read_text(encoding="utf-8"))
    return frozenset(parser.ids)


class Watched:
    """A Chromium page that records console errors, page errors, failed requests and any request
    to another host (refused)."""

    def __init__(self, browser, base: str, width: int):
        self.base, self.problems = base, []
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.page.on("console", lambda m: m.type == "error" and self.problems.append(f"console error: {m.text}"))
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.problems.append(f"failed request: {r.url} ({r.failure})"))
        self.page.on("response", lambda r: r.status >= 400 and self.problems.append(f"HTTP {r.status}: {r.url}"))
        self.page.route("**/*", self._only_here)

    def _only_here(self, route):
        url = route.request.url
        if url.startswith(self.base) or url.startswith("data:"):
            route.continue_()
        else:
            self.problems.append(f"request to another host: {url}")
            route.abort()

    def open(self, path: str) -> list[str]:
        self.problems = []
        self.page.goto(self.base + path, wait_until="networkidle")
        # every picture loaded (none left lazy), fonts ready
        self.page.evaluate("""() => Promise.all([document.fonts.ready, ...[...document.images].map(
            i => { i.loading = 'eager'; return i.decode().catch(() => null); })])""")
        return self.problems


# the theme's boxes whose content must fit them (nothing cut off at their right edge)
OVERFLOW_JS = r"""() => ['.bd-sidebar-primary', '.bd-sidebar-secondary', '.bd-header-article', 'body']
  .map(s => document.querySelector(s)).filter(e => e && e.getBoundingClientRect().width > 0
    && e.getBoundingClientRect().left >= 0 && e.scrollWidth > e.clientWidth + 1)
  .map(e => `${e.className || e.tagName}: ${e.scrollWidth} px of content in ${e.clientWidth} px`)"""

PICTURES_JS = r"""() => [...document.querySelectorAll('article img')].map(img => {
  const cell = img.closest('.cell');
  const source = cell && cell.querySelector('.cell_input');
  return {src: img.getAttribute('src'), complete: img.complete, natural: img.naturalWidth,
          shown: img.getBoundingClientRect().width, source: source ? source.innerText : ''};
})"""


def small_pictures(site: Path, page: str, pictures: list[dict], labels: dict) -> list:
    small = []
    for picture in pictures:
        src = (site / page).parent / urllib.parse.unquote(picture["src"])
        scale = picture["shown"] / picture["natural"]
        if src.suffix == ".svg":
            svg = src.read_text(encoding="utf-8")
            view_width = float(re.search(r'viewBox="[\d.]+ [\d.]+ ([\d.]+)', svg).group(1))
            fonts = [float(f) for f in re.findall(r'font-size="([\d.]+)"', svg)]
            on_screen = min(fonts) * picture["shown"] / view_width
        else:
            drawn = [name for name, code in DIAGRAMS.items() if code in picture["source"]]
            on_screen = (labels[drawn[0]] if drawn else CHART_LABEL_PX) * scale
        if on_screen < MIN_LABEL_PX:
            small.append((page, picture["src"][-40:], round(on_screen, 1)))
    return small


def broken_links(site: Path, base: str, page: str, hrefs: list[str]) -> list:
    broken = []
    for href in hrefs:
        if not href.startswith(base):
            continue
        url = urllib.parse.urlsplit(href)
        target = site / urllib.parse.unquote(url.path[1:])
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            broken.append((page, href, "no such file"))
        elif url.fragment and target.suffix == ".html" and urllib.parse.unquote(url.fragment) not in anchors(target):
            broken.append((page, href, "no such anchor"))
    return broken


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_loads_cleanly_with_readable_pictures_and_links_that_resolve(site, base, browser, width):
    labels = {lang: smallest_label_px(lang) for lang in EDITIONS}
    watched = Watched(browser, base, width)
    problems, unloaded, small, broken, overflowing, seen = [], [], [], [], [], 0
    for page in pages(site):
        problems += [(page, p) for p in watched.open(page)]
        if page == "index.html":                # the redirect to en/index.html
            continue
        edition = page.split("/")[0]
        pictures = watched.page.evaluate(PICTURES_JS)
        seen += len(pictures)
        unloaded += [(page, p["src"][-40:]) for p in pictures if not (p["complete"] and p["natural"] > 0)]
        small += small_pictures(site, page, [p for p in pictures if p["natural"] > 0], labels[edition])
        overflowing += [(page, box) for box in watched.page.evaluate(OVERFLOW_JS)]
        if width == WIDTHS[0]:
            hrefs = watched.page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)")
            broken += broken_links(site, base, page, hrefs)
    print(f"{len(pages(site))} pages at {width} px, {seen} pictures")
    assert seen > 50, f"only {seen} pictures in the whole site"
    assert not problems, f"console errors, failed or outside requests: {problems[:20]}"
    assert not unloaded, f"pictures that did not load: {unloaded}"
    assert not small, f"labels smaller than {MIN_LABEL_PX} px on screen at {width} px: {small}"
    assert not broken, f"links inside the site that lead nowhere: {broken[:20]}"
    assert not overflowing, f"content wider than its box at {width} px: {overflowing[:20]}"


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.links.append(dict(attrs))


def links_of(path: Path) -> list[dict]:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.links


def test_each_page_switches_language_and_each_notebook_launches_and_downloads(site):
    repo = repository()
    notebooks_seen = 0
    for page in pages(site):
        if page == "index.html":
            continue
        edition, rest = page.split("/", 1)
        other = EDITIONS[edition]["other"]
        links = links_of(site / page)
        switch = [a for a in links if "course-language-switch" in a.get("class", "")]
        assert len(switch) == 1, f"{page}: {len(switch)} language switches"
        target = ((site / page).parent / switch[0]["href"]).resolve()
        assert target == (site / other / rest).resolve(), f"{page}: the switch leads to {target}"
        source = site / edition / "_sources" / rest.replace(".html", ".ipynb")
        if not source.is_file():
            continue
        notebooks_seen += 1
        in_repo = f"{EDITIONS[edition]['notebooks']}/{rest.replace('.html', '.ipynb')}"
        hrefs = {a.get("href") for a in links}
        binder = f"https://mybinder.org/v2/gh/{repo.owner}/{repo.name}/{repo.branch}?urlpath=lab/tree/{in_repo}"
        colab = f"https://colab.research.google.com/github/{repo.owner}/{repo.name}/blob/{repo.branch}/{in_repo}"
        assert binder in hrefs, f"{page}: no Binder link {binder}"
        assert colab in hrefs, f"{page}: no Colab link {colab}"
        download = [h for h in hrefs if h and h.endswith("_sources/" + Path(rest).with_suffix(".ipynb").as_posix())]
        assert download, f"{page}: no download of its .ipynb"
        row = re.search(r'<p class="course-launch">.*?</p>', (site / page).read_text(encoding="utf-8"), re.S)
        assert row and binder in row.group(0) and colab in row.group(0) and download[0] in row.group(0), \
            f"{page}: no Binder / Colab / download row under the title"
        assert source.read_bytes() == (ROOT / in_repo).read_bytes(), f"{page}: the download is not {in_repo} as stored"
    assert notebooks_seen == 2 * 14, f"{notebooks_seen} notebook pages, expected 7 chapters + 7 solutions per edition"


CHROME_TEXT_JS = r"""() => {
  const article = document.querySelector('article.bd-article');
  // the article is the course's text; the switch names the other language; print-only and
  // noscript parts are never shown
  const skip = (el) => (article && article.contains(el)) || !!el.closest('.course-language-switch, .onlyprint, noscript');
  const texts = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (node.parentElement && !skip(node.parentElement) && !node.parentElement.closest('script, style')) texts.push(node.textContent);
  }
  for (const el of document.querySelectorAll('[title], [aria-label], [placeholder], [alt], [data-bs-title]'))
    if (!skip(el)) for (const a of ['title', 'aria-label', 'placeholder', 'alt', 'data-bs-title'])
      if (el.getAttribute(a)) texts.push(el.getAttribute(a));
  return texts.join('\n');
}"""


def course_words(edition: str) -> set[str]:
    settings = EDITIONS[edition]
    sources = [ROOT / settings["readme"], *(ROOT / settings["notebooks"]).rglob("*.ipynb")]
    text = "\n".join(p.read_text(encoding="utf-8") for p in sources)
    return set(re.findall(r"[A-Za-z]+", text + settings["title"] + settings["solutions_title"]))


def test_the_chinese_pages_show_no_english_words_of_the_theme(site, base, browser):
    allowed = course_words("zh") | ALLOWED_LATIN
    watched = Watched(browser, base, WIDTHS[0])
    found = {}
    for page in ["zh/index.html", "zh/07_sampling.html", "zh/solutions/index.html", "zh/search.html", "zh/genindex.html"]:
        watched.open(page)
        words = set(re.findall(r"[A-Za-z]+", watched.page.evaluate(CHROME_TEXT_JS)))
        found.update({page: sorted(words - allowed)} if words - allowed else {})
    assert not found, f"English words of the theme on Chinese pages: {found}"
    # the same reading of an English page finds the theme's English words (the check can fail)
    watched.open("en/07_sampling.html")
    english = set(re.findall(r"[A-Za-z]+", watched.page.evaluate(CHROME_TEXT_JS))) - allowed
    assert {"Search", "Contents"} <= english, f"the English page's theme words read here: {sorted(english)}"


def widget_outputs(notebook: Path) -> list[dict]:
    import json
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [o["data"] for c in cells for o in c.get("outputs", [])
            if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]


WIDGET_CELLS_JS = r"""() => [...document.querySelectorAll('.cell')]
  .filter(c => c.querySelector('.course-widget-note'))
  .map(c => ({output: c.querySelector('.cell_output') ? c.querySelector('.cell_output').innerText : '',
              note: c.querySelector('.course-widget-note').innerText}))"""


@pytest.mark.parametrize("edition", list(EDITIONS))
def test_widgets_show_their_saved_state_and_math_is_typeset(site, base, browser, edition):
    watched = Watched(browser, base, WIDTHS[0])
    for chapter in ["01_tokenizer", "07_sampling"]:
        stored = widget_outputs(ROOT / EDITIONS[edition]["notebooks"] / f"{chapter}.ipynb")
        assert stored, f"{chapter}: no widget in the stored notebook"
        watched.open(f"{edition}/{chapter}.html")
        shown = watched.page.evaluate(WIDGET_CELLS_JS)
        assert len(shown) == len(stored), f"{edition}/{chapter}: {len(shown)} widget notes for {len(stored)} widgets"
        for cell, data in zip(shown, stored):
            first_line = "".join(data["text/plain"]).splitlines()[0]
            assert cell["note"] == EDITIONS[edition]["widget_note"]
            if "text/html" in data:         # 01's token display: its coloured pieces, each titled
                titles = watched.page.evaluate("() => [...document.querySelectorAll('.cell_output span[title]')].length")
                assert titles >= 5, f"{edition}/{chapter}: the token display shows {titles} pieces"
            else:
                assert first_line in cell["output"], f"{edition}/{chapter}: the saved state {first_line!r} is not shown"
        body = watched.page.inner_text("article")
        assert not re.search(r"\b(VBox|HBox|Widget)\(|model_id", body), f"{edition}/{chapter}: a widget's repr is shown"
        empty = watched.page.evaluate("() => [...document.querySelectorAll('.cell_output')].filter("
                                      "o => !o.innerText.trim() && !o.querySelector('img')).length")
        assert empty == 0, f"{edition}/{chapter}: {empty} empty output boxes"
    watched.open(f"{edition}/05_lm_head.html")
    watched.page.wait_for_selector("mjx-container", timeout=20_000)
    assert not watched.problems, watched.problems


def search(watched: Watched, edition: str, query: str) -> list[str]:
    watched.open(f"{edition}/search.html?q={urllib.parse.quote(query)}")
    watched.page.wait_for_function("() => { const s = document.querySelector('#search-results .search-summary');"
                                   " return s && s.innerText.trim().length > 0; }", timeout=30_000)
    return watched.page.evaluate("() => [...document.querySelectorAll('#search-results ul.search li a')].map(a => a.href)")


def test_a_search_finds_pages_of_both_editions(site, base, browser):
    watched = Watched(browser, base, WIDTHS[0])
    for edition, query in [("en", "词元"), ("zh", "词元"), ("zh", "tokenizer"), ("en", "tokenizer")]:
        found = search(watched, edition, query)
        editions = {href[len(base):].split("/")[0] for href in found}
        print(f"{edition}/search.html?q={query}: {len(found)} results, editions {sorted(editions)}")
        expected = {"zh"} if query == "词元" else {"en", "zh"}
        assert expected <= editions, f"{edition}: a search for {query!r} found pages of {sorted(editions)} only"
        assert not watched.problems, watched.problems
