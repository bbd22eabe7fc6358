"""How far a printed number is from changing: the course's proof that its digits hold on every CPU.

Taught in notebook 06 (float32 and float64), used by ``tests/test_margins.py`` and by the toy
models' derivations.

Every CPU rounds float64 arithmetic the IEEE way, but a long sum (a matrix product, a softmax)
is added up in an order that depends on the kernel: x86 with AVX2 or AVX-512, ARM with NEON
or SVE and Apple's libraries each give results that differ in the last bits. For float32 that
is about 1e-7 relative, as much as the digits the articles print; for float64 about 1e-16.
So the course runs its toy models in float64 and shows the float32 value where an article
printed one. A printed text can still change if the exact value sits right at a boundary —
halfway between two printed decimals, between two float32 values, at a threshold p, at a tie.
This module measures the distance to that boundary (the **margin**); the tests require every
margin to be far above any kernel's error.
"""
from __future__ import annotations

import math
from decimal import ROUND_DOWN, Decimal

import numpy

# A margin must exceed this fraction of the value's size: far above float64's ~1e-16
# differences between kernels, and above float32's ~1e-7 where a value is computed in float32.
FLOAT64_PATH = 1e-9
FLOAT32_PATH = 1e-4


def text_of(x: float, decimals: int | None, truncated: bool = False) -> str:
    """``x`` as the course prints it: repr for full floats, fixed decimals, or truncated decimals."""
    if decimals is None:
        return repr(float(x))
    if truncated:
        return str(Decimal(float(x)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_DOWN))
    text = f"{x:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def float32_interval(x: float, decimals: int | None, truncated: bool = False) -> tuple[float, float]:
    """The interval of exact values whose float32 rounding prints as ``float32(x)`` does.

    Walks the float32 neighbours of ``float32(x)`` while they print the same text; each end is
    halfway between the last neighbour that prints the same and the first that does not.
    """
    f = numpy.float32(x)
    text = text_of(float(f), decimals, truncated)
    ends = []
    for direction in (-numpy.inf, numpy.inf):
        last = f
        while True:
            step = numpy.nextafter(last, numpy.float32(direction))
            if text_of(float(step), decimals, truncated) != text or not numpy.isfinite(step):
                break
            last = step
        ends.append((float(last) + float(step)) / 2)
    return ends[0], ends[1]


def decimal_interval(x: float, decimals: int, truncated: bool = False) -> tuple[float, float]:
    """The interval of values that print with ``decimals`` decimals as ``x`` does."""
    unit = 10.0 ** -decimals
    if truncated:
        low = float(Decimal(float(x)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_DOWN))
        return (low, low + unit) if x >= 0 else (low - unit, low)
    k = round(x / unit)
    return (k - 0.5) * unit, (k + 0.5) * unit


def text_margin(x: float, decimals: int | None, float32: bool = False, truncated: bool = False) -> float:
    """Distance from ``x`` to the nearest value that would print differently.

    ``float32``: the printed value is ``float32(x)`` (the article printed a float32 result).
    Without it, a full-precision print (``decimals=None``) has no margin at all: a float64's
    last digits are exactly what differs between CPUs.
    """
    x = float(x)
    if float32:
        low, high = float32_interval(x, decimals, truncated)
    elif decimals is None:
        return 0.0
    else:
        low, high = decimal_interval(x, decimals, truncated)
    return min(x - low, high - x)


def required_margin(x: float, float32_path: bool = False) -> float:
    """The margin a value needs: a fraction of its size (with a floor for exact zeros)."""
    return (FLOAT32_PATH if float32_path else FLOAT64_PATH) * max(abs(float(x)), 1e-12)


def relative(margin: float, x: float) -> float:
    """A margin as a fraction of the value's size (``inf`` for a margin around an exact zero)."""
    return math.inf if x == 0 else margin / abs(x)
