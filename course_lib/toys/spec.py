"""One description of a hand-set toy model: ``ToyModel`` (name, config, weight file, vocabulary, prompt).

Used by notebooks 02–07 through its two instances, ``toys.five_token.FIVE_TOKEN`` (the interface
article's five-token model) and ``toys.lab.LAB`` (the lab article's twelve-token model)::

    model = FIVE_TOKEN.load()                  # float64 GPT, eval mode, the shipped weights
    logits, trace = FIVE_TOKEN.run(model)      # (1, 3, 5) for a|b|a, and every intermediate

Both are ``course_lib.model.GPT`` with a tiny config; their weights live in ``data/`` and are
read by ``toys.weights``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from ..data import data_path
from ..model import GPT, GPTConfig
from ..tokens.vocab import PieceVocab
from . import weights


@dataclass(frozen=True)
class ToyModel:
    """Everything that names a hand-set model; its methods load and run it."""

    name: str                   # "five-token model": how errors name it
    config: GPTConfig
    weights_file: str           # file name in data/
    vocab: PieceVocab
    prompt_ids: tuple           # the ids the articles feed it (a|b|a; "the cat climbed the")

    @property
    def weights_path(self) -> Path:
        return data_path(self.weights_file)

    def config_summary(self) -> dict:
        """The config as a plain dict (stored in the weight file so a mismatch is caught)."""
        return weights.config_summary(self.config)

    def read_weights(self, path=None) -> dict:
        """The weight file as a dict: ``about``, ``config``, ``notes`` and ``tables``."""
        return weights.read_weight_file(path or self.weights_path, self.name)

    def from_tables(self, tables: dict) -> GPT:
        """A float64 GPT in eval mode whose parameters are exactly ``tables``."""
        return weights.model_from_tables(self.config, tables, self.name)

    def load(self, path=None) -> GPT:
        """The model (float64, eval mode) with the shipped weights (or those at ``path``)."""
        return weights.load_model_file(self.config, path or self.weights_path, self.name)

    def input_tensor(self, ids=None) -> torch.Tensor:
        """ids (default: the prompt) as a (B=1, T) long tensor, the shape the model takes."""
        return torch.tensor([list(self.prompt_ids if ids is None else ids)], dtype=torch.long)

    def run(self, model: GPT | None = None, ids=None):
        """Run the model on the prompt (or ``ids``) without gradients: ``(logits, trace)``.

        ``logits`` is (1, T, V); ``trace`` holds every intermediate (``GPT.forward_trace``).
        """
        model = self.load() if model is None else model
        with torch.no_grad():
            return model.forward_trace(self.input_tensor(ids))

    @torch.no_grad()
    def last_row_logits(self, model: GPT | None = None, ids=None) -> torch.Tensor:
        """The scores for the token after the prompt (or ``ids``): logits[0, -1], shape (V,)."""
        model = self.load() if model is None else model
        return model(self.input_tensor(ids))[0, -1]
