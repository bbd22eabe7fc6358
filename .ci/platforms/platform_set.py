"""Colab's and Kaggle's package sets (.ci/platforms/README.md), for the matrix's colab and kaggle rows.

    python platform_set.py constraints LIST          LIST as name==version lines, for pip's -c
                                                     (but its CUDA libraries: see CUDA_LIBRARIES)
    python platform_set.py unchanged LIST REPORT     exit 1, naming each one, if the install that
                                                     pip's `--dry-run --report REPORT` describes
                                                     would change a package of LIST

A package of LIST that the report would install at another version is changed (an upgrade or a
downgrade of theirs); one that LIST does not hold is added (printed, not a failure).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from urllib.parse import unquote

# a wheel's file name: name-version(-build)?-python-abi-platform.whl
WHEEL = re.compile(r"([A-Za-z0-9_.]+)-([0-9][^-]*)-.*\.whl")


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# The platform's torch is the CPU build, which needs no CUDA library; the one this machine gets
# from PyPI is the CUDA build, which pins its own nvidia-* libraries (torch 2.11.0: nvidia-nccl-cu13
# 2.28.9, where Colab's list holds 2.31.2 for other packages). As constraints, these would make
# torch's install impossible, so they are left out; the dry run still compares them.
CUDA_LIBRARIES = re.compile(r"nvidia-.*|cuda-.*")


def releases(path: str | Path) -> dict[str, str]:
    """{normal name: version} of a pip freeze list; a wheel URL gives its release without its
    local label (2.11.0+cpu → 2.11.0, the same release on PyPI); a git or file URL gives none."""
    found = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "==" in line:
            name, version = line.split("==", 1)
            found[normal(name)] = version.strip()
        elif " @ " in line:
            name, url = line.split(" @ ", 1)
            wheel = WHEEL.fullmatch(unquote(url).split("#")[0].rsplit("/", 1)[-1])
            if wheel and normal(wheel.group(1)) == normal(name):
                found[normal(name)] = wheel.group(2).split("+")[0]
    return found


def changes(listed: dict[str, str], report: dict) -> tuple[list[str], list[str]]:
    """(changed, added): what the install of a pip report does to the packages of ``listed``."""
    changed, added = [], []
    for item in report["install"]:
        name, version = normal(item["metadata"]["name"]), item["metadata"]["version"]
        if name == "course-lib":
            continue
        if name not in listed:
            added.append(f"{name} {version}")
        elif version.split("+")[0] != listed[name]:
            changed.append(f"{name} {listed[name]} -> {version}")
    return changed, added


def main(argv: list[str]) -> int:
    if argv[:1] == ["constraints"] and len(argv) == 2:
        for name, version in sorted(releases(argv[1]).items()):
            if not CUDA_LIBRARIES.fullmatch(name):
                print(f"{name}=={version}")
        return 0
    if argv[:1] == ["unchanged"] and len(argv) == 3:
        listed = releases(argv[1])
        report = json.loads(Path(argv[2]).read_text(encoding="utf-8"))
        changed, added = changes(listed, report)
        installs = [f'{i["metadata"]["name"]} {i["metadata"]["version"]}' for i in report["install"]]
        print(f"pip would install: {', '.join(installs) or 'nothing'}; "
              f"of the {len(listed)} packages of {Path(argv[1]).name}: "
              + (f"{len(changed)} CHANGED: {', '.join(changed)}" if changed else "none changed")
              + (f"; added (not in the list): {', '.join(added)}" if added else ""))
        return 1 if changed else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
