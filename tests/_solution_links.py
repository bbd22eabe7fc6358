"""The page side of tests/test_browser_layout.py's solution-link test: where a cell of the
current notebook is against the notebook's window, a click on an exercise's link, and the three
things a click must do (:func:`lands`, :func:`pushed_back`, :func:`learner_not_fought`; the
test's docstring says why), each measured in the page every 0.1 s. Also the windowing mode a
learner's JupyterLab lays notebooks out in (:func:`learners_windowing`).
"""
import json
import time
from contextlib import contextmanager

from _browser import wait_until


# The top of the cell with id `id` of the shown notebook `path`, against its scroller
# (0 … height: in view), and whether that scroller is at its end (it cannot scroll further down);
# null until that notebook is the current tab.
CELL_IN_VIEW_JS = r"""([path, id]) => {
  const w = window.jupyterapp.shell.currentWidget;
  if (!w || !w.context || w.context.path !== path || !w.content) return null;
  const cell = w.content.widgets.find(c => c.model.id === id);
  if (!cell || !cell.node.isConnected) return null;
  const scroller = w.content.node;
  const outer = scroller.querySelector('.jp-WindowedPanel-outer') || scroller;   // the element that scrolls
  const top = cell.node.getBoundingClientRect().top - scroller.getBoundingClientRect().top;
  return {top: Math.round(top) + 0, cell: Math.round(cell.node.getBoundingClientRect().height),
          height: scroller.clientHeight, atEnd: outer.scrollTop + outer.clientHeight >= outer.scrollHeight - 2};   // + 0: no -0
}"""


# Scrolls notebook `path` (made current) to the markdown cell whose link names `id`: true once done
SCROLL_TO_LINK_JS = r"""async ([path, id]) => {
  const w = [...window.jupyterapp.shell.widgets('main')].find(w => w.context && w.context.path === path);
  window.jupyterapp.shell.activateById(w.id);
  const cell = w.content.widgets.find(c => c.model.sharedModel.getSource().includes('#cell-id=' + id + ')'));
  if (!cell) throw new Error(`no cell of ${path} links to #cell-id=${id}`);
  await w.content.scrollToCell(cell, 'center');
  return true;
}"""


def click_solution_link(page, chapter_path: str, name: str) -> None:
    page.evaluate(SCROLL_TO_LINK_JS, [chapter_path, name])
    link = page.locator(f".jp-NotebookPanel:not(.lm-mod-hidden) .jp-RenderedMarkdown a[href$='#cell-id={name}']").first
    # in JupyterLab 4.0's "defer" mode a cell is rendered when the page is idle: on a busy machine
    # the link can take a while to be in the page
    link.scroll_into_view_if_needed(timeout=90_000)
    link.click()


STAY_S = 1.0       # a solution that landed must still be in view this long after (sampled every 0.1 s)
LAND_S = 8.0       # a click's time to land, at most, once the solutions notebook is the current tab
                   # (a busy machine may take seconds to lay it out; a landing is usually within 1 s)
SETTLE_S = 3.0     # a solution pushed out of view after it landed: its time to come back

# CELL_IN_VIEW_JS's answer in view: the whole cell (the solution's heading) inside its notebook's window
IN_VIEW_JS = "(w) => !!w && w.top >= -2 && w.top + w.cell <= w.height + 2"
# ... and landed: in view with its top in the window's top half, where a jump puts it (JupyterLab
# 4.6 at the top, 4.0 in the middle; lower, a cell above that takes its height late pushes it
# out), unless the notebook cannot scroll further
LANDED_JS = f"(w) => ({IN_VIEW_JS})(w) && (w.top <= w.height / 2 || w.atEnd)"

# Samples CELL_IN_VIEW_JS every 0.1 s: {landed: its answer at the first sample within LAND_S where
# the solution `id` had landed (LANDED_JS) and after which it stayed in view for STAY_S, or null;
# after: that sample's milliseconds; samples: each sample's time and top}
LANDS_JS = f"""async ([path, id]) => {{
  const where = {CELL_IN_VIEW_JS}, inView = {IN_VIEW_JS}, landed = {LANDED_JS};
  const start = performance.now(), samples = [];
  let since = null;
  for (let t = 0; t <= {(LAND_S + STAY_S) * 1000}; t = performance.now() - start) {{
    const w = where([path, id]);
    samples.push({{t: Math.round(t), top: w && w.top}});
    if (since !== null && !inView(w)) since = null;
    if (since === null && t <= {LAND_S * 1000} && landed(w)) since = {{t, w}};
    if (since !== null && t - since.t >= {STAY_S * 1000}) return {{landed: since.w, after: Math.round(since.t), samples}};
    await new Promise(done => setTimeout(done, 100));
  }}
  return {{landed: null, after: null, samples}};
}}"""

