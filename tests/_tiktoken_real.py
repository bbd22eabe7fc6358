"""tiktoken's own ``gpt2`` encoding, built offline: ``tiktoken_ext.openai_public.gpt2()`` exactly
as ``tiktoken.get_encoding("gpt2")`` runs it (its pattern, its special token, its reading of
the two files and its check of their pinned SHA-256), except that the two URLs are answered
from ``data/gpt2_tokenizer/`` instead of the network. The course's own ``gpt2_encoding()``
builds its Encoding another way (ranks from the teaching tokenizer), so comparing with this one
tests that construction too.
"""
from __future__ import annotations

import os
import tempfile
from functools import lru_cache
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
LOCAL = {"vocab.bpe": ROOT / "data" / "gpt2_tokenizer" / "vocab.bpe",
         "encoder.json": ROOT / "data" / "gpt2_tokenizer" / "encoder.json"}


# The code points where the two letter tables disagree (found by encoding "x" + c, c + "蜳" and
# " " + c + "1" for every code point with both tokenizers): the regex module counts each as a
# letter (\p{L}), tiktoken does not. Every 64th code point of three blocks, and five others.
DISAGREE = [0x10948, 0x11DC8, 0x16EC8, *range(0x18D88, 0x191C9, 0x40), 0x1DF48, 0x1E6C8,
            *range(0x323C8, 0x33449, 0x40), *range(0x3D008, 0x3FC09, 0x40)]


@lru_cache(maxsize=1)
def real_gpt2_encoding():
    import tiktoken
    import tiktoken.load
    from tiktoken_ext import openai_public

    def read_local(blobpath: str) -> bytes:
        name = blobpath.rsplit("/", 1)[-1]
        if name not in LOCAL:
            raise AssertionError(f"tiktoken asked for {blobpath}: nothing may be downloaded")
        return LOCAL[name].read_bytes()

    # An empty cache folder of our own: tiktoken then reads through read_file and checks each
    # file's SHA-256 against the hash it pins (with caching disabled it would skip that check).
    with tempfile.TemporaryDirectory() as cache, \
            mock.patch.object(tiktoken.load, "read_file", read_local), \
            mock.patch.dict(os.environ, {"TIKTOKEN_CACHE_DIR": cache}):
        return tiktoken.Encoding(**openai_public.gpt2())
