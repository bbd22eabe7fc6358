"""The model layer: one readable GPT and the by-hand pieces each notebook writes out.

* ``gpt``        — ``GPTConfig``, ``GPT``, ``KVCache``: the one model (02–07); the toys and GPT-2 are configs of it
* ``embeddings`` — lookups as one-hot products, GPT-2-sized shapes (02)
* ``attention``  — causal attention and LayerNorm written out step by step (03, 04)
* ``lm_head``    — a logit written out, dot product vs cosine, tied tables, softmax (05)
* ``loss``       — shifted targets, per-position losses, cross-entropy by hand, gradients (06)
"""
from .gpt import GPT, GPTConfig, KVCache

__all__ = ["GPT", "GPTConfig", "KVCache"]
