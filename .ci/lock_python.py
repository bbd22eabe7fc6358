"""Every package of the lock must install on the oldest Python pyproject.toml declares (a Python
3.11.0 as well as Debian 12's 3.11.2): a package's Requires-Python can be stricter than ours
(soupsieve 3.x and 4.x want 3.11.5 or newer). This script proves it for the lock and writes what
it read to .ci/requires-python.txt, which tests/test_environment.py checks without the network.

    python .ci/lock_python.py        # after every change of .ci/constraints.txt (downloads; pip's cache helps)

It asks pip for every locked version as a wheel for that Python (--python-version), so a version
whose Requires-Python leaves it out fails here, with pip's message, before any learner meets it.
"""
import re
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / ".ci" / "constraints.txt"
OUT = ROOT / ".ci" / "requires-python.txt"
HEADER = """\
# Requires-Python of every package in .ci/constraints.txt, read from the wheel pip picks for the
# oldest Python that pyproject.toml declares ({oldest}). Written by .ci/lock_python.py; checked by
# tests/test_environment.py (each must admit {oldest}; an installed package must agree).
"""


def oldest_python() -> str:
    """'3.11.0' from requires-python '>=3.11'."""
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    floor = re.fullmatch(r">=\s*(\d+)\.(\d+)(?:\.(\d+))?", spec)
    if not floor:
        sys.exit(f"pyproject.toml: requires-python {spec!r} is not of the form '>=3.N'")
    major, minor, micro = floor.groups()
    return f"{major}.{minor}.{micro or 0}"


def main() -> None:
    oldest = oldest_python()
    pins = [line for line in LOCK.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    with tempfile.TemporaryDirectory() as tmp:
        requirements = Path(tmp) / "lock.txt"
        requirements.write_text("\n".join(pins) + "\n", encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                               "--python-version", oldest, "-q", "-d", tmp, "-r", str(requirements)])
        if done.returncode:
            sys.exit(f"a version in .ci/constraints.txt does not install on Python {oldest} (pip's message above)")
        lines = []
        for wheel in sorted(Path(tmp).glob("*.whl")):
            with zipfile.ZipFile(wheel) as archive:
                name = next(n for n in archive.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
                meta = Parser().parsestr(archive.read(name).decode("utf-8"))
            version = meta["Version"].split("+")[0]                # torch's +cpu: the lock holds 2.13.0
            lines.append(f"{meta['Name']}=={version} {meta.get('Requires-Python', '') or ''}".rstrip())
    OUT.write_text(HEADER.format(oldest=oldest) + "\n".join(sorted(lines, key=str.lower)) + "\n", encoding="utf-8")
    print(f"{OUT.relative_to(ROOT)}: {len(lines)} packages, each installs on Python {oldest}")


if __name__ == "__main__":
    main()
