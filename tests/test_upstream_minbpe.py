"""Ported: karpathy/minbpe's tokenizer tests, run on the course's GPT-2 tokenizers.

Upstream file: karpathy/minbpe, tests/test_tokenizer.py at commit
0d4c221ac8bceeb9b493ed9656271efb76c03a5b.

* ``test_encode_decode_identity`` — upstream's strings; its ``FILE:taylorswift.txt`` (not
  shipped here) is replaced by this repository's README.md, a long text in two languages.
* ``test_gpt4_tiktoken_equality`` and ``..._special_tokens`` — upstream compares its GPT-4
  tokenizer with tiktoken's cl100k_base; the course is GPT-2, so the same strings compare the
  teaching tokenizer with tiktoken's ``gpt2`` (built offline). GPT-2's only special token is
  ``<|endoftext|>``: with ``allowed_special="all"`` the other names in upstream's string are
  ordinary text in both.
* ``test_wikipedia_example`` — upstream *trains* three merges on "aaabdaaabac" and expects
  [258, 100, 258, 97, 99]. The course teaches applying merges, not learning them, so the case
  gives the course's merge loop the three merges Wikipedia's example learns (Z = aa, Y = ab,
  X = ZY, ids 256, 257, 258 after the 256 bytes) and expects upstream's ids.
* Not ported: ``test_save_load`` (training and saving a tokenizer: not in the course).
"""
from pathlib import Path

import pytest

from course_lib.tokens import bpe as T
from _tiktoken_real import real_gpt2_encoding

ROOT = Path(__file__).resolve().parent.parent

test_strings = [
    "",  # empty string
    "?",  # single character
    "hello world!!!? (안녕하세요!) lol123 😉",  # fun small string
    "FILE:README.md",  # a long text: this repository's README (upstream: taylorswift.txt)
]


def unpack(text):
    if text.startswith("FILE:"):
        return (ROOT / text[5:]).read_text(encoding="utf-8")
    return text


specials_string = """
<|endoftext|>Hello world this is one document
<|endoftext|>And this is another document
<|endoftext|><|fim_prefix|>And this one has<|fim_suffix|> tokens.<|fim_middle|> FIM
<|endoftext|>Last document!!! 👋<|endofprompt|>
""".strip()

TOKENIZERS = {"teaching": T.teaching_tokenizer, "course tiktoken": T.gpt2_encoding}


@pytest.mark.parametrize("tokenizer_factory", sorted(TOKENIZERS))
@pytest.mark.parametrize("text", test_strings)
def test_encode_decode_identity(tokenizer_factory, text):
    text = unpack(text)
    tokenizer = TOKENIZERS[tokenizer_factory]()
    ids = tokenizer.encode(text)
    decoded = tokenizer.decode(ids)
    assert text == decoded


@pytest.mark.parametrize("text", test_strings)
def test_gpt2_tiktoken_equality(text):
    text = unpack(text)
    tiktoken_ids = real_gpt2_encoding().encode(text)
    assert T.teaching_tokenizer().encode(text) == tiktoken_ids
    assert T.gpt2_encoding().encode(text) == tiktoken_ids


def test_gpt2_tiktoken_equality_special_tokens():
    tiktoken_ids = real_gpt2_encoding().encode(specials_string, allowed_special="all")
    assert T.teaching_tokenizer().encode(specials_string, allowed_special="all") == tiktoken_ids
    assert tiktoken_ids.count(T.ENDOFTEXT_ID) == 4          # the fim names are ordinary text


def wikipedia_tokenizer() -> T.BPETokenizer:
    """The course's BPE with the three merges of Wikipedia's example instead of GPT-2's: pieces
    are GPT-2's printable characters (a → 'a'), ids 0..255 the bytes, then Z, Y, X."""
    tok = T.BPETokenizer.__new__(T.BPETokenizer)         # no GPT-2 files: a tokenizer of our own
    chars = T.byte_to_char()
    a, b = chars[ord("a")], chars[ord("b")]
    tok.merge_ranks = {(a, a): 0, (a, b): 1, (a + a, a + b): 2}     # Z = aa, Y = ab, X = ZY
    tok.encoder = {chars[i]: i for i in range(256)} | {a + a: 256, a + b: 257, a + a + a + b: 258}
    tok.decoder = {i: piece for piece, i in tok.encoder.items()}
    tok.special_tokens, tok._cache = {}, {}
    return tok


def test_wikipedia_example():
    """Running BPE on "aaabdaaabac" with the merges Z = aa, Y = ab, X = ZY gives "XdXac";
    for us a=97, b=98, c=99, d=100, and Z, Y, X are 256, 257, 258."""
    tokenizer = wikipedia_tokenizer()
    text = "aaabdaaabac"
    ids = tokenizer.encode(text)
    assert ids == [258, 100, 258, 97, 99]
    assert tokenizer.decode(tokenizer.encode(text)) == text
    # the readable merge loop and the fast one agree on every step's result
    word = T.bytes_to_chars(text.encode())
    assert tokenizer.merge_steps(word)[-1] == tokenizer.merge_fast(word)
