"""The from-scratch tokenizer equals tiktoken; the files are verified; nothing touches the network;
the streaming decoder under random chunks and invalid UTF-8; lone surrogates.

The comparison with an independent tokenizer (Hugging Face's) is in test_tokenizer_reference.py.
"""
import random
import socket
from pathlib import Path

import pytest

from course_lib.data import ChecksumError, MissingFileError
from course_lib.tokens import bpe as T
from course_lib.tokens.streaming import StreamingDecoder
from course_lib.figures import check_figure
from course_lib.tokens.vocab import LAB_VOCAB
from tokenizer_corpus import corpus as reference_corpus
from _copies import writable_copy

ROOT = Path(__file__).resolve().parent.parent

FIXED = [
    "", " ", "Hi 你!", "The meaning of life is", "ã", "São Paulo", "naïve café résumé", "Ångström",
    "I'm sure it's fine, they'll've done what you'd've", "DON'T STOP", "'s 's 'S", "'''",
    "x = 3.14159 * r ** 2  # area\n", "def f(a, b):\n\treturn a+b\n", "for (int i=0;i<10;i++) {}",
    "  leading", "trailing   ", "a\n\nb", "\n\n\n", "\r\n\r\n", "\t\t x", "tabs\tand\tspaces  \t ",
    "1234567890 12,345.67 1e-5 0x1F", "২০২৬ ٣٤٥ ⅫⅣ", "你好，世界！", "日本語のテキスト", "한국어 텍스트",
    "😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇫🇷", "Привет, мир", "مرحبا بالعالم", "नमस्ते दुनिया", "ελληνικά",
    "e\u0301 combining", "zero\u200bwidth", "\u00a0nbsp\u00a0", "<|endoftext|>", "a<|endoftext|>b",
    "<|endoftext|><|endoftext|>", "<|endoftext", "|endoftext|>", "hello<|endoftext|> world",
    "mixed 中文 English 123 😀!", "   ", "!!!???...", "@user #tag $5 %d ^_^ &amp;",
]
POOL = (list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        + list(" \t\n\r.,;:!?'\"-_()[]{}<>/\\|@#$%^&*+=~`") + ["  ", "   ", "\n\n", "'s", "'ll", "'re"]
        + list("éèêëàâäôöûüçñãõåøæœßÅÉÑ") + list("你好世界中文字日本語한국어")
        + ["😀", "👍", "🏽", "\u200d", "🇫", "🇷", "\u0301", "\u00a0", "€", "£", "½", "²", "Ⅻ", "٣", "২"]
        + list("Приветмирمرحباनमस्ते") + ["<|endoftext|>"])


def corpus():
    """Fixed tricky strings, lines of the course's own prose and code, and generated strings."""
    texts = list(FIXED)
    for path in sorted(ROOT.glob("course_lib/**/*.py")) + [ROOT / "data" / "figures.json"]:
        texts.extend(path.read_text(encoding="utf-8").splitlines()[:400])
    rng = random.Random(2024)
    for _ in range(3000):
        texts.append("".join(rng.choice(POOL) for _ in range(rng.randint(1, 40))))
    return texts


@pytest.fixture(scope="module")
def tok():
    return T.teaching_tokenizer()


@pytest.fixture(scope="module")
def enc():
    return T.gpt2_encoding()


def test_teaching_tokenizer_equals_tiktoken_on_whole_corpus(tok, enc):
    texts = corpus()
    assert len(texts) > 3500
    mismatches = []
    for text in texts:
        for special in ("all", frozenset()):
            if not special and T.ENDOFTEXT in text:
                continue
            ours = tok.encode(text, allowed_special=special)
            theirs = enc.encode(text, allowed_special=special)
            if ours != theirs:
                mismatches.append((text, ours, theirs))
        assert tok.decode(tok.encode(text, allowed_special="all")) == text
    assert not mismatches, mismatches[:5]


def test_special_token_handled_as_tiktoken_does(tok, enc):
    text = "end<|endoftext|>start"
    with pytest.raises(ValueError, match="special token"):
        tok.encode(text)
    with pytest.raises(ValueError):
        enc.encode(text)
    assert tok.encode(text, allowed_special={T.ENDOFTEXT}) == enc.encode(text, allowed_special={T.ENDOFTEXT})
    assert T.ENDOFTEXT_ID in tok.encode(text, allowed_special="all")
    plain = tok.encode(text, disallowed_special=())
    assert plain == enc.encode(text, disallowed_special=()) and T.ENDOFTEXT_ID not in plain


