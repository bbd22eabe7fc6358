"""The course's tokenizers against an independent one: Hugging Face's GPT-2 tokenizer.

tests/test_tokenizer.py compares the from-scratch BPE with the tiktoken encoding the course
builds from *the same pattern string*, so a wrong pattern would be wrong in both. Here the
reference is Hugging Face's ``tokenizers`` (Rust, its own pre-tokenizer and merge loop), loaded
through ``transformers`` from the same two files in ``data/gpt2_tokenizer/`` — nothing is
downloaded. The corpus (tests/tokenizer_corpus.py) is seeded and covers every character class
the pattern distinguishes. The last tests plant the two pattern bugs that the tiktoken
comparison cannot see and require this comparison to catch them.
"""
import os
import shutil

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")      # transformers must never reach the network here
import transformers  # noqa: E402  test dependency (pinned in pyproject's "test" extra)

from course_lib.tokens import bpe as T  # noqa: E402
from tokenizer_corpus import WHITESPACE, corpus, fixed_texts, random_texts  # noqa: E402

# Two planted bugs, as edits of GPT-2's pattern string.
CONTRACTIONS = "'s|'t|'re|'ve|'m|'ll|'d"
PATTERN_BUGS = {
    "case-insensitive contractions": T.GPT2_PATTERN.replace(CONTRACTIONS, f"(?i:{CONTRACTIONS})"),
    "no (?!\\S) look-ahead": T.GPT2_PATTERN.replace(r"\s+(?!\S)|", ""),
}


@pytest.fixture(scope="module")
def hf(tmp_path_factory):
    """Hugging Face's GPT-2 tokenizer from data/gpt2_tokenizer/, under the names it expects.

    (``GPT2TokenizerFast(vocab_file=..., merges_file=...)`` builds an *empty* tokenizer in
    transformers 5.24 without a word of warning; loading the folder works, and the size check
    below would catch the empty one.)
    """
    folder = tmp_path_factory.mktemp("hf_gpt2_tokenizer")
    shutil.copy(T.tokenizer_dir() / "encoder.json", folder / "vocab.json")
    shutil.copy(T.tokenizer_dir() / "vocab.bpe", folder / "merges.txt")
    tokenizer = transformers.GPT2TokenizerFast.from_pretrained(folder)
    assert len(tokenizer) == tokenizer.vocab_size == T.N_VOCAB == 50257
    assert tokenizer.convert_tokens_to_ids(T.ENDOFTEXT) == T.ENDOFTEXT_ID
    return tokenizer


def hf_ids(hf, texts):
    """Hugging Face's ids for many texts at once (no special tokens added around them)."""
    return [e.ids for e in hf.backend_tokenizer.encode_batch(list(texts), add_special_tokens=False)]


@pytest.fixture(scope="module")
def texts():
    return corpus()


@pytest.fixture(scope="module")
def reference(hf, texts):
    return hf_ids(hf, texts)


def mismatches(encode, texts, reference, limit=None):
    """(text, ours, theirs) for every text where ``encode`` differs from the reference ids."""
    found = []
    for text, theirs in zip(texts, reference):
        ours = encode(text)
        if ours != theirs:
            found.append((text, ours, theirs))
            if limit and len(found) >= limit:
                break
    return found


def test_the_corpus_covers_every_character_class_the_pattern_tells_apart(texts):
    import unicodedata

    chars = set("".join(texts))
    categories = {unicodedata.category(c) for c in chars}
    for needed in ["Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No", "Mn", "Mc", "Me",
                   "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp",
                   "Cc", "Cf", "Co"]:
        assert needed in categories, needed
    assert set(WHITESPACE) - {"\r\n"} <= chars                     # all 25 \s characters
    joined = "\n".join(texts)
    for c in ["s", "t", "re", "ve", "m", "ll", "d"]:
        assert f"'{c}" in joined and f"'{c.upper()}" in joined    # both cases of every contraction
    assert "\r\n" in joined and "\u200d" in joined                # CRLF, ZWJ sequences
    assert sum(t != t.rstrip() for t in texts) > 100              # trailing whitespace runs
    assert max(len(w) for t in texts for w in T.pre_tokenize(t)) >= 2000   # words of thousands of chars
    assert len(texts) > 2500


def test_from_scratch_tokenizer_equals_hugging_face(texts, reference):
    found = mismatches(T.teaching_tokenizer().encode, texts, reference)
    assert not found, f"{len(found)} texts differ from Hugging Face's GPT-2 tokenizer, e.g. {found[:3]}"


def test_tiktoken_encoding_equals_hugging_face(texts, reference):
    found = mismatches(T.gpt2_encoding().encode, texts, reference)
    assert not found, f"{len(found)} texts differ from Hugging Face's GPT-2 tokenizer, e.g. {found[:3]}"


def test_decode_equals_hugging_face_and_gives_the_text_back(hf, texts, reference):
    tok = T.teaching_tokenizer()
    for text, ids in zip(texts[:800], reference):
        assert tok.decode(ids) == hf.decode(ids, clean_up_tokenization_spaces=False) == text


def test_special_token_equals_hugging_face(hf):
    tok = T.teaching_tokenizer()
    for text in ["<|endoftext|>", "a<|endoftext|>b", "x <|endoftext|> y", "<|endoftext|><|endoftext|>",
                 "'S<|endoftext|>'s", "  <|endoftext|>\n\n", "<|endoftext", "endoftext|>"]:
        assert tok.encode(text, allowed_special="all") == hf_ids(hf, [text])[0], text


@pytest.mark.parametrize("bug", sorted(PATTERN_BUGS))
def test_a_wrong_pattern_is_caught_by_the_hugging_face_comparison(bug, hf, monkeypatch):
    """Plant a pattern bug: the from-scratch tokenizer *and* a tiktoken encoding built from the
    same pattern agree with each other (the old check passes), but not with Hugging Face."""
    import tiktoken

    texts = fixed_texts() + random_texts(300, seed=12)
    reference = hf_ids(hf, texts)
    assert not mismatches(T.teaching_tokenizer().encode, texts, reference)
    monkeypatch.setattr(T, "GPT2_PATTERN", PATTERN_BUGS[bug])
    planted = T.BPETokenizer()                                     # pre_tokenize reads the pattern
    same_pattern = tiktoken.Encoding(name="gpt2-planted", pat_str=PATTERN_BUGS[bug],
                                     mergeable_ranks=T.gpt2_encoding()._mergeable_ranks,
                                     special_tokens={T.ENDOFTEXT: T.ENDOFTEXT_ID})
    assert all(planted.encode(t) == same_pattern.encode(t) for t in texts)   # blind to the bug
    found = mismatches(planted.encode, texts, reference, limit=3)
    assert found, f"the planted bug ({bug}) went unnoticed"
