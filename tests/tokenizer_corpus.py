"""A seeded corpus for checking GPT-2 tokenizers against each other (tests/test_tokenizer_reference.py).

It covers every class of character the pre-tokenizer's pattern tells apart — letters (``\\p{L}``,
many scripts, upper/lower/title case, modifier letters), numbers (``\\p{N}``: decimal digits of
several scripts, letter numbers, other numbers), whitespace (all 25 ``\\s`` characters, ``\\r\\n``,
runs, trailing runs) and everything else (punctuation, symbols, combining marks, controls,
private use, emoji with skin tones, ZWJ sequences, flags, keycaps) — plus contractions in every
case, near-contractions, and a few words thousands of characters long.

Only characters assigned in old, stable Unicode blocks are used: a character that a newer
Unicode version (re)classifies would test the Unicode tables, not the tokenizer.
"""
from __future__ import annotations

import random
import unicodedata

# Old Unicode blocks (assigned long before any of the regex engines' tables): (first, last).
BLOCKS = [
    (0x0041, 0x024F),   # Latin, Latin-1, Latin Extended-A/B (incl. title-case ǅ ǈ ǋ ǲ)
    (0x0250, 0x02FF),   # IPA, spacing modifier letters (Lm) and symbols (Sk)
    (0x0370, 0x03FF), (0x0400, 0x04FF), (0x0531, 0x058A),   # Greek, Cyrillic, Armenian
    (0x05D0, 0x05EA), (0x0620, 0x0669), (0x06F0, 0x06F9),   # Hebrew, Arabic letters and digits
    (0x0900, 0x097F), (0x0980, 0x09FF), (0x0B80, 0x0BFF),   # Devanagari, Bengali, Tamil
    (0x0E01, 0x0E5B), (0x10A0, 0x10FF), (0x1200, 0x137C),   # Thai, Georgian, Ethiopic
    (0x13A0, 0x13F4), (0x1100, 0x11FF),                     # Cherokee, Hangul Jamo
    (0x2010, 0x205E), (0x20A0, 0x20B5), (0x2100, 0x214F),   # punctuation, currency, letterlike
    (0x2150, 0x2188), (0x2190, 0x22FF), (0x2460, 0x24FF),   # number forms, arrows, math, ①
    (0x2500, 0x257F), (0x3001, 0x303F), (0x3041, 0x3096),   # box drawing, CJK punctuation, kana
    (0x30A1, 0x30FA), (0x4E00, 0x9FA5), (0xAC00, 0xD7A3),   # katakana, CJK, Hangul syllables
    (0xFF01, 0xFF5E), (0xE000, 0xE0FF),                     # fullwidth forms, private use
    (0x1D400, 0x1D7FF), (0x1F300, 0x1F64F),                 # math alphanumerics, emoji
]
WHITESPACE = ["\t", "\n", "\x0b", "\x0c", "\r", " ", "\x85", "\xa0", "\u1680", *map(chr, range(0x2000, 0x200B)),
              "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\r\n"]
CONTROLS = [chr(c) for c in [*range(0x00, 0x09), *range(0x0E, 0x20), 0x7F, *range(0x80, 0x85), *range(0x86, 0xA0)]]
MARKS = [chr(c) for c in [*range(0x0300, 0x0370), 0x0483, 0x0488, 0x093E, 0x0941, 0x094D, 0x0E31, 0x20DD, 0x20E3]]
CONTRACTIONS = ["s", "t", "re", "ve", "m", "ll", "d"]
NEAR_MISSES = ["'", "''", "'mm", "'MM", "'ss", "'x", "'LLL", "'dd", "'Ve", "'rE", "'tt", "' s", "'\u017f"]
EMOJI = ["😀", "👍🏿", "👩🏽\u200d💻", "👨\u200d👩\u200d👧\u200d👦", "🏳\ufe0f\u200d🌈", "❤\ufe0f", "1\ufe0f\u20e3",
         "#\ufe0f\u20e3", "🇫🇷", "🇯🇵🇩🇪", "\u200d", "\ufe0f", "🧑\u200d🤝\u200d🧑", "👁\u200d🗨"]


def character_pools() -> dict[str, list[str]]:
    """The old blocks' assigned characters, grouped the way the pattern groups them."""
    pools: dict[str, list[str]] = {"letter": [], "number": [], "mark": list(MARKS), "other": []}
    for first, last in BLOCKS:
        for code in range(first, last + 1):
            c = chr(code)
            cat = unicodedata.category(c)
            if cat == "Cn" or c.isspace():
                continue
            group = {"L": "letter", "N": "number", "M": "mark"}.get(cat[0], "other")
            pools[group].append(c)
    return pools


