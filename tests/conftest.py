"""Shared test setup.

Matplotlib builds its font cache the first time it is imported and says so on stderr; warm it
here, once, before nbval starts any notebook kernel, so that message never reaches a
notebook's output. (``make test`` also warms it, beside the unit tests, before the notebooks'
stages.) Nothing here may change the environment the notebook kernels inherit.
"""
import gc
from contextlib import ExitStack

import matplotlib.font_manager  # noqa: F401  (importing builds the cache)
import pytest

# hypothesis's files go to artifacts/hypothesis/, never a .hypothesis/ at the repository's top,
# whichever test module builds the first strategy (see _hypothesis_home)
import _hypothesis_home  # noqa: E402,F401


@pytest.hookimpl(trylast=True)            # after -m's deselection: the count the workers split
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (a worker), the long test files split evenly between the workers
    (tests/_xdist_order.py); a run in one process keeps the usual order."""
    if hasattr(config, "workerinput") and config.workerinput.get("workercount", 0) > 1:
        from _xdist_order import in_parts
        items[:] = in_parts(items, config.workerinput["workercount"])


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    """What is imported and collected so far (torch, transformers, the test modules: half a million
    objects) is moved out of the garbage collector's sight: its full collections during the run
    walk only what the tests make (gc.freeze; nothing a test makes is kept)."""
    gc.freeze()


class SharedLab:
    """tests/_browser.py's shared_lab, opened by the first browser test that asks for it and closed
    after the last test of the run of tests that use it (the browser test files run one after
    the other: tests/_xdist_order.py), not at the end of the session: idle, the JupyterLab, its
    kernels and Chromium cost about a tenth of a core. A later browser test would open it again."""

    def __init__(self, tmp_path_factory):
        self.tmp_path_factory, self.stack, self.shared = tmp_path_factory, None, None

    def get(self):
        if self.shared is None:
            from _browser import shared_lab
            stack = ExitStack()
            self.shared = stack.enter_context(shared_lab(self.tmp_path_factory.mktemp("lab")))
            self.stack = stack
        return self.shared

    def close(self) -> None:
        if self.stack is not None:
            stack, self.stack, self.shared = self.stack, None, None
            stack.close()


_SHARED_LABS: list[SharedLab] = []


@pytest.fixture(scope="session")
def shared_lab_holder(tmp_path_factory):
    holder = SharedLab(tmp_path_factory)
    _SHARED_LABS.append(holder)
    yield holder
    holder.close()
    _SHARED_LABS.remove(holder)


@pytest.fixture(scope="module")
def lab(shared_lab_holder):
    """One JupyterLab and one Chromium page showing it, shared by every browser test of this
    pytest process (each xdist worker has its own): tests/_browser.py's shared_lab."""
    return shared_lab_holder.get()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After the teardown of the last test of a run that uses ``lab`` (its module fixtures have
    put back what they changed in the lab's folder), the lab closes."""
    try:
        return (yield)
    finally:
        if _SHARED_LABS and "lab" in item.fixturenames and (nextitem is None or "lab" not in nextitem.fixturenames):
            _SHARED_LABS[0].close()
