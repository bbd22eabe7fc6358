"""Plotting helpers for the notebooks (matplotlib only). Each returns the Axes it drew on.

Used by notebooks 02–07 (``from course_lib.ui import plots``). Other sections may add functions: keep each group under its header.
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from .palette import SAMPLING_COLORS
from .fonts import use_readable_fonts
from .language import text

use_readable_fonts()   # 你 in a plot: a CJK font behind DejaVu Sans when installed, no glyph warnings

# ---------------------------------------------------------------------------- five-token model
# (notebooks 02 embeddings, 03 attention, 04 block, 05 lm_head, 06 loss)


def _array(values) -> np.ndarray:
    if hasattr(values, "detach"):
        values = values.detach().cpu().double().numpy()
    return np.asarray(values, dtype=float)


def heatmap(values, row_labels=None, col_labels=None, title="", ax=None, decimals=2,
            cmap="RdBu_r", symmetric=True, hide=None, hide_label="−∞"):
    """A small matrix as coloured cells with its numbers written in.

    ``hide``: boolean mask of cells to grey out and label ``hide_label`` (e.g. the causal mask).
    """
    data = _array(values)
    if data.ndim == 1:
        data = data[None, :]
    ax = ax or plt.subplots(figsize=(0.7 * data.shape[1] + 1.5, 0.5 * data.shape[0] + 1))[1]
    finite = data[np.isfinite(data)]
    vmax = float(np.abs(finite).max()) if finite.size else 1.0
    vmax = vmax or 1.0
    shown = np.where(np.isfinite(data), data, np.nan)
    if hide is not None:
        shown = np.where(_array(hide).astype(bool), np.nan, shown)
    cmap_obj = plt.get_cmap(cmap).with_extremes(bad="#d9d9d9")   # masked cells in grey
    ax.imshow(shown, cmap=cmap_obj, vmin=-vmax if symmetric else 0, vmax=vmax)
    for i in range(data.shape[0]):
        for j in range(data.shape[1]):
            hidden = hide is not None and bool(_array(hide)[i, j])
            text = hide_label if hidden else "−∞" if data[i, j] == -math.inf else f"{data[i, j]:.{decimals}f}"
            strong = np.isfinite(shown[i, j]) and abs(shown[i, j]) > 0.6 * vmax
            ax.text(j, i, text, ha="center", va="center", fontsize=9,
                    color="white" if strong else "black")
    ax.set_xticks(range(data.shape[1]), col_labels if col_labels is not None else range(data.shape[1]))
    ax.set_yticks(range(data.shape[0]), row_labels if row_labels is not None else range(data.shape[0]))
    ax.set_title(title)
    return ax


def embedding_tables(E, P, token_labels, ax=None):
    """The token table E (V×D) beside the position table P (rows × D)."""
    fig, axes = plt.subplots(1, 2, figsize=(7, 3.6)) if ax is None else (None, ax)
    D = _array(E).shape[1]
    features = [f"f{i}" for i in range(D)]
    heatmap(E, token_labels, features, text("plot.token_table"), axes[0], decimals=0)
    heatmap(P, [f"P[{t}]" for t in range(_array(P).shape[0])], features, text("plot.position_table"), axes[1], decimals=0)
    return axes


def attention_heatmap(weights, labels, title=None, ax=None):
    """Attention weights with the masked future cells greyed out (``title``: default
    "attention weights (rows: queries)", in the notebook's language)."""
    title = text("plot.attention_title") if title is None else title
    weights = _array(weights)
    T = weights.shape[0]
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    ax = ax or plt.subplots(figsize=(1.1 * T + 2, 0.8 * T + 1))[1]
    heatmap(weights, [f"{t} ({l})" for t, l in enumerate(labels)],
            [f"{t} ({l})" for t, l in enumerate(labels)], title, ax=ax, decimals=4,
            cmap="Blues", symmetric=False, hide=future, hide_label=text("plot.masked"))
    ax.set_xlabel(text("plot.key_position"))
    ax.set_ylabel(text("plot.query_position"))
    return ax


def relu_and_gelu(ax=None, low=-4.0, high=4.0):
    """ReLU (this toy model) beside GELU (GPT-2's tanh approximation) on one axis."""
    ax = ax or plt.subplots(figsize=(5, 3))[1]
    x = torch.linspace(low, high, 401)
    ax.plot(x, torch.relu(x), label=text("plot.relu"))
    ax.plot(x, torch.nn.functional.gelu(x, approximate="tanh"), label=text("plot.gelu"))
    ax.axhline(0, color="grey", lw=0.5)
    ax.axvline(0, color="grey", lw=0.5)
    ax.set_xlabel(text("plot.activation_input"))
    ax.legend()
    return ax


def bars(values, labels, title="", ax=None, decimals=4, highlight=None, ylabel=""):
    """One bar per entry, its value written on top; ``highlight`` index drawn in another colour."""
    values = _array(values).reshape(-1)
    ax = ax or plt.subplots(figsize=(5, 3))[1]
    colors = ["tab:orange" if i == highlight else "tab:blue" for i in range(len(values))]
    ax.bar(range(len(values)), values, color=colors)
    for i, v in enumerate(values):
        ax.text(i, v, f"{v:.{decimals}f}", ha="center", va="bottom" if v >= 0 else "top", fontsize=8)
    ax.set_xticks(range(len(values)), labels)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    return ax


# ---------------------------------------------------------------------------- sampling
# (notebook 07: temperature, top-k / top-p, the interval strip, repeated draws)


def temperature_curves(probs_by_temperature, temperatures, labels, ax=None, title=""):
    """One line per token: its probability as τ changes (x axis logarithmic).

    ``probs_by_temperature``: rows = temperatures, columns = token ids.
    """
    data = _array(probs_by_temperature)
    ax = ax or plt.subplots(figsize=(6.5, 3.6))[1]
    for j, label in enumerate(labels):
        ax.plot(temperatures, data[:, j], marker="o", markersize=3, label=label,
                color=SAMPLING_COLORS[j % len(SAMPLING_COLORS)])
    ax.set_xscale("log")
    ax.set_xlabel(text("plot.temperature_axis"))
    ax.set_ylabel(text("plot.probability"))
    ax.set_ylim(0, 1.02)
    ax.legend(ncol=min(len(labels), 6), fontsize=8)
    ax.set_title(title)
    return ax


def grouped_bars(rows, names, labels, ax=None, title="", ylabel=""):
    """Several distributions side by side: one group of bars per token, one colour per row
    (e.g. the same logits at τ = 0.3, 1.0 and 1.5)."""
    data = _array(rows)
    ax = ax or plt.subplots(figsize=(6, 3))[1]
    width = 0.8 / len(data)
    for k, (name, row) in enumerate(zip(names, data)):
        ax.bar(np.arange(len(row)) + width * (k - (len(data) - 1) / 2), row, width=width, label=name)
    ax.set_xticks(range(data.shape[1]), labels)
    ax.set_ylabel(ylabel)
    ax.legend()
    ax.set_title(title)
    return ax


def cumulative_mass(probs, top_p, labels, kept=None, ax=None, title=""):
    """Ranked probabilities as bars, their running sum as a step line, the p line, the kept prefix.

    ``kept``: the ids the rule keeps (coloured); the others are grey.
    """
    p = _array(probs)
    order = sorted(range(len(p)), key=lambda i: (-p[i], i))
    running = np.cumsum(p[order])
    kept = set(kept if kept is not None else [])
    ax = ax or plt.subplots(figsize=(6.5, 3.4))[1]
    x = np.arange(len(order))
    colors = [SAMPLING_COLORS[0] if i in kept else "#c8c8c8" for i in order]
    ax.bar(x, p[order], color=colors, label=text("plot.ranked_probability"))
    ax.step(x, running, where="mid", color="black", label=text("plot.running_sum"))
    ax.plot(x, running, "k.", markersize=6)
    ax.axhline(top_p, color="red", linestyle="--", label=f"p = {top_p:g}")
    ax.set_xticks(x, [labels[i] for i in order])
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8, loc="center right")
    ax.set_title(title)
    return ax


