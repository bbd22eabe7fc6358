"""course_lib.bench.memory --notebooks: the peak it prints is the kernel's own, freed memory included."""
import sys

import nbformat
import pytest

from course_lib.bench import memory

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the bench reads Linux's /proc")


def notebook(path, code):
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(code))
    nbformat.write(nb, path)
    return path


def test_the_printed_peak_is_the_kernels_highest_memory(tmp_path, capsys):
    small = notebook(tmp_path / "small.ipynb", "x = 1")
    # 200 MB written (so resident), then freed before the run ends: only a peak still shows it
    big = notebook(tmp_path / "big.ipynb", "import numpy as np\na = np.ones(25_000_000)\ndel a")
    peak_small = memory.notebook_peak(small)
    assert 20 < peak_small < 400
    assert memory.run_notebooks([big, small], limit=peak_small + 100) is False
    lines = capsys.readouterr().out.splitlines()
    big_line, small_line = (next(line for line in lines if line.lstrip().startswith(str(p))) for p in (big, small))
    assert big_line.endswith("ABOVE THE LIMIT") and small_line.endswith("ok")
    assert float(big_line.split()[1]) - float(small_line.split()[1]) > 180
    assert lines[-1] == f"2 notebooks: NOT ALL within {peak_small + 100:.0f} MB"
