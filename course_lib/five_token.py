"""The interface article's five-token model: config, input, targets and hand-set weights.

Taught in notebooks 02 (embeddings), 03 (attention), 04 (block), 05 (lm_head) and 06 (loss);
notebook 07 samples from its last row of logits.

The model is ``course_lib.model.GPT`` with a tiny config: V = 5 tokens (a→0 … e→4), D = 4
features, one head, one Pre-Norm block, an MLP 4→16→4 with ReLU, eight position rows and an
untied output layer with a bias. Its weights are set by hand (nothing is trained) and live in
``data/five_token_model.json``: each table is a small matrix, and the file's notes say which
entries are round hand-set numbers and which were solved so that float32 arithmetic prints
the article's figures. ``course_lib.five_token_derivation`` re-creates the solved entries.
"""
from __future__ import annotations

import json

import torch

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
    try:
        text = open(path, encoding="utf-8").read()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"the five-token weights {path} are missing; they ship with the course in data/") from None
    return json.loads(text)


def model_from_tables(tables: dict) -> GPT:
    """A float32 GPT in eval mode whose parameters are exactly ``tables`` (name -> nested lists)."""
    model = GPT(FIVE_TOKEN_CONFIG)
    expected_names = set(model.state_dict())
    if set(tables) != expected_names:
        missing = sorted(expected_names - set(tables))
        extra = sorted(set(tables) - expected_names)
        raise ValueError(f"weight tables do not fit the model: missing {missing}, unexpected {extra}")
    state = {name: torch.tensor(rows, dtype=torch.float32) for name, rows in tables.items()}
    model.load_state_dict(state)     # also checks every table's shape
    return model.eval()


def load_five_token_model(path=WEIGHTS_PATH) -> GPT:
    """The hand-set five-token model (float32, eval mode) with the shipped weights."""
    weights = read_weight_file(path)
    if weights["config"] != config_summary():
        raise ValueError(f"{path} was written for another config: {weights['config']}")
    return model_from_tables(weights["tables"])


def config_summary(config: GPTConfig = FIVE_TOKEN_CONFIG) -> dict:
    """The config as a plain dict (stored in the weight file so a mismatch is caught)."""
    return dict(vars(config))


def input_tensor(ids=INPUT_IDS) -> torch.Tensor:
    """ids as a (B=1, T) long tensor, the shape the model takes."""
    return torch.tensor([list(ids)], dtype=torch.long)


def run_five_token(model: GPT | None = None, ids=INPUT_IDS):
    """Run the model on a|b|a (or ``ids``) without gradients: ``(logits, trace)``.

    ``logits`` is (1, T, 5); ``trace`` holds every intermediate (see ``GPT.forward_trace``).
    """
    model = model or load_five_token_model()
    with torch.no_grad():
        return model.forward_trace(input_tensor(ids))


def pieces(ids) -> list[str]:
    """Token ids of the five-token vocabulary -> their letters."""
    return [FIVE_TOKEN_PIECES[int(i)] for i in ids]
