"""The figures registry: every number the source articles print, as an *expected* value.

Used by every notebook's closing cell (01–07) and by the unit tests. The registry lives once, in
``data/figures.json``; code never types an article's result in, it computes the value and
asks :func:`check_figure` whether it matches.

An entry looks like::

    "interface.toy.attention": {
        "figure": "attention weights, 4 d.p. ...",     # the row of shared/figures.md
        "article": "interface",                        # interface | lab | decoding | gpt2
        "notebooks": ["03_attention"],
        "needs_pretrained_weights": false,
        "computer": "course_lib.figures.interface:toy_attention",   # the function that computes it
        "values": {
            "weights": {"expected": [[1.0, 0.0, 0.0], ...], "decimals": 4, "tol": 5e-05}
        }
    }

A value's ``decimals`` is the precision the article prints (``null``: the article prints the
full float, shown with ``repr``); ``tol`` is the largest absolute difference accepted
(default: half a unit of the last printed decimal, i.e. "rounds to the printed digits").
Integers, strings and booleans compare exactly.

Two optional keys say *how* the article printed a value:

``"float32": true``
    The article printed a float32 result (e.g. Python floats of a float32 tensor). The
    computed value(s) are rounded to float32, elementwise for lists and tensors, and back to
    Python floats *before* they are compared and printed. With ``"decimals": null`` the
    comparison is then exact against ``expected`` (which holds the float32 value as a Python
    float); with ``decimals`` d the usual half-unit tolerance applies to the rounded value.

``"truncated": true``
    The article printed the value cut off, not rounded (``0.690284…``). The value matches
    when, written with ``decimals`` digits by truncation toward zero (exact decimal
    arithmetic), it gives the expected digits: for 0.690284 the value must lie in
    [0.690284, 0.690285). The ✓ line prints the truncated digits followed by "…".

Where a number comes from:

``"source": "course"`` (with ``"source_reason"``)
    The articles never print this value (or print only a formula for it); the course computes
    it and keeps it here so a change still fails. The ✓ line is the same as for the articles'
    values; the registry says whose number it is.

``"tol_reason"``
    A ``tol`` wider than half a unit of the printed precision needs a written reason (the
    article's own warning, or a statistical band of the course's); ``tests/test_figures.py``
    holds every other tolerance to the printed digits.

An entry (not a value) may carry ``"weights_derived_from": "data/<model>.json"``: the toy
model's weights were *solved* so that this figure prints the article's digits, so a mismatch
means the weight file or the registry changed since the weights were derived;
:class:`FigureMismatch` then says how to check which (:data:`DERIVATIONS`).

With ``COURSE_FIGURE_LOG`` set to a file path, every figure id that :func:`check_figure`
reproduces is appended to that file, one per line (``make test`` uses it for its summary; the
notebook kernels inherit it). Nothing is printed differently.
"""
from __future__ import annotations

import math
import os
from decimal import ROUND_DOWN, Decimal
from functools import lru_cache
from numbers import Integral, Real
from pathlib import Path

from ..data import UnknownNameError, data_path, read_json
from ..ui.language import text      # a ✓ line's note in the notebook's language (set_language)
from .schema import check_registry


class FigureMismatch(AssertionError):
    """A computed value does not reproduce the article's figure."""


# The registry's "article" field -> (file in shared/articles/, the article's title).
ARTICLES = {
    "interface": ("000_b5129be78f5e33b2.txt",
                  "A few input rows, a full vocabulary of outputs: from token IDs to sampling"),
    "lab": ("002_746c4977bac370fc.txt", "Generation (step 7 of 7 of the lab)"),
    "decoding": ("003_d3a8456cbc4b0574.txt", "From scores to a token: softmax, temperature, and decoding"),
    "gpt2": ("004_a737cf4c63232938.txt", "Starting With GPT-2: One Token at a Time"),
}

# A weight file whose entries were solved from the figures -> how to re-derive and compare it.
DERIVATIONS = {
    "data/five_token_model.json": {
        "test": "python -m pytest -m slow -k derivation tests/test_toy_five_token.py",
        "module": "python -m course_lib.toys.derive_five_token  (re-derives the tables and checks every toy figure with them)",
    },
    "data/lab_model.json": {
        "test": "python -m pytest -m slow tests/test_toy_lab_derivation.py",
        "module": "python -m course_lib.toys.derive_lab  (prints the re-derived weight file: diff it with data/lab_model.json)",
    },
}


def registry_path() -> Path:
    """``data/figures.json`` (``course_lib.data`` finds data/)."""
    return data_path("figures.json")


@lru_cache(maxsize=1)
def load_registry() -> dict:
    """The whole registry, as a dict keyed by figure id; every field checked when it is read
    (``figures.schema``: a wrong or missing field names the file, the entry and the field)."""
    path = registry_path()
    return check_registry(read_json(path, "the figures registry"), path, ARTICLES, DERIVATIONS)


