"""A GPT-2 checkpoint file with random weights, for the benchmarks (pretrained weights may be absent).

Not taught. :func:`save_random_gpt2` writes ``model.safetensors`` and ``config.json`` in Hugging
Face's layout — the names and (in, out) ``Conv1D`` tables of the official file, which
``course_lib.gpt2.load_gpt2`` and ``transformers.GPT2LMHeadModel.from_pretrained`` both read —
so both libraries load the same numbers from the same file.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from ..gpt2.config import GPT2_SMALL_CONFIG, random_gpt2
from ..model import GPT, GPTConfig


def hf_state_dict(model: GPT) -> dict[str, torch.Tensor]:
    """The inverse of ``gpt2.loader.hf_to_course_state_dict``: Hugging Face names, (in, out) tables,
    query / key / value side by side in ``c_attn``; every tensor contiguous (safetensors needs it)."""
    s = {name: t.detach() for name, t in model.state_dict().items()}
    out = {"wte.weight": s["token_embedding.weight"], "wpe.weight": s["position_embedding.weight"],
           "ln_f.weight": s["ln_f.weight"], "ln_f.bias": s["ln_f.bias"]}
    for i in range(model.config.n_layer):
        ours, h = f"blocks.{i}.", f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            out[h + ln + ".weight"], out[h + ln + ".bias"] = s[ours + ln + ".weight"], s[ours + ln + ".bias"]
        parts = ("query", "key", "value")
        out[h + "attn.c_attn.weight"] = torch.cat([s[ours + f"attn.{p}.weight"].t() for p in parts], dim=1)
        out[h + "attn.c_attn.bias"] = torch.cat([s[ours + f"attn.{p}.bias"] for p in parts])
        for hf_name, our_name in (("attn.c_proj", "attn.output"), ("mlp.c_fc", "mlp.up"), ("mlp.c_proj", "mlp.down")):
            out[h + hf_name + ".weight"] = s[ours + our_name + ".weight"].t()
            out[h + hf_name + ".bias"] = s[ours + our_name + ".bias"]
    return {name: t.contiguous() for name, t in out.items()}


def hf_config_json(config: GPTConfig) -> dict:
    """``config.json`` for ``transformers.GPT2Config`` (and ``gpt2.config.config_from_hf_json``)."""
    return {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": config.n_layer,
            "n_embd": config.n_embd, "n_head": config.n_head, "n_inner": None,
            "vocab_size": config.vocab_size, "n_positions": config.n_positions,
            "layer_norm_epsilon": config.layer_norm_eps, "activation_function": "gelu_new",
            "bos_token_id": 50256, "eos_token_id": 50256}


def save_random_gpt2(folder, config: GPTConfig = GPT2_SMALL_CONFIG, seed: int = 0) -> Path:
    """Write a seeded random GPT-2 (``gpt2.config.random_gpt2``) to ``folder``; return the
    ``model.safetensors`` path."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file(hf_state_dict(random_gpt2(config, seed=seed)), str(folder / "model.safetensors"),
              metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(hf_config_json(config), indent=1), encoding="utf-8")
    return folder / "model.safetensors"
