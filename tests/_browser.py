"""Helpers of the browser tests (tests/test_browser_panel.py, tests/test_browser_layout.py):
JupyterLab on localhost, one Chromium page driven by Playwright, and waits that stop at the
first cell that raises.

One JupyterLab and one Chromium page serve every browser test of a pytest process
(:func:`shared_lab`, the session fixture ``lab`` of tests/conftest.py): the server exposes its
app as ``window.jupyterapp`` (``--LabApp.expose_app_in_browser``), the page loads JupyterLab
once, and each test closes what the last one opened and opens its notebook with JupyterLab's own
``docmanager:open`` command instead of reloading the page.
"""
import http.cookiejar
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import pytest

from _artifacts import ARTIFACTS   # artifacts/, or elsewhere in a read-only checkout
from _copies import writable_copy

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def missing_requirements() -> list[str]:
    missing = []
    if not Path(CHROMIUM).is_file():
        missing.append(f"{CHROMIUM} (apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("playwright (pip install playwright; no browser download needed)")
    return missing


def need_browser():
    """Skip without Chromium or Playwright; under CI (``CI`` set) fail instead."""
    missing = missing_requirements()
    if missing:
        message = "browser test needs " + " and ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def broken_copy(notebook: Path, target: Path, after_code_cell: int = 1) -> str:
    """Write a copy of ``notebook`` with a failing code cell after its ``after_code_cell``-th code
    cell; returns the failing cell's source."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    source = 'raise RuntimeError("deliberately broken copy: this cell must stop the browser test")'
    bad = {"cell_type": "code", "execution_count": None, "id": "deliberately-broken", "metadata": {},
           "outputs": [], "source": [source]}
    code = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]
    nb["cells"].insert(code[after_code_cell - 1] + 1, bad)
    target.write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")
    return source


def write_lab_settings(home: Path) -> None:
    settings = home / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    # render every cell (no virtual scrolling), so the panel is in the page after "run all";
    # a closed notebook's kernel shuts down then, not when the server stops
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps(
        {"windowingMode": "none", "autoStartDefaultKernel": True, "kernelShutdown": True}))
    # nothing a test runs is saved: a notebook stays as copied for the next test that opens it
    documents = home / "settings" / "@jupyterlab" / "docmanager-extension"
    documents.mkdir(parents=True)
    (documents / "plugin.jupyterlab-settings").write_text(json.dumps({"autosave": False}))
    notices = home / "settings" / "@jupyterlab" / "apputils-extension"
    notices.mkdir(parents=True)
    (notices / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))


@contextmanager
def serve_lab(root: Path, home: Path):
    """JupyterLab on 127.0.0.1:<free port> (no token, no browser) serving ``root``. Yields
    ``ready``, which waits until the server answers and returns its URL: start the browser
    before calling it, while the server starts."""
    write_lab_settings(home)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(home / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(home / "ws"),
               MPLBACKEND="Agg")
    port = free_port()
    log_path = home / "jupyter.log"
    log = open(log_path, "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--port={port}",
         "--IdentityProvider.token=", "--ServerApp.password=", f"--ServerApp.root_dir={root}",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.extension_manager=readonly", "--LabApp.expose_app_in_browser=True", "--allow-root"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def ready() -> str:
        deadline = time.time() + 90
        while True:
            try:
                urllib.request.urlopen(url + "/api/status", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.time() > deadline:
                    raise RuntimeError("JupyterLab did not start:\n" + log_path.read_text())
                time.sleep(0.2)
        return url

    try:
        yield ready
    finally:
        stop_process(server, 20)
        log.close()


def stop_process(process: subprocess.Popen, seconds: float) -> None:
    """End ``process``: SIGTERM, then SIGKILL after ``seconds``."""
    process.terminate()
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def start_sessions(url: str, paths: list[str]) -> None:
    """POST /api/sessions for each notebook path (as JupyterLab does; with the _xsrf cookie its
    page sets): the server starts a python3 kernel for each and answers before it is ready."""
    cookies = http.cookiejar.CookieJar()
    client = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(cookies))
    client.open(url + "/lab", timeout=30).read()
    xsrf = next(c.value for c in cookies if c.name == "_xsrf")
    for path in paths:
        body = json.dumps({"path": path, "name": path, "type": "notebook", "kernel": {"name": "python3"}})
        client.open(urllib.request.Request(url + "/api/sessions", data=body.encode(), method="POST", headers={
            "Content-Type": "application/json", "X-XSRFToken": xsrf}), timeout=30).read()


class Lab(NamedTuple):
    root: Path      # the folder JupyterLab serves (both editions' notebooks: copy_notebooks)
    url: str
    page: object    # the Chromium page showing JupyterLab (open_lab)
    layouts: dict   # notebook path -> its layout, measured by a test that had it open (tests/_layout.py)


@contextmanager
def launch_chromium():
    """Playwright and one headless Chromium (tests/conftest.py's ``chromium``, one per pytest
    process: Playwright's sync API allows one running instance at a time in a thread, so every
    browser test of the process shares it). Skips as :func:`need_browser` says."""
    need_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def shared_lab(tmp_path: Path, browser):
    """JupyterLab serving both editions' notebooks (:func:`copy_notebooks`, into ``tmp_path``) and
    one page of ``browser`` showing it: the :class:`Lab` every browser test of this pytest process
    shares (tests/conftest.py's ``lab``). A module adds its own notebooks to ``root`` and starts
    their kernels (:func:`start_sessions`)."""
    ARTIFACTS.mkdir(exist_ok=True)
    root = tmp_path / "root"
    copy_notebooks(root)
    try:
        with serve_lab(root, tmp_path / "home") as ready:
            url = ready()
            page = open_lab(browser, url)
            try:
                yield Lab(root, url, page, {})
            finally:
                page.close()
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def open_lab(browser, url: str):
    """A new page showing JupyterLab (an empty workspace of its own), once the app is restored."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{url}/lab/workspaces/browser-test?reset")
    page.wait_for_function("() => !!window.jupyterapp", timeout=90_000)
    page.evaluate("() => window.jupyterapp.restored.then(() => true)")
    return page


# Makes notebook `path` the only tab, its cells loaded. A tab already showing it (connected to
# its kernel, when `kernel`) stays: the panel test goes on in the tab where the test of every
# notebook opened 07, which ran nothing. A tab showing it without the kernel asked for closes.
# Otherwise it opens: without `kernel` it starts none (as File Browser → Open With → Notebook
# (no kernel) does), with `kernel` it connects to the one started for it. Then every other tab
# closes without asking to save (its kernel shuts down).
SHOW_JS = r"""async ([path, kernel]) => {
  const app = window.jupyterapp;
  let tabs = Array.from(app.shell.widgets('main'));
  let shown = tabs.find(w => w.context && w.context.path === path);
  if (shown && kernel && !shown.sessionContext.session) {
    shown.dispose();                // docmanager:open would show this tab again, without its kernel
    tabs = tabs.filter(w => w !== shown);
    shown = undefined;
  }
  if (shown) {
    app.shell.activateById(shown.id);
  } else {
    const args = {path, factory: 'Notebook'};
    if (!kernel) args.kernelPreference = {shouldStart: false, shouldReuse: false};
    shown = await app.commands.execute('docmanager:open', args);
    await shown.context.ready;
  }
  for (const w of tabs) if (w !== shown) w.dispose();
}"""


def show(page, path: str, kernel: bool) -> None:
    """Notebook ``path`` as the only tab (:data:`SHOW_JS`): nothing of another notebook stays in the page."""
    page.evaluate(SHOW_JS, [path, kernel])
    page.wait_for_function("() => document.querySelectorAll('.jp-NotebookPanel').length === 1", timeout=30_000)


def settled(page) -> None:
    """Wait until the page's fonts are loaded and two more frames are painted (for a screenshot)."""
    page.evaluate("() => document.fonts.ready.then(() => new Promise("
                  "done => requestAnimationFrame(() => requestAnimationFrame(() => done(true)))))")


# true once notebook `name`'s tab shows its first code cell's output: the map's picture
MAP_JS = r"""(name) => {
  const tab = [...document.querySelectorAll('.lm-DockPanel-tabBar .lm-TabBar-tab')]
    .find(t => (t.querySelector('.lm-TabBar-tabLabel') || {}).textContent === name);
  const panel = tab && document.getElementById(tab.dataset.id);
  const first = panel && panel.querySelector('.jp-Notebook .jp-CodeCell');
  const img = first && first.querySelector('.jp-OutputArea-output img');
  return !!img && img.complete && img.naturalWidth > 600;
}"""


def open_notebook(page, path: str, kernel: bool = False) -> None:
    """Show notebook ``path`` (:func:`show`; its stored outputs render, nothing runs) and wait for the map."""
    show(page, path, kernel)
    page.wait_for_function(MAP_JS, arg=Path(path).name, timeout=60_000)


class CellError(AssertionError):
    """A notebook cell raised in the browser: the message holds its source and traceback."""


# Error outputs render as stderr text holding the traceback (a stream to stderr renders the
# same way, so a warning is told apart by its text: a traceback or an exception's name).
ERRORS_JS = r"""() => {
  const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
  const found = [];
  for (const out of document.querySelectorAll(
         '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')) {
    const text = out.innerText;
    if (!/Traceback|Cell In\[\d+\]|^\w*(Error|Exception|Mismatch)\b/m.test(text)) continue;
    const cell = out.closest('.jp-Cell');
    const editor = cell && cell.querySelector('.jp-InputArea-editor');
    const prompt = cell && cell.querySelector('.jp-InputPrompt');
    found.push({index: cells.indexOf(cell), prompt: prompt ? prompt.innerText.trim() : '',
                source: editor ? editor.innerText : '', traceback: text});
  }
  return found;
}"""


def raise_cell_error(page, error: dict, waited: float, what: str) -> None:
    """Screenshot the failing cell and raise :class:`CellError` with its source and traceback."""
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "browser_error.png"
    try:
        cell = page.locator(".jp-Notebook .jp-Cell").nth(error["index"])
        cell.scroll_into_view_if_needed(timeout=5_000)
        page.screenshot(path=str(shot))
    except Exception:                       # a screenshot must never hide the cell's error
        pass
    raise CellError(
        f"a notebook cell raised in the browser (cell {error['index']} {error['prompt']}) after "
        f"{waited:.1f} s, while waiting for {what}; stopped instead of waiting for the timeout.\n"
        f"--- cell source ---\n{error['source'].strip()}\n"
        f"--- traceback ---\n{error['traceback'].strip()}\n"
        f"--- screenshot: {shot.relative_to(ROOT) if shot.is_relative_to(ROOT) else shot}")


STALL_S = 15       # no cell queued or running and the kernel idle this long: nothing more will come
STATE_JS = r"""() => {
  const prompts = [...document.querySelectorAll('.jp-InputPrompt')].map(e => e.innerText.trim());
  const numbered = prompts.filter(t => /\d/.test(t));
  const widgets = [...document.querySelectorAll('.jp-OutputArea-output')]
    .map(e => e.innerText.trim()).filter(t => /widget/i.test(t)).slice(0, 3).map(t => t.slice(0, 200));
  const indicator = document.querySelector('.jp-Notebook-ExecutionIndicator');
  return {running: prompts.filter(t => t.includes('*')).length, last: numbered[numbered.length - 1] || '',
          status: indicator ? indicator.getAttribute('data-status') : '', widgets: widgets.join(' | ')};
}"""


def wait_until(page, condition_js: str, what: str, timeout_s: float = 120.0) -> None:
    """Poll ``condition_js`` (a JS function returning true when done) every 0.1 s; stop at once
    with :class:`CellError` when any cell shows a traceback, and say what was awaited on a timeout."""
    start = quiet_since = time.monotonic()
    while True:
        errors = page.evaluate(ERRORS_JS)
        if errors:
            raise_cell_error(page, errors[0], time.monotonic() - start, what)
        if page.evaluate(condition_js):
            return
        state = page.evaluate(STATE_JS)
        if state["running"] or state["status"] != "idle":
            quiet_since = time.monotonic()
        stalled = time.monotonic() - quiet_since > STALL_S
        if stalled or time.monotonic() - start > timeout_s:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "browser_timeout.png"))
            why = (f"nothing ran for {STALL_S} s" if stalled else f"timed out after {timeout_s:.0f} s")
            raise AssertionError(
                f"{why} waiting for {what} (no cell raised; "
                f"{state['running']} cell(s) still queued or running; last prompt {state['last']!r}; "
                f"kernel status {state['status']!r}); widget outputs: {state['widgets'] or 'none'}; "
                f"screenshot: {ARTIFACTS / 'browser_timeout.png'}")
        page.wait_for_timeout(100)


