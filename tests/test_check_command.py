"""docs/instructors.md's nbval command, `python -m course_lib.check`, works where there is no
checkout: its sanitize file ships inside course_lib, and it hides GPT-2's weights as `make test`
does. Run here in a folder with no .ci/ (tests/test_wheel_install.py runs it on a wheel install)."""
import os
import subprocess
import sys
from pathlib import Path

import nbformat

from course_lib import check

ROOT = Path(__file__).resolve().parent.parent


def notebook(path: Path, *cells: tuple[str, str]) -> Path:
    """A notebook whose code cells (source, stored stdout) were 'run' with those outputs."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for count, (source, shown) in enumerate(cells, start=1):
        nb.cells.append(nbformat.v4.new_code_cell(source, execution_count=count, outputs=[
            nbformat.v4.new_output("stream", name="stdout", text=shown)]))
    nbformat.write(nb, str(path))
    return path


def run_check(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, COURSE_GPT2_WEIGHTS=str(folder / "model.safetensors"))
    return subprocess.run([sys.executable, "-m", "course_lib.check", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_sanitize_file_is_course_libs_and_the_checkouts_points_to_it():
    assert check.SANITIZE.parent == ROOT / "course_lib" and "[memory addresses]" in check.SANITIZE.read_text()
    assert (ROOT / ".ci" / "nbval_sanitize.cfg").resolve() == check.SANITIZE.resolve()


def test_a_notebook_passes_sanitized_with_the_weights_hidden_and_a_changed_output_fails(tmp_path):
    assert not (tmp_path / ".ci").exists()
    notebook(tmp_path / "good.ipynb",
             ("print(object())", "<object object at 0x7f1234567890>\n"),          # an address: sanitized
             ("import os; print(os.environ.get('COURSE_GPT2_WEIGHTS'))", "None\n"))  # the weights hidden
    notebook(tmp_path / "changed.ipynb", ("print(6 * 7)", "41\n"))
    done = run_check(tmp_path, "good.ipynb")
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
    done = run_check(tmp_path, "changed.ipynb")
    assert done.returncode == 1 and "1 failed" in done.stdout and "41" in done.stdout, done.stdout[-3000:]
    # --nbval-lax: runs top to bottom, whatever it prints (a learner's changed copy)
    done = run_check(tmp_path, "--nbval-lax", "changed.ipynb")
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


def test_with_no_path_it_checks_notebooks_here_or_says_what_to_name(tmp_path):
    done = run_check(tmp_path)
    assert done.returncode == 2 and "no notebooks/ folder in" in done.stderr and "name the notebooks" in done.stderr
    assert check.nbval_command([])[-1] == "notebooks"
    assert check.nbval_command(["nb/03.ipynb"])[-1] == "nb/03.ipynb"
    assert check.nbval_command(["-n", "2"])[-3:] == ["-n", "2", "notebooks"]     # 2 is -n's value, not a path
    command = check.nbval_command(["--nbval-lax", "x.ipynb"])
    assert "--nbval" not in command and command[command.index("--nbval-sanitize-with") + 1] == str(check.SANITIZE)
