"""Re-derive the lab model's weights from the article's figures and compare with the file.

Marked slow (about 25 s on one core): part of the full run; ``pytest -m "not slow"`` leaves it out.
"""
import pytest

from course_lib import lab_derivation
from course_lib.figures import check_figure
from course_lib.lab_figures import LAB_FIGURES
from course_lib.lab_model import LAB_WEIGHTS_PATH, lab_model_from_tables, read_lab_weights
from course_lib.weight_files import describe_table_differences


@pytest.mark.slow
def test_derivation_reproduces_the_shipped_weights():
    tables = lab_derivation.derive_tables()
    shipped = read_lab_weights()["tables"]
    assert tables == shipped, (
        "the derivation no longer re-creates data/lab_model.json (either the file or the registry "
        "data/figures.json changed since the weights were solved):\n" + describe_table_differences(shipped, tables))
    assert lab_derivation.weight_file_text(tables) == LAB_WEIGHTS_PATH.read_text(encoding="utf-8")
    model = lab_model_from_tables(tables)
    for figure_id, compute in LAB_FIGURES.items():
        check_figure(figure_id, **compute(model))
