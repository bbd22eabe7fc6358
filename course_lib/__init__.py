"""course_lib: the verified helpers behind the course notebooks.

One module per idea; each module's docstring says which notebook teaches it.

Tokens (01)
* ``tokenizer``      — GPT-2's byte-level BPE from scratch, tiktoken built offline, streaming decode
* ``token_display``  — coloured token spans, byte tables, a live tokenizer box
* ``vocab``          — the toy models' id → piece tables

The model (02–06)
* ``model``          — one readable GPT: config, Pre-Norm blocks, trace of intermediates, KV cache
* ``embeddings``     — lookups as one-hot products, GPT-2-sized shapes (02)
* ``block``          — attention and LayerNorm written out step by step (03, 04)
* ``lm_head``        — a logit written out, dot product vs cosine, tied tables, softmax (05)
* ``loss``           — shifted targets, per-position losses, cross-entropy by hand, gradients (06)

The hand-set models
* ``five_token``, ``five_token_derivation`` — the interface article's five-token model (02–07)
* ``lab_model``, ``lab_figures``, ``lab_derivation`` — the lab article's twelve-token model (02, 03, 07)
* ``weight_files``   — reading their weight files in data/

Sampling and generation (07)
* ``sampling``, ``sampling_checks`` — the rules, one small function each, with exact docstrings
* ``sampling_batched`` — the same rules over [B, V] tensors, vectorised
* ``sampling_figures``, ``sampling_stats`` — the articles' sampling figures; a chi-square test
* ``generate``       — the generation loop with the KV cache and streaming output
* ``panel``          — the interactive sampling panel (ipywidgets)

GPT-2 (05, 07)
* ``gpt2``           — GPT-2 small as a configuration of ``model``; loading its real weights
* ``gpt2_figures``   — the gpt2 article's figures, run where the weights exist

Everywhere
* ``figures``        — the registry of the articles' figures and ``check_figure``
* ``plots``          — matplotlib helpers
* ``bench_sampling``, ``bench_kv_cache`` — benchmark scripts (``python -m course_lib.bench_…``)
"""
__version__ = "0.1.0"
