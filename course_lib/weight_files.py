"""Reading the hand-set toy models' weight files (data/*_model.json).

Used by ``five_token`` (notebooks 02–06) and ``lab_model`` (02, 03, 07). A weight file holds
``config`` (the GPTConfig it was written for), ``notes`` (which entries are hand-set and which
were solved) and ``tables`` (parameter name -> nested lists, one matrix row per line).
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from .model import GPT, GPTConfig


def read_weight_file(path: Path, what: str) -> dict:
    """The weight file as a dict; ``what`` names the model in the error if it is missing."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"the weights of the {what} ({path}) are missing; they ship with the course in data/ "
            f"(restore with: git checkout -- data/)") from None
    return json.loads(text)


def config_summary(config: GPTConfig) -> dict:
    """The config as a plain dict (stored in the weight file so a mismatch is caught)."""
    return dict(vars(config))


def model_from_tables(config: GPTConfig, tables: dict, what: str = "model") -> GPT:
    """A float32 GPT in eval mode whose parameters are exactly ``tables`` (name -> nested lists)."""
    model = GPT(config)
    expected_names = set(model.state_dict())
    if set(tables) != expected_names:
        missing = sorted(expected_names - set(tables))
        extra = sorted(set(tables) - expected_names)
        raise ValueError(f"weight tables do not fit the {what}: missing {missing}, unexpected {extra}")
    state = {name: torch.tensor(rows, dtype=torch.float32) for name, rows in tables.items()}
    model.load_state_dict(state)     # also checks every table's shape
    return model.eval()


def load_model_file(config: GPTConfig, path: Path, what: str) -> GPT:
    """Read a weight file, check it was written for ``config``, and build the model."""
    weights = read_weight_file(path, what)
    if weights["config"] != config_summary(config):
        raise ValueError(f"{path} was written for another config: {weights['config']}")
    return model_from_tables(config, weights["tables"], what)
