"""Every course plot (``course_lib.ui.plots``) read back from what matplotlib drew: the image's
array, the numbers written in the cells, the bars' heights, the lines' points, the labels.

nbval does not compare images, so these tests are what notices a plot that shows the wrong
numbers — e.g. the attention heatmap drawn transposed (test_transposed_heatmap_is_caught).
"""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_lib.toys.five_token import FIVE_TOKEN  # noqa: E402
from course_lib.ui import plots  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def cell_texts(ax) -> dict[tuple[int, int], str]:
    """The text written in each heatmap cell, by (row, column)."""
    return {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts}


def image(ax) -> np.ma.MaskedArray:
    assert len(ax.images) == 1
    return np.ma.masked_invalid(ax.images[0].get_array())


def tick_labels(axis) -> list[str]:
    return [t.get_text() for t in axis.get_ticklabels()]


def bar_heights(ax) -> list[float]:
    return [p.get_height() for p in ax.patches]


def check_heatmap_drawn(ax, values, decimals, row_labels=None, col_labels=None, hide=None, hide_label=""):
    """What ``plots.heatmap`` must show for ``values``: colours, written numbers, labels."""
    values = np.asarray(values, dtype=float)
    rows, cols = values.shape
    hide = np.zeros_like(values, dtype=bool) if hide is None else np.asarray(hide, dtype=bool)
    drawn = image(ax)
    assert drawn.shape == values.shape
    texts = cell_texts(ax)
    for i in range(rows):
        for j in range(cols):
            if hide[i, j]:
                assert drawn.mask[i, j] and texts[i, j] == hide_label, (i, j)
            else:
                assert drawn[i, j] == values[i, j], (i, j, drawn[i, j], values[i, j])
                assert texts[i, j] == f"{values[i, j]:.{decimals}f}", (i, j, texts[i, j], values[i, j])
    if row_labels is not None:
        assert tick_labels(ax.yaxis) == list(row_labels)
    if col_labels is not None:
        assert tick_labels(ax.xaxis) == list(col_labels)


@pytest.fixture(scope="module")
def attention():
    """Layer 0, head 0 of the five-token model on its example sentence: (T, T) weights."""
    model = FIVE_TOKEN.load()
    _, trace = model.forward_trace(FIVE_TOKEN.input_tensor())
    weights = trace["layers"][0]["attention_weights"][0, 0].detach().double()
    labels = [str(i) for i in FIVE_TOKEN.input_tensor()[0].tolist()]
    return weights, labels


def check_attention_drawn(ax, weights, labels):
    T = weights.shape[0]
    names = [f"{t} ({l})" for t, l in enumerate(labels)]
    check_heatmap_drawn(ax, weights.numpy(), 4, names, names,
                        hide=np.triu(np.ones((T, T), dtype=bool), k=1), hide_label="0\n(masked)")
    assert ax.get_xlabel() == "source position (key)" and ax.get_ylabel() == "query position"


def test_attention_heatmap_shows_the_weights(attention):
    weights, labels = attention
    assert weights.shape[0] >= 2 and not torch.allclose(weights, weights.T)
    check_attention_drawn(plots.attention_heatmap(weights, labels), weights, labels)


def test_transposed_heatmap_is_caught(attention, monkeypatch):
    """A planted bug: draw the attention weights transposed; the check must fail."""
    weights, labels = attention
    original = plots.heatmap
    monkeypatch.setattr(plots, "heatmap", lambda values, *a, **k: original(np.asarray(values).T, *a, **k))
    ax = plots.attention_heatmap(weights, labels)
    with pytest.raises(AssertionError):
        check_attention_drawn(ax, weights, labels)


def test_heatmap_writes_minus_infinity_and_hides_cells():
    values = np.array([[1.25, -math.inf], [-0.5, 2.0]])
    hide = np.array([[False, False], [False, True]])
    ax = plots.heatmap(values, ["r0", "r1"], ["c0", "c1"], "t", decimals=2, hide=hide, hide_label="x")
    texts = cell_texts(ax)
    assert texts == {(0, 0): "1.25", (0, 1): "−∞", (1, 0): "-0.50", (1, 1): "x"}
    drawn = image(ax)
    assert drawn[0, 0] == 1.25 and drawn[1, 0] == -0.5 and drawn.mask[0, 1] and drawn.mask[1, 1]
    assert ax.get_title() == "t"