STARTED_JS = """() => [...document.querySelectorAll('.jp-InputPrompt')].some(e => e.innerText.includes('*'))
    || !!document.querySelector(".jp-Notebook-ExecutionIndicator[data-status='busy']")"""


def open_and_run_all(page, name: str) -> None:
    """Show notebook ``name`` connected to its kernel (:func:`show`), wait until the kernel is
    idle, then Run → Run All Cells."""
    show(page, name, kernel=True)
    # until the kernel is idle: JupyterLab may still ask which kernel to start (take the
    # notebook's python3) — answered as soon as it asks, never waited for when it does not
    deadline = time.monotonic() + 90
    while not page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").count():
        accept = page.locator(".jp-Dialog .jp-mod-accept")
        if accept.count():
            try:
                accept.first.click(timeout=2_000)
            except Exception:
                pass
        if time.monotonic() > deadline:
            raise AssertionError(f"the kernel of {name} did not start within 90 s")
        page.wait_for_timeout(100)
    # the cells show [*] the moment they are queued, so a click that took is seen at once; one
    # sent while the kernel is still connecting can be lost: then click again
    for attempt in range(4):
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        started = time.monotonic()
        while time.monotonic() - started < 5:
            if page.evaluate(STARTED_JS):
                return
            page.wait_for_timeout(100)
        print(f"Run All Cells did not start {name} within 5 s (attempt {attempt + 1} of 4)")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "browser_not_started.png"))
    raise AssertionError(f"Run All Cells did not start {name} (no cell queued, kernel never busy), 4 times in 20 s; "
                         f"screenshot: {ARTIFACTS / 'browser_not_started.png'}")


