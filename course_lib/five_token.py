"""The interface article's five-token model: config, input, targets and hand-set weights.

Taught in notebooks 02 (embeddings), 03 (attention), 04 (block), 05 (lm_head) and 06 (loss);
notebook 07 samples from its last row of logits.

The model is ``course_lib.model.GPT`` with a tiny config: V = 5 tokens (a→0 … e→4), D = 4
features, one head, one Pre-Norm block, an MLP 4→16→4 with ReLU, eight position rows and an
untied output layer with a bias. Its weights are set by hand (nothing is trained) and live in
``data/five_token_model.json``: each table is a small matrix, and the file's notes say which
entries are round hand-set numbers and which were solved so that the article's figures
print. The model computes in float64; where the article printed float32 numbers the course
shows the float32 rounding of the float64 result, which is the same on every CPU
(``course_lib.margins`` explains why; notebook 06 teaches it).
``course_lib.five_token_derivation`` re-creates the solved entries.
"""
from __future__ import annotations

import torch

from . import weight_files
from .figures import DATA_DIR
from .model import GPT, GPTConfig
from .vocab import FIVE_TOKEN_PIECES

FIVE_TOKEN_CONFIG = GPTConfig(
    vocab_size=5,        # a, b, c, d, e
    n_positions=8,       # the position table has eight rows
    n_embd=4,            # four features per position
    n_head=1,
    n_layer=1,
    mlp_hidden=16,       # Linear 4→16 → ReLU → Linear 16→4
    activation="relu",
    head_bias=True,      # lm_head = nn.Linear(4, 5), with a bias
    tie_weights=False,   # the output table is not the token table
)

TEXT_IDS = [0, 1, 0, 1]        # the teaching text a|b|a|b
INPUT_IDS = TEXT_IDS[:-1]      # [0, 1, 0]: a|b|a goes into the model
TARGET_IDS = TEXT_IDS[1:]      # [1, 0, 1]: the token that follows each input position

WEIGHTS_PATH = DATA_DIR / "five_token_model.json"


def read_weight_file(path=WEIGHTS_PATH) -> dict:
    """The weight file as a dict: ``notes``, ``config`` and ``tables`` (name -> nested lists)."""
    return weight_files.read_weight_file(path, "five-token model")


def model_from_tables(tables: dict) -> GPT:
    """A float64 five-token GPT in eval mode whose parameters are exactly ``tables``."""
    return weight_files.model_from_tables(FIVE_TOKEN_CONFIG, tables, "five-token model")


def load_five_token_model(path=WEIGHTS_PATH) -> GPT:
    """The hand-set five-token model (float64, eval mode) with the shipped weights."""
    return weight_files.load_model_file(FIVE_TOKEN_CONFIG, path, "five-token model")


def config_summary(config: GPTConfig = FIVE_TOKEN_CONFIG) -> dict:
    """The config as a plain dict (stored in the weight file so a mismatch is caught)."""
    return weight_files.config_summary(config)


def input_tensor(ids=INPUT_IDS) -> torch.Tensor:
    """ids as a (B=1, T) long tensor, the shape the model takes."""
    return torch.tensor([list(ids)], dtype=torch.long)


def run_five_token(model: GPT | None = None, ids=INPUT_IDS):
    """Run the model on a|b|a (or ``ids``) without gradients: ``(logits, trace)``.

    ``logits`` is (1, T, 5); ``trace`` holds every intermediate (see ``GPT.forward_trace``).
    """
    if model is None:
        model = load_five_token_model()
    with torch.no_grad():
        return model.forward_trace(input_tensor(ids))


def pieces(ids) -> list[str]:
    """Token ids of the five-token vocabulary -> their letters."""
    return [FIVE_TOKEN_PIECES[int(i)] for i in ids]


