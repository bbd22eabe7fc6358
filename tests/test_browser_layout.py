"""What a learner sees at notebook width, in JupyterLab in Chromium (1400 × 1000 px, the file
browser open; helpers: ``tests/_browser.py``).

* Pictures are readable: in every notebook (both editions) each picture of the course (the map
  of the first cell, the four diagrams of ``course_lib.ui.diagrams``) has its smallest label at
  least 10 px tall on screen: its size in the PNG (font size × dpi / 72, measured on a drawing
  made here) × the picture's width in the page / its width in pixels. Every other picture (the
  charts of ``course_lib.ui.plots``, whose smallest text is 8 pt = 11 px) is shown at its own
  size, never shrunk. Screenshots: ``artifacts/layout_kv_cache.png``, ``artifacts/layout_map_zh.png``.
* No line of a notebook's first cell is cut off at the right edge (its editor never scrolls
  sideways), and no printed line of an output is wrapped (so no word is broken mid-word). The
  English notebooks are measured by the test of every notebook while it has each one open
  (tests/_layout.py): one visit per notebook serves both tests.
* A worked solution is one click away: each exercise's link (``#cell-id=<exercise>``) opens its
  chapter's solutions notebook and brings that exercise's solution into view, where it stays. In
  every chapter (the Chinese edition: 07, whose solutions notebook is the longest; its links are
  the English ones cell for cell, tests/test_zh_edition.py), the link of its last exercise is
  clicked once while the solutions notebook is closed: within ``LAND_S`` of the notebook
  becoming the current tab the solution, far below the top, has landed (the whole heading inside
  the notebook's window, its top in the window's top half, where the jump puts it, unless the
  notebook is scrolled to its end), and it is still in view at every sample of the next
  ``STAY_S``. Then,
  in 07, the link of its first exercise: one click, the notebook open. Screenshot (07's last
  exercise): ``artifacts/solution_link_<edition>.png``.
  JupyterLab alone (4.0 to 4.6) scrolls to a link's cell as soon as the notebook it has just
  opened is loaded, before the cells above it may have their height (4.0's default windowingMode
  ``defer`` renders them later; in 4.6's ``contentVisibility`` they may still be folded to
  20 px); when they take it they push the solution down, often below the window. The course's
  JupyterLab extension (course_lib/ui/labextension_src/index.js, installed with course_lib) jumps
  again while that happens, so one click lands. How often the race shows depends on the
  JupyterLab release and the machine's speed, so in the English 07 the test also makes it
  happen (the extension is the same for both editions): a click on the last exercise's link, and as
  soon as the solution has landed the cell above it grows by 1500 px (as a cell that takes its
  height late does): the solution must have landed again within ``SETTLE_S``, and stay; the same
  with 600 px, which leaves it in view but low in the window, where the next cell to grow would
  push it out. And the
  extension never fights the learner: a click, the mouse wheel turned over the notebook once the
  solution is in view, then the same growth: the solution is left where that puts it. The
  extension's name and whether it is active are printed.
  This test opens its notebooks in JupyterLab's own windowingMode, as a learner's JupyterLab
  does (neither `make lab` nor Binder sets one); the other browser tests lay out every cell at
  once ("none", tests/_browser.py). Before clicking a link it scrolls its chapter to the cell
  holding it, as a learner does (in a windowed mode a cell far from the window may not be in the
  page at all).

The link test's measures in the page (``LAND_S``, ``STAY_S``, ``SETTLE_S`` and what landed
means) are in tests/_solution_links.py. The JupyterLab and its page are those of
tests/test_browser_panel.py (tests/conftest.py's ``lab``). The tests run one edition after the
other (``language`` is a module fixture).

Needs Chromium and Playwright (skipped without them, failing under ``CI``), as
tests/test_browser_panel.py does.
"""
import pytest

from _browser import ARTIFACTS, ROOT, failure_screenshot, open_notebook, settled
from _layout import measure_layout
from _solution_links import (EXTENSION_ACTIVE_JS, learner_not_fought, learners_windowing, lands, open_paths,
                             pushed_back)

# Chromium and JupyterLab: make test-all; both browser files on one xdist worker, one JupyterLab
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("lab")]

CHAPTERS = sorted(p.name for p in (ROOT / "notebooks").glob("0*.ipynb"))
EDITIONS = {"en": "", "zh": "zh/"}
MIN_LABEL_PX = 10
# the cell that draws each picture of the course: a text its source holds
DIAGRAMS = {"merge_loop_diagram": "merge_loop_diagram(", "causal_mask_diagram": "causal_mask_diagram(",
            "head_split_diagram": "head_split_diagram(", "kv_cache_diagram": "kv_cache_diagram(",
            "pipeline_map": "start(\""}


