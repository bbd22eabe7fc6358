"""The hand-set five-token model reproduces every interface.toy.* figure, bit for bit where printed in full."""
import json
import re

import pytest
import torch

from course_lib.toys import derive_five_token as derivation
from course_lib.figures import FigureMismatch, check_figure, expected, load_registry, to_float32
from course_lib.toys.derive_five_token import figure_values
from course_lib.toys.five_token import FIVE_TOKEN, FIVE_TOKEN_CONFIG, INPUT_IDS, TARGET_IDS
from course_lib.model.loss import mean_loss, position_losses
from course_lib.toys.weights import describe_table_differences

TOY_FIGURES = sorted(k for k in load_registry() if k.startswith("interface.toy."))


@pytest.fixture(scope="module")
def values():
    return figure_values(FIVE_TOKEN.load())


def test_figure_values_cover_every_toy_figure(values):
    assert sorted(values) == TOY_FIGURES
    for figure_id in TOY_FIGURES:
        assert set(values[figure_id]) == set(load_registry()[figure_id]["values"]), figure_id


def test_shipped_weights_reproduce_the_input_figures(values):
    check_figure("interface.toy.vocab", **values["interface.toy.vocab"])
    check_figure("interface.toy.x0", **values["interface.toy.x0"])


def test_shipped_weights_reproduce_the_block_figures(values):
    check_figure("interface.toy.attention", **values["interface.toy.attention"])
    check_figure("interface.toy.layernorm", **values["interface.toy.layernorm"])
    check_figure("interface.toy.mlp", **values["interface.toy.mlp"])
    check_figure("interface.toy.h2", **values["interface.toy.h2"])


def test_shipped_weights_reproduce_the_output_figures(values):
    check_figure("interface.toy.head_shape", **values["interface.toy.head_shape"])
    check_figure("interface.toy.z1", **values["interface.toy.z1"])
    check_figure("interface.toy.logits", **values["interface.toy.logits"])
    check_figure("interface.toy.dot_vs_cos", **values["interface.toy.dot_vs_cos"])


def test_shipped_weights_reproduce_the_loss_figures(values):
    check_figure("interface.toy.targets", **values["interface.toy.targets"])
    check_figure("interface.toy.loss_last", **values["interface.toy.loss_last"])
    check_figure("interface.toy.loss_mean", **values["interface.toy.loss_mean"])
    check_figure("interface.toy.grads", **values["interface.toy.grads"])


def test_a_wrong_weight_breaks_the_figures():
    model = FIVE_TOKEN.load()
    with torch.no_grad():
        model.blocks[0].mlp.down.weight[0, 2] += 1e-6      # one solved entry, nudged
    with pytest.raises(FigureMismatch):
        check_figure("interface.toy.h2", **figure_values(model)["interface.toy.h2"])


def as_float32(values) -> list[float]:
    """Values rounded to float32, as the article's float32 prints show them (flat list)."""
    return to_float32(torch.as_tensor(values, dtype=torch.float64).flatten().tolist())


def assert_same_float32(got, want, what):
    """Equal float32 values, or a message with both sides in decimal and hex."""
    got, want = as_float32(got), as_float32(want)
    wrong = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert len(got) == len(want) and not wrong, f"{what}: float32 values differ at {wrong}\n" + "\n".join(
        f"  [{i}] got {got[i]!r} ({got[i].hex()}), article {want[i]!r} ({want[i].hex()})" for i in wrong)


def printed_numbers():
    """Logits, h₂, the three losses and the mean from the model, rounded to float32."""
    model = FIVE_TOKEN.load()
    logits, trace = FIVE_TOKEN.run(model)
    losses = position_losses(logits, [TARGET_IDS])
    mean = mean_loss(logits, [TARGET_IDS])
    return {"logits": as_float32(logits[0, 2]), "h2": as_float32(trace["h"][0, 2]),
            "losses": as_float32(losses), "mean": as_float32(mean),
            "attention": as_float32(trace["layers"][0]["attention_weights"])}


def test_the_model_computes_in_float64():
    model = FIVE_TOKEN.load()
    assert {p.dtype for p in model.parameters()} == {torch.float64}
    logits, trace = FIVE_TOKEN.run(model)
    assert logits.dtype == trace["h"].dtype == torch.float64


