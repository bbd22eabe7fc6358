"""Re-derive the lab model's weights from the article's figures and compare with the file.

Marked slow (about 6 s on one core: the polish loop replays the unchanged part of the forward pass, derive_lab.OutputLayerOnly): part of the full run; ``pytest -m "not slow"`` leaves it out.
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


def test_the_output_layer_only_forward_gives_the_full_forwards_numbers():
    """derive_lab.OutputLayerOnly (the polish loop's shortcut) replays LN_f's output and the cached
    keys and values per id sequence: every figure value and every generated step's logits are
    bit for bit those of the full forward pass, also after the output biases change."""
    import torch

    from course_lib.toys.lab import greedy_generation
    model = LAB.load()
    shipped = model.lm_head.bias.detach().clone()

    def everything():
        run = greedy_generation(model, record_logits=True)
        return ([compute(fid, model) for fid in lab_derivation.BIAS_FIGURES],
                run.ids, [step.logits for step in run.steps], model(torch.tensor([[0, 1, 2, 3]])).tolist())

    shifts = (0.0, 0.25, -3.0)            # -3: another greedy path, after the prompt's replayed cache
    full = {}
    for shift in shifts:
        lab_derivation.with_biases(model, (shipped + shift * torch.arange(12) / 12).tolist())
        full[shift] = everything()
    assert full[-3.0][1] != full[0.0][1]
    with lab_derivation.OutputLayerOnly(model) as memo:
        for shift in shifts + shifts:
            lab_derivation.with_biases(model, (shipped + shift * torch.arange(12) / 12).tolist())
            assert everything() == full[shift], shift
    assert memo.seen and "forward" not in vars(model)              # it was used, and removed after
