"""Which exact method a batched rule uses: the one measured fastest where it runs.

Not taught. ``select.py`` has several ways to find each row's first ids — ``torch.topk``, numpy's
``partition``, a bar from a sample (``threshold.py``, for a whole batch or row by row) — and ``rules.MinP`` compares in numpy or
torch. Which is fastest depends on k (or p), V, the number of rows, the threads and the CPU: the
code that was fastest on an Intel Xeon (numpy's ``partition``) was 1.9× slower than
transformers' ``torch.topk`` on an AMD EPYC (issue 26). All methods return the same ids
(tests/test_decoding_methods.py forces each one and compares them with each other and with the
per-row rules), so the choice changes how long a call takes, never what it returns.

The first call of a kind of work (the rule; rows, V and k or 1 / (1 − p) rounded to powers of
two; the dtype; torch's threads) runs every method that applies on the call's own values, each
at least 3 times (up to 25 while they take under 10 ms in all), keeps the one whose quickest run
was quickest for the rest of the process, and checks that all of them returned the same result
(``MethodsDisagree`` if not: a bug, never hidden). Later calls of that kind run the chosen method
alone. :func:`forced` makes every call use one method (the tests); :func:`chosen` lists what was
picked (the benchmark prints it).
"""
from __future__ import annotations

import math
import time
from contextlib import contextmanager

import numpy as np
import torch

_CHOSEN: dict[tuple, str] = {}
_FORCED: dict[str, str] = {}
ROUNDS = 3              # timed runs of each method at the first call of a kind of work, at least;
BUDGET = 0.01           # more (up to MAX_ROUNDS) while they took less than BUDGET seconds in all:
MAX_ROUNDS = 25         # a [1, V] call lasts ~50 µs, and one run can be slowed by other work


class MethodsDisagree(RuntimeError):
    """Two exact methods returned different results for the same call: a bug in one of them."""


def kind_of(work: str, shape, dtype, n) -> tuple:
    """The key a choice is cached under: the work, rows / V / n rounded to powers of two, the
    dtype and torch's thread count."""
    rows, V = shape
    size = n if isinstance(n, int) else max(1, round(1 / max(1e-9, 1 - n)))   # top-p: 1 / (1 − p)
    return (work, rows.bit_length(), V.bit_length(), size.bit_length(), dtype, torch.get_num_threads())


def _same(x, y) -> bool:
    if isinstance(x, tuple):
        return len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))
    if isinstance(x, torch.Tensor):
        return isinstance(y, torch.Tensor) and x.shape == y.shape and bool(torch.equal(x, y))
    if isinstance(x, np.ndarray):
        return isinstance(y, np.ndarray) and x.shape == y.shape and bool(np.array_equal(x, y))
    return x == y


def run(kind: tuple, methods: dict):
    """The result of the fastest of ``methods`` (name → function of no argument) for ``kind``."""
    work = kind[0]
    if work in _FORCED:
        name = _FORCED[work]
        if name not in methods:
            raise ValueError(f"method {name!r} does not apply to this {work} call; it can use {sorted(methods)}")
        return methods[name]()
    if len(methods) == 1:
        return next(iter(methods.values()))()
    name = _CHOSEN.get(kind)
    if name in methods:
        return methods[name]()
    results, best, rounds, spent = {}, {}, 0, 0.0
    while rounds < ROUNDS or (spent < BUDGET and rounds < MAX_ROUNDS):
        rounds += 1
        for name, fn in methods.items():
            start = time.perf_counter()
            result = fn()
            took = time.perf_counter() - start
            best[name], spent = min(best.get(name, math.inf), took), spent + took
            results.setdefault(name, result)
    first, *others = results
    for name in others:
        if not _same(results[first], results[name]):
            raise MethodsDisagree(f"{work}: methods {first!r} and {name!r} returned different results "
                                  f"for a batch of shape {kind[1:3]} (powers of two): please report it")
    _CHOSEN[kind] = min(best, key=best.get)
    return results[first]


def chosen() -> dict[tuple, str]:
    """Every choice made so far in this process: kind → method name."""
    return dict(_CHOSEN)


def forget() -> None:
    """Drop every choice (the next call of each kind measures again)."""
    _CHOSEN.clear()


@contextmanager
def forced(work: str, name: str):
    """Inside the block every ``work`` call (``"top_k"``, ``"top_k_ids"``, ``"top_p"``) uses the
    method ``name``; raises ValueError where that method does not apply."""
    before = _FORCED.get(work)
    _FORCED[work] = name
    try:
        yield
    finally:
        if before is None:
            _FORCED.pop(work, None)
        else:
            _FORCED[work] = before
