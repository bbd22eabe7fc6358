"""Where hypothesis keeps its files (its Unicode table cache, the constants it collects):
``artifacts/hypothesis/``, a run-output folder git ignores, not a ``.hypothesis/`` folder at the
repository's top (tests/test_environment.py holds the top level to the shipped layout). The
examples themselves are derandomized and never stored (``database=None``). Import this module
before any hypothesis strategy is built."""
from pathlib import Path

from hypothesis.configuration import set_hypothesis_home_dir

set_hypothesis_home_dir(Path(__file__).resolve().parent.parent / "artifacts" / "hypothesis")
