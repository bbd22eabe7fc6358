"""Four pictures drawn from the data a notebook passes in: the causal mask, heads, merges, KV cache.

Each function returns a matplotlib ``Figure`` (shown as a PNG under the cell, so it reads the
same in JupyterLab, on GitHub or in any static view) and labels it in the notebook's language
(``course_lib.ui.language``). Every text drawn is a label or an integer: no computed float, so
nothing in a picture depends on the CPU.

* :func:`merge_loop_diagram`   — notebook 01: a word's pieces after each merge, the merged pair marked
* :func:`causal_mask_diagram`  — notebook 03: which key positions each query position may read
* :func:`head_split_diagram`   — notebook 03: x [T, D] cut into n_head blocks → [n_head, T, head_dim]
* :func:`kv_cache_diagram`     — notebook 07: K/V rows reused from the cache vs recomputed each step
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from .fonts import use_readable_fonts
from .language import text
from .palette import SAMPLING_COLORS

use_readable_fonts()   # Chinese labels as glyphs, never a missing-glyph warning

MASKED_GREY = "#d9d9d9"     # the masked cells, as in plots.attention_heatmap
CACHED_GREY = "#cfcfcf"     # K/V rows read back from the cache
NEW_COLOR = SAMPLING_COLORS[1]      # what is computed at this step (orange)
SEE_COLOR = "#c6dbef"       # a key the query may read (light blue)
MERGE_COLOR = SAMPLING_COLORS[1]
PIECE_COLOR = "#eeeeee"
MAX_POSITIONS = 16          # more boxes than this per row would not be readable


# ---------------------------------------------------------------------------- input checks

def _labels(labels, name: str, count: int | None = None) -> list[str]:
    """``labels`` as a list of strings (``count`` of them when given), or a ValueError naming ``name``."""
    if isinstance(labels, str) or not hasattr(labels, "__len__"):
        raise TypeError(f"{name} must be a list of strings (one per position), got {type(labels).__name__}")
    labels = list(labels)
    bad = [i for i, label in enumerate(labels) if not isinstance(label, str)]
    if bad:
        raise TypeError(f"{name}[{bad[0]}] is {labels[bad[0]]!r}: {name} must hold strings (e.g. token texts)")
    if count is not None and len(labels) != count:
        raise ValueError(f"{name} has {len(labels)} entries, expected {count} (one per position)")
    return labels


def _count(value, name: str, low: int = 1, high: int | None = None) -> int:
    """A whole number in [low, high], or an error naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be a whole number, got {value!r}")
    if value < low or (high is not None and value > high):
        where = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ValueError(f"{name} must be {where} (to fit a readable picture), got {value}")
    return int(value)


def _box(ax, x, y, w, h, label, color, hatch=None, text_color="black", size=9, edge="#555555"):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor=edge, hatch=hatch, linewidth=1))
    if label:
        ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=size, color=text_color)


def _bare(ax):
    ax.set_axis_off()
    ax.set_aspect("equal")


# ---------------------------------------------------------------------------- 01: the merge loop

def _merged_pair(before: list[str], after: list[str], step: int) -> tuple[tuple[str, str], list[int]]:
    """The pair merged between two steps and the places in ``after`` where it was merged;
    a ValueError naming ``steps[step]`` when ``after`` is not ``before`` with one pair merged."""
    first = next((i for i, (a, b) in enumerate(zip(before, after)) if a != b), None)
    if first is None or first + 1 >= len(before):
        raise ValueError(f"steps[{step}] is not steps[{step - 1}] with one adjacent pair merged: "
                         f"{before} → {after}")
    pair = (before[first], before[first + 1])
    merged, places, i = [], [], 0
    while i < len(before):          # merge every occurrence, left to right, as the loop does
        if i + 1 < len(before) and (before[i], before[i + 1]) == pair:
            places.append(len(merged))
            merged.append(before[i] + before[i + 1])
            i += 2
        else:
            merged.append(before[i])
            i += 1
    if merged != after:
        raise ValueError(f"steps[{step}] is not steps[{step - 1}] with the pair {pair} merged everywhere: "
                         f"expected {merged}, got {after}")
    return pair, places