def _word(rng: random.Random, pools) -> str:
    kind = rng.choices(["letters", "number", "other", "emoji", "contraction", "near", "marks", "control"],
                       weights=[10, 4, 4, 2, 3, 1, 2, 1])[0]
    if kind == "letters":
        if rng.random() < 0.5:                        # one script at a time, as in real text
            start = rng.randrange(len(pools["letter"]))
            chars = pools["letter"][start:start + 60]
        else:
            chars = pools["letter"]
        word = "".join(rng.choice(chars) for _ in range(rng.randint(1, 9)))
        if rng.random() < 0.2:
            word += rng.choice(pools["mark"])        # a combining mark splits the word
        if rng.random() < 0.2:
            word = word.upper() if rng.random() < 0.5 else word.title()
        return word
    if kind == "number":
        digits = rng.choice(["0123456789", "٠١٢٣٤٥٦٧٨٩", "०१२३४५६७८९", "০১২৩৪৫৬৭৮৯", "０１２３４５６７８９",
                             "ⅠⅡⅢⅣⅫ", "²³¹½¼①②⑳", "𝟎𝟏𝟐𝟗"])
        return "".join(rng.choice(digits) for _ in range(rng.randint(1, 7)))
    if kind == "other":
        return "".join(rng.choice(pools["other"] + list("!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~"))
                       for _ in range(rng.randint(1, 4)))
    if kind == "emoji":
        return "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 3)))
    if kind == "contraction":
        c = rng.choice(CONTRACTIONS)
        c = rng.choice([c, c.upper(), c.title(), c[:1] + c[1:].upper()])
        before = rng.choice(["", "", "it", "DON", "we", "Y", " ", "'", "x", "9"])
        return before + "'" + c + rng.choice(["", "", "s", "S", "'", " ", "!", "x"])
    if kind == "near":
        return rng.choice(NEAR_MISSES)
    if kind == "marks":
        return "".join(rng.choice(pools["mark"]) for _ in range(rng.randint(1, 3)))
    return "".join(rng.choice(CONTROLS) for _ in range(rng.randint(1, 2)))


def _space(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.55:
        return " "
    if r < 0.7:
        return ""
    return "".join(rng.choice(WHITESPACE) for _ in range(rng.randint(1, 4)))


def random_texts(n: int = 2500, seed: int = 10) -> list[str]:
    """``n`` seeded texts of 1–20 words with every kind of separator, leading and trailing runs."""
    rng = random.Random(seed)
    pools = character_pools()
    texts = []
    for _ in range(n):
        parts = [_space(rng) if rng.random() < 0.2 else ""]
        for _ in range(rng.randint(1, 20)):
            parts += [_word(rng, pools), _space(rng)]
        if rng.random() < 0.3:
            parts.append("".join(rng.choice(WHITESPACE) for _ in range(rng.randint(1, 5))))
        texts.append("".join(parts))
    return texts


def fixed_texts() -> list[str]:
    """Hand-picked cases: every contraction in every case, whitespace around words, ``\\r\\n``."""
    texts = ["", " ", "  ", "a  b", "a \tb", "a\n\n b", "x\r\ny", "x\r\n", "x\r\n\r\n  ", " \n ", "a   ", "\t",
             "end.   ", "word\u3000\u3000next", "\xa0\xa0x", "x\u2028\u2029", "\u1680\u205f y", "a\x0b\x0cb"]
    for c in CONTRACTIONS:
        for form in (c, c.upper(), c.title()):
            texts += [f"'{form}", f"it'{form}", f"IT'{form}", f" '{form}", f"'{form}'{form}", f"x '{form}s"]
    texts += NEAR_MISSES + ["DON'T STOP", "I'M HERE", "WE'LL SEE", "THEY'RE", "YOU'VE", "HE'D", "SHE'S"]
    texts += EMOJI + ["".join(EMOJI)]
    return texts


def long_words(seed: int = 11) -> list[str]:
    """A few words of thousands of characters (the from-scratch BPE is quadratic in word length)."""
    rng = random.Random(seed)
    latin = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(2000))
    return [
        latin, "A" + latin.upper()[:1500] + "'S",
        "a" * 4000,
        "".join(rng.choice("0123456789") for _ in range(1500)),
        "".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(1500)),
        "".join(chr(rng.randrange(0x430, 0x450)) for _ in range(1500)),
        "e" + "\u0301" * 2000,
        "\u200d".join(chr(rng.randrange(0x1F600, 0x1F650)) for _ in range(400)),
        " \t\u3000\r\n" * 600 + "x",
        "x" + " " * 3000,
        "".join(rng.choice("!?.,;:-_()[]{}") for _ in range(3000)),
    ]


def corpus() -> list[str]:
    return fixed_texts() + random_texts() + long_words()
