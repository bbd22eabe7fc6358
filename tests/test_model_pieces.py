"""course_lib.model's by-hand pieces behind notebooks 02–06: embeddings, attention and LayerNorm, lm_head, loss."""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_lib.model.attention import (attention_by_hand, causal_mask, future_is_zero, layer_norm_by_hand,
                              layer_norm_is_per_position)
from course_lib.model.embeddings import (dropout_rate, gpt2_sized_lookup, one_hot_lookup, positions_of,
                                   rows_read)
from course_lib.figures import check_figure
from course_lib.gpt2 import GPT2_SMALL_CONFIG
from course_lib.tokens.bpe import gpt2_encoding
from course_lib.toys.five_token import FIVE_TOKEN, INPUT_IDS, TARGET_IDS
from course_lib.model.lm_head import dot_and_cosine, logit_terms, output_table_parameters, softmax_steps
from course_lib.model.loss import (backward_without_step, cross_entropy_by_hand, gradient_groups_nonzero,
                             mean_loss, position_losses, shift_for_next_token)
from course_lib.model import GPTConfig


def test_one_hot_product_equals_row_lookup():
    table = torch.randn(7, 3, generator=torch.Generator().manual_seed(0))
    ids = [4, 0, 4, 6]
    assert torch.equal(one_hot_lookup(ids, table), table[ids])
    assert rows_read(ids, table, table[ids]) == ids
    with pytest.raises(ValueError):
        rows_read([0], table, torch.full((1, 3), 9.0))
    assert positions_of([0, 1, 0, 2], 0) == [0, 2]


def test_dropout_rate_finds_dropout_modules():
    assert dropout_rate(nn.Sequential(nn.Linear(2, 2))) == 0.0
    assert dropout_rate(nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1))) == 0.1


def test_gpt2_sized_lookup_shapes_follow_the_config():
    config = GPTConfig(vocab_size=11, n_embd=6)
    out = gpt2_sized_lookup([3, 1, 4], config)
    assert out["lookup"].shape == (3, 6)
    assert out["last_context"].shape == (1, 6)
    assert out["scores"].shape == (1, 11)
    assert torch.equal(out["lookup"][1], out["token_table"][1])


def test_gpt2_sized_lookup_on_the_meta_device_has_the_shapes_and_no_numbers():
    real = gpt2_sized_lookup([3, 1, 4], GPTConfig(vocab_size=11, n_embd=6))
    meta = gpt2_sized_lookup([3, 1, 4], GPTConfig(vocab_size=11, n_embd=6), device="meta")
    assert {name: t.shape for name, t in meta.items()} == {name: t.shape for name, t in real.items()}
    assert {t.device.type for t in meta.values()} == {"meta"}
    with pytest.raises(ValueError, match="device must be 'cpu' .* or 'meta'"):
        gpt2_sized_lookup([3], GPTConfig(vocab_size=11, n_embd=6), device="cuda")


def test_causal_mask_and_future_weights():
    assert causal_mask(3).tolist() == [[False, True, True], [False, False, True], [False, False, False]]
    assert future_is_zero(torch.tril(torch.ones(3, 3)))
    assert not future_is_zero(torch.full((3, 3), 1 / 3))


def test_attention_by_hand_equals_the_models_trace():
    model = FIVE_TOKEN.load()
    _, trace = FIVE_TOKEN.run(model)
    layer = trace["layers"][0]
    with torch.no_grad():
        steps = attention_by_hand(layer["ln1"][0], model.blocks[0].attn)
    assert torch.equal(steps["weights"], layer["attention_weights"][0, 0])
    assert torch.equal(steps["output"], layer["attention_output"][0])
    assert torch.isinf(steps["masked"][0, 1]) and steps["masked"][0, 1] < 0


def test_layer_norm_by_hand_matches_nn_layernorm_per_position():
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(1)) * 3 + 1
    ln = nn.LayerNorm(4)
    steps = layer_norm_by_hand(x)
    assert torch.allclose(steps["out"], ln(x).detach(), atol=1e-6)
    assert torch.allclose(steps["out"].mean(-1), torch.zeros(3), atol=1e-6)
    assert layer_norm_is_per_position(ln, x)


def test_logit_terms_and_dot_versus_cosine():
    h = torch.tensor([0.5, -1.0, 2.0])
    w = torch.tensor([2.0, 0.0, 1.0])
    terms, z = logit_terms(h, w, 0.25)
    assert terms == [1.0, -0.0, 2.0] and z == 3.25
    parts = dot_and_cosine(h, w)
    assert math.isclose(parts["dot"], parts["norms_times_cosine"], rel_tol=1e-12)
    assert math.isclose(parts["cosine"], 3.0 / (math.sqrt(5.25) * math.sqrt(5)), rel_tol=1e-12)


def test_tied_output_table_counts_once():
    assert output_table_parameters(10, 3, tied=True) == 30
    assert output_table_parameters(10, 3, tied=False) == 60


def test_gpt2_sizes_and_tying_figures():
    hi_ids = gpt2_encoding().encode("Hi 你!")
    gpt2 = gpt2_sized_lookup(hi_ids, GPT2_SMALL_CONFIG)
    V, D = gpt2["token_table"].shape
    check_figure("interface.gpt2.sizes", vocab_size=V, width=D, lookup_shape=list(gpt2["lookup"].shape),
                 last_context_shape=list(gpt2["last_context"].shape), scores_shape=list(gpt2["scores"].shape))
    check_figure("interface.tying", tied=output_table_parameters(V, D, tied=True),
                 untied=output_table_parameters(V, D, tied=False))


def test_softmax_of_log_scores_figure():
    steps = softmax_steps([0.0, math.log(2), math.log(3)])
    check_figure("decoding.softmax_ln", exponentials=steps["exponentials"], probs=steps["probs"])


def test_softmax_steps_normalise():
    steps = softmax_steps([0.0, 1.0, -1.0])
    assert math.isclose(steps["probs"].sum().item(), 1.0)
    assert torch.allclose(steps["probs"], torch.softmax(torch.tensor([0.0, 1.0, -1.0], dtype=torch.float64), 0))


def test_shift_and_losses():
    assert shift_for_next_token([5, 6, 7, 8]) == ([5, 6, 7], [6, 7, 8])
    logits = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(2))
    targets = torch.tensor([[1, 0, 4], [2, 2, 3]])
    assert torch.allclose(cross_entropy_by_hand(logits, targets), mean_loss(logits, targets), atol=1e-6)
    per = position_losses(logits, targets)
    assert per.shape == (6,)
    assert torch.allclose(per[0], -F.log_softmax(logits[0, 0], -1)[1])
    assert torch.allclose(per.mean(), mean_loss(logits, targets))


def test_gradient_groups_and_no_optimizer_step():
    model = FIVE_TOKEN.load()
    assert not any(gradient_groups_nonzero(model).values())      # before backward: no gradients
    out = backward_without_step(model, torch.tensor([INPUT_IDS]), [TARGET_IDS])
    assert all(out["groups"].values()) and out["weights_unchanged"]
    silent = {row["name"]: row["nonzero"] for row in out["table"]}
    assert "ln_f.weight" in silent and len(silent) == len(list(model.parameters()))
    assert silent["lm_head.weight"]
    # a frozen head gets no gradient, and the group says so
    model.lm_head.weight.requires_grad_(False)
    out = backward_without_step(model, torch.tensor([INPUT_IDS]), [TARGET_IDS])
    assert out["groups"]["lm_head"] is False
