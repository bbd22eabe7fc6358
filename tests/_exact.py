"""Bit-exact float comparisons that print floats, not integer bit patterns.

``from _exact import assert_same_floats`` (pytest puts ``tests/`` on ``sys.path``).

    assert_same_floats(model_logits, F.expected("interface.toy.logits", "logits"),
                       "interface.toy.logits")

compares every entry bit for bit — as float32 values by default, the precision the articles
print (``float32=False``: as float64) — and on a difference fails with one line per entry:
the computed value, the article's digits, both as the compared float in full and in hex::

    interface.toy.logits[2]: computed -1.0673933029174805 (-0x1.1140b00000000p+0),
        article -1.067393183708191 → float32 -1.067393183708191 (-0x1.1140ae0000000p+0), 1 float32 step(s) apart
"""
from __future__ import annotations

import math
import struct


def _flat(values) -> list:
    """Tensors, arrays, nested lists and numbers -> a flat list of Python numbers."""
    if hasattr(values, "detach"):
        values = values.detach().cpu().double().reshape(-1).tolist()
    elif hasattr(values, "tolist"):
        values = values.tolist()
    if isinstance(values, (list, tuple)):
        out = []
        for v in values:
            out.extend(_flat(v) if isinstance(v, (list, tuple)) or hasattr(v, "tolist") else [v])
        return out
    return [values]


def as_float32(x: float) -> float:
    """``x`` rounded to the nearest float32, as a Python float (±inf beyond float32's range)."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _ordinal(x: float, float32: bool) -> int:
    """Position of ``x`` on the line of floats, so that neighbours differ by 1."""
    fmt, ifmt, bits = ("<f", "<i", 32) if float32 else ("<d", "<q", 64)
    (i,) = struct.unpack(ifmt, struct.pack(fmt, x))
    return i if i >= 0 else -(i & ((1 << (bits - 1)) - 1))


def _same(a: float, b: float) -> bool:
    return a.hex() == b.hex()       # bit for bit: -0.0 differs from 0.0, NaN equals NaN


def float_differences(got, want, what: str = "value", float32: bool = True) -> list[str]:
    """One line per entry where ``got`` and ``want`` are not the same float; [] when all are."""
    got_flat, want_flat = _flat(got), _flat(want)
    if len(got_flat) != len(want_flat):
        return [f"{what}: computed {len(got_flat)} values, article {len(want_flat)}"]
    kind = "float32" if float32 else "float64"
    lines = []
    for i, (g, w) in enumerate(zip(got_flat, want_flat)):
        g, w = float(g), float(w)
        gc, wc = (as_float32(g), as_float32(w)) if float32 else (g, w)
        if _same(gc, wc):
            continue
        where = what if len(got_flat) == 1 else f"{what}[{i}]"
        apart = ""
        if math.isfinite(gc) and math.isfinite(wc):
            apart = f", {abs(_ordinal(gc, float32) - _ordinal(wc, float32))} {kind} step(s) apart"
        computed = f"{g!r}" + (f" → {gc!r}" if gc != g else "")
        lines.append(f"{where}: computed {computed} ({gc.hex()}), "
                     f"article {w!r} → {kind} {wc!r} ({wc.hex()}){apart}")
    return lines


def assert_same_floats(got, want, what: str = "value", float32: bool = True) -> None:
    """Fail unless ``got`` and ``want`` hold the same floats bit for bit (after rounding both to
    float32 when ``float32``), listing each differing entry with its value, the article's digits
    and both hex forms — never a bare integer bit pattern."""
    lines = float_differences(got, want, what, float32)
    if lines:
        raise AssertionError(f"{what}: not the same {'float32' if float32 else 'float64'} values, "
                             f"entry by entry:\n  " + "\n  ".join(lines))


def assert_close(got, want, rel: float, abs: float, what: str = "value") -> None:  # noqa: A002 (approx's name)
    """Every entry of ``got`` equal to ``want``'s or within ``max(rel × |want|, abs)`` of it:
    ``pytest.approx``'s rule (an infinity only equals itself, NaN nothing), checked at numpy
    speed for rows of 50,257 values, where ``approx`` takes a quarter of a second a row. Fails
    naming how many entries differ and the first five."""
    import numpy as np

    def array(values):
        return np.asarray(values.detach().cpu().double() if hasattr(values, "detach") else values, dtype=np.float64)
    a, b = array(got), array(want)
    assert a.shape == b.shape, f"{what}: shape {a.shape}, expected {b.shape}"
    with np.errstate(invalid="ignore", over="ignore"):
        ok = (a == b) | (np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= np.maximum(rel * np.abs(b), abs)))
    bad = np.flatnonzero(~ok.reshape(-1))
    assert not bad.size, (f"{what}: {bad.size} of {a.size} entries differ by more than max({rel} × |expected|, {abs}); "
                          + ", ".join(f"[{i}] {a.reshape(-1)[i]!r}, expected {b.reshape(-1)[i]!r}" for i in bad[:5]))
