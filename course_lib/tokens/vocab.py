"""The toy models' vocabularies: tiny id -> piece tables.

Taught in notebook 01 (detokenising the lab's ids) and used by notebooks 02–07 (through
``toys.five_token.FIVE_TOKEN.vocab`` and ``toys.lab.LAB.vocab``).
A piece is the text a token contributes; a leading space is part of the piece
(the articles write it as ␣).
"""
from __future__ import annotations

from ..data import UnknownNameError
from .ids import check_id, check_ids

# The interface article's five-token model: a→0, b→1, c→2, d→3, e→4.
FIVE_TOKEN_PIECES = ["a", "b", "c", "d", "e"]

# The lab article's twelve-token model. Ids 0, 1, 2, 4, 5, 6 and 10 are printed by the
# article; the other five tokens it names (␣dog, ␣wall, ␣sofa, ␣floor, <|endoftext|>)
# take the free ids 3, 7, 8, 9, 11 in that order.
LAB_PIECES = [
    "the",            # 0
    " the",           # 1
    " cat",           # 2
    " dog",           # 3
    " climb",         # 4
    "ed",             # 5
    " roof",          # 6
    " wall",          # 7
    " sofa",          # 8
    " floor",         # 9
    ".",              # 10
    "<|endoftext|>",  # 11
]
LAB_END_ID = LAB_PIECES.index("<|endoftext|>")


def show_piece(piece: str) -> str:
    """Make a leading space visible, as the articles do: " roof" -> "␣roof"."""
    return piece.replace(" ", "␣")


class PieceVocab:
    """A vocabulary of whole-text pieces (no bytes, no merges): enough for the toy models."""

    def __init__(self, pieces, end_piece: str | None = None):
        self.pieces = list(pieces)
        self.ids = {p: i for i, p in enumerate(self.pieces)}
        self.end_id = self.ids.get(end_piece) if end_piece else None

    def __len__(self):
        return len(self.pieces)

    def piece(self, token_id: int) -> str:
        token_id = check_id(token_id)
        if not 0 <= token_id < len(self.pieces):
            raise UnknownNameError(f"id {token_id} is outside this vocabulary (0..{len(self.pieces) - 1})")
        return self.pieces[token_id]

    def id(self, piece: str) -> int:
        if piece not in self.ids:
            raise UnknownNameError(f"{piece!r} is not in this vocabulary: {self.pieces}")
        return self.ids[piece]

    def encode(self, text: str) -> list[int]:
        """text -> ids by greedy longest match: at each point take the longest piece that fits.

        Enough for the toy vocabularies (whole words and a few suffixes); GPT-2's byte-level
        BPE (``course_lib.tokens.bpe``) is the real thing. Text no piece covers raises."""
        ids, start = [], 0
        longest_first = sorted(self.pieces, key=len, reverse=True)
        while start < len(text):
            match = next((p for p in longest_first if p and text.startswith(p, start)), None)
            if match is None:
                raise ValueError(f"no piece of this vocabulary matches {text[start:start + 12]!r} "
                                 f"(position {start} of {text!r})")
            ids.append(self.ids[match])
            start += len(match)
        return ids

    def decode_pieces(self, ids) -> list[str]:
        """ids -> their pieces, one per id (the lookup step of detokenising)."""
        return [self.piece(i) for i in check_ids(ids)]

    def decode(self, ids) -> str:
        """ids -> text: look each piece up, drop the end token, glue the rest."""
        ids = check_ids(ids)
        return "".join(p for i, p in zip(ids, self.decode_pieces(ids)) if i != self.end_id)


FIVE_TOKEN_VOCAB = PieceVocab(FIVE_TOKEN_PIECES)
LAB_VOCAB = PieceVocab(LAB_PIECES, end_piece="<|endoftext|>")
