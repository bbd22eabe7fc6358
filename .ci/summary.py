"""The closing lines of `make test` and `make test-all`: one line per stage, then a pytest-style total.

    python .ci/summary.py artifacts/test-run [STAGE ...]

reads the JUnit XML files of the stages that ran (<stage>.xml: by default every stage of `make
test-all`; `make test` names unit and nbval) and the figure logs (figures-<stage>.log: one id per
line, appended by ``course_lib.figures.check_figure`` for every figure it reproduced, see
COURSE_FIGURE_LOG), and prints, e.g.:

    figures: 54 ids, 49 reproduced offline (unit tests 49, notebooks 49, scalar kernels 49), 5 need GPT-2 weights (skipped: no weights)
    unit tests: 270 passed, 8 skipped (61 s)
    notebooks (nbval): 116 cells passed (40 s)
    scalar kernels (ATEN_CPU_CAPABILITY=default, 1 thread): 90 unit tests passed; 116 notebook cells passed (55 s)
    browser, sandbox and planted-bug tests: 60 passed (200 s)
    476 passed, 0 failed, 8 skipped

The last line is the total over the stages (CI reads it). Exits 1 when a stage failed, did not
report, or when an offline figure was reproduced by no stage.
"""
from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAGES = [  # (file stem, label)
    ("unit", "unit tests"),
    ("nbval", "notebooks (nbval)"),
    ("scalar-unit", "scalar kernels: unit tests"),
    ("scalar-nbval", "scalar kernels: notebooks"),
    ("full", "browser, sandbox and planted-bug tests"),
]


def read_junit(path: Path) -> dict | None:
    """Counts of one pytest run: passed, failed (failures + errors), skipped, seconds, failed names."""
    if not path.is_file():
        return None
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = {"passed": 0, "failed": 0, "skipped": 0, "seconds": 0.0, "failures": []}
    for suite in suites:
        counts["seconds"] += float(suite.get("time", 0))
        for case in suite.iter("testcase"):
            tags = {child.tag for child in case}
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            if tags & {"failure", "error"}:
                counts["failed"] += 1
                counts["failures"].append(name)
            elif "skipped" in tags:
                counts["skipped"] += 1
            else:
                counts["passed"] += 1
    return counts


def describe(counts: dict, unit: str = "") -> str:
    parts = [f"{counts['passed']} {unit}passed"]
    if counts["failed"]:
        parts.append(f"{counts['failed']} failed")
    if counts["skipped"]:
        parts.append(f"{counts['skipped']} skipped")
    return ", ".join(parts)


def figure_ids(path: Path, known: set) -> set:
    if not path.is_file():
        return set()
    return {line.strip() for line in path.read_text(encoding="utf-8").splitlines()} & known


def main(argv: list[str]) -> int:
    run_dir = Path(argv[1]) if len(argv) > 1 else ROOT / "artifacts" / "test-run"
    wanted = argv[2:] or [stem for stem, _ in STAGES]
    unknown = set(wanted) - {stem for stem, _ in STAGES}
    if unknown:
        raise SystemExit(f"unknown stage(s) {sorted(unknown)}: the stages are {[stem for stem, _ in STAGES]}")
    registry = json.loads((ROOT / "data" / "figures.json").read_text(encoding="utf-8"))
    known = set(registry)
    offline = {fid for fid, e in registry.items() if not e["needs_pretrained_weights"]}
    weights = known - offline
    runs = {stem: read_junit(run_dir / f"{stem}.xml") for stem in wanted}
    logged = {stem: figure_ids(run_dir / f"figures-{stem}.log", known) for stem, _ in STAGES}
    ok = True
    lines = []

    # figures: which ids some stage reproduced
    unit_ids, nb_ids = logged["unit"], logged["nbval"]
    scalar_ids = logged["scalar-unit"] | logged["scalar-nbval"]
    anywhere = set().union(*logged.values())
    offline_done = offline & anywhere
    with_weights = weights & anywhere
    weights_text = (f"{len(weights)} need GPT-2 weights "
                    + ("(skipped: no weights)" if not with_weights else
                       f"({len(with_weights)} reproduced with the weights)"))
    line = (f"figures: {len(known)} ids, {len(offline_done)} reproduced offline "
            f"(unit tests {len(offline & unit_ids)}, notebooks {len(offline & nb_ids)}"
            + (f", scalar kernels {len(offline & scalar_ids)}" if "scalar-unit" in wanted else "")
            + f"), {weights_text}")
    missing = sorted(offline - anywhere)
    if missing:
        ok = False
        line += f"; NOT reproduced by any stage: {', '.join(missing)}"
    lines.append(line)

    def stage_line(label, parts, seconds, failures):
        text = f"{label}: {'; '.join(parts)} ({seconds:.0f} s)"
        for name in failures[:10]:
            text += f"\n    FAILED {name}"
        if len(failures) > 10:
            text += f"\n    and {len(failures) - 10} more"
        return text

    for stem, label in STAGES:
        if stem not in runs or stem == "scalar-nbval":
            continue
        if stem == "scalar-unit":       # the two scalar-kernel stages share one line
            s_unit, s_nb = runs["scalar-unit"], runs.get("scalar-nbval")
            label = "scalar kernels (ATEN_CPU_CAPABILITY=default, 1 thread)"
            if s_unit is None or s_nb is None:
                lines.append(f"{label}: did not report (torch did not switch to its scalar kernels, "
                             "or pytest did not run to the end)")
            else:
                lines.append(stage_line(label, [describe(s_unit, "unit tests "), describe(s_nb, "notebook cells ")],
                                        s_unit["seconds"] + s_nb["seconds"], s_unit["failures"] + s_nb["failures"]))
        elif runs[stem] is None:
            lines.append(f"{label}: did not report (no {stem}.xml: pytest did not run to the end)")
        else:
            run = runs[stem]
            unit = "cells " if stem == "nbval" else ""
            lines.append(stage_line(label, [describe(run, unit)], run["seconds"], run["failures"]))

    reported = [r for r in runs.values() if r is not None]
    total = {k: sum(r[k] for r in reported) for k in ("passed", "failed", "skipped")}
    total["failed"] += len(runs) - len(reported)       # a stage that did not report counts as failed
    if total["failed"]:
        ok = False
    print("\n".join(lines))
    print(f"{total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
