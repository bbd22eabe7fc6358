"""Which exact method a batched rule uses: a fixed rule, the same in every run.

Not taught. ``select.py`` has several ways to find each row's first ids — ``torch.topk``, numpy's
``partition`` (on one or two Python threads), a bar from a sample (``threshold.py``, for a whole
batch or one row at a time) — and ``rules.MinP`` compares in numpy or torch. All of them return
the same ids (tests/test_decoding_methods.py forces each one and compares them with each other
and with the per-row rules), so the choice changes how long a call takes, never what it returns.

:func:`rule` picks the method from the work, the number of rows and torch's thread count alone —
never from a timing, so the same call takes the same method in every run and on every machine:

* top-k (its mask, and the pipeline's candidate ids): one row, the sample's bar
  (``"threshold"``); several rows, the bar one row at a time (``"rows"``). Both collect only
  about 1.5 k values per row above the bar, so the cost is one pass over the row.
* top-p: numpy's ``partition`` of each row's 4,096 largest values (``"partition"``; with two or
  more torch threads and at least 8 rows, the rows split between two Python threads:
  ``"partition2"``). A sample's bar collects every value above it, and a nucleus of a few thousand
  ids (logits of spread 3 keep 1,400–2,900 of GPT-2's 50,257) makes that collection dearer than
  the partition, which numpy runs with vector instructions.
* min-p: numpy compares where it can read the tensor's memory (float32 / float64 on the CPU),
  else torch.

The rule was set from measurements of every method on [64, 50257] and [1, 50257] float32 batches
(``python -m course_lib.bench.sampling --methods``, which prints them). :func:`forced` makes every
call of a kind of work use one method (the tests); :func:`chosen` lists what the rule picked so
far in this process (the benchmark prints it).
"""
from __future__ import annotations

from contextlib import contextmanager

import torch

_CHOSEN: dict[tuple, str] = {}
_FORCED: dict[str, str] = {}

# (work, one row?) -> the method the rule prefers; "partition" takes "partition2" with threads
PREFERRED = {("top_k", True): "threshold", ("top_k", False): "rows",
             ("top_k_ids", True): "threshold", ("top_k_ids", False): "rows",
             ("top_p", True): "partition", ("top_p", False): "partition",
             ("min_p", True): "numpy", ("min_p", False): "numpy"}
SPLIT_ROWS = 8          # "partition2": at least this many rows, and two or more torch threads
FALLBACK = ("partition", "torch")       # when the preferred method does not apply to a call


def rule(work: str, rows: int, threads: int, available) -> str:
    """The method for a ``work`` call ("top_k", "top_k_ids", "top_p", "min_p") on ``rows`` rows
    with torch on ``threads`` threads, among the ``available`` method names (a method that does
    not apply to a call — a row too short for a sample, a tensor numpy cannot read — is absent)."""
    name = PREFERRED[work, rows == 1]
    if name == "partition" and threads > 1 and rows >= SPLIT_ROWS and "partition2" in available:
        name = "partition2"
    if name not in available:
        name = next(n for n in (*FALLBACK, *sorted(available)) if n in available)
    return name


def run(work: str, rows: int, methods: dict):
    """The result of the method :func:`rule` picks among ``methods`` (name → function of no
    argument), or of the one :func:`forced` sets."""
    if work in _FORCED:
        name = _FORCED[work]
        if name not in methods:
            raise ValueError(f"method {name!r} does not apply to this {work} call; it can use {sorted(methods)}")
        return methods[name]()
    threads = torch.get_num_threads()
    name = rule(work, rows, threads, methods)
    _CHOSEN[work, rows == 1, threads] = name
    return methods[name]()


def chosen() -> dict[tuple, str]:
    """Every choice made so far in this process: (work, one row?, threads) → method name."""
    return dict(_CHOSEN)


@contextmanager
def forced(work: str, name: str):
    """Inside the block every ``work`` call (``"top_k"``, ``"top_k_ids"``, ``"top_p"``,
    ``"min_p"``) uses the method ``name``; raises ValueError where that method does not apply."""
    before = _FORCED.get(work)
    _FORCED[work] = name
    try:
        yield
    finally:
        if before is None:
            _FORCED.pop(work, None)
        else:
            _FORCED[work] = before
