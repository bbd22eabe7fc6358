"""Shared test setup.

Matplotlib builds its font cache the first time it is imported and says so on stderr; warm it
here, once, before nbval starts any notebook kernel, so that message never reaches a
notebook's output. (``make test`` also warms it before pytest starts.) Nothing here may
change the environment the notebook kernels inherit.
"""
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


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """One JupyterLab and one Chromium page showing it, shared by every browser test of this
    pytest process (each xdist worker has its own): tests/_browser.py's shared_lab."""
    from _browser import shared_lab
    with shared_lab(tmp_path_factory.mktemp("lab")) as shared:
        yield shared
