"""Check notebooks against their stored outputs with nbval, as `make test` does, from a checkout
or from an installed course (a wheel, a shared read-only install: no checkout, no .ci/ folder).

    python -m course_lib.check notebooks/03_attention.ipynb
    python -m course_lib.check notebooks/zh
    python -m course_lib.check --nbval-lax my-notebooks/03_attention.ipynb

runs ``pytest --nbval --nbval-current-env --nbval-sanitize-with <nbval_sanitize.cfg>`` on the
paths given (default: ``notebooks`` in the current folder). The sanitize file ships inside
course_lib (the checkout's ``.ci/nbval_sanitize.cfg`` points to it): it hides memory addresses
and kernel temp paths only, never a figure. The stored outputs were made without GPT-2's trained
weights, so the run hides them (``COURSE_GPT2_WEIGHTS`` unset, an empty Hugging Face cache).
Any other argument goes to pytest as it is (``--nbval-lax`` replaces ``--nbval``: a notebook a
learner changed must run top to bottom, whatever it prints). Needs pytest and nbval, the
``check`` extra: ``pip install "course_lib[check]"``. Documented in docs/instructors.md.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SANITIZE = Path(__file__).with_name("nbval_sanitize.cfg")


def named_paths(args: list[str]) -> list[str]:
    """The arguments that name a notebook or a folder (not an option, nor an option's value: -n 2)."""
    return [a for a in args if not a.startswith("-") and (a.endswith(".ipynb") or Path(a).exists())]


def nbval_command(args: list[str]) -> list[str]:
    """The pytest command line that checks ``args`` (notebook paths and pytest options)."""
    paths = named_paths(args)
    mode = [] if "--nbval-lax" in args else ["--nbval"]
    # verbosity_assertions=2: a differing output is shown as whole lines
    return ([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *mode, "--nbval-current-env",
             "--nbval-sanitize-with", str(SANITIZE), "-o", "verbosity_assertions=2", *args]
            + ([] if paths else ["notebooks"]))


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    missing = [name for name in ("pytest", "nbval") if importlib.util.find_spec(name) is None]
    if missing:
        print(f"python -m course_lib.check needs {' and '.join(missing)}, which this Python lacks: "
              f'pip install "course_lib[check]"', file=sys.stderr)
        return 2
    if not named_paths(args) and not Path("notebooks").is_dir():
        print(f"python -m course_lib.check: no notebooks/ folder in {Path.cwd()}: name the notebooks "
              "or folders to check (python -m course_lib.check path/to/03_attention.ipynb)", file=sys.stderr)
        return 2
    env = dict(os.environ)
    env.pop("COURSE_GPT2_WEIGHTS", None)
    with tempfile.TemporaryDirectory(prefix="course-check-hf-") as empty_cache:
        env["HF_HUB_CACHE"] = empty_cache
        return subprocess.run(nbval_command(args), env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
