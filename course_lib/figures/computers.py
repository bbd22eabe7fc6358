"""Which function computes each figure, and the check a notebook's closing cell runs.

Used by every notebook's closing cell (01–07) and by tests/test_figures.py. The table is ONE
line per figure in the registry: ``data/figures.json`` → ``"<id>"`` → ``"computer"``, e.g.
``"course_lib.figures.lab:top_p"``. :func:`computer` resolves it; :func:`check_inline` is what
a notebook calls after computing a figure step by step: it requires the notebook's values to
equal the computer's (exactly, floats up to float64 rounding) before ``check_figure`` prints the
✓ lines — so the notebook and the tests cannot drift apart.
"""
from __future__ import annotations

import importlib
import inspect
import math
from numbers import Real

from ..data import UnknownNameError
from .registry import check_figure, figure, to_plain
from .schema import check_computer_name

# Inline (notebook) and computed floats may differ in the last bits when the notebook spells a
# step out another way (torch.exp vs math.exp); anything beyond float64 rounding is a drift.
REL_TOL = 1e-12


def computer(figure_id: str):
    """The function the registry names for ``figure_id`` (``"module:function"``)."""
    entry = figure(figure_id)
    name = entry.get("computer")
    if not name:
        raise UnknownNameError(f"figure {figure_id!r} names no computer in the registry")
    module, function = check_computer_name(name, figure_id)     # only course_lib.figures.*
    found = getattr(importlib.import_module(module), function, None)
    if found is None:
        raise UnknownNameError(f"figure {figure_id!r}: the registry's computer {name!r} does not exist")
    if not inspect.isfunction(found) or found.__module__ != module:   # not os, torch or an import
        raise UnknownNameError(f"figure {figure_id!r}: the registry's computer {name!r} is not a "
                               f"function defined in {module}")
    return found


def compute(figure_id: str, *args, **kwargs) -> dict:
    """The values of ``figure_id``, computed by its computer (``*args``: e.g. a model)."""
    return computer(figure_id)(*args, **kwargs)


def _difference(inline, computed, path: str = "") -> str | None:
    """Where ``inline`` differs from ``computed`` (plain values), or None when they are equal."""
    if isinstance(computed, list) or isinstance(inline, list):
        if not (isinstance(computed, list) and isinstance(inline, list)) or len(computed) != len(inline):
            return f"{path or 'value'}: notebook {inline!r}, computer {computed!r}"
        for i, (a, b) in enumerate(zip(inline, computed)):
            found = _difference(a, b, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(computed, float) and isinstance(inline, Real) and not isinstance(inline, bool):
        if math.isclose(inline, computed, rel_tol=REL_TOL, abs_tol=1e-300) or inline == computed:
            return None
        return f"{path or 'value'}: notebook {inline!r}, computer {computed!r}"
    if inline == computed and type(inline) is type(computed) or (
            isinstance(inline, Real) and isinstance(computed, Real) and not isinstance(inline, bool)
            and not isinstance(computed, bool) and inline == computed):
        return None
    return f"{path or 'value'}: notebook {inline!r}, computer {computed!r}"


class InlineDrift(AssertionError):
    """A notebook's step-by-step value is not its figure's computer's value."""


def check_inline(figure_id: str, *args, **inline) -> None:
    """Check values a notebook computed step by step: each must equal what the figure's computer
    (called with ``*args``) returns, then ``check_figure`` compares them with the article and
    prints the ✓ lines."""
    computed = compute(figure_id, *args)
    for name, value in inline.items():
        if name not in computed:
            raise UnknownNameError(f"figure {figure_id!r}: its computer returns no value {name!r}")
        problem = _difference(to_plain(value), to_plain(computed[name]))
        if problem:
            raise InlineDrift(f"{figure_id} · {name}: the notebook's step-by-step value is not the "
                              f"computer's ({figure(figure_id)['computer']}): {problem}")
    check_figure(figure_id, **inline)


def needs_arguments(figure_id: str) -> bool:
    """Does the computer need something passed in (real or random GPT-2, an encoding)?"""
    return any(p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
               for p in inspect.signature(computer(figure_id)).parameters.values())


def computed_figures(ids=None) -> dict:
    """figure id -> values, for every figure (or those in ``ids``) whose computer needs no
    argument: all the offline figures except ``gpt2.logits_shape`` (which takes a GPT-2)."""
    from .registry import load_registry
    ids = [fid for fid in (ids or load_registry()) if not needs_arguments(fid)]
    return {fid: compute(fid) for fid in ids}