def merge_loop_diagram(steps, ranks=None, title=None):
    """The merge loop of one word, one row per step: its pieces as boxes, the piece(s) made at
    that step in colour and the merged pair written beside the row. Taught in notebook 01.

    ``steps``: every state of the word, e.g. ``tok.merge_steps(word)`` (step 0 one symbol per
    byte, each next step one pair merged everywhere). ``ranks``: optional, the merge ranks
    (``tok.merge_ranks``), to write each merged pair's rank in vocab.bpe.
    """
    if isinstance(steps, str) or not hasattr(steps, "__len__") or len(steps) == 0:
        raise ValueError("steps must be a non-empty list of steps, each a list of pieces "
                         "(e.g. tok.merge_steps(word))")
    steps = [_labels(step, f"steps[{n}]") for n, step in enumerate(steps)]
    for n, step in enumerate(steps):
        if not step or any(piece == "" for piece in step):
            raise ValueError(f"steps[{n}] must hold at least one piece and no empty piece, got {step}")
        if "".join(step) != "".join(steps[0]):
            raise ValueError(f"steps[{n}] spells {''.join(step)!r}, steps[0] spells {''.join(steps[0])!r}: "
                             "every step must hold the same word")
    _count(len(steps[0]), "the number of pieces in steps[0]", high=MAX_POSITIONS)
    merges = [_merged_pair(steps[n - 1], steps[n], n) for n in range(1, len(steps))]
    word = "".join(steps[0])
    width = len(word) * 0.55
    fig, ax = plt.subplots(figsize=(max(6.5, width + 5.5), 0.55 * len(steps) + 1.0))
    for n, pieces in enumerate(steps):
        y = -n
        ax.text(-0.3, y + 0.2, text("diagram.merge_step", n=n), ha="right", va="center", fontsize=9)
        made = set(merges[n - 1][1]) if n else set()
        x = 0.0
        for k, piece in enumerate(pieces):
            w = 0.55 * len(piece)
            _box(ax, x, y, w - 0.05, 0.4, piece, MERGE_COLOR if k in made else PIECE_COLOR,
                 text_color="white" if k in made else "black")
            x += w
        if n == 0:
            note = text("diagram.merge_start")
        else:
            (a, b), _ = merges[n - 1]
            note = text("diagram.merge_pair", a=a, b=b, ab=a + b)
            if ranks is not None and (a, b) in ranks:
                note += text("diagram.merge_rank", rank=int(ranks[(a, b)]))
        if n == len(steps) - 1:
            note += "\n" + text("diagram.merge_end", n=len(pieces))
        ax.text(width + 0.3, y + 0.2, note, ha="left", va="center", fontsize=9)
    ax.set_xlim(-1.6, width + 5.0)
    ax.set_ylim(-len(steps) + 0.6, 0.9)
    ax.set_axis_off()
    ax.set_title(text("diagram.merge_title", word=word) if title is None else title)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------- 03: the causal mask

def _boolean_square(mask, name: str) -> np.ndarray:
    if hasattr(mask, "detach"):
        mask = mask.detach().cpu().numpy()
    array = np.asarray(mask)
    if array.ndim != 2 or array.shape[0] != array.shape[1] or array.shape[0] == 0:
        raise ValueError(f"{name} must be a square (T, T) grid of booleans (True = masked), e.g. "
                         f"causal_mask(T); got shape {tuple(array.shape)}")
    if array.dtype != bool:
        raise TypeError(f"{name} must hold booleans (True = masked), got dtype {array.dtype}: "
                        f"compare instead of computing numbers, e.g. cols > rows")
    return array


