"""`make test`'s stages and closing lines (.ci/summary.py) say what ran and what it proved."""
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_summary():
    spec = importlib.util.spec_from_file_location("ci_summary", ROOT / ".ci" / "summary.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    assert lines[-1] == "24 passed, 0 failed, 3 skipped"


def test_a_failure_or_a_missing_stage_or_figure_fails_the_summary(tmp_path, capsys):
    a_run(tmp_path, failed_nbval=1)
    assert load_summary().main(["summary.py", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "FAILED notebooks.06_loss.ipynb::bad0" in out and out.splitlines()[-1] == "24 passed, 1 failed, 3 skipped"

    (tmp_path / "scalar-nbval.xml").unlink()
    assert load_summary().main(["summary.py", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "scalar kernels (ATEN_CPU_CAPABILITY=default, 1 thread): did not report" in out
    assert out.splitlines()[-1] == "19 passed, 2 failed, 3 skipped"

    for f in tmp_path.iterdir():
        f.unlink()
    ids = a_run(tmp_path, log_all=False)
    assert load_summary().main(["summary.py", str(tmp_path)]) == 1
    assert f"NOT reproduced by any stage: {ids[0]}" in capsys.readouterr().out


def test_makefile_runs_the_scalar_kernel_stage_and_shows_skip_reasons():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^PYTEST := .* -rs\b", makefile, re.M) and re.search(r"^PYTEST_ONE := .* -rs\b", makefile, re.M)
    assert "SCALAR := ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 MKL_NUM_THREADS=1" in makefile
    assert makefile.count("$(SCALAR)") >= 3 and "get_cpu_capability()" in makefile
    assert ".ci/summary.py" in makefile and "exit $$status" in makefile
    assert "verbosity_assertions=2" in makefile          # a differing ✓ line is shown whole