@pytest.mark.parametrize("threads,deterministic", [(1, False), (2, False), (1, True), (2, True)])
def test_same_float32_values_across_threads_and_deterministic_mode(threads, deterministic):
    old_threads = torch.get_num_threads()
    old_deterministic = torch.are_deterministic_algorithms_enabled()
    try:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
        got = printed_numbers()
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_deterministic)
    # the logits are printed as full float32 reprs, h₂ to 10 decimals: one float32 each
    assert_same_float32(got["logits"], expected("interface.toy.logits", "logits"), "interface.toy.logits")
    assert_same_float32(got["h2"], expected("interface.toy.h2", "h2"), "interface.toy.h2")
    torch.set_num_threads(1)
    try:
        assert got == printed_numbers()    # same values as the single-thread default run
    finally:
        torch.set_num_threads(old_threads)


def test_published_digits_single_out_one_float32():
    """The mean and the second loss have no float32 slack: their neighbours print differently."""
    for figure_id, name, index in [("interface.toy.loss_mean", "mean", None),
                                   ("interface.toy.loss_mean", "losses", 1)]:
        spec = load_registry()[figure_id]["values"][name]
        value = spec["expected"] if index is None else spec["expected"][index]
        x = torch.tensor(value, dtype=torch.float32)
        for neighbour in (torch.nextafter(x, torch.tensor(9.0)), torch.nextafter(x, torch.tensor(-9.0))):
            assert round(neighbour.item(), spec["decimals"]) != value


@pytest.mark.parametrize("ids,message", [
    ([0, 1, 5], r"outside the vocabulary"),
    ([0, -1, 0], r"outside the vocabulary"),
    ([0, 1] * 4 + [0], r"longer than the position table \(8 rows\)"),
    (torch.tensor([0.0, 1.0, 0.0]), r"must be integers"),
    (torch.zeros(1, 1, 3, dtype=torch.long), r"shape \(B, T\)"),
    ([], r"empty|must be integers"),
])
def test_model_rejects_bad_input_clearly(ids, message):
    model = FIVE_TOKEN.load()
    with pytest.raises(ValueError, match=message):
        model(ids)


def test_eight_positions_fit():
    logits = FIVE_TOKEN.load()(FIVE_TOKEN.input_tensor([0, 1] * 4))
    assert logits.shape == (1, 8, FIVE_TOKEN_CONFIG.vocab_size)


def test_weight_file_is_readable_round_numbers_except_solved_entries():
    weights = FIVE_TOKEN.read_weights()
    solved = {"blocks.0.attn.query.weight", "blocks.0.mlp.down.weight"}
    for name, rows in weights["tables"].items():
        if name in weights["notes"]:
            assert weights["notes"][name].startswith("solved" if name in solved else "hand-set"), name
        numbers = torch.tensor(rows, dtype=torch.float64).reshape(-1)
        if name not in solved:
            assert torch.equal(numbers, (numbers * 100).round() / 100), f"{name} has non-round entries"
    text = FIVE_TOKEN.weights_path.read_text(encoding="utf-8")
    assert re.search(r"^\s+\[1, 1, -1, -1\],$", text, re.M)       # one matrix row per line


def test_lm_head_read_off_the_article_maps_h2_to_the_logits_exactly():
    model = FIVE_TOKEN.load()
    h2 = torch.tensor(as_float32(expected("interface.toy.h2", "h2")), dtype=torch.float64)
    with torch.no_grad():
        logits = model.lm_head(h2)
    assert_same_float32(logits, expected("interface.toy.logits", "logits"), "lm_head(article's h2)")


def test_query_diagonal_closed_form_reproduces_the_attention_table():
    tables = derivation.hand_set_tables()
    tables["blocks.0.attn.query.weight"] = derivation.diag4(derivation.query_diagonal())
    assert derivation.attention_matches(derivation.scratch_model(tables))
    tables["blocks.0.attn.query.weight"] = derivation.diag4([1.0, 0.06, 0.06, 3.8903])   # a wrong gap
    assert not derivation.attention_matches(derivation.scratch_model(tables))


def test_input_and_targets_are_the_text_shifted():
    assert INPUT_IDS == expected("interface.toy.targets", "inputs")
    assert TARGET_IDS == expected("interface.toy.targets", "targets")


@pytest.mark.slow
def test_derivation_recreates_the_shipped_weight_file():
    torch.set_num_threads(1)
    tables = derivation.derive_tables()
    shipped = FIVE_TOKEN.read_weights()
    assert tables == shipped["tables"], (
        "the derivation no longer re-creates data/five_token_model.json (either the file or the "
        "registry data/figures.json changed since the weights were solved):\n"
        + describe_table_differences(shipped["tables"], tables))
    assert json.loads(derivation.weight_file_text(tables)) == shipped
    assert derivation.weight_file_text(tables) == FIVE_TOKEN.weights_path.read_text(encoding="utf-8")