def causal_mask_diagram(mask, labels=None, title=None):
    """The causal mask as a grid: one row per query position, one column per key position;
    a key the query may read is blue with ✓, a masked (future) key is hatched grey with −∞
    (its score before the softmax). Each row says how many keys it reads. Taught in notebook 03.

    ``mask``: (T, T) booleans, True = masked, e.g. ``causal_mask(T)``; ``labels``: the T
    tokens (default: the positions 0 … T−1).
    """
    masked = _boolean_square(mask, "mask")
    T = _count(masked.shape[0], "T (the mask's size)", high=MAX_POSITIONS)
    labels = [str(t) for t in range(T)] if labels is None else _labels(labels, "labels", T)
    names = [f"{t} {label}" if label != str(t) else label for t, label in enumerate(labels)]
    fig, ax = plt.subplots(figsize=(0.6 * T + 3.4, 0.5 * T + 1.8))
    for i in range(T):
        for j in range(T):
            if masked[i, j]:
                _box(ax, j, i, 1, 1, "", MASKED_GREY, hatch="//")
                ax.text(j + 0.5, i + 0.5, "−∞", ha="center", va="center", fontsize=9,
                        bbox={"facecolor": MASKED_GREY, "edgecolor": "none", "pad": 1})
            else:
                _box(ax, j, i, 1, 1, "✓", SEE_COLOR)
        ax.text(T + 0.2, i + 0.5, text("diagram.mask_reads", n=int((~masked[i]).sum())),
                ha="left", va="center", fontsize=9)
    ax.set_xlim(0, T + 2.2)
    ax.set_ylim(T, 0)                                   # row 0 at the top, as the tensor prints
    ax.set_aspect("equal")
    ax.set_xticks(np.arange(T) + 0.5, names, rotation=90 if max(map(len, names)) > 3 else 0)
    ax.set_yticks(np.arange(T) + 0.5, names)
    ax.tick_params(length=0)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_xlabel(text("diagram.mask_keys"))
    ax.set_ylabel(text("diagram.mask_queries"))
    ax.set_title(text("diagram.mask_title") if title is None else title, pad=12)
    ax.legend(handles=[Rectangle((0, 0), 1, 1, facecolor=SEE_COLOR, edgecolor="#555555"),
                       Rectangle((0, 0), 1, 1, facecolor=MASKED_GREY, edgecolor="#555555", hatch="//")],
              labels=[text("diagram.mask_read"), text("diagram.mask_masked")],
              loc="upper center", bbox_to_anchor=(0.4, -0.02), ncol=2, fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------- 03: heads

def head_split_diagram(T, D, n_head, labels=None, title=None):
    """x [T, D] cut into ``n_head`` blocks of D/n_head columns (one colour per head), and the
    same numbers reshaped to [n_head, T, head_dim]: one [T, head_dim] matrix per head. Taught
    in notebook 03 (``split_heads``: view, then transpose).

    ``T``, ``D``, ``n_head``: whole numbers, ``D`` divisible by ``n_head``; ``labels``: the T tokens.
    """
    T = _count(T, "T", high=MAX_POSITIONS)
    D = _count(D, "D", high=MAX_POSITIONS)
    n_head = _count(n_head, "n_head", high=D)
    if D % n_head:
        raise ValueError(f"D = {D} does not split into n_head = {n_head} equal heads: "
                         f"D must be a multiple of n_head")
    d = D // n_head
    labels = [str(t) for t in range(T)] if labels is None else _labels(labels, "labels", T)
    color = lambda h: SAMPLING_COLORS[h % len(SAMPLING_COLORS)]          # noqa: E731
    gap = 1.2                                                            # between the heads on the right
    right = D + 3.0                                                      # where the heads start
    fig, ax = plt.subplots(figsize=(0.42 * (right + n_head * (d + gap)) + 1.0, 0.42 * T + 2.4))
    for t in range(T):
        ax.text(-0.2, t + 0.5, labels[t], ha="right", va="center", fontsize=9)
        for f in range(D):
            _box(ax, f, t, 1, 1, "", color(f // d), edge="white")
    for f in range(D):
        ax.text(f + 0.5, -0.3, f"f{f}", ha="center", va="bottom", fontsize=8)
    ax.text(D / 2, T + 0.5, text("diagram.heads_before", T=T, D=D), ha="center", va="top", fontsize=9)
    ax.annotate("", xy=(right - 0.4, T / 2), xytext=(D + 0.4, T / 2),
                arrowprops={"arrowstyle": "-|>", "color": "black", "lw": 1.5})
    ax.text((D + right) / 2, T / 2 - 0.4, text("diagram.heads_reshape"), ha="center", va="bottom", fontsize=8)
    for h in range(n_head):
        left = right + h * (d + gap)
        for t in range(T):
            for k in range(d):
                _box(ax, left + k, t, 1, 1, "", color(h), edge="white")
        for k in range(d):
            ax.text(left + k + 0.5, -0.3, f"f{h * d + k}", ha="center", va="bottom", fontsize=8)
        ax.text(left + d / 2, -1.2, text("plot.head", n=h + 1), ha="center", va="bottom", fontsize=9,
                color=color(h), fontweight="bold")
    ax.text(right + (n_head * (d + gap) - gap) / 2, T + 0.5,
            text("diagram.heads_after", H=n_head, T=T, d=d), ha="center", va="top", fontsize=9)
    ax.set_xlim(-1.5, right + n_head * (d + gap))
    ax.set_ylim(T + 1.6, -1.6)
    _bare(ax)
    ax.set_title(text("diagram.heads_title", D=D, H=n_head, d=d) if title is None else title)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------- 07: the KV cache

def kv_steps(n_tokens: int, prompt_len: int) -> list[tuple[int, int]]:
    """(first new position, last position) of each generation step: step 0 reads the whole
    prompt, every later step one more token (the one chosen before)."""
    return [(0, prompt_len - 1)] + [(t, t) for t in range(prompt_len, n_tokens)]


def kv_cache_diagram(tokens, prompt_len, title=None):
    """Generation with and without a KV cache, one row per step, one box per K/V row.

    Top: with the cache, step 0 computes the prompt's K/V rows and later steps compute only
    the newest token's (colour) and read the others back (grey). Below: without it, every row
    is computed again at every step. In both, the newest query reads every key up to itself
    (the lines). Each row counts the K/V rows computed; the title totals them. Taught in notebook 07.

    ``tokens``: the token texts the model reads, prompt first, then each chosen token fed back;
    ``prompt_len``: how many of them are the prompt.
    """
    tokens = _labels(tokens, "tokens")
    n = _count(len(tokens), "the number of tokens", high=MAX_POSITIONS)
    prompt_len = _count(prompt_len, "prompt_len", high=n)
    steps = kv_steps(n, prompt_len)
    with_cache = [last - first + 1 for first, last in steps]
    without = [last + 1 for _, last in steps]
    # one panel above the other: the picture keeps a notebook's width, so its labels keep their size
    fig, axes = plt.subplots(2, 1, figsize=(0.75 * n + 2.6, 2 * (0.9 * len(steps) + 1.0)))
    for ax, cached, counts, heading in [(axes[0], True, with_cache, text("diagram.kv_with")),
                                        (axes[1], False, without, text("diagram.kv_without"))]:
        for s, (first, last) in enumerate(steps):
            y = -1.6 * s
            for t in range(last + 1):
                new = t >= first or not cached
                _box(ax, t, y, 0.9, 0.6, tokens[t], NEW_COLOR if new else CACHED_GREY,
                     text_color="white" if new else "black")
                ax.plot([last + 0.45, t + 0.45], [y + 1.05, y + 0.6], color="#4c72b0", lw=0.8)
            ax.text(last + 0.45, y + 1.1, f"q{last}", ha="center", va="bottom", fontsize=8, color="#4c72b0")
            step_name = text("diagram.kv_step", n=s) + (text("diagram.kv_prompt") if s == 0 else "")
            ax.text(-0.3, y + 0.3, step_name, ha="right", va="center", fontsize=9)
            ax.text(n + 0.2, y + 0.3, text("diagram.kv_computed", n=counts[s]), ha="left", va="center", fontsize=8)
        ax.set_title(f"{heading}\n{text('diagram.kv_total', n=sum(counts))}", fontsize=10)
        ax.set_xlim(-2.6, n + 2.6)
        ax.set_ylim(-1.6 * (len(steps) - 1) - 0.3, 1.6)
        _bare(ax)
    fig.legend(handles=[Rectangle((0, 0), 1, 1, facecolor=NEW_COLOR), Rectangle((0, 0), 1, 1, facecolor=CACHED_GREY)],
               labels=[text("diagram.kv_new"), text("diagram.kv_cached")], loc="lower center", ncol=2,
               fontsize=8, frameon=False)
    fig.suptitle(text("diagram.kv_title", saved=sum(without) - sum(with_cache)) if title is None else title)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig
