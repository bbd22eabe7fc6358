// A JupyterLab plugin: a link to a cell of another notebook (`solutions/x.ipynb#cell-id=ID`,
// each exercise's link to its worked solution) lands on that cell in one click.
//
// Why it is needed: JupyterLab (4.0 to 4.6) scrolls to a link's cell as soon as the notebook it
// has just opened is loaded. The cells above the target may then still be laid out at a
// placeholder height (20 px in the default windowingMode, `contentVisibility`: their real size
// is set a frame later; in 4.0's `defer`, cells are rendered after the first paint). When they
// take their real height they push the target down, often out of the window, and the learner
// had to click the link again.
//
// What it does: after JupyterLab's own jump (Notebook.setFragment), it checks the target cell
// on every animation frame for up to WATCH_MS (long enough for a slow or busy machine, such as
// Binder's, to finish the layout). The cell is in place when its top is in the top half of the
// notebook's window (JupyterLab 4.6's jump puts it at the top, 4.0's in the middle), or lower
// but wholly in view once the notebook is scrolled to its end; a cell pushed lower by the cells
// above it, even one still in view, would leave the window at the next cell that grows. While
// it is not in place the plugin asks JupyterLab to jump again. It stops as soon as the learner
// scrolls, clicks or types (it never fights the learner), once the cell has stayed in place for
// STILL_MS, or when the notebook is closed or hidden. Other fragments (headings) are left to
// JupyterLab.
//
// Built into ../labextension (README.md beside this file says how); installed with course_lib
// into share/jupyter/labextensions/course-lib-solution-links/.
import { INotebookTracker } from '@jupyterlab/notebook';

const WATCH_MS = 10000; // how long after a jump the target cell is watched, at most
const STILL_MS = 1000; // watching stops once the cell has stayed in place this long
const HEAD_PX = 120; // the top part of the cell that must be in the window (a heading and a line)
const TOP_PART = 1 / 2; // a cell in place has its top in this part of the window, from the top
const LEARNER_EVENTS = ['wheel', 'pointerdown', 'keydown', 'touchstart'];

// The cell a `#cell-id=ID` fragment names, or null (another kind of fragment, or no such cell)
function targetCell(notebook, fragment) {
  const match = /^#?cell-id=(.+)$/.exec(fragment);
  if (!match) {
    return null;
  }
  const id = decodeURIComponent(match[1]);
  return notebook.widgets.find(cell => cell.model.id === id) || null;
}

// Where the cell's top is against the notebook's scrolled window (px), and whether the cell is in
// place: its top part (HEAD_PX, or the whole cell if shorter) inside the window, and its top in
// the window's TOP_PART, unless the notebook cannot scroll further down
function placeOf(notebook, cell) {
  if (!cell.node.isConnected) {
    return { top: null, inPlace: false }; // a windowed notebook has not rendered it
  }
  const window = notebook.node.getBoundingClientRect();
  const box = cell.node.getBoundingClientRect();
  const top = Math.round(box.top - window.top);
  const head = Math.min(box.height, HEAD_PX);
  const inView = top >= -2 && top + head <= window.height + 2;
  // the element that scrolls: the windowed list's outer node (JupyterLab 4.1+), or the notebook's
  const scroller = notebook.node.querySelector('.jp-WindowedPanel-outer') || notebook.node;
  const atEnd = scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - 2;
  return { top, inPlace: inView && (top <= window.height * TOP_PART || atEnd) };
}

// Watch one jump to `fragment`: re-jump (with JupyterLab's own `jump`) while the target cell is
// not in place. Returns a function that stops the watch.
function keepInView(notebook, fragment, jump) {
  const start = performance.now();
  let stopped = false;
  let lastTop = null;
  let stillSince = start;

  const stop = () => {
    stopped = true;
    for (const type of LEARNER_EVENTS) {
      notebook.node.removeEventListener(type, stop, true);
    }
  };
  for (const type of LEARNER_EVENTS) {
    notebook.node.addEventListener(type, stop, true); // capture: seen before any cell handles it
  }

  const check = async () => {
    const now = performance.now();
    const cell = targetCell(notebook, fragment);
    if (stopped || !cell || notebook.isDisposed || !notebook.isVisible || now - start > WATCH_MS) {
      return stop();
    }
    const place = placeOf(notebook, cell);
    if (!place.inPlace) {
      await jump(fragment); // the cells above took their height: JupyterLab jumps again
      stillSince = performance.now();
      lastTop = null;
    } else if (place.top !== lastTop) {
      stillSince = now; // in place, but still moving
      lastTop = place.top;
    } else if (now - stillSince >= STILL_MS) {
      return stop(); // in place, and still
    }
    if (!stopped) {
      requestAnimationFrame(() => void check());
    }
  };
  requestAnimationFrame(() => void check());
  return stop;
}

// Every notebook opened: its setFragment (JupyterLab's jump to a link's target) is followed by
// a watch, which a newer jump replaces.
function activate(app, tracker) {
  tracker.widgetAdded.connect((_, panel) => {
    const notebook = panel.content;
    const jump = notebook.setFragment.bind(notebook);
    let jumps = 0;
    let stopWatch = () => {};
    notebook.setFragment = async fragment => {
      const thisJump = ++jumps;
      stopWatch();
      await jump(fragment);
      if (thisJump === jumps) {
        stopWatch = keepInView(notebook, fragment, jump); // unless a newer jump came meanwhile
      }
    };
  });
}

export default {
  id: 'course-lib-solution-links:plugin',
  description: "A link to a notebook's cell lands on it in one click, once the notebook is laid out",
  autoStart: true,
  requires: [INotebookTracker],
  activate
};
