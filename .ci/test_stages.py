"""The stages of `make test` and `make test-all`, run one after the other, then the closing lines.

    python .ci/test_stages.py test               what `make test` runs
    python .ci/test_stages.py test-all           what `make test-all` runs
    python .ci/test_stages.py test-all --dry-run each stage's command and settings; runs nothing

`make test` is what a learner or an instructor runs to know the course holds on their machine:

    unit          the unit tests that need no browser, no sandbox and no planted bug
    nbval         every notebook (notebooks/: both editions and the solutions) re-run under nbval
                  and compared with its stored outputs, GPT-2's weights hidden

`make test-all` runs those, then:

    scalar-unit   the figure-bearing unit tests on torch's scalar (non-vectorised) CPU kernels, one
                  thread: the same digits must come out
    scalar-nbval  nbval on the English notebooks, the same way (the Chinese twins run the same code,
                  cell for cell: tests/test_zh_edition.py)
    full          the browser tests, the grader's sandbox tests and the planted-bug suites

Each stage is one pytest run on two pytest-xdist workers (--workers 1: one process). It writes
<stage>.xml (JUnit) and figures-<stage>.log (every figure id it reproduced) to the run's folder:
artifacts/test-run/, or, where the checkout is read-only, a new folder under $TMPDIR (the tests'
own files go beside it: tests/_artifacts.py). Every stage runs even after one fails;
.ci/summary.py then prints one line per stage and a total, and the exit code is 1 if anything
failed.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

QUICK = "not browser and not sandbox and not planted and not install"
FULL = "browser or sandbox or planted"
# a differing output shown as whole lines: a ✓ line's figure id is on the line that differs
NBVAL = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", ".ci/nbval_sanitize.cfg",
         "-o", "verbosity_assertions=2"]
SCALAR = {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
SCALAR_CHECK = ("import sys, torch; c = torch.backends.cpu.get_cpu_capability(); "
                "print('torch CPU capability:', c, '| threads:', torch.get_num_threads()); "
                "sys.exit(c != 'DEFAULT' or torch.get_num_threads() != 1)")
# The files the scalar-kernel stage re-runs: those that check figures or their margins, except
# the tokenizer's and GPT-2's architecture tests (integers and shapes, compared with tiktoken and
# transformers) and the Chinese edition's (words, not numbers).
NOT_FIGURE_TESTS = {"test_tokenizer.py", "test_gpt2.py", "test_language.py", "test_zh_edition.py"}


def figure_tests() -> list[str]:
    return [f"tests/{p.name}" for p in sorted((ROOT / "tests").glob("test_*.py"))
            if p.name not in NOT_FIGURE_TESTS and re.search(r"check_figure|margins", p.read_text(encoding="utf-8"))]


def stages(tier: str) -> list[tuple[str, list[str], dict]]:
    """(name, pytest arguments, extra environment) of each stage of ``tier`` ("test" or "test-all")."""
    # pretrained GPT-2 hidden (a local copy's path unset, an empty hub cache): the stored outputs
    # were made without it
    no_weights = {"COURSE_GPT2_WEIGHTS": None, "HF_HUB_CACHE": "<run>/empty-hub-cache"}
    found = [("unit", ["-m", QUICK, "--durations=15", "tests"], {}),
             ("nbval", [*NBVAL, "notebooks"], no_weights)]
    if tier == "test-all":
        found += [("scalar-unit", ["-m", f"not slow and {QUICK}", *figure_tests()], SCALAR),
                  ("scalar-nbval", [*NBVAL, "--ignore=notebooks/zh", "notebooks"], {**no_weights, **SCALAR}),
                  ("full", ["-m", FULL, "--durations=15", "tests"], {})]
    return found


def pytest_command(name: str, args: list[str], workers: int, run: Path) -> list[str]:
    command = [sys.executable, "-m", "pytest", "-rs", f"--junitxml={run / name}.xml"]
    if workers > 1:       # a notebook's cells stay together on one worker, in order (loadfile)
        command += ["-n", str(workers), "--dist", "loadfile" if "--nbval" in args else "loadgroup"]
    return command + args


def stage_env(name: str, extra: dict, workers: int, run: Path) -> dict:
    env = {**os.environ, "COURSE_FIGURE_LOG": str(run / f"figures-{name}.log")}
    if workers > 1:
        # each worker's torch has one OpenMP thread per core; an idle one spins, waiting for
        # work, and takes the core from the other worker. Passive threads sleep at once; which
        # threads compute, and so every value, stays the same.
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value.replace("<run>", str(run))
    return env


def run_folder(wanted: str) -> Path:
    """The run's folder, emptied: ``wanted``, else artifacts/test-run, else (a read-only
    checkout) a new folder under $TMPDIR, named in COURSE_ARTIFACTS for the tests' own files."""
    if wanted:
        run = Path(wanted)
    else:
        try:
            (ROOT / "artifacts").mkdir(exist_ok=True)
            writable = os.access(ROOT / "artifacts", os.W_OK)
        except OSError:
            writable = False
        if writable:
            run = ROOT / "artifacts" / "test-run"
        else:
            base = Path(tempfile.mkdtemp(prefix="course-test."))
            os.environ["COURSE_ARTIFACTS"] = str(base / "artifacts")
            run = base / "artifacts" / "test-run"
            print(f"the course folder is read-only: this run's files go to {base / 'artifacts'}", flush=True)
    shutil.rmtree(run, ignore_errors=True)
    (run / "empty-hub-cache").mkdir(parents=True)
    return run.resolve()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tier", choices=["test", "test-all"])
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers per stage (1: one process)")
    parser.add_argument("--run", default="", help="the folder for the run's files (default: artifacts/test-run)")
    parser.add_argument("--dry-run", action="store_true", help="print each stage's command; run nothing")
    options = parser.parse_args(argv)
    os.chdir(ROOT)
    todo = stages(options.tier)
    if options.dry_run:
        for name, args, extra in todo:
            settings = " ".join(f"{k}={'(unset)' if v is None else v}" for k, v in extra.items())
            command = pytest_command(name, args, options.workers, Path("<run>"))
            print(f"{name}: {settings + ' ' if settings else ''}{shlex.join(command)}")
        return 0

    run = run_folder(options.run)
    # matplotlib says on stderr that it is building its font cache; built now, before any stage,
    # that message cannot reach a notebook's output
    subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], check=True)
    failed = False
    for name, args, extra in todo:
        print(f"== {name}", flush=True)
        if extra.get("ATEN_CPU_CAPABILITY"):
            check = subprocess.run([sys.executable, "-c", SCALAR_CHECK], env={**os.environ, **SCALAR})
            if check.returncode != 0:
                print("torch did not switch to its scalar kernels: stage not run", flush=True)
                failed = True
                continue
        env = stage_env(name, extra, options.workers, run)
        failed |= subprocess.run(pytest_command(name, args, options.workers, run), env=env).returncode != 0
    print("== summary", flush=True)
    import summary              # .ci/summary.py, beside this script
    failed |= summary.main(["summary.py", str(run), *(name for name, _, _ in todo)]) != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