# CELL_IN_VIEW_JS's answer every 0.1 s for `ms` milliseconds, each with `inView`
SAMPLES_JS = f"""async ([path, id, ms]) => {{
  const where = {CELL_IN_VIEW_JS}, inView = {IN_VIEW_JS}, samples = [], end = performance.now() + ms;
  while (performance.now() < end) {{
    const w = where([path, id]);
    samples.push({{top: w && w.top, inView: inView(w)}});
    await new Promise(done => setTimeout(done, 100));
  }}
  return samples;
}}"""


# The cell above cell `id` of the current notebook grows by `px` px, as a cell that takes its real
# height late does (0: its own height again)
GROW_ABOVE_JS = r"""([id, px]) => {
  const cells = window.jupyterapp.shell.currentWidget.content.widgets;
  const above = cells[cells.findIndex(c => c.model.id === id) - 1].node;
  above.style.minHeight = '';
  if (px) above.style.minHeight = (above.getBoundingClientRect().height + px) + 'px';
}"""

# As soon as the solution `id` has landed (LANDED_JS, within LAND_S, else null), the cell above it
# grows by `px` px; returns the solution's top (CELL_IN_VIEW_JS) and `landed` every 0.1 s for `ms`
# milliseconds after, or until it has been landed for the last STAY_S seconds; that cell's height
# then restored
PUSHED_JS = f"""async ([path, id, px, ms]) => {{
  const where = {CELL_IN_VIEW_JS}, landed = {LANDED_JS}, grow = {GROW_ABOVE_JS};
  const start = performance.now(), samples = [];
  while (!landed(where([path, id]))) {{
    if (performance.now() - start > {LAND_S * 1000}) return null;
    await new Promise(done => requestAnimationFrame(done));
  }}
  grow([id, px]);
  const end = performance.now() + ms;
  while (performance.now() < end) {{
    await new Promise(done => setTimeout(done, 100));
    const w = where([path, id]);
    samples.push({{top: w && w.top, landed: landed(w)}});
    if (samples.length >= {round(STAY_S / 0.1)} && samples.slice(-{round(STAY_S / 0.1)}).every(s => s.landed)) break;
  }}
  grow([id, 0]);
  return samples;
}}"""


# Sets (or, with null, removes) the windowingMode of this page's notebooks in JupyterLab's setting
# registry (the page has no public handle on it: it is the service of the plugin that provides
# it); returns the user's value before, the mode now in force and JupyterLab's default.
# Notebooks opened afterwards use it.
WINDOWING_JS = r"""async (value) => {
  const app = window.jupyterapp, plugins = (app.pluginRegistry || app)._plugins;   // JupyterLab 4.0: app._plugins
  const plugin = plugins && plugins.get('@jupyterlab/apputils-extension:settings');
  if (!plugin) throw new Error("JupyterLab's setting registry not found at pluginRegistry._plugins or _plugins");
  const tracker = await plugin.service.load('@jupyterlab/notebook-extension:tracker');
  const before = tracker.user.windowingMode === undefined ? null : tracker.user.windowingMode;
  if (value === null) await tracker.remove('windowingMode'); else await tracker.set('windowingMode', value);
  return {before, mode: tracker.composite.windowingMode, default: tracker.default('windowingMode')};
}"""
# whether the course's JupyterLab extension (course_lib/ui/labextension_src/index.js) is active
EXTENSION_ACTIVE_JS = "() => window.jupyterapp.isPluginActivated('course-lib-solution-links:plugin')"
CLOSE_ALL_JS = "() => { for (const w of [...window.jupyterapp.shell.widgets('main')]) w.dispose(); }"


@contextmanager
def learners_windowing(page):
    """The notebooks opened inside lay out as in a learner's JupyterLab: `make lab` and Binder set
    no windowingMode, so JupyterLab's own default holds, not the tests' ("none", tests/_browser.py's
    write_lab_settings). Yields (that mode, the tests'); every tab opened under it is closed at
    the end, and the tests' mode is back."""
    page.evaluate(CLOSE_ALL_JS)
    setting = page.evaluate(WINDOWING_JS, None)
    try:
        assert setting["mode"] == setting["default"], setting
        yield setting["mode"], setting["before"]
    finally:
        page.evaluate(WINDOWING_JS, setting["before"])
        page.evaluate(CLOSE_ALL_JS)