def smallest_label_px(language: str) -> dict:
    """For each picture of :data:`DIAGRAMS`: the height in PNG pixels of its smallest text
    (font size in points × the figure's dpi / 72), drawn here in ``language``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    from course_lib.ui import diagrams
    from course_lib.ui.language import set_language
    from course_lib.ui.pipeline_map import pipeline_map

    set_language(language)
    try:
        figures = {
            "merge_loop_diagram": diagrams.merge_loop_diagram([["m", "e", "a"], ["me", "a"], ["mea"]], {("m", "e"): 0, ("me", "a"): 1}),
            "causal_mask_diagram": diagrams.causal_mask_diagram([[False, True], [False, False]], ["a", "b"]),
            "head_split_diagram": diagrams.head_split_diagram(3, 4, 2, ["a", "b", "c"]),
            "kv_cache_diagram": diagrams.kv_cache_diagram(["a", "b", "a", "b", "b"], 3),
            "pipeline_map": pipeline_map("03").figure(),
        }
        sizes = {}
        for name, fig in figures.items():
            fonts = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
            sizes[name] = min(fonts) * fig.dpi / 72
            plt.close(fig)
        return sizes
    finally:
        set_language("en")


@pytest.fixture(scope="module")
def page(lab):
    return lab.page


@pytest.fixture(scope="module", params=list(EDITIONS))
def language(request) -> str:
    """"en", then "zh": pytest runs every test of one edition before the other's."""
    return request.param


def test_pictures_are_readable_and_no_line_is_cut_off_or_wrapped(lab, page, language):
    labels = smallest_label_px(language)
    print("smallest label in the PNG, px:", {k: round(v, 1) for k, v in labels.items()})
    small, shrunk, cut, wrapped, seen = [], [], [], [], set()
    with failure_screenshot(page):
        for chapter in CHAPTERS:
            path = EDITIONS[language] + chapter
            shown = lab.layouts.pop(path, None)         # measured by the test of every notebook
            if shown is None:
                open_notebook(page, path)
                shown = measure_layout(page, path)
            else:
                print(f"{path}: measured while the test of every notebook had it open")
            for picture in shown["pictures"]:
                scale = picture["shown"] / picture["natural"]
                drawn = [name for name, code in DIAGRAMS.items() if code in picture["source"]]
                if drawn:
                    seen.add(drawn[0])
                    on_screen = labels[drawn[0]] * scale
                    print(f"{path}: {drawn[0]} {picture['natural']} px shown at {picture['shown']:.0f} px, "
                          f"smallest label {on_screen:.1f} px")
                    if on_screen < MIN_LABEL_PX:
                        small.append((path, drawn[0], round(on_screen, 1)))
                elif scale < 0.999:
                    shrunk.append((path, picture["source"][:80], picture["natural"], round(picture["shown"])))
            if shown["firstScroll"] > shown["firstClient"]:
                cut.append((path, shown["firstScroll"], shown["firstClient"]))
            wrapped += [(path, w) for w in shown["wrapped"]]
    assert seen == set(DIAGRAMS), f"pictures not found in the {language} notebooks: {set(DIAGRAMS) - seen}"
    assert not small, f"labels smaller than {MIN_LABEL_PX} px on screen: {small}"
    assert not shrunk, f"pictures shrunk to fit the notebook: {shrunk}"
    assert not cut, f"a first cell's line is cut off at the right edge (editor width, its content's): {cut}"
    assert not wrapped, f"printed lines wrapped at the notebook's width: {wrapped}"


def test_an_exercise_link_lands_on_its_solution(page, language):
    from course_lib.exercises import EXERCISES

    with learners_windowing(page) as (windowing, tests_windowing), failure_screenshot(page):
        print(f"windowingMode {windowing!r} (JupyterLab's default; the other browser tests: {tests_windowing!r}); "
              f"the course's extension active: {page.evaluate(EXTENSION_ACTIVE_JS)}")
        for chapter in CHAPTERS if language == "en" else CHAPTERS[-1:]:
            names = [name for name, (c, _) in EXERCISES.items() if c == chapter[:2]]
            if len(names) < 2:
                continue
            chapter_path = EDITIONS[language] + chapter
            solutions = EDITIONS[language] + "solutions/" + chapter.replace(".ipynb", "_solutions.ipynb")
            open_notebook(page, chapter_path)       # the only tab: its solutions notebook is closed
            assert solutions not in open_paths(page)
            shown = page.evaluate("() => window.jupyterapp.shell.currentWidget.content.notebookConfig.windowingMode")
            assert shown == windowing, f"{chapter_path} opened in windowingMode {shown!r}, not {windowing!r}"
            # the last exercise's link, far below the solutions notebook's top: one click opens
            # that notebook and lands on its solution
            lands(page, chapter_path, solutions, names[-1])
            if chapter == CHAPTERS[-1]:         # 07: then the first exercise's link, the solutions open
                settled(page)
                page.screenshot(path=str(ARTIFACTS / f"solution_link_{language}.png"))
                lands(page, chapter_path, solutions, names[0])
                if language == "en":        # the extension's behaviour: the same in both editions
                    # a cell above that takes its height after the jump: the solution is brought
                    # back, from out of view and from low in view; after the learner scrolls, it is not
                    pushed_back(page, chapter_path, solutions, names[-1], 1500)
                    pushed_back(page, chapter_path, solutions, names[-1], 600)
                    learner_not_fought(page, chapter_path, solutions, names[-1])
