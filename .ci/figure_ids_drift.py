"""The authors' check: is tests/figure_ids.txt the list of figure ids in the course's
specification, ../shared/figures.md? Not a test: an instructor's fork has no ../shared, and the
project's tests read only the repository (tests/test_figures.py checks data/figures.json
against tests/figure_ids.txt, and this script's comparison on made-up tables).

    python .ci/figure_ids_drift.py [path/to/figures.md]     # default: ../shared/figures.md

Exit 0 when the ids agree, 1 when they drift (naming each id), 2 when the file is not there.
`.ci/run` runs it only where ../shared/figures.md is beside the checkout.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT.parent / "shared" / "figures.md"
SNAPSHOT = ROOT / "tests" / "figure_ids.txt"
SPEC_ROW = re.compile(r"^\| ((?:interface|lab|decoding|gpt2)\.[a-z0-9_.]+) \|", re.M)


def snapshot_ids(path: Path = SNAPSHOT) -> list[str]:
    """The figure ids of tests/figure_ids.txt (lines starting with # are its header)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def drift(spec_text: str, snapshot: list[str]) -> tuple[list[str], list[str]]:
    """(ids the spec has and the snapshot lacks, ids the snapshot has and the spec lacks)."""
    spec = set(SPEC_ROW.findall(spec_text))
    return sorted(spec - set(snapshot)), sorted(set(snapshot) - spec)


def main(argv: list[str]) -> int:
    spec = Path(argv[1]) if len(argv) > 1 else SPEC
    if not spec.is_file():
        print(f"figure_ids_drift: no specification at {spec} (an instructor's fork has none; "
              f"pass the path of figures.md)", file=sys.stderr)
        return 2
    text = spec.read_text(encoding="utf-8")
    rows = SPEC_ROW.findall(text)
    if len(rows) != len(set(rows)):
        print(f"figure_ids_drift: {spec} lists an id twice", file=sys.stderr)
        return 1
    missing, extra = drift(text, snapshot_ids())
    if missing or extra:
        print(f"tests/figure_ids.txt is out of date with {spec}: missing {missing}, extra {extra} "
              f"(refresh it with the command in its header)", file=sys.stderr)
        return 1
    print(f"tests/figure_ids.txt matches {spec}: {len(rows)} figure ids")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
