"""GPT-2 small as a configuration of ``course_lib.model.GPT``: its sizes, Hugging Face's names.

Taught in notebooks 02 (GPT-2's V and D), 05 (lm_head: the shape of GPT-2's logits) and 07
(sampling: the KV cache's size). There is no second model: GPT-2 small is
``GPT(GPT2_SMALL_CONFIG)``, the same code that runs the course's hand-set toy models.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import replace
from pathlib import Path

import torch

from ..data import DamagedFileError
from ..model import GPT, GPTConfig

# GPT-2 small: 12 Pre-Norm blocks of width 768 with 12 heads of 64, a 3072-wide MLP with the
# tanh approximation of GELU, 1024 positions, 50,257 tokens, one table for input and output.
GPT2_SMALL_CONFIG = GPTConfig(
    vocab_size=50257,
    n_positions=1024,
    n_embd=768,
    n_head=12,
    n_layer=12,
    mlp_hidden=4 * 768,
    activation="gelu_tanh",
    layer_norm_eps=1e-5,
    bias=True,
    head_bias=False,
    tie_weights=True,
)
# --------------------------------------------------------------------------- configuration

def gpt2_config(n_layer: int = 12, n_embd: int = 768, n_head: int = 12,
                vocab_size: int = 50257, n_positions: int = 1024,
                layer_norm_eps: float = 1e-5, activation: str = "gelu_tanh") -> GPTConfig:
    """A GPT-2-family configuration: GPT-2 small's choices with other sizes."""
    return replace(GPT2_SMALL_CONFIG, n_layer=n_layer, n_embd=n_embd, n_head=n_head,
                   mlp_hidden=4 * n_embd, vocab_size=vocab_size, n_positions=n_positions,
                   layer_norm_eps=layer_norm_eps, activation=activation)


# Hugging Face's ``activation_function`` names -> ours. GPT-2 uses "gelu_new" (the tanh
# approximation); "gelu_pytorch_tanh" is the same function computed by PyTorch.
HF_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}


def config_from_hf_json(path: str | os.PathLike) -> GPTConfig:
    """Read a Hugging Face GPT-2 ``config.json`` into a :class:`GPTConfig`.

    Sizes, ``layer_norm_epsilon`` and ``activation_function`` (see :data:`HF_ACTIVATIONS`) are
    read, each checked: sizes are integers ≥ 1 (2.9 is not rounded to 2) with ``n_embd``
    divisible by ``n_head``, the epsilon a finite number > 0. Anything the course's model
    cannot reproduce, and a file that cannot be read, is a :class:`DamagedFileError` naming the
    file and the field (``gpt2_or_message`` turns it into the notebooks' one line).
    """
    fix = ("Delete it (the weights then load as GPT-2 small) or replace it with the checkpoint's "
           "own config.json.")

    def fail(problem: str):
        raise DamagedFileError(f"{path}: {problem}. {fix}")

    try:
        hf = json.loads(Path(path).read_text(encoding="utf-8"))
    except (ValueError, OSError) as err:        # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise DamagedFileError(f"{path} is not a readable GPT-2 config.json ({type(err).__name__}: "
                               f"{err}). {fix}") from None
    if not isinstance(hf, dict):
        fail(f"is not a readable GPT-2 config.json (a JSON object), it holds a {type(hf).__name__}")
    sizes = {}
    for key in ("n_layer", "n_embd", "n_head", "vocab_size", "n_positions"):
        if key not in hf:
            fail(f"{key} is missing (GPT-2's config.json gives every size)")
        value = hf[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            fail(f"{key} must be an integer ≥ 1, got {value!r}")
        sizes[key] = value
    if sizes["n_embd"] % sizes["n_head"]:
        fail(f"n_embd={sizes['n_embd']} is not divisible by n_head={sizes['n_head']} "
             f"(each head must get n_embd / n_head dimensions)")
    epsilon = hf.get("layer_norm_epsilon", 1e-5)
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not (
            math.isfinite(epsilon) and epsilon > 0):
        fail(f"layer_norm_epsilon must be a finite number > 0, got {epsilon!r}")
    activation = hf.get("activation_function", "gelu_new")
    if not isinstance(activation, str) or activation not in HF_ACTIVATIONS:
        fail(f"activation_function {activation!r} is not one the course's model has "
             f"(it has {sorted(HF_ACTIVATIONS)})")
    if hf.get("n_inner") not in (None, 4 * sizes["n_embd"]):
        fail(f"n_inner={hf['n_inner']!r} is not 4 × n_embd")
    return gpt2_config(**sizes, layer_norm_eps=float(epsilon), activation=HF_ACTIVATIONS[activation])


def shapes_only_gpt2(config: GPTConfig = GPT2_SMALL_CONFIG) -> GPT:
    """GPT-2's architecture on torch's ``meta`` device: every weight, and every output of a
    forward pass, has its shape and no numbers, so it takes no memory (GPT-2 small's 124M
    float32 weights take 498 MB). Enough to count parameters and follow shapes (notebook 05);
    :func:`random_gpt2` makes one that computes numbers."""
    with torch.device("meta"):
        return GPT(config).eval()


def random_gpt2(config: GPTConfig = GPT2_SMALL_CONFIG, seed: int = 0) -> GPT:
    """GPT-2's architecture with random (seeded) weights: right shapes, meaningless numbers.

    The seed drives a forked copy of torch's global generator, so the caller's random stream
    is the same afterwards as before (a check or a notebook cell that calls this is not reseeded)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GPT(config).eval()
