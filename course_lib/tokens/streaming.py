"""Ids back to text one at a time, never showing half a UTF-8 character.

Taught in notebook 01 (tokenizer: 你 split over two ids, ã streamed byte by byte) and used by
notebook 07 (the generation loop prints as it streams).
"""
from __future__ import annotations

from .bpe import teaching_tokenizer
from .ids import check_id


# Which second byte may follow each lead byte of a UTF-8 character (Unicode's table 3-7 of
# well-formed sequences; every later byte is a continuation byte 80..BF). The narrow ranges
# rule out overlong forms (E0, F0), surrogates (ED) and code points above U+10FFFF (F4).
UTF8_SECOND_BYTE = {
    **{lead: (0x80, 0xBF) for lead in range(0xC2, 0xF5)},
    0xE0: (0xA0, 0xBF), 0xED: (0x80, 0x9F), 0xF0: (0x90, 0xBF), 0xF4: (0x80, 0x8F),
}


def utf8_length(lead: int) -> int:
    """How many bytes a character starting with byte ``lead`` has (0: not a lead byte)."""
    if lead < 0x80:
        return 1
    if lead not in UTF8_SECOND_BYTE:
        return 0                                      # 80..C1 and F5..FF never start a character
    return 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def incomplete_utf8_tail(data: bytes) -> int:
    """How many bytes at the end of ``data`` are the start of a character that later bytes
    could still complete (0, 1, 2 or 3). Anything before them is final already."""
    for start in range(len(data) - 1, max(len(data) - 4, -1), -1):
        lead = data[start]
        if 0x80 <= lead <= 0xBF:
            continue                                  # a continuation byte: look further back
        tail = data[start:]
        need = utf8_length(lead)
        if len(tail) >= need:                         # complete, or not a lead byte at all
            return 0
        if len(tail) > 1:
            low, high = UTF8_SECOND_BYTE[lead]
            if not low <= tail[1] <= high:
                return 0                              # e.g. ED A0: would be a surrogate
        return len(tail)                              # later bytes are 80..BF: still possible
    return 0


class StreamingDecoder:
    """Turn ids into text one at a time, never showing half a character (notebooks 01, 07).

    ``push(id)`` returns the text that became complete with this id — possibly ``""`` when
    the id ended in the middle of a UTF-8 character (你 = 3 bytes split over ids 19526 and
    254). ``flush()`` returns what is left at the end (an unfinished character becomes
    U+FFFD). ``token_bytes`` maps an id to its bytes: GPT-2's by default, or any table.

    Bytes are held back only while a later id could still complete them into a character;
    as soon as they no longer can (``ED A0``: a surrogate, ``E2 82`` followed by ``A``), they
    are released as U+FFFD, exactly as ``bytes.decode("utf-8", errors="replace")`` would
    show them. (Python's own incremental decoder holds ``ED A0`` until more bytes arrive.)
    """

    def __init__(self, token_bytes=None):
        self.token_bytes = token_bytes or teaching_tokenizer().token_bytes
        self._pending = b""
        self.text = ""                                # everything shown so far

    @property
    def pending(self) -> bytes:
        """Bytes received but not yet shown (the start of an unfinished character)."""
        return self._pending

    def push(self, token_id: int) -> str:
        data = self._pending + self.token_bytes(check_id(token_id))
        cut = len(data) - incomplete_utf8_tail(data)
        # the held tail starts with a lead byte, so it cannot change how the bytes before it decode
        new = data[:cut].decode("utf-8", errors="replace")
        self._pending = data[cut:]
        self.text += new
        return new

    def flush(self) -> str:
        new = self._pending.decode("utf-8", errors="replace")
        self._pending = b""
        self.text += new
        return new