@contextmanager
def failure_screenshot(page):
    """On a failure other than :class:`CellError` (which saves its own), save what the browser
    showed to ``artifacts/browser_failure.png``."""
    try:
        yield
    except CellError:
        raise
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "browser_failure.png"))
        raise


def has_text_js(selector: str, text: str) -> str:
    return (f"() => [...document.querySelectorAll({json.dumps(selector)})]"
            f".some(e => e.textContent.includes({json.dumps(text)}))")


# Draws `text` in the computed font of the first element matching `selector` (and, as the
# reference, U+10FFFD, which no font has: the browser draws its missing-glyph box) and returns
# both widths and whether the pixels differ.
GLYPH_JS = r"""([selector, text]) => {
  const el = [...document.querySelectorAll(selector)].find(e => e.textContent.includes(text));
  if (!el) return null;
  const style = getComputedStyle(el);
  const font = `${style.fontSize} ${style.fontFamily}`;
  const draw = (s) => {
    const canvas = document.createElement('canvas');
    canvas.width = 64; canvas.height = 64;
    const ctx = canvas.getContext('2d');
    ctx.font = font; ctx.fillStyle = 'black'; ctx.textBaseline = 'top';
    ctx.fillText(s, 4, 4);
    return {width: ctx.measureText(s).width, pixels: Array.from(ctx.getImageData(0, 0, 64, 64).data)};
  };
  const glyph = draw(text), box = draw(String.fromCodePoint(0x10FFFD));
  const differ = glyph.pixels.some((v, i) => v !== box.pixels[i]);
  const inked = glyph.pixels.some((v, i) => i % 4 === 3 && v > 0);
  return {font, glyphWidth: glyph.width, boxWidth: box.width, differ, inked};
}"""

def copy_notebooks(root: Path) -> None:
    """Both editions' notebooks into ``root`` (the Chinese one as zh/), with the worked solutions
    their links open (solutions/, zh/solutions/)."""
    root.mkdir()
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        writable_copy(notebook, root / notebook.name)       # JupyterLab saves into them
    if (ROOT / "notebooks" / "solutions").is_dir():
        writable_copy(ROOT / "notebooks" / "solutions", root / "solutions")
    if (ROOT / "notebooks" / "zh").is_dir():
        writable_copy(ROOT / "notebooks" / "zh", root / "zh")