def figure_values(model: GPT | None = None) -> dict:
    """Every ``interface.toy.*`` figure, computed from the model: {figure id: {name: value}}.

    The unit tests pass each entry to ``check_figure``; the notebooks compute the same values
    one cell at a time. Runs one ``loss.backward()`` on ``model`` (its ``.grad`` fields are
    filled; no weight changes).
    """
    from .block import future_is_zero, layer_norm_is_per_position
    from .embeddings import dropout_rate, positions_of, rows_read
    from .lm_head import dot_and_cosine, logit_terms
    from .loss import backward_without_step, position_losses, shift_for_next_token
    from .vocab import FIVE_TOKEN_VOCAB

    if model is None:
        model = load_five_token_model()
    ids = input_tensor(INPUT_IDS)                                  # (1, 3)
    logits, trace = run_five_token(model)
    layer = trace["layers"][0]
    E = model.token_embedding.weight.detach()
    W, b = model.lm_head.weight.detach(), model.lm_head.bias.detach()
    h = trace["h"][0]                                              # (3, 4)
    h2 = h[2]
    z1_terms, z1 = logit_terms(h2, W[1], b[1])
    cos = dot_and_cosine(h2, W[1])
    weights = layer["attention_weights"][0, 0]                     # (3, 3)
    inputs, targets = shift_for_next_token(TEXT_IDS)
    losses = position_losses(logits, [targets])
    grads = backward_without_step(model, ids, [targets])
    a_positions = positions_of(INPUT_IDS, FIVE_TOKEN_VOCAB.id("a"))   # [0, 2]
    return {
        "interface.toy.vocab": dict(
            pieces=FIVE_TOKEN_VOCAB.pieces,
            input_ids=[FIVE_TOKEN_VOCAB.id(p) for p in "a|b|a".split("|")],
            batch=ids.shape[0], n_head=model.config.n_head, n_layer=model.config.n_layer,
            dropout=dropout_rate(model), position_rows=model.position_embedding.weight.shape[0]),
        "interface.toy.x0": dict(
            token_vectors_shape=list(trace["token_vectors"].shape),
            position_vectors_shape=list(trace["position_vectors"].shape),
            x0_shape=list(trace["x0"].shape),
            both_a_read_row=the_one(rows_read(INPUT_IDS, E, trace["token_vectors"][0, a_positions])),
            a_positions=a_positions),
        "interface.toy.attention": dict(
            weights=weights, future_is_zero=future_is_zero(weights), row_sums=weights.sum(-1)),
        "interface.toy.layernorm": dict(
            eps=model.ln_f.eps, scale=model.ln_f.weight.unique().item(),
            offset=model.ln_f.bias.unique().item(),
            per_position=layer_norm_is_per_position(model.ln_f, layer["x2"][0])),
        "interface.toy.mlp": dict(
            up_shape=list(model.blocks[0].mlp.up.weight.shape),
            down_shape=list(model.blocks[0].mlp.down.weight.shape),
            activation=model.config.activation,
            x1_shape=list(layer["x1"][0].shape), x2_shape=list(layer["x2"][0].shape)),
        "interface.toy.h2": dict(h2=h2),
        "interface.toy.head_shape": dict(
            weight_shape=list(W.shape),
            one_position_shape=list((h2.unsqueeze(0) @ W.T + b).shape),
            all_positions_shape=list((h @ W.T + b).shape)),
        "interface.toy.z1": dict(h2_6dp=h2, head_row_b=W[1], bias_b=b[1], z1=z1),
        "interface.toy.logits": dict(logits=logits[0, -1]),
        "interface.toy.dot_vs_cos": dict(
            dot_equals_norms_times_cos=abs(cos["dot"] - cos["norms_times_cosine"]) < 1e-12,
            logit_is_dot_plus_bias=abs(cos["dot"] + b[1].item() - logits[0, 2, 1].item()) < 1e-6,
            logit_differs_from_cosine=abs(logits[0, 2, 1].item() - cos["cosine"]) > 0.1),
        "interface.toy.targets": dict(inputs=inputs, targets=targets),
        "interface.toy.loss_last": dict(
            p_target=torch.softmax(logits[0, -1], dim=-1)[targets[-1]], loss=losses[-1]),
        "interface.toy.loss_mean": dict(losses=losses, mean=grads["loss"]),
        "interface.toy.grads": dict(**grads["groups"], weights_unchanged=grads["weights_unchanged"]),
    }


def the_one(values):
    """The single distinct value of ``values`` (a list when they differ, so a check fails)."""
    distinct = sorted(set(values))
    return distinct[0] if len(distinct) == 1 else distinct