def figure(figure_id: str) -> dict:
    """One registry entry, or an ``UnknownNameError`` (a KeyError) that lists close ids."""
    registry = load_registry()
    if figure_id not in registry:
        prefix = figure_id.split(".")[0]
        near = [k for k in registry if k.startswith(prefix)]
        raise UnknownNameError(f"no figure {figure_id!r} in the registry; ids of that article: {near}")
    return registry[figure_id]


def expected(figure_id: str, name: str):
    """The article's value for ``name`` of a figure (for plotting targets beside computed values)."""
    values = figure(figure_id)["values"]
    if name not in values:
        raise UnknownNameError(f"figure {figure_id!r} has no value {name!r}; it has {sorted(values)}")
    return values[name]["expected"]


def to_plain(value):
    """Tensors, arrays and numpy scalars -> plain Python numbers and nested lists."""
    if hasattr(value, "detach"):           # torch.Tensor
        value = value.detach().cpu()
        return value.tolist() if value.dim() else value.item()
    if hasattr(value, "tolist"):           # numpy array or scalar
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value


def format_value(value, decimals):
    """Print ``value`` the way the article does: fixed decimals, or repr for full floats."""
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v, decimals) for v in value) + "]"
    if isinstance(value, bool) or isinstance(value, str):
        return repr(value)
    if isinstance(value, Integral):
        return str(value)
    if isinstance(value, Real):
        if decimals is None:
            return repr(float(value))
        text = f"{value:.{decimals}f}"
        if text.startswith("-") and float(text) == 0:   # never print "-0.0000"
            text = text[1:]
        return text
    return repr(value)


def to_float32(value):
    """Round every float in ``value`` (a number or nested lists) to float32, back as Python floats.

    Integers, booleans and strings are left alone; a float beyond float32's range becomes ±inf.
    """
    if isinstance(value, list):
        return [to_float32(v) for v in value]
    if isinstance(value, float):
        import numpy
        with numpy.errstate(over="ignore"):
            return float(numpy.float32(value))
    return value


def truncate(value: float, decimals: int) -> Decimal:
    """``value`` written with ``decimals`` digits by truncation toward zero (exact arithmetic)."""
    return Decimal(float(value)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_DOWN)


def format_truncated(value, decimals: int) -> str:
    """The article's truncated print: the digits kept, then "…"."""
    if isinstance(value, list):
        return "[" + ", ".join(format_truncated(v, decimals) for v in value) + "]"
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        return format_value(value, None)
    text = f"{truncate(value, decimals):f}"
    if text.startswith("-") and Decimal(text) == 0:
        text = text[1:]
    return text + "…"


def first_difference(computed, wanted, leaf, path="") -> str | None:
    """Walk nested lists side by side; ``leaf(computed, wanted, path)`` judges each number."""
    if isinstance(wanted, list):
        if not isinstance(computed, list) or len(computed) != len(wanted):
            size = len(computed) if isinstance(computed, list) else "a scalar"
            return f"{path or 'value'}: expected {len(wanted)} entries, got {size}"
        for i, (c, w) in enumerate(zip(computed, wanted)):
            found = first_difference(c, w, leaf, f"{path}[{i}]")
            if found:
                return found
        return None
    return leaf(computed, wanted, path)


def _truncation_mismatch(computed, wanted, decimals: int, path="") -> str | None:
    """Where ``computed``, truncated to ``decimals`` digits, differs from ``wanted``'s digits."""
    return first_difference(computed, wanted, lambda c, w, at: _truncated_number(c, w, decimals, at), path)


def _truncated_number(computed, wanted, decimals: int, path) -> str | None:
    if not isinstance(computed, Real) or isinstance(computed, bool) or not math.isfinite(computed):
        return f"{path or 'value'}: expected a finite number, got {computed!r}"
    want = Decimal(repr(float(wanted))).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_DOWN)
    got = truncate(computed, decimals)
    if got != want:
        unit = Decimal(1).scaleb(-decimals)
        low, high = (want, want + unit) if want >= 0 else (want - unit, want)
        return (f"{path or 'value'}: expected {want}… (a value in "
                f"{'[' if want >= 0 else '('}{low}, {high}{')' if want >= 0 else ']'}), "
                f"got {computed!r}, which truncates to {got}…")
    return None


def tolerance(spec: dict) -> float:
    if "tol" in spec:
        return float(spec["tol"])
    decimals = spec.get("decimals")
    return 0.0 if decimals is None else 0.5 * 10.0 ** (-decimals)


def _mismatch(computed, wanted, tol, path="") -> str | None:
    """Where ``computed`` differs from ``wanted``, or None when it matches."""
    return first_difference(computed, wanted, lambda c, w, at: _number_mismatch(c, w, tol, at), path)


def _number_mismatch(computed, wanted, tol, path) -> str | None:
    if isinstance(wanted, bool) or isinstance(wanted, str):
        return None if computed == wanted else f"{path or 'value'}: expected {wanted!r}, got {computed!r}"
    if isinstance(wanted, Integral) and tol == 0:
        ok = isinstance(computed, Real) and computed == wanted
        return None if ok else f"{path or 'value'}: expected {wanted}, got {computed!r}"
    if isinstance(wanted, Real):
        if not isinstance(computed, Real) or isinstance(computed, bool):
            return f"{path or 'value'}: expected a number, got {computed!r}"
        if math.isnan(computed) or abs(computed - wanted) > tol:
            return f"{path or 'value'}: expected {wanted!r} ± {tol:g}, got {computed!r}"
        return None
    return None if computed == wanted else f"{path or 'value'}: expected {wanted!r}, got {computed!r}"


