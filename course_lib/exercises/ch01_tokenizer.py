"""Exercises of notebook 01 (tokenizer): the byte → printable table, the BPE merge loop, streaming.

The article's examples: "Hi 你!" must encode to ``interface.tok.hi_ni``'s ids and "The meaning
of life is" to ``gpt2.prompt_ids``'s, with the learner's table or merge loop in place of the
course's (``tokens.bpe``); "ã" split over two ids must stream as ``lab.partial_utf8``. Random
cases are compared with ``BPETokenizer.merge_steps`` and ``tokens.streaming.StreamingDecoder``.
"""
from __future__ import annotations

import random

from ..tokens.bpe import byte_to_char, pre_tokenize, teaching_tokenizer
from ..tokens.streaming import StreamingDecoder
from .core import Fail, run
from .messages import say

TEXTS = ["Hi 你!", "The meaning of life is"]
FIGURE_IDS = {"Hi 你!": ("interface.tok.hi_ni", "ids"), "The meaning of life is": ("gpt2.prompt_ids", "ids")}


def _encode(text: str, table, merge) -> list[int]:
    """GPT-2's encode with a byte table and a merge loop swapped in (the course's otherwise)."""
    tok = teaching_tokenizer()
    ids = []
    for word in pre_tokenize(text):
        symbols = "".join(table[b] for b in word.encode("utf-8"))
        ids.extend(tok.encoder[piece] for piece in merge(symbols))
    return ids


def _article_ids(c, table, merge, what: str) -> None:
    for text in TEXTS:
        try:
            ids = _encode(text, table, merge)
        except KeyError as missing:
            raise Fail(say("encoding {text!r} with your {what} made the piece {missing}, which is not in GPT-2's vocabulary", text=text, what=what, missing=missing)) from None
        figure_id, name = FIGURE_IDS[text]
        c.figure(figure_id, name, ids, say("with your {what} {text!r} does not encode to {figure_id}'s ids", what=what, text=text, figure_id=figure_id))
    c.proved(say("with your {what} 'Hi 你!' and 'The meaning of life is' encode to interface.tok.hi_ni and gpt2.prompt_ids", what=what))


def check_byte_table(fn):
    """``byte_table()`` -> dict of the 256 byte values to GPT-2's printable characters."""
    def body(c):
        table = c.call(case="byte_table()")
        if not isinstance(table, dict) or len(table) != 256 or set(table) != set(range(256)):
            raise Fail(say('return a dict with one entry for each byte value 0..255'))
        if len(set(table.values())) != 256:
            raise Fail(say('two bytes map to the same character: the table must be one-to-one, or decoding is ambiguous'))
        course = byte_to_char()
        for b in range(256):
            if table[b] != course[b]:
                if course[b] == chr(b):
                    raise Fail(say('byte {b} ({char!r}) is printable: it must map to itself', b=b, char=chr(b)))
                if table[b] == chr(b):
                    raise Fail(say("byte {b} ({char!r}) is not printable in GPT-2's sense: it moves to a new character past 255, the moved bytes numbered in byte order", b=b, char=chr(b)))
                raise Fail(say('byte {b} maps to the wrong character: the moved bytes take the characters after 255 one by one, in byte order', b=b))
        c.proved(say("all 256 bytes map as GPT-2's table (space → 'Ġ', newline → 'Ċ')"))
        _article_ids(c, table, teaching_tokenizer().bpe, say("byte table"))
    return run("byte_table", fn, body)


def _words(seed: int, n: int) -> list[str]:
    """Seeded words in GPT-2's printable characters: English-like, digits, accents, CJK."""
    rng = random.Random(seed)
    letters = "etaoinshrdlucmfwypvbgk" * 3 + "éü你好"
    words = []
    for _ in range(n):
        word = "".join(rng.choice(letters) for _ in range(rng.randint(1, 12)))
        text = rng.choice(["", " "]) + word + rng.choice(["", "ing", "ed", " 2026", "!"])
        words += ["".join(byte_to_char()[b] for b in w.encode("utf-8")) for w in pre_tokenize(text)]
    return words