def test_embedding_tables():
    E, P = np.arange(6.0).reshape(3, 2), -np.arange(4.0).reshape(2, 2)
    axes = plots.embedding_tables(E, P, ["a", "b", "c"])
    check_heatmap_drawn(axes[0], E, 0, ["a", "b", "c"], ["f0", "f1"])
    check_heatmap_drawn(axes[1], P, 0, ["P[0]", "P[1]"], ["f0", "f1"])


def test_lab_tables_and_head_weights():
    E, P = np.arange(8.0).reshape(4, 2) / 2, np.ones((2, 2)) / 2
    axes = plots.lab_embedding_tables(E, P, list("abcd"), ["p0", "p1"])
    check_heatmap_drawn(axes[0], E, 1, list("abcd"), ["f0", "f1"])
    check_heatmap_drawn(axes[1], P, 1, ["p0", "p1"], ["f0", "f1"])
    w = np.array([[0.1, 0.9, 0.0], [0.6, 0.3, 0.1]])
    check_heatmap_drawn(plots.lab_head_weights(w, ["k0", "k1", "k2"]), w, 2, ["head 1", "head 2"], ["k0", "k1", "k2"])


def test_relu_and_gelu_lines():
    ax = plots.relu_and_gelu()
    relu, gelu = ax.lines[:2]
    x = torch.linspace(-4.0, 4.0, 401)
    assert np.array_equal(relu.get_xdata(), x.numpy()) and np.array_equal(relu.get_ydata(), torch.relu(x).numpy())
    assert np.array_equal(gelu.get_ydata(), torch.nn.functional.gelu(x, approximate="tanh").numpy())


def test_bars_heights_and_values():
    ax = plots.bars([0.25, -0.5, 0.125], ["a", "b", "c"], decimals=3, highlight=1)
    assert bar_heights(ax) == [0.25, -0.5, 0.125]
    assert [t.get_text() for t in ax.texts] == ["0.250", "-0.500", "0.125"]
    assert tick_labels(ax.xaxis) == ["a", "b", "c"]
    assert matplotlib.colors.to_hex(ax.patches[1].get_facecolor()) == matplotlib.colors.to_hex("tab:orange")


def test_temperature_curves():
    data = np.array([[0.7, 0.2, 0.1], [0.5, 0.3, 0.2]])
    ax = plots.temperature_curves(data, [0.5, 1.0], ["a", "b", "c"])
    for j, line in enumerate(ax.lines):
        assert list(line.get_xdata()) == [0.5, 1.0] and list(line.get_ydata()) == list(data[:, j])
        assert line.get_label() == "abc"[j]


def test_cumulative_mass_ranked():
    p = [0.1, 0.5, 0.15, 0.25]
    ax = plots.cumulative_mass(p, 0.8, ["a", "b", "c", "d"], kept=[1, 3, 2])
    assert bar_heights(ax) == [0.5, 0.25, 0.15, 0.1]
    assert tick_labels(ax.xaxis) == ["b", "d", "c", "a"]
    step = ax.lines[0]
    assert np.allclose(step.get_ydata(), [0.5, 0.75, 0.9, 1.0], rtol=0, atol=1e-15)
    assert [matplotlib.colors.to_hex(b.get_facecolor()) for b in ax.patches][-1] == "#c8c8c8"
    assert any(list(line.get_ydata()) == [0.8, 0.8] for line in ax.lines)


def test_interval_strip():
    p = [0.25, 0.0, 0.75]
    ax = plots.interval_strip(p, ["a", "b", "c"], us=[0.5])
    assert [(b.get_x(), b.get_width()) for b in ax.patches] == [(0.0, 0.25), (0.25, 0.75)]
    labels = ax.get_legend_handles_labels()[1]
    assert labels == ["a  [0.0000, 0.2500)", "c  [0.2500, 1.0000)"]
    assert list(ax.lines[0].get_xdata()) == [0.5, 0.5]
    assert "u=0.5" in [t.get_text() for t in ax.texts]


def test_draw_histogram():
    ax = plots.draw_histogram([30, 10, 60], [0.3, 0.1, 0.6], ["a", "b", "c"])
    assert bar_heights(ax) == [0.3, 0.1, 0.6]
    assert list(ax.lines[0].get_ydata()) == [0.3, 0.1, 0.6]
    assert ax.get_legend_handles_labels()[1][1] == "observed (100 draws)"


def test_renormalised_bars():
    ax = plots.renormalised_bars([0.5, 0.3, 0.2], [0.625, 0.375, 0.0], ["a", "b", "c"])
    assert bar_heights(ax) == [0.5, 0.3, 0.2, 0.625, 0.375, 0.0]
    assert [b.get_x() + b.get_width() / 2 for b in ax.patches][:3] == pytest.approx([-0.2, 0.8, 1.8])
