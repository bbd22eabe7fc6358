"""What pretrained GPT-2 printed in the articles, shown (clearly labelled) where the weights
are absent.

Taught in notebooks 05 and 07. The values come from the registry (``data/figures.json``), the
one place the articles' numbers live: they are *recorded*, not computed on this machine. With
the weights, the same cells compute the values and check them against these entries instead.
"""
from __future__ import annotations

from ..figures.gpt2 import MEANING_PROMPT, ONCE_PROMPT
from ..figures.registry import expected
from .language import text


def label() -> str:
    """"RECORDED by the article with pretrained GPT-2, not computed here …", in the notebook's language."""
    return text("recorded.label")


def recorded_top5() -> list[tuple[str, float]]:
    """The gpt2 article's five most likely tokens after "The meaning of life is" and their
    probabilities (registry ``gpt2.top5``)."""
    return list(zip(expected("gpt2.top5", "tokens"), expected("gpt2.top5", "probs")))


def recorded_top5_text() -> str:
    """:func:`recorded_top5` as a labelled table."""
    lines = [f"[{label()}]", text("recorded.top5_head", prompt=repr(MEANING_PROMPT)),
             text("recorded.top5_columns", rank=text("recorded.rank"), token=text("recorded.token"))]
    for rank, (token, p) in enumerate(recorded_top5(), start=1):
        lines.append(f"  {rank:>4}  {token!r:<8}  {p:.6f}")
    return "\n".join(lines)


def recorded_top5_chart(ax=None):
    """:func:`recorded_top5` as a bar chart, titled as recorded."""
    from . import plots

    tokens, probs = zip(*recorded_top5())
    ax = plots.bars(list(probs), [repr(t) for t in tokens], ax=ax, decimals=6,
                    title=text("recorded.chart_title", prompt=repr(MEANING_PROMPT)),
                    ylabel=text("plot.probability"))
    ax.figure.text(0.5, -0.04, text("recorded.chart_note"),
                   ha="center", fontsize=8, color="#a33")
    return ax


def recorded_greedy_text() -> str:
    """The greedy pick after "The meaning of life is" (registry ``gpt2.greedy``)."""
    token = recorded_top5()[0][0]
    return f"[{label()}]\n" + text("recorded.greedy", id=expected("gpt2.greedy", "id"), token=repr(token),
                                    text=repr(expected("gpt2.greedy", "text")))


def recorded_top_p_text() -> str:
    """How many tokens top-p 0.9 keeps after two prompts (registry ``lab.gpt2_top_p``)."""
    return f"[{label()}]\n" + text(
        "recorded.top_p", kept_united=expected("lab.gpt2_top_p", "kept_after_united"),
        top=repr(expected("lab.gpt2_top_p", "top_after_united")), p=expected("lab.gpt2_top_p", "p_states"),
        kept_once=expected("lab.gpt2_top_p", "kept_after_once"), once=repr(ONCE_PROMPT))
