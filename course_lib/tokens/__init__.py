"""Tokens: text ↔ ids (notebook 01).

* ``bpe``       — GPT-2's byte-level BPE from scratch (``BPETokenizer``), tiktoken's encoding built offline
* ``streaming`` — ``StreamingDecoder``: ids back to text, never half a character (01, 07)
* ``vocab``     — the toy models' piece vocabularies (``FIVE_TOKEN_VOCAB``, ``LAB_VOCAB``) (01–07)
* ``ids``       — the one check every function that takes token ids runs (not taught)
"""
