"""The course's map: one forward pass, from token ids to the next id, with "you are here".

Shown at the top of every notebook (01–07), as the value of the first cell's ``start("03", ...)``
(``ui.start``): ``pipeline_map("attention")`` as a cell's last expression draws the pipeline (a
matplotlib picture) and highlights the stage the notebook teaches. Where pictures are not shown
(a terminal, a text-only view) the same map is one line of text, with the current stage in
[brackets].
"""
from __future__ import annotations

import io

from .language import current_language, text

# (stage, what it computes, the notebook that teaches it); the order of one forward pass
STAGES = [
    ("ids", "text → token ids", "01"),
    ("embeddings", "E[id] + P[t]", "02"),
    ("attention", "read earlier positions", "03"),
    ("block", "residual, LayerNorm, MLP", "04"),
    ("lm_head", "h · every row of W", "05"),
    ("logits", "one score per id", "05"),
    ("loss", "training: −log p(target)", "06"),
    ("sampling", "generation: pick one id", "07"),
    ("next id", "append, run again", "07"),
]
NAMES = [name for name, _, _ in STAGES]

# what each notebook highlights
NOTEBOOK_STAGES = {
    "01": ["ids"], "02": ["embeddings"], "03": ["attention"], "04": ["block"],
    "05": ["lm_head", "logits"], "06": ["loss"], "07": ["sampling", "next id"],
}


def pipeline_text(here: list[str]) -> str:
    """The map as text (two lines, for an 88-column cell), the current stage in [brackets]:
    ``ids → embeddings → [attention] → … → logits`` / ``→ loss / sampling → next id``."""
    show = lambda name: text(f"map.{name}")                               # noqa: E731
    mark = lambda name: f"[{show(name)}]" if name in here else show(name)  # noqa: E731
    line = " → ".join(mark(n) for n in NAMES[:6])
    end = f"→ {mark('loss')} / {mark('sampling')} → {mark('next id')}"
    notebooks = sorted({nb for name, _, nb in STAGES if name in here})
    return text("map.text", line=line, end=end, here=", ".join(show(h) for h in here),
                notebooks=", ".join(notebooks))


class PipelineMap:
    """The map as a notebook shows it: a picture (PNG), or :func:`pipeline_text` as text."""

    def __init__(self, here: str | list[str]):
        here = [here] if isinstance(here, str) else list(here)
        unknown = [h for h in here if h not in NAMES]
        if unknown:
            raise ValueError(f"unknown stage(s) {unknown}; the stages are {NAMES}")
        self.here = here

    def __repr__(self) -> str:
        return pipeline_text(self.here)

    def figure(self):
        """The matplotlib figure (not attached to pyplot, so it is drawn only once)."""
        from matplotlib.figure import Figure
        from matplotlib.patches import FancyBboxPatch

        # English: DejaVu Sans alone; Chinese: the plots' font list, a CJK font behind it
        font = "DejaVu Sans"
        if current_language() != "en":
            from .fonts import use_readable_fonts
            font = use_readable_fonts()
        # 963 px wide: shown at its own size in a notebook (no smaller), its smallest text 8.5 pt = 10.6 px
        fig = Figure(figsize=(10.7, 2.9), dpi=90)
        ax = fig.add_axes([0, 0, 1, 1])
        ax.set_xlim(-0.12, 8.32)
        ax.set_ylim(-1.02, 0.95)
        ax.axis("off")
        # x positions: six stages in a row, then loss above sampling, then next id
        place = {name: (i, 0.0) for i, name in enumerate(NAMES[:6])}
        place.update({"loss": (6.1, 0.55), "sampling": (6.1, -0.35), "next id": (7.3, -0.35)})
        width, height = 0.82, 0.80
        for name, what, notebook in STAGES:
            x, y = place[name]
            active = name in self.here
            ax.add_patch(FancyBboxPatch((x + 0.05, y - height / 2 + 0.1), width, height - 0.2,
                                        boxstyle="round,pad=0.04,rounding_size=0.08",
                                        facecolor="#ff9f1c" if active else "#e8eef7",
                                        edgecolor="#b35c00" if active else "#7f8fa6",
                                        linewidth=2.5 if active else 1))
            ax.text(x + 0.05 + width / 2, y + 0.15, text(f"map.{name}"), ha="center", va="center",
                    fontsize=10, fontweight="bold" if active else "normal", family=font)
            ax.text(x + 0.05 + width / 2, y + 0.04, text(f"map.what.{name}") + "\n" + text("map.notebook", nb=notebook),
                    ha="center", va="top", fontsize=8.5, color="#333", family=font, linespacing=1.1)
            if active:
                ax.text(x + 0.05 + width / 2, y - height / 2 - 0.12, text("map.here_marker"), ha="center",
                        va="center", fontsize=9, color="#b35c00", fontweight="bold", family=font)
        arrow = dict(arrowstyle="->", color="#555", lw=1.3)
        for left, right in zip(NAMES[:5], NAMES[1:6]):
            (x0, y0), (x1, y1) = place[left], place[right]
            ax.annotate("", xy=(x1 + 0.04, y1), xytext=(x0 + 0.05 + width + 0.01, y0), arrowprops=arrow)
        lx, ly = place["logits"]
        for target in ["loss", "sampling"]:
            tx, ty = place[target]
            ax.annotate("", xy=(tx + 0.04, ty), xytext=(lx + 0.05 + width + 0.01, ly), arrowprops=arrow)
        sx, sy = place["sampling"]
        ax.annotate("", xy=(place["next id"][0] + 0.04, sy), xytext=(sx + 0.05 + width + 0.01, sy),
                    arrowprops=arrow)
        # the loop: the next id is appended and the model runs again. It leaves "next id" on the
        # right, runs below every "you are here" marker and enters "ids" from the left, so it
        # crosses no label (tests/test_pipeline_map_layout.py)
        nx, ny = place["next id"]
        right, left, low = nx + 0.05 + width + 0.08, -0.08, -0.97
        loop = dict(color="#999", lw=1, linestyle="--")
        ax.plot([nx + 0.05 + width + 0.01, right, right, left, left], [ny, ny, low, low, 0.0], **loop)
        ax.annotate("", xy=(0.04, 0.0), xytext=(left, 0.0),
                    arrowprops=dict(arrowstyle="->", color="#999", lw=1, linestyle="--"))
        ax.text(3.6, low + 0.09, text("map.loop"), ha="center", va="center",
                fontsize=8.5, color="#777", family=font)
        return fig

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.figure().savefig(buffer, format="png", metadata={"Software": None})
        return buffer.getvalue()


def pipeline_map(here: str | list[str]) -> PipelineMap:
    """The map with ``here`` (a stage name, a list of them, or a notebook number such as
    ``"03"``) highlighted. Display it as a cell's last expression."""
    if isinstance(here, str) and here in NOTEBOOK_STAGES:
        here = NOTEBOOK_STAGES[here]
    return PipelineMap(here)