def interval_strip(probs, labels, us=(), ax=None, title=""):
    """[0, 1) cut into one interval per id (length = probability); a red line at each u.

    Wide intervals are labelled inside, in the strip's upper half; each u line marks its lower
    half, so a line never strikes through a label. The legend lists every interval with its
    bounds, so narrow ones can be read too. The u labels sit under the strip, staggered.
    """
    p = _array(probs)
    ax = ax or plt.subplots(figsize=(7.5, 1.9))[1]
    start = 0.0
    for i, width in enumerate(p):
        if width > 0:
            ax.barh(0, width, left=start, height=0.6, color=SAMPLING_COLORS[i % len(SAMPLING_COLORS)],
                    edgecolor="white", label=f"{labels[i]}  [{start:.4f}, {start + width:.4f})")
            if width > 0.05:
                ax.text(start + width / 2, 0.15, labels[i], ha="center", va="center", color="white", fontsize=9)
        start += width
    for k, u in enumerate(sorted(us)):
        ax.plot([u, u], [-0.38, -0.02], color="red", linewidth=2)
        ax.text(u, -0.45 - 0.22 * (k % 2), f"u={u:g}", color="red", ha="center", va="top", fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.95, 0.4)
    ax.set_yticks([])
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    ax.set_title(title)
    return ax


