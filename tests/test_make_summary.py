"""`make test`'s and `make test-all`'s stages (.ci/test_stages.py) and closing lines (.ci/summary.py)
say what ran and what it proved."""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from _pytest.mark.expression import Expression     # how pytest reads -m

ROOT = Path(__file__).resolve().parent.parent


def load_ci(name: str):
    spec = importlib.util.spec_from_file_location(f"ci_{name}", ROOT / ".ci" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_summary():
    return load_ci("summary")


def junit(path: Path, passed: int, failed: int = 0, skipped: int = 0, prefix="tests.test_x"):
    cases = [f'<testcase classname="{prefix}" name="ok{i}" time="0.1"/>' for i in range(passed)]
    cases += [f'<testcase classname="{prefix}" name="bad{i}" time="0.1"><failure message="x"/></testcase>'
              for i in range(failed)]
    cases += [f'<testcase classname="{prefix}" name="skip{i}" time="0"><skipped message="no weights"/></testcase>'
              for i in range(skipped)]
    path.write_text('<?xml version="1.0"?><testsuites><testsuite name="pytest" time="12.5">'
                    + "".join(cases) + "</testsuite></testsuites>")


def offline_ids():
    import json
    registry = json.loads((ROOT / "data" / "figures.json").read_text(encoding="utf-8"))
    return [fid for fid, e in registry.items() if not e["needs_pretrained_weights"]], len(registry)


def a_run(tmp_path, failed_nbval=0, log_all=True):
    ids, _ = offline_ids()
    junit(tmp_path / "unit.xml", 10, skipped=2)
    junit(tmp_path / "nbval.xml", 5, failed=failed_nbval, prefix="notebooks.06_loss.ipynb")
    junit(tmp_path / "scalar-unit.xml", 4, skipped=1)
    junit(tmp_path / "scalar-nbval.xml", 5)
    junit(tmp_path / "full.xml", 7, prefix="tests.test_grader")
    for stage in ("unit", "nbval", "scalar-unit"):
        logged = ids if log_all else ids[1:]
        (tmp_path / f"figures-{stage}.log").write_text("\n".join(logged + ["test.fig"]) + "\n")
    return ids


def test_a_passing_run_prints_one_line_per_stage_and_a_total(tmp_path, capsys):
    ids = a_run(tmp_path)
    _, total_ids = offline_ids()
    assert load_summary().main(["summary.py", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"figures: {total_ids} ids, {len(ids)} reproduced offline (unit tests {len(ids)}, "
                        f"notebooks {len(ids)}, scalar kernels {len(ids)}), "
                        f"{total_ids - len(ids)} need GPT-2 weights (skipped: no weights)")
    assert lines[1] == "unit tests: 10 passed, 2 skipped (12 s)"
    assert lines[2] == "notebooks (nbval): 5 cells passed (12 s)"
    assert lines[3] == ("scalar kernels (ATEN_CPU_CAPABILITY=default, 1 thread): 4 unit tests passed, "
                        "1 skipped; 5 notebook cells passed (25 s)")
    assert lines[4] == "browser, sandbox and planted-bug tests: 7 passed (12 s)"
    assert lines[-1] == "31 passed, 0 failed, 3 skipped"


def test_make_test_s_summary_names_its_two_stages_only(tmp_path, capsys):
    ids = a_run(tmp_path)
    assert load_summary().main(["summary.py", str(tmp_path), "unit", "nbval"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"figures: ") and f"(unit tests {len(ids)}, notebooks {len(ids)}), " in lines[0]
    assert lines[1:] == ["unit tests: 10 passed, 2 skipped (12 s)", "notebooks (nbval): 5 cells passed (12 s)",
                         "15 passed, 0 failed, 2 skipped"]


def test_a_failure_or_a_missing_stage_or_figure_fails_the_summary(tmp_path, capsys):
    a_run(tmp_path, failed_nbval=1)
    assert load_summary().main(["summary.py", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "FAILED notebooks.06_loss.ipynb::bad0" in out and out.splitlines()[-1] == "31 passed, 1 failed, 3 skipped"

    (tmp_path / "scalar-nbval.xml").unlink()
    assert load_summary().main(["summary.py", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "scalar kernels (ATEN_CPU_CAPABILITY=default, 1 thread): did not report" in out
    assert out.splitlines()[-1] == "26 passed, 2 failed, 3 skipped"

    for f in tmp_path.iterdir():
        f.unlink()
    ids = a_run(tmp_path, log_all=False)
    assert load_summary().main(["summary.py", str(tmp_path)]) == 1
    assert f"NOT reproduced by any stage: {ids[0]}" in capsys.readouterr().out


def dry_run(tier: str) -> dict:
    out = subprocess.run([sys.executable, ".ci/test_stages.py", tier, "--dry-run"], cwd=ROOT,
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return dict(line.split(": ", 1) for line in out.splitlines())


def test_make_test_runs_the_quick_tier_and_make_test_all_everything():
    quick, full = dry_run("test"), dry_run("test-all")
    assert list(quick) == ["unit", "nbval"]
    assert list(full) == ["unit", "nbval", "scalar-unit", "scalar-nbval", "full"]
    assert all(full[name] == quick[name] for name in quick)          # make test's stages, as they are
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^test: .*\n\t@\$\(STAGES\) test$", makefile, re.M)
    assert re.search(r"^test-all: .*\n\t@\$\(STAGES\) test-all$", makefile, re.M)
    for command in full.values():
        assert " -m pytest -rs " in command and " -n 2 " in command       # skip reasons shown; two workers


def test_the_two_tiers_run_every_test_once():
    """The unit stage's marker expression and the full stage's split the tests between them (the
    install tests aside: make test-wheel, make test-binder), and every marker they name is registered."""
    stages = load_ci("test_stages")
    registered = {m.split(":")[0] for m in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]}
    assert {"browser", "sandbox", "planted", "install"} <= registered
    quick, full = Expression.compile(stages.QUICK), Expression.compile(stages.FULL)
    for marks in ({"browser"}, {"sandbox"}, {"planted"}, set(), {"slow"}, {"browser", "slow"}, {"sandbox", "planted"}):
        def has(name, **_):
            return name in marks
        assert quick.evaluate(has) != full.evaluate(has), marks         # exactly one tier runs it
    assert not quick.evaluate(lambda name, **_: name == "install")
    assert not full.evaluate(lambda name, **_: name == "install")


def test_nbval_runs_without_weights_and_the_scalar_stages_on_scalar_kernels():
    full = dry_run("test-all")
    for name in ("nbval", "scalar-nbval"):
        assert "COURSE_GPT2_WEIGHTS=(unset) HF_HUB_CACHE=<run>/empty-hub-cache" in full[name]
        assert "--nbval --nbval-current-env" in full[name] and "verbosity_assertions=2" in full[name]
        assert "--dist loadfile" in full[name] and full[name].endswith(" notebooks")
    assert "--ignore=notebooks/zh" in full["scalar-nbval"] and "--ignore" not in full["nbval"]
    scalar = "ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 MKL_NUM_THREADS=1"
    assert scalar in full["scalar-unit"] and scalar in full["scalar-nbval"]
    assert "tests/test_figures.py" in full["scalar-unit"] and "tests/test_margins.py" in full["scalar-unit"]
    assert "-m 'not slow and not browser" in full["scalar-unit"]


def test_the_run_folder_is_artifacts_test_run_emptied_or_a_new_one_where_the_checkout_is_read_only(
        tmp_path, monkeypatch, capsys):
    course = tmp_path / "course"
    (course / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "test_stages.py", course / ".ci")
    spec = importlib.util.spec_from_file_location("copied_test_stages", course / ".ci" / "test_stages.py")
    stages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stages)
    monkeypatch.delenv("COURSE_ARTIFACTS", raising=False)

    (course / "artifacts" / "test-run").mkdir(parents=True)
    (course / "artifacts" / "test-run" / "unit.xml").write_text("a past run's")
    run = stages.run_folder("")
    assert run == course / "artifacts" / "test-run" and sorted(p.name for p in run.iterdir()) == ["empty-hub-cache"]

    shutil.rmtree(course / "artifacts")
    (course / "artifacts").write_text("")         # artifacts/ cannot be made there (as in a read-only checkout)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", None)             # tempfile reads TMPDIR again
    run = stages.run_folder("")
    assert run.is_relative_to(tmp_path / "tmp") and run.name == "test-run" and (run / "empty-hub-cache").is_dir()
    assert os.environ["COURSE_ARTIFACTS"] == str(run.parent)      # the tests' own files go beside it
    assert f"the course folder is read-only: this run's files go to {run.parent}" in capsys.readouterr().out
