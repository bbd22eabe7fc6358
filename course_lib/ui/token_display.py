"""Seeing tokens: coloured spans, byte tables and a live tokenizer box.

Taught in notebook 01 (tokenizer).
"""
from __future__ import annotations

import html

from ..tokens.bpe import gpt2_encoding, teaching_tokenizer
from ..tokens.streaming import StreamingDecoder
from .palette import TOKEN_COLORS as PALETTE


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


def format_token_table(ids, token_bytes=None) -> str:
    """A fixed-width table of :func:`token_rows`, ready to print."""
    lines = [f"{'id':>6}  {'bytes (hex)':<14} {'as text':<10} {'shown':<8} held back"]
    for row in token_rows(ids, token_bytes):
        as_text = row["bytes"].decode("utf-8", errors="replace")
        lines.append(f"{row['id']:>6}  {row['bytes'].hex(' '):<14} {as_text!r:<10} "
                     f"{row['shown']!r:<8} {row['pending'].hex(' ') or '-'}")
    return "\n".join(lines)


def token_spans_html(ids, token_bytes=None) -> str:
    """HTML with one coloured span per token; hover a span to see its id and bytes.

    A token that ends inside a character has no text of its own: it is drawn as its bytes in
    hex, and the character appears on the token that completes it.
    """
    spans = []
    for i, row in enumerate(token_rows(ids, token_bytes)):
        text = row["shown"]
        label = html.escape(text).replace(" ", "␣").replace("\n", "↵<br>") if text else (
            "<i>" + row["bytes"].hex(" ") + "</i>")
        spans.append(
            f'<span title="id {row["id"]} · bytes {row["bytes"].hex(" ")}" style="background:'
            f'{PALETTE[i % len(PALETTE)]};padding:2px 3px;margin:1px;border-radius:3px;'
            f'font-family:monospace;font-size:15px;color:#111">{label}</span>')
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
        note = (f"<p><b>The text has {len(text):,} characters; showing the tokens of the first "
                f"{max_chars:,} only</b> (encode the whole text with "
                f"<code>gpt2_encoding().encode(text)</code>).</p>")
        text = text[:max_chars]
    ids = enc.encode(text, allowed_special="all")
    return note + token_spans_html(ids) + f"<pre>{len(ids)} tokens: {html.escape(str(ids))}</pre>"


def token_playground(text: str = "Hi 你!"):
    """A text box whose tokens (spans, ids, count) update as you type (ipywidgets); text longer
    than :data:`PLAYGROUND_MAX_CHARS` shows its first characters and says so."""
    import ipywidgets as widgets

    enc = gpt2_encoding()
    box = widgets.Text(value=text, description="text", layout=widgets.Layout(width="90%"),
                       continuous_update=True)
    view = widgets.HTML()

    def update(_=None):
        view.value = playground_view(box.value, enc)

    box.observe(update, names="value")
    update()
    return widgets.VBox([box, view])
