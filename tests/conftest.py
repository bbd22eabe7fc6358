"""Shared test setup.

Matplotlib builds its font cache the first time it is imported and says so on stderr; warm it
here, before any test starts a notebook kernel, so that message never reaches a notebook's
output. Nothing here may change the environment the notebook kernels inherit.

The markers of the full tier (pyproject.toml registers them; `make test` leaves them out, `make
test-all` runs them) are set at the top of each file that needs them: ``browser`` (Chromium and
JupyterLab), ``sandbox`` (the class grader in bubblewrap sandboxes), ``planted`` (the
planted-bug suites).
"""
import matplotlib.font_manager  # noqa: F401  (importing builds the cache)
import pytest

# hypothesis's files go to artifacts/hypothesis/, never a .hypothesis/ at the repository's top,
# whichever test module builds the first strategy (see _hypothesis_home)
import _hypothesis_home  # noqa: E402,F401


@pytest.fixture(scope="session")
def chromium():
    """One headless Chromium for every browser test of this pytest process (tests/_browser.py's
    launch_chromium)."""
    from _browser import launch_chromium
    with launch_chromium() as browser:
        yield browser


@pytest.fixture(scope="session")
def lab(tmp_path_factory, chromium):
    """One JupyterLab and one Chromium page showing it, shared by every browser test of this
    pytest process (tests/_browser.py's shared_lab). Under pytest-xdist the browser test files
    share the group ``lab`` (``xdist_group``), so one worker runs them all with one JupyterLab."""
    from _browser import shared_lab
    with shared_lab(tmp_path_factory.mktemp("lab"), chromium) as shared:
        yield shared