def check_bpe_merge(fn):
    """``bpe_merge(word, ranks)`` -> the pieces of one word after GPT-2's merge loop.

    ``word`` is a str of printable characters, ``ranks`` maps a pair of pieces to its rank."""
    def body(c):
        toy = [("abc", {("b", "c"): 0, ("a", "b"): 1}, ["a", "bc"],
                say('merge the pair with the LOWEST rank first (rank 0 was learned first)')),
               ("aaa", {("a", "a"): 0}, ["aa", "a"],
                say("in 'aaa' with the pair ('a', 'a') the first two merge: scan left to right and skip the merged part")),
               ("abab", {("a", "b"): 0, ("ab", "ab"): 1}, ["abab"],
                say("keep merging until no adjacent pair has a rank: after 'ab' 'ab' comes 'abab'")),
               ("xyz", {("a", "b"): 0}, ["x", "y", "z"], say('when no pair has a rank, return one piece per character'))]
        for word, ranks, want, hint in toy:
            got = c.call(word, dict(ranks), case=f"bpe_merge({word!r}, {ranks})")
            if not isinstance(got, list) or "".join(map(str, got)) != word:
                raise Fail(say('bpe_merge({word!r}, …) must return a list of pieces that join back to {word!r}', word=word))
            if got != want:
                raise Fail(hint)
        c.proved(say('small rank tables: lowest rank first, left to right, until no pair is left'))
        tok = teaching_tokenizer()
        ranks = tok.merge_ranks
        _article_ids(c, byte_to_char(), lambda w: c.call(w, ranks, case=say('the word {w!r}', w=w)), say('merge loop'))
        for word in _words(seed=1, n=25):
            if c.call(word, ranks, case=say('the word {word!r}', word=word)) != tok.merge_steps(word)[-1]:
                raise Fail(say("the word {word!r} merges differently from GPT-2's loop", word=word))
        c.proved(say("25 seeded words merge as GPT-2's"))
    return run("bpe_merge", fn, body)


def _stream_reference(chunks) -> list[str]:
    decoder = StreamingDecoder(token_bytes=lambda i: chunks[i])
    return [decoder.push(i) for i in range(len(chunks))]


def _split(text: str, rng) -> list[bytes]:
    data = text.encode("utf-8")
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 6))))
    return [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]


def check_stream_decode(fn):
    """``stream_decode(chunks)``: the bytes of each id in turn -> the text shown after each id,
    never half a character (an incomplete UTF-8 character waits for the next id)."""
    def body(c):
        a_tilde = "ã".encode("utf-8")
        shown = c.call([a_tilde[:1], a_tilde[1:]], case=say('ã split over two ids'))
        if not isinstance(shown, list) or len(shown) != 2:
            raise Fail(say('return a list with one string per id'))
        if "\ufffd" in shown[0]:
            raise Fail(say('you showed U+FFFD (�) after an id that ends mid-character: hold back the incomplete bytes'))
        if shown[1] == "":
            raise Fail(say("after the id that completes 'ã' nothing was shown: keep the held-back bytes and put them before the next id's bytes"))
        c.figure("lab.partial_utf8", "shown_after_first_byte", shown[0], say("after ã's first byte nothing may be shown"))
        c.figure("lab.partial_utf8", "shown_after_second_byte", shown[1], say("after ã's second byte 'ã' must be shown, once"))
        tok = teaching_tokenizer()
        ids = tok.encode("Hi 你!")
        chunks = [tok.token_bytes(i) for i in ids]
        if c.call(chunks, case=say("'Hi 你!' id by id")) != _stream_reference(chunks):
            raise Fail(say("'Hi 你!' id by id: 你 is split over ids 19526 and 254; show it once, after the second"))
        c.proved(say("'ã' streams as lab.partial_utf8; 'Hi 你!' shows 你 after its second id"))
        rng = random.Random(5)
        for _ in range(20):
            text = "".join(rng.choice(["a", " ", "é", "你", "€", "😀", "ã"]) for _ in range(rng.randint(2, 8)))
            chunks = _split(text, rng)
            got = c.call(list(chunks), case=say('{text!r} in {chunks} pieces', text=text, chunks=len(chunks)))
            if got != _stream_reference(chunks):
                raise Fail(say('{text!r} split into the byte pieces {chunks} streams differently (each character shown once, as soon as it is complete)', text=text, chunks=chunks))
        c.proved(say('20 seeded texts of 1- to 4-byte characters split at random bytes stream like StreamingDecoder'))
    return run("stream_decode", fn, body)


EXERCISES = {"byte_table": check_byte_table, "bpe_merge": check_bpe_merge, "stream_decode": check_stream_decode}
