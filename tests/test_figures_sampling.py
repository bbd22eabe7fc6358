"""Every sampling figure of notebook 07 that the five-token model produces matches the registry
(computers in course_lib.figures.interface, .decoding and .lab)."""
import inspect

import pytest
import torch

from course_lib.figures import FigureMismatch, check_figure, computer, figure
from course_lib.toys.five_token import FIVE_TOKEN

FIGURES = ["interface.greedy", "interface.greedy_path", "interface.interval", "interface.draws",
           "interface.temperature", "interface.top_k", "interface.top_k_ties", "interface.top_p",
           "interface.top_p_shape", "interface.gpt2_legacy_top_p", "interface.stable_softmax",
           "decoding.softmax_ln", "decoding.gap_01", "decoding.temp_low_high", "decoding.min_p",
           "decoding.loop", "lab.temp_210"]



def sampling_figure_values(model) -> dict:
    """figure id -> values, each from its registered computer, given ``model`` where it takes one."""
    return {fid: computer(fid)(model) if "model" in inspect.signature(computer(fid)).parameters
            else computer(fid)() for fid in FIGURES}


@pytest.fixture(scope="module")
def values():
    return sampling_figure_values(FIVE_TOKEN.load())


def test_every_sampling_figure_is_computed(values):
    assert sorted(values) == sorted(FIGURES)
    for fid in FIGURES:
        assert set(values[fid]) == set(figure(fid)["values"]), fid     # every registry value


def test_interface_figures_reproduce_the_article(values):
    v = values
    check_figure("interface.greedy", **v["interface.greedy"])
    check_figure("interface.greedy_path", **v["interface.greedy_path"])
    check_figure("interface.interval", **v["interface.interval"])
    check_figure("interface.draws", **v["interface.draws"])
    check_figure("interface.temperature", **v["interface.temperature"])
    check_figure("interface.top_k", **v["interface.top_k"])
    check_figure("interface.top_k_ties", **v["interface.top_k_ties"])
    check_figure("interface.top_p", **v["interface.top_p"])
    check_figure("interface.top_p_shape", **v["interface.top_p_shape"])
    check_figure("interface.gpt2_legacy_top_p", **v["interface.gpt2_legacy_top_p"])
    check_figure("interface.stable_softmax", **v["interface.stable_softmax"])


def test_decoding_figures_reproduce_the_article(values):
    v = values
    check_figure("decoding.softmax_ln", **v["decoding.softmax_ln"])
    check_figure("decoding.gap_01", **v["decoding.gap_01"])
    check_figure("decoding.temp_low_high", **v["decoding.temp_low_high"])
    check_figure("decoding.min_p", **v["decoding.min_p"])
    check_figure("decoding.loop", **v["decoding.loop"])
    check_figure("lab.temp_210", **v["lab.temp_210"])


def test_the_numbers_come_from_the_model():
    model = FIVE_TOKEN.load()
    with torch.no_grad():
        model.lm_head.bias[0] += 0.3            # a slightly different model ...
    moved = sampling_figure_values(model)
    with pytest.raises(FigureMismatch):         # ... no longer prints the article's numbers
        check_figure("interface.top_k", **moved["interface.top_k"])
    with pytest.raises(FigureMismatch):
        check_figure("interface.interval", **moved["interface.interval"])