def draw_histogram(counts, targets, labels, ax=None, title=""):
    """Observed frequencies of repeated draws (bars) against the target probabilities (dots)."""
    c = _array(counts)
    freq = c / c.sum()
    ax = ax or plt.subplots(figsize=(6, 3))[1]
    x = np.arange(len(c))
    ax.bar(x, freq, color=SAMPLING_COLORS[0], label=text("plot.observed", draws=f"{int(c.sum()):,}"))
    ax.plot(x, _array(targets), "o", color="red", label=text("plot.target"))
    ax.set_xticks(x, labels)
    ax.set_ylabel(text("plot.frequency"))
    ax.legend(fontsize=8)
    ax.set_title(title)
    return ax


def renormalised_bars(probs, final, labels, ax=None, title=""):
    """Before (grey) and after (colour) a filter: excluded ids drop to 0, the rest grow."""
    p, q = _array(probs), _array(final)
    ax = ax or plt.subplots(figsize=(6, 3))[1]
    x = np.arange(len(p))
    ax.bar(x - 0.2, p, width=0.4, color="#c8c8c8", label=text("plot.before"))
    ax.bar(x + 0.2, q, width=0.4, color=SAMPLING_COLORS[0], label=text("plot.renormalised"))
    ax.set_xticks(x, labels)
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=8)
    ax.set_title(title)
    return ax


# ---------------------------------------------------------------------------- lab twelve-token model
# (notebooks 02 embeddings, 03 attention: course_lib.toys.lab, course_lib.figures.lab)


def lab_embedding_tables(E, P, token_labels, position_labels, axes=None):
    """The lab model's token table E (12×4) beside the first rows of its position table P,
    with one decimal (its entries are multiples of 0.5)."""
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(8, 4.2), gridspec_kw={"width_ratios": [1, 1]})
    features = [f"f{i}" for i in range(_array(E).shape[1])]   # from 0, like the tensors (and E, P of 02)
    heatmap(E, token_labels, features, text("plot.token_table"), axes[0], decimals=1)
    heatmap(P, position_labels, features, text("plot.position_table"), axes[1], decimals=1)
    return axes


def lab_head_weights(weights, key_labels, ax=None, title=None):
    """Both heads' attention weights for one query row: (2, T) cells, keys along the x axis
    (``title``: default "row 6 (␣roof): attention weights per head", in the notebook's language)."""
    title = text("plot.lab_heads_title") if title is None else title
    ax = ax or plt.subplots(figsize=(0.9 * _array(weights).shape[1] + 1.5, 2.2))[1]
    heatmap(weights, [text("plot.head", n=1), text("plot.head", n=2)], key_labels, title, ax=ax, decimals=2,
            cmap="Blues", symmetric=False)
    ax.set_xlabel(text("plot.lab_key_axis"))
    return ax
