"""Re-derive the lab model's weights from the article's figures and compare with the file.

Marked slow (about 25 s on one core): part of the full run; ``pytest -m "not slow"`` leaves it out.
"""
import inspect

import pytest

from course_lib.toys import derive_lab as lab_derivation
from course_lib.figures import check_figure, compute, computer, load_registry
from course_lib.toys.lab import LAB
from course_lib.toys.weights import describe_table_differences


@pytest.mark.slow
def test_derivation_reproduces_the_shipped_weights():
    tables = lab_derivation.derive_tables()
    shipped = LAB.read_weights()["tables"]
    assert tables == shipped, (
        "the derivation no longer re-creates data/lab_model.json (either the file or the registry "
        "data/figures.json changed since the weights were solved):\n" + describe_table_differences(shipped, tables))
    assert lab_derivation.weight_file_text(tables) == LAB.weights_path.read_text(encoding="utf-8")
    model = LAB.from_tables(tables)
    lab_model_figures = [fid for fid in load_registry() if fid.startswith("lab.")
                         and "model" in inspect.signature(computer(fid)).parameters
                         and not load_registry()[fid]["needs_pretrained_weights"]]
    assert len(lab_model_figures) == 11
    for figure_id in lab_model_figures:
        check_figure(figure_id, **compute(figure_id, model))
