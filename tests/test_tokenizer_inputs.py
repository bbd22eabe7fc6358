"""The tokenizers on inputs the corpus tests never try.

* special-token names GPT-2 does not have, and the arguments' types, exactly as tiktoken;
* text that is not a ``str``;
* a million spaces through tiktoken's own gpt2 pattern;
* the 267 code points where the ``regex`` module's letter table (in its newest releases) and
  tiktoken's disagree: listed, and the difference pinned to what the installed regex says
  (documented in ``BPETokenizer``'s docstring).
"""
import pytest
import regex

from course_lib.tokens import bpe as T
from _tiktoken_real import DISAGREE, real_gpt2_encoding

TEXT = "<|endoftext|> hello <|fim_prefix|>"


def kwargs_id(kwargs: dict) -> str:
    """A test id that is the same in every process: a set's repr follows the string hash, which
    differs between pytest-xdist's workers (they must collect the same ids)."""
    shown = {k: sorted(v) if isinstance(v, (set, frozenset)) else v for k, v in kwargs.items()}
    return str(shown)


@pytest.fixture(scope="module")
def tok():
    return T.teaching_tokenizer()


@pytest.fixture(scope="module", params=["course", "tiktoken's own"])
def enc(request):
    return T.gpt2_encoding() if request.param == "course" else real_gpt2_encoding()


@pytest.mark.parametrize("kwargs", [
    {}, {"disallowed_special": "all"}, {"disallowed_special": {"<|fim_prefix|>"}},
    {"disallowed_special": {"<|endoftext|>"}}, {"allowed_special": {"<|fim_prefix|>"}},
], ids=kwargs_id)
def test_a_disallowed_special_name_raises_value_error_as_in_tiktoken(tok, enc, kwargs):
    with pytest.raises(ValueError):
        enc.encode(TEXT, **kwargs)
    with pytest.raises(ValueError, match="special token"):
        tok.encode(TEXT, **kwargs)


@pytest.mark.parametrize("text", [TEXT, "hello <|fim_prefix|>", "<|fim_prefix|><|endoftext|>", "plain"])
@pytest.mark.parametrize("kwargs", [
    {"allowed_special": {"<|fim_prefix|>", "<|endoftext|>"}},
    {"allowed_special": {"<|fim_prefix|>"}, "disallowed_special": ()},
    {"allowed_special": "all"},
    {"disallowed_special": ()},
    {"disallowed_special": {"<|fim_middle|>"}},
], ids=kwargs_id)
def test_an_allowed_name_gpt2_does_not_have_is_ordinary_text_as_in_tiktoken(tok, enc, text, kwargs):
    try:
        expected = enc.encode(text, **kwargs)
    except ValueError:                     # "all" still disallows nothing here, but keep honest
        with pytest.raises(ValueError):
            tok.encode(text, **kwargs)
        return
    assert tok.encode(text, **kwargs) == expected


def test_a_special_token_gpt2_lacks_is_refused_unless_allowed(tok):
    assert tok.encode("hello <|fim_prefix|>", allowed_special={"<|fim_prefix|>"}) == \
        tok.encode("hello <|fim_prefix|>", disallowed_special=())
    with pytest.raises(ValueError, match="GPT-2 has no special token of that name"):
        tok.encode(TEXT, disallowed_special={"<|fim_prefix|>"})


@pytest.mark.parametrize("kwargs, argument", [
    ({"allowed_special": "<|endoftext|>"}, "allowed_special"),
    ({"disallowed_special": "<|endoftext|>"}, "disallowed_special"),
    ({"allowed_special": b"<|endoftext|>"}, "allowed_special"),
    ({"allowed_special": None}, "allowed_special"),
    ({"allowed_special": {1}}, "allowed_special"),
])
def test_a_name_given_as_a_string_is_a_type_error_naming_the_argument(tok, kwargs, argument):
    with pytest.raises(TypeError, match=rf"^{argument} must "):
        tok.encode("<|endoftext|>", **kwargs)


@pytest.mark.parametrize("text", [b"hi", bytearray(b"hi"), None, 42, ["hi"]])
def test_text_that_is_not_a_str_is_a_type_error(tok, text):
    with pytest.raises(TypeError, match=r"^text must be a str"):
        tok.encode(text)


def test_a_million_spaces(tok):
    """tiktoken's own gpt2 pattern handles pure whitespace (the course's once hit "Max stack size
    exceeded for backtracking"); the teaching tokenizer gives the same ids (checked on 10⁵, the
    same single pre-tokenized word, to keep the test short)."""
    spaces = " " * 1_000_000
    ids = T.gpt2_encoding().encode(spaces)
    assert ids == real_gpt2_encoding().encode(spaces) and len(ids) == 1_000_000
    assert T.gpt2_encoding().decode(ids) == spaces
    shorter = " " * 100_000
    assert tok.encode(shorter) == T.gpt2_encoding().encode(shorter)
    mixed = "\n\n" + "\t" * 100_000 + "x  \n"
    assert T.gpt2_encoding().encode(mixed) == tok.encode(mixed)


def test_the_tokenizers_differ_exactly_where_regex_counts_a_letter_tiktoken_does_not(tok):
    """The 267 candidates, and what the installed ``regex`` says of each: its letter table
    follows its Unicode data, which its releases update (measured: none of the 267 is a letter
    in regex 2025.9.18 and older, 73 are in 2025.11.3–2026.5.9, all 267 in 2026.11.19). Where
    regex counts a letter, the course's pattern joins it to the next word and tiktoken's does
    not; where it does not, the two tokenizers agree. Either way the text decodes back."""
    enc = real_gpt2_encoding()
    assert len(DISAGREE) == len(set(DISAGREE)) == 267
    letters = [cp for cp in DISAGREE if regex.fullmatch(r"\p{L}", chr(cp))]
    assert len(letters) in (0, 73, 267), f"regex {regex.__version__}: {len(letters)} of the 267 are letters"
    for cp in DISAGREE:
        c = chr(cp)
        text = c + "蜳"
        ours, theirs = tok.encode(text), enc.encode(text)
        assert tok.decode(ours) == enc.decode(theirs) == text
        if cp in letters:
            # ours: one word of two letters; tiktoken: c as a word of its own, then 蜳
            assert ours != theirs, hex(cp)
            assert theirs == enc.encode(c) + enc.encode("蜳"), hex(cp)
        else:
            assert ours == theirs, hex(cp)
        for near in (cp - 1, cp + 1):             # the neighbours, letters in both tables, agree
            if near not in DISAGREE:
                assert tok.encode(chr(near) + "蜳") == enc.encode(chr(near) + "蜳"), hex(near)
    if 0x323C8 in letters:                                                   # a code point regex counts as a letter
        assert tok.encode("\U000323c8蜳") != enc.encode("\U000323c8蜳")