def _compare(spec: dict, value):
    """``value`` as plain numbers (float32-rounded when the article printed float32), and where
    it differs from ``spec``'s expected value at the article's precision (None: it matches)."""
    plain = to_plain(value)
    if spec.get("float32"):
        plain = to_float32(plain)
    if spec.get("truncated"):
        return plain, _truncation_mismatch(plain, spec["expected"], spec["decimals"])
    return plain, _mismatch(plain, spec["expected"], tolerance(spec))


def figure_problem(figure_id: str, name: str, value) -> str | None:
    """Does ``value`` reproduce value ``name`` of ``figure_id`` at the article's precision?
    None when it does, else what differs. Prints nothing (the exercise checkers, 01–07, use it
    so a learner's function is held to the same rule as ``check_figure``)."""
    spec = figure(figure_id)["values"].get(name)
    if spec is None:
        raise UnknownNameError(f"figure {figure_id!r} has no value {name!r}")
    return _compare(spec, value)[1]


def check_figure(figure_id: str, **computed) -> None:
    """Compare computed values with the registry; print one ✓ line per value; raise on mismatch.

    ``check_figure("interface.toy.attention", weights=attn)`` compares ``attn`` (a tensor,
    array, list or number) with the registry's ``weights`` within its tolerance and prints
    the computed value at the article's precision, so the printed line is the same on every
    machine where the figure holds. Returns nothing, so a notebook cell shows only the lines.
    """
    entry = figure(figure_id)
    if not computed:
        raise ValueError(f"check_figure({figure_id!r}) needs at least one value, one of {sorted(entry['values'])}")
    lines = []
    for name, value in computed.items():
        if name not in entry["values"]:
            raise UnknownNameError(f"figure {figure_id!r} has no value {name!r}; it has {sorted(entry['values'])}")
        spec = entry["values"][name]
        plain, problem = _compare(spec, value)
        if spec.get("truncated"):
            decimals = spec["decimals"]
            shown, article = format_truncated(plain, decimals), format_truncated(spec["expected"], decimals)
        else:
            shown = format_value(plain, spec.get("decimals"))
            article = format_value(spec["expected"], spec.get("decimals"))
        if problem:
            raise FigureMismatch(mismatch_message(figure_id, name, entry, spec, problem, plain, shown, article))
        note = "" if shown == article else text(
            "checks.course_band" if spec.get("source") == "course" else "checks.accepted",
            article=article, tol=tolerance(spec))
        lines.append(f"✓ {figure_id} · {name} = {shown}{note}")
    print("\n".join(lines))
    _log_reproduced(figure_id)


def _full(value) -> str:
    """Every digit: repr of each float (and its hex when it is a single float)."""
    if isinstance(value, float):
        return f"{value!r} ({value.hex()})"
    return format_value(value, None)


def mismatch_message(figure_id, name, entry, spec, problem, computed, shown, article) -> str:
    """What an instructor needs when a figure fails: which figure, which article, which registry
    entry, both values at the printed precision and in full, and — for figures the toy weights
    were solved from — which files to compare."""
    decimals = spec.get("decimals")
    precision = ("full float" if decimals is None else f"{decimals} d.p.") + (
        ", truncated" if spec.get("truncated") else "") + (", float32" if spec.get("float32") else "")
    source = entry.get("article", figure_id.split(".")[0])
    file, title = ARTICLES.get(source, ("?", source))
    whose = ("the course's own value (the article does not print it)" if spec.get("source") == "course"
             else f'article "{source}": {title} (shared/articles/{file})')
    lines = [
        f"{figure_id} · {name} does not reproduce the article: {problem}",
        f"  figure:   {entry.get('figure', '')}",
        f"  source:   {whose}",
        f"  registry: data/figures.json → \"{figure_id}\" → values → \"{name}\"",
        f"  computed: {shown}   ({precision})",
        f"  article:  {article}",
        f"  computed in full: {_full(computed)}",
        f"  article in full:  {_full(spec['expected'])}",
    ]
    derived = entry.get("weights_derived_from")
    if derived:
        how = DERIVATIONS.get(derived, {})
        lines += [
            f"  weights:  {derived} was solved so that this figure prints the article's digits, so either",
            f"            that weight file or this registry entry changed since the weights were derived.",
            f"            Check which: {how.get('test', 'its derivation test')}",
        ] + ([f"            or: {how['module']}"] if "module" in how else [])
    return "\n".join(lines)


def _log_reproduced(figure_id: str) -> None:
    """Append ``figure_id`` to $COURSE_FIGURE_LOG, if set (make test's summary counts them)."""
    log = os.environ.get("COURSE_FIGURE_LOG")
    if log:
        try:
            with open(log, "a", encoding="utf-8") as f:
                f.write(figure_id + "\n")
        except OSError:
            pass
