"""Where hypothesis keeps its files (its Unicode table cache, the constants it collects):
``artifacts/hypothesis/``, a run-output folder git ignores, not a ``.hypothesis/`` folder at the
repository's top (tests/test_environment.py holds the top level to the shipped layout). The
examples themselves are derandomized and never stored (``database=None``). In a read-only
checkout ``artifacts/`` is elsewhere (tests/_artifacts.py). Import this module before any
hypothesis strategy is built."""
from hypothesis.configuration import set_hypothesis_home_dir

from _artifacts import ARTIFACTS

set_hypothesis_home_dir(ARTIFACTS / "hypothesis")
