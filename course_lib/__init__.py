"""course_lib: the verified helpers behind the course notebooks.

One module per idea; each module's docstring says which notebook teaches it.

* ``tokenizer``  — GPT-2's byte-level BPE from scratch, tiktoken built offline, streaming decode (01)
* ``figures``    — the registry of the articles' figures and ``check_figure`` (every notebook)
* ``model``      — one readable GPT: config, blocks, trace of intermediates, KV cache (02–07)
* ``vocab``      — the toy vocabularies of the five-token and twelve-token models (01, 02, 07)
* ``five_token`` — the interface article's hand-set five-token model: config, ids, weights (02–06)
* ``five_token_derivation`` — how its weights were solved from the article's figures (02–06 background)
* ``embeddings`` — lookups as one-hot products, GPT-2-sized shapes (02)
* ``block``      — attention and LayerNorm written out step by step (03, 04)
* ``lm_head``    — a logit written out, dot product vs cosine, tied tables, softmax steps (05)
* ``loss``       — shifted targets, per-position losses, cross-entropy by hand, gradients (06)
* ``plots``      — matplotlib helpers for the notebooks (02–07)
"""
__version__ = "0.1.0"
