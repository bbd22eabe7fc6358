"""Seeing tokens: coloured spans, byte tables and a live tokenizer box.

Taught in notebook 01 (tokenizer).
"""
from __future__ import annotations

import html

from ..tokens.bpe import gpt2_encoding, teaching_tokenizer
from ..tokens.streaming import StreamingDecoder
from .language import text as label   # `text` is the playground's argument here
from .palette import TOKEN_COLORS as PALETTE
from .widget_view import widget_bundle


def token_rows(ids, token_bytes=None) -> list[dict]:
    """One row per id: the id, its bytes, and the text it shows when streamed in order.

    ``shown`` is what a streaming decoder prints after this id ("" when the id ends inside
    a character); ``pending`` is what it still holds back.
    """
    token_bytes = token_bytes or teaching_tokenizer().token_bytes
    decoder = StreamingDecoder(token_bytes)
    rows = []
    for token_id in ids:
        raw = token_bytes(int(token_id))
        shown = decoder.push(token_id)
        rows.append({"id": int(token_id), "bytes": raw, "shown": shown, "pending": decoder.pending})
    return rows


def code_point(ch: str) -> str:
    """``"U+4F60"`` for 你: a character's Unicode code point, readable without any font."""
    return f"U+{ord(ch):04X}"


def code_points(text: str) -> str:
    """Each non-ASCII character of ``text`` with its code point (``"你 U+4F60"``), "" if none.

    Shown next to a token's text, so 你 or an emoji reads even where no font draws it.
    """
    return " ".join(f"{ch} {code_point(ch)}" for ch in text if ord(ch) > 127)


def format_token_table(ids, token_bytes=None) -> str:
    """A fixed-width table of :func:`token_rows`, ready to print; the last column names every
    non-ASCII character shown by its code point."""
    column, bytes_hex, as_text_label, shown_label, held_label, point_label = label("tokens.table_columns").split("|")
    lines = [f"{_padded(column, 6, right=True)}  {_padded(bytes_hex, 14)} {_padded(as_text_label, 10)} "
             f"{_padded(shown_label, 8)} {_padded(held_label, 10)} {point_label}"]
    for row in token_rows(ids, token_bytes):
        as_text = row["bytes"].decode("utf-8", errors="replace")
        lines.append(f"{row['id']:>6}  {row['bytes'].hex(' '):<14} {as_text!r:<10} "
                     f"{_padded(repr(row['shown']), 8)} {row['pending'].hex(' ') or '-':<10} "
                     f"{code_points(row['shown']) or '-'}".rstrip())
    return "\n".join(lines)


def _padded(text: str, width: int, right: bool = False) -> str:
    """``text`` padded with spaces to ``width`` columns: a wide character (你) takes two."""
    pad = " " * max(width - len(text) - sum(1 for ch in text if ord(ch) >= 0x1100), 0)
    return pad + text if right else text + pad


def span_char(ch: str) -> str:
    """One character of a token span as HTML: a space as ␣, a newline as ↵, and a non-ASCII
    character followed by its code point in small type (你<sub>U+4F60</sub>)."""
    if ch == " ":
        return "␣"
    if ch == "\n":
        return "↵<br>"
    if ord(ch) > 127:
        return (f'{html.escape(ch)}<sub style="font-size:10px;color:#555;margin:0 2px">'
                f'{code_point(ch)}</sub>')
    return html.escape(ch)


def token_spans_html(ids, token_bytes=None) -> str:
    """HTML with one coloured span per token; hover a span to see its id and bytes.

    A token that ends inside a character has no text of its own: it is drawn as its bytes in
    hex, and the character appears on the token that completes it.
    """
    spans = []
    for i, row in enumerate(token_rows(ids, token_bytes)):
        text = row["shown"]
        shown = "".join(span_char(ch) for ch in text) if text else (
            "<i>" + row["bytes"].hex(" ") + "</i>")
        tooltip = html.escape(label("tokens.tooltip", id=row["id"], hex=row["bytes"].hex(" ")), quote=True)
        spans.append(
            f'<span title="{tooltip}" style="background:'
            f'{PALETTE[i % len(PALETTE)]};padding:2px 3px;margin:1px;border-radius:3px;'
            f'font-family:monospace;font-size:15px;color:#111">{shown}</span>')
    return '<div style="line-height:2.2">' + "".join(spans) + "</div>"


def show_tokens(ids, token_bytes=None):
    """Display coloured token spans in a notebook."""
    from IPython.display import HTML, display

    display(HTML(token_spans_html(ids, token_bytes)))


PLAYGROUND_MAX_CHARS = 2_000
"""The playground shows the tokens of at most this many characters (a pasted blob of a million
characters would otherwise draw a million spans and freeze the notebook)."""


def playground_view(text: str, enc, max_chars: int = PLAYGROUND_MAX_CHARS) -> str:
    """The HTML the playground shows for ``text``: spans, ids and count of at most
    ``max_chars`` characters, with a line saying so when the text was longer."""
    note = ""
    if len(text) > max_chars:
        note = label("tokens.too_long", n=len(text), max=max_chars)
        text = text[:max_chars]
    ids = enc.encode(text, allowed_special="all")
    return note + token_spans_html(ids) + f"<pre>{label('tokens.count', n=len(ids), ids=html.escape(str(ids)))}</pre>"


def playground_text(text: str, enc, max_chars: int = PLAYGROUND_MAX_CHARS) -> str:
    """The playground as plain text (what a static view shows): the text, its ids, each
    token's text and the code points of its non-ASCII characters."""
    ids = enc.encode(text[:max_chars], allowed_special="all")
    lines = [label("tokens.playground", text=repr(text[:max_chars])), label("tokens.count", n=len(ids), ids=ids)]
    for row in token_rows(ids):
        shown = repr(row["shown"]) if row["shown"] else label("tokens.partial", hex=row["bytes"].hex(" "))
        points = code_points(row["shown"])
        lines.append(f"  {row['id']:>6}  {shown}" + (f"  {points}" if points else ""))
    return "\n".join(lines)


class TokenPlayground:
    """A text box whose tokens (spans, ids, count) update as you type (ipywidgets).

    Display it as a cell's last expression. Where widgets do not run (GitHub, nbviewer, a
    notebook not trusted yet), the spans of the text it was created with show as HTML, or
    :func:`playground_text` as plain text.
    """

    def __init__(self, text: str = "Hi 你!"):
        import ipywidgets as widgets

        self.enc = gpt2_encoding()
        self.text = text
        self.box = widgets.Text(value=text, description=label("tokens.box"), layout=widgets.Layout(width="90%"),
                                continuous_update=True)
        self.view = widgets.HTML()
        self.box.observe(self.update, names="value")
        self.update()
        self.widget = widgets.VBox([self.box, self.view])

    def update(self, _=None):
        self.view.value = playground_view(self.box.value, self.enc)

    def _repr_mimebundle_(self, **kwargs):
        data = widget_bundle(self.widget, **kwargs)
        data["text/html"] = playground_view(self.text, self.enc)
        data["text/plain"] = playground_text(self.text, self.enc)
        return data


def token_playground(text: str = "Hi 你!") -> TokenPlayground:
    """A live tokenizer box (:class:`TokenPlayground`); text longer than
    :data:`PLAYGROUND_MAX_CHARS` shows its first characters and says so."""
    return TokenPlayground(text)