def test_byte_table_is_a_bijection_onto_printable_characters():
    table = T.byte_to_char()
    assert len(set(table.values())) == 256
    assert all(c.isprintable() and not c.isspace() for c in table.values())
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("A")] == "A"
    data = bytes(range(256))
    assert T.chars_to_bytes(T.bytes_to_chars(data)) == data


def test_merge_steps_end_when_no_pair_is_mergeable(tok):
    steps = tok.merge_steps(T.bytes_to_chars(" meaning".encode()))
    assert steps[0] == list("Ġmeaning") and steps[-1] == ["Ġmeaning"]
    for before, after in zip(steps, steps[1:]):
        assert "".join(before) == "".join(after) and len(after) < len(before)
    last = steps[-1]
    assert not any(pair in tok.merge_ranks for pair in zip(last, last[1:]))


def test_figure_hi_ni(tok, enc):
    ids = enc.encode("Hi 你!")
    assert tok.encode("Hi 你!") == ids
    ni = list("你".encode("utf-8"))
    check_figure("interface.tok.hi_ni", ids=ids, count=len(ids), space_id=tok.encode(" ")[0],
                 ni_ids=tok.partial_ids(ids), ni_utf8=ni)
    assert tok.token_bytes(ids[2]) + tok.token_bytes(ids[3]) == "你".encode("utf-8")


def test_figure_prompt_ids(enc):
    ids = enc.encode("The meaning of life is")
    check_figure("gpt2.prompt_ids", ids=ids, pieces=[enc.decode([i]) for i in ids],
                 input_ids_shape=[1, len(ids)])


def test_figure_lab_detok():
    ids = [LAB_VOCAB.id(p) for p in ["the", " cat", " climb", "ed", " the", " roof", "."]]
    check_figure("lab.detok", ids=ids, pieces=LAB_VOCAB.decode_pieces(ids), text=LAB_VOCAB.decode(ids))
    assert LAB_VOCAB.decode(ids + [LAB_VOCAB.end_id]) == "the cat climbed the roof."


def test_figure_partial_utf8(tok):
    first, second = [tok.encoder[T.bytes_to_chars(bytes([b]))] for b in "ã".encode("utf-8")]
    decoder = StreamingDecoder()
    shown = [decoder.push(first), decoder.push(second)]
    check_figure("lab.partial_utf8", utf8=list("ã".encode("utf-8")),
                 shown_after_first_byte=shown[0], shown_after_second_byte=shown[1])


def test_streaming_decoder_matches_full_decode_token_by_token(tok):
    for text in corpus()[:1500]:
        ids = tok.encode(text, allowed_special="all")
        decoder = StreamingDecoder()
        for n, token_id in enumerate(ids, start=1):
            decoder.push(token_id)
            # what is shown plus what is held back is exactly the bytes so far
            assert decoder.text.encode("utf-8") + decoder.pending == tok.decode_bytes(ids[:n])
            # what is held back is never a complete character
            assert len(decoder.pending) < 4
        decoder.flush()
        assert decoder.text == tok.decode(ids) == text


def test_streaming_decoder_flushes_an_unfinished_character():
    decoder = StreamingDecoder()
    assert decoder.push(19526) == ""          # first bytes of 你
    assert decoder.flush() == "\ufffd"


def test_no_socket_is_opened(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the tokenizer tried to open a network socket")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    T.gpt2_encoding.cache_clear()
    T.teaching_tokenizer.cache_clear()
    try:
        assert T.gpt2_encoding().encode("offline") == T.teaching_tokenizer().encode("offline")
    finally:
        T.gpt2_encoding.cache_clear()
        T.teaching_tokenizer.cache_clear()


@pytest.mark.parametrize("name", ["encoder.json", "vocab.bpe"])
def test_corrupted_or_missing_file_says_which_and_what_to_do(tmp_path, name):
    for file in T.FILE_HASHES:
        writable_copy(T.tokenizer_dir() / file, tmp_path / file)
    target = tmp_path / name
    data = bytearray(target.read_bytes())
    data[100] ^= 1
    target.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match=rf"{name} is corrupted.*git checkout"):
        T.BPETokenizer(tmp_path)
    target.unlink()
    with pytest.raises(MissingFileError, match=rf"{name} is missing"):
        T.BPETokenizer(tmp_path)


def test_unknown_id_is_a_clear_error(tok):
    with pytest.raises(ValueError, match="outside GPT-2's vocabulary"):
        tok.decode([50257])


# ----------------------------------------------------------------- streaming: random chunks and bad bytes

