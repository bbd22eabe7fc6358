"""Re-execute notebooks top to bottom, the way they are committed (for maintainers).

    .venv/bin/python .ci/execute_notebooks.py notebooks/02_embeddings.ipynb ...
    .venv/bin/python .ci/execute_notebooks.py notebooks/zh/02_embeddings.ipynb ...   # the Chinese twin

After changing an English notebook's code, make the same change in its twin under notebooks/zh/
(tests/test_zh_edition.py fails until you do) and re-execute both.

Runs each notebook in a fresh kernel with GPT-2's weights hidden (as `make test` runs nbval),
one thread, and writes it back without execution timestamps, so a diff shows only outputs.
Prints each notebook's wall time, kernel start included (docs/testing.md, "Sizes and times").
"""
import os
import sys
import tempfile
import time

import nbformat
from nbclient import NotebookClient


def execute(path: str) -> None:
    start = time.perf_counter()
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}}).execute()
    for cell in nb.cells:
        cell.get("metadata", {}).pop("execution", None)
    nbformat.write(nb, path)
    print(f"executed {path} in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    os.environ.pop("COURSE_GPT2_WEIGHTS", None)
    os.environ["HF_HUB_CACHE"] = tempfile.mkdtemp()
    for notebook in sys.argv[1:]:
        execute(notebook)
