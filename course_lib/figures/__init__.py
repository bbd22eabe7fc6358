"""The articles' figures: the registry, one computer per figure, and the margins that keep them.

* ``registry``   — ``data/figures.json``: ``check_figure``, ``expected``, ``FigureMismatch``,
                   the float32 / truncated rules (every notebook's closing cell, 01–07)
* ``schema``     — every field of ``data/figures.json`` checked when it is read; a computer
                   must be a function of this package
* ``computers``  — ``computer(id)``: the function the registry's ``"computer"`` field names;
                   ``check_inline``: a notebook's step-by-step values must equal it
* ``interface``  — computers of ``interface.*`` (five-token model, tokens, sampling: 01–07)
* ``lab``        — computers of ``lab.*`` (twelve-token model: 01, 02, 03, 07)
* ``decoding``   — computers of ``decoding.*`` (05, 07)
* ``gpt2``       — computers of ``gpt2.*`` (01, 05, 07; most need GPT-2's weights)
* ``margins``    — how far each printed number is from changing (06; tests/test_margins.py)

"Where is ``lab.top_p`` computed?" — its registry entry says ``course_lib.figures.lab:top_p``.
"""
from .computers import check_inline, compute, computer
from .registry import (ARTICLES, DERIVATIONS, FigureMismatch, check_figure, expected, figure, load_registry,
                       to_float32, to_plain)

__all__ = ["check_inline", "compute", "computer", "ARTICLES", "DERIVATIONS", "FigureMismatch", "check_figure",
           "expected", "figure", "load_registry", "to_float32", "to_plain"]