def completable(tail: bytes) -> bool:
    """Could more bytes still turn ``tail`` into one character? Asked of Python's strict decoder
    (independent of the course's table): try every second byte, fill the rest with 0x80."""
    for n in range(len(tail) + 1, 5):
        seconds = range(0x80, 0xC0) if len(tail) == 1 else [None]
        for second in seconds:
            rest = (bytes([second]) if second is not None else b"") + b"\x80" * 4
            candidate = tail + rest[:n - len(tail)]
            try:
                if len(candidate.decode("utf-8")) == 1:
                    return True
            except UnicodeDecodeError:
                pass
    return False


def held_tail(data: bytes) -> bytes:
    """What a decoder must hold back after ``data``: the suffix more bytes could complete."""
    for n in (3, 2, 1):
        if len(data) >= n and completable(data[-n:]):
            return data[-n:]
    return b""


def check_stream(chunks, decoder=None):
    """Push ``chunks`` (bytes per id) one by one; after every id, what is shown must be the full
    decode of everything but the held bytes, and only completable bytes may be held."""
    decoder = decoder or StreamingDecoder(token_bytes=chunks.__getitem__)
    data = b""
    for i, chunk in enumerate(chunks):
        shown_before = decoder.text
        new = decoder.push(i)
        data += chunk
        assert decoder.text == shown_before + new
        assert decoder.pending == held_tail(data), (data[-4:], decoder.pending)
        assert decoder.text == data[:len(data) - len(decoder.pending)].decode("utf-8", errors="replace")
    decoder.flush()
    assert decoder.text == data.decode("utf-8", errors="replace") and decoder.pending == b""
    return decoder.text


def test_streaming_decoder_under_random_chunking():
    rng = random.Random(31)
    texts = reference_corpus()[::7][:400] + ["Hi 你!", "👨‍👩‍👧‍👦 é 𝟐", "\U0010FFFF\U00010000\u0800\u07ff"]
    for text in texts:
        data = text.encode("utf-8")
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 12)))) if len(data) > 1 else []
        chunks = [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])] or [b""]
        assert check_stream(chunks) == text


def test_streaming_decoder_on_random_invalid_utf8(tok):
    """Random GPT-2 ids, most of them single bytes ≥ 0x80 (lead and continuation bytes of every
    kind): the stream shows what bytes.decode(errors="replace") shows, as early as possible."""
    rng = random.Random(32)
    byte_ids = [tok.encoder[T.bytes_to_chars(bytes([b]))] for b in range(256)]
    high = byte_ids[0x80:]
    for _ in range(400):
        ids = [rng.choice(high) if rng.random() < 0.7 else rng.choice(byte_ids[:0x80] + [rng.randrange(50256)])
               for _ in range(rng.randint(1, 12))]
        decoder = StreamingDecoder()
        text = check_stream([tok.token_bytes(i) for i in ids])
        for i in ids:
            decoder.push(i)
        decoder.flush()
        assert decoder.text == text == tok.decode(ids)


@pytest.mark.parametrize("chunks, shown", [
    ([b"\xed", b"\xa0", b"A"], ["", "\ufffd\ufffd", "A"]),      # ED A0 would be a surrogate: no wait
    ([b"\xe2\x82", b"A"], ["", "\ufffdA"]),                     # cut short by an ASCII byte
    ([b"\xf0", b"\x90", b"\x80", b"\x80"], ["", "", "", "\U00010000"]),
    ([b"\xf4\x90"], ["\ufffd\ufffd"]),                          # above U+10FFFF
    ([b"\xe0\x80"], ["\ufffd\ufffd"]),                          # overlong
    ([b"\xc3", b"\xc3\xa3"], ["", "\ufffdã"]),                  # a lead byte interrupts a lead byte
    ([b"\x80", b"\xbf"], ["\ufffd", "\ufffd"]),                 # a continuation byte alone
])
def test_streaming_decoder_releases_a_replacement_as_soon_as_nothing_can_complete_it(chunks, shown):
    decoder = StreamingDecoder(token_bytes=chunks.__getitem__)
    assert [decoder.push(i) for i in range(len(chunks))] == shown
    assert decoder.flush() == ""


def test_lone_surrogates_are_replaced_as_tiktoken_replaces_them(tok, enc):
    assert tok.encode("a\ud800b") == enc.encode("a\ud800b") == tok.encode("a\ufffdb")
    assert tok.encode("\ud83d\ude00") == enc.encode("\ud83d\ude00") == tok.encode("😀")   # a pair joins
    rng = random.Random(33)
    surrogates = ["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00", "\ud83d\ude00"]
    for text in reference_corpus()[:900:3]:
        chars = list(text)
        for _ in range(rng.randint(1, 3)):
            chars.insert(rng.randint(0, len(chars)), rng.choice(surrogates))
        noisy = "".join(chars)
        assert tok.encode(noisy, allowed_special="all") == enc.encode(noisy, allowed_special="all"), repr(noisy)