def open_paths(page) -> list[str]:
    return page.evaluate("() => [...window.jupyterapp.shell.widgets('main')].map(w => w.context && w.context.path)")


def lands(page, chapter_path: str, solutions: str, name: str) -> dict:
    """One click on exercise ``name``'s link in ``chapter_path``: ``solutions`` (opened by that
    click if it was closed) becomes the current tab, and within ``LAND_S`` its solution has landed
    (:data:`LANDED_JS`) and then stays in view at every sample of the next ``STAY_S`` seconds
    (:data:`LANDS_JS`: a push in between, which the course's extension undoes, waits for the next
    landing). Returns where it landed."""
    click_solution_link(page, chapter_path, name)
    wait_until(page, f"() => {{ const w = window.jupyterapp.shell.currentWidget; return !!w && !!w.context && "
                     f"w.context.path === {json.dumps(solutions)} && w.content.widgets.length > 0; }}",
               f"{solutions}, the current tab after a click on {name}'s link", 30)
    result = page.evaluate(LANDS_JS, [solutions, name])
    tops = [s["top"] for s in result["samples"]]
    print(f"{chapter_path} → {solutions}#cell-id={name}, one click: {result['landed']} after {result['after']} ms; "
          f"its top, px, every 0.1 s: {tops}")
    assert result["landed"] is not None, (
        f"{name}'s solution did not land in {solutions} within {LAND_S:.0f} s of one click on its link in "
        f"{chapter_path} to stay in view {STAY_S:.0f} s (its top against the notebook, px, every 0.1 s: {tops}; landed: "
        f"the whole cell inside the notebook's window, its top in the window's top half unless the notebook is "
        f"scrolled to its end)")
    return result["landed"]


def pushed_back(page, chapter_path: str, solutions: str, name: str, px: int) -> None:
    """One click on exercise ``name``'s link, then, as soon as its solution has landed, the cell
    above it grows by ``px`` px (pushing it out of view, or lower in view): within ``SETTLE_S``
    the solution has landed again (:data:`LANDED_JS`), and stays."""
    click_solution_link(page, chapter_path, name)
    samples = page.evaluate(PUSHED_JS, [solutions, name, px, (SETTLE_S + STAY_S) * 1000])
    assert samples is not None, f"{name}'s solution has not landed in {solutions} {LAND_S:.0f} s after a click on its link"
    tops = [s["top"] for s in samples]
    print(f"  {name}: the cell above grew by {px} px once it had landed; its top, px, every 0.1 s: {tops}")
    stay = round(STAY_S / 0.1)
    assert all(s["landed"] for s in samples[-stay:]), (
        f"{name}'s solution in {solutions} pushed down by {px} px by a cell above that grew after the jump, and not "
        f"brought back to the window's top half within {SETTLE_S:.0f} s to stay {STAY_S:.0f} s "
        f"(its top, px, every 0.1 s: {tops})")


def learner_not_fought(page, chapter_path: str, solutions: str, name: str) -> None:
    """One click on exercise ``name``'s link; once its solution is in view the learner turns the
    mouse wheel over the notebook, and then the cell above the solution grows by 1500 px: the
    solution is left where that puts it (out of view), never pulled back against the learner."""
    where_js = f"({CELL_IN_VIEW_JS})({json.dumps([solutions, name])})"
    click_solution_link(page, chapter_path, name)
    page.wait_for_function(f"() => ({IN_VIEW_JS})({where_js})", timeout=LAND_S * 1000)
    box = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -100)
    page.evaluate(GROW_ABOVE_JS, [name, 1500])
    try:
        samples = page.evaluate(SAMPLES_JS, [solutions, name, (SETTLE_S + STAY_S) * 1000])
    finally:
        page.evaluate(GROW_ABOVE_JS, [name, 0])
    tops = [s["top"] for s in samples]
    print(f"  {name}: the learner scrolled, then the cell above grew by 1500 px; its top, px, every 0.1 s: {tops}")
    assert not any(s["inView"] for s in samples), (
        f"{name}'s solution in {solutions} was brought back into view after the learner scrolled (its top, px, every 0.1 s: {tops})")
