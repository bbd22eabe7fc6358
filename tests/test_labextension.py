"""The course's JupyterLab extension (course_lib/ui/labextension_src/index.js: a link to a
solution lands in one click; tests/test_browser_layout.py checks what it does) is installed where
JupyterLab looks for extensions, as built.

pip installs the committed build, course_lib/ui/labextension/, into
``share/jupyter/labextensions/course-lib-solution-links/`` of the environment (pyproject.toml's
``[tool.setuptools.data-files]``; in an editable install too, .ci/course_build.py), a copy made at
install time: after a rebuild, ``make setup`` (or ``pip install -e .``) installs it again.
No browser, no node.
"""
import json
import subprocess
import sys
from pathlib import Path

from jupyter_core.paths import jupyter_path

ROOT = Path(__file__).resolve().parent.parent
NAME = "course-lib-solution-links"
SOURCE = ROOT / "course_lib" / "ui" / "labextension_src"
BUILT = ROOT / "course_lib" / "ui" / "labextension"
INSTALLED = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / NAME


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_build_is_the_source_built():
    source = json.loads((SOURCE / "package.json").read_text(encoding="utf-8"))
    built = json.loads((BUILT / "package.json").read_text(encoding="utf-8"))
    # the builder copies package.json and adds where the extension's code starts
    entry = built["jupyterlab"].pop("_build")
    assert built == source, "course_lib/ui/labextension/package.json differs from the source's: rebuild (build.sh)"
    assert (BUILT / entry["load"]).is_file(), entry
    code = "".join(p.read_text(encoding="utf-8") for p in (BUILT / "static").glob("*.js"))
    plugin_id = f"{NAME}:plugin"
    assert plugin_id in (SOURCE / "index.js").read_text(encoding="utf-8") and plugin_id in code


def test_the_extension_is_installed_where_jupyterlab_looks():
    assert str(INSTALLED.parent) in jupyter_path("labextensions"), (INSTALLED.parent, jupyter_path("labextensions"))
    expected = files(BUILT) | {"install.json": (SOURCE / "install.json").read_bytes()}
    assert INSTALLED.is_dir(), f"{INSTALLED} is missing: install the course again (make setup, or pip install -e .)"
    installed = files(INSTALLED)
    assert installed == expected, (
        f"{INSTALLED} is not the committed build (differing files: {sorted(set(installed) ^ set(expected)) or 'contents'}): "
        f"install the course again (make setup, or pip install -e .)")


def test_jupyterlab_lists_it_enabled():
    listed = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "list"], capture_output=True,
                            text=True, timeout=120)
    line = next((l for l in (listed.stdout + listed.stderr).splitlines() if NAME in l), "")
    version = json.loads((BUILT / "package.json").read_text(encoding="utf-8"))["version"]
    # e.g. "course-lib-solution-links v0.1.0 enabled OK (python, course_lib)", with colour codes
    words = line.replace("\x1b[32m", "").replace("\x1b[0m", "").split()
    assert words[:4] == [NAME, f"v{version}", "enabled", "OK"], listed.stdout + listed.stderr
