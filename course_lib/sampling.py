"""From logits to one token id: the sampling rules, one small function each.

Taught in notebook 07 (sampling). These are the *teaching* versions: one row of V logits or
probabilities as a plain list of floats (a 1-D tensor works too), loops a learner can follow
line by line, exact rules in the docstrings. ``course_lib.sampling_batched`` has the same rules
over a [B, V] tensor, vectorised, and gives exactly the same kept sets.

Conventions every function follows:

* An id is a position in the row: the probability of token ``i`` is ``probs[i]``.
* A *kept set* is returned as a list of ids in ranked order (highest probability first,
  ties broken by the smaller id), the order a learner reads a top-k or top-p table in.
* Filtering never deletes entries: :func:`renormalize` returns a full row in the original id
  order, excluded ids at 0, so a sampled index is directly a token id.
* Bad input raises ``ValueError`` whose message starts with the argument's name.
* Given the logits (``logits=`` of the filters, and always in :class:`SamplingRule`), the
  ranking uses the *logits*, and an id whose logit is −inf is never kept. Probabilities can
  round or underflow to equal values (a leader 120 nats ahead leaves the others at ~1e-52 in
  float64 but exactly 0 in float32); logits keep their order, so rounding can never decide
  which ids a filter keeps. (Softmax never reverses an order, so the two rankings differ only
  where probabilities tie.)

Compared with Hugging Face ``transformers``' logits processors (``TemperatureLogitsWarper``,
``TopKLogitsWarper``, ``TopPLogitsWarper``, ``MinPLogitsWarper``, applied in that order, as
here): the kept sets are the same, except for these deliberate differences, each pinned by a
minimal example in tests/test_sampling_reference.py:

1. **Top-k ties.** :func:`top_k_ids` keeps exactly k ids (ties at the k-th value broken by the
   smaller id); transformers (like nanoGPT, :func:`top_k_strict_cut`) keeps every id tied with
   the k-th value. Logits [2, 1, 1], k = 2: we keep [0, 1], transformers keeps [0, 1, 2].
2. **Tie order in top-p.** Among ids tied at the point where the running sum crosses p, we
   keep the smaller ids; transformers sorts *ascending* and removes from the bottom, so it keeps
   the larger ones. Four equal logits, p = 0.5: we keep [0, 1], transformers keeps [2, 3].
   (How *many* ids are kept is the same.)
3. **GPT-2's legacy top-p** (:func:`gpt2_legacy_top_p_ids`) keeps one id fewer than the paper's
   rule, which is the one transformers implements: probabilities [0.5, 0.25, 0.15, 0.1],
   p = 0.8: legacy keeps 2 ids, we (:func:`top_p_ids`) and transformers keep 3.
4. **Precision, and top-p at p = 1.** transformers computes in the logits' dtype (float32 for
   a model's output); we compute probabilities in float64, so a running sum that lands within
   rounding of p can end top-p one id apart. At p = 1 transformers keeps every id with a
   nonzero probability (its ``generate`` even switches top-p off), while we stop as soon as
   the running sum reaches 1.0: ids too unlikely to move a float64 sum are dropped. Logits
   [0, −100], p = 1: we keep [0] (1 + e⁻¹⁰⁰ rounds to 1), transformers keeps [0, 1]. Such an
   id owns an interval far narrower than any u a float64 draw can tell apart.
5. **−inf.** transformers leaves a removed id in the row at −inf; here it is simply not in the
   kept set. Top-k with k above the number of finite logits keeps the finite ones in both.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from numbers import Integral

from .sampling_checks import (as_float_list, check_logits, check_min_p, check_probs, check_temperature,
                              check_top_k, check_top_p, check_u)

# ---------------------------------------------------------------------------------------------
# Logits -> probabilities
# ---------------------------------------------------------------------------------------------


def softmax_with_temperature(logits, temperature: float = 1.0) -> list[float]:
    """p[i] = exp((z[i] − max z) / τ) / Σⱼ exp((z[j] − max z) / τ).

    Subtracting the maximum first changes nothing mathematically (the common factor
    exp(−max z / τ) cancels) but keeps every exponent ≤ 0, so nothing overflows. τ must be
    finite and > 0; a −inf logit gets probability exactly 0.
    """
    z = check_logits(logits)
    t = check_temperature(temperature)
    top = max(z)
    weights = [math.exp((v - top) / t) for v in z]
    total = 0.0
    for w in weights:
        total += w
    return [w / total for w in weights]


def naive_softmax(logits) -> list[float]:
    """p[i] = exp(z[i]) / Σ exp(z[j]) *without* subtracting the maximum (to show the overflow:
    a logit above ~709 makes exp return inf in float64, and inf / inf is NaN)."""
    z = check_logits(logits)
    weights = []
    for v in z:
        try:
            weights.append(math.exp(v))
        except OverflowError:                 # Python raises where numpy/torch give inf
            weights.append(math.inf)
    total = sum(weights)
    return [w / total if math.isfinite(total) else math.nan for w in weights]


def entropy(probs) -> float:
    """How spread a distribution is: −Σ p ln p in nats (0 ln 0 counts as 0).

    0 when one id holds all the mass; ln V when all V ids are equally likely.
    """
    return -sum(p * math.log(p) for p in as_float_list(probs, "probs") if p > 0)


def greedy_id(logits) -> int:
    """The id with the largest logit (= the largest probability, softmax keeps the order).
    Ties break towards the smaller id, like ``torch.argmax``. No temperature involved."""
    z = check_logits(logits)
    return z.index(max(z))


def ranked_ids(probs) -> list[int]:
    """All ids sorted by probability, highest first; equal probabilities by smaller id.
    (Works for any scores: ``ranked_ids(logits)`` ranks by logits.)"""
    p = as_float_list(probs, "probs")
    # Python's sort is stable, also with reverse=True: equal values keep their id order.
    return sorted(range(len(p)), key=p.__getitem__, reverse=True)


def renormalize(probs, kept) -> list[float]:
    """Keep the ids in ``kept``, divide by the mass they hold, set every other id to 0.

    The result keeps the original id order (index = token id) and sums to 1. The mass is
    added up in id order. ``kept`` must hold at least one id with positive probability.
    """
    p = as_float_list(probs, "probs")
    allowed = set(int(i) for i in kept)
    if not allowed:
        raise ValueError("kept is empty: keep at least one id")
    if min(allowed) < 0 or max(allowed) >= len(p):
        raise ValueError(f"kept holds ids outside 0..{len(p) - 1}")
    mass = 0.0
    for i, v in enumerate(p):
        if i in allowed:
            mass += v
    if mass <= 0:
        raise ValueError("kept holds no probability mass")
    return [v / mass if i in allowed else 0.0 for i, v in enumerate(p)]


# ---------------------------------------------------------------------------------------------
# Filters: which ids take part in this step's draw
# ---------------------------------------------------------------------------------------------


def _ranking(probs: list[float], logits) -> tuple[list[int], set[int] | None]:
    """The order filters walk (by logits when given, else by probabilities; ties by id) and
    the ids allowed at all (finite logits; None: every id)."""
    if logits is None:
        return ranked_ids(probs), None
    z = check_logits(logits)
    if len(z) != len(probs):
        raise ValueError(f"logits has {len(z)} values but probs has {len(probs)}")
    allowed = {i for i, v in enumerate(z) if v != -math.inf} if -math.inf in z else set(range(len(z)))
    return ranked_ids(z), allowed


def top_k_ids(probs, top_k: int, logits=None) -> list[int]:
    """Exactly k ids: the first k of :func:`ranked_ids` (ties broken by smaller id).
    k larger than the vocabulary keeps every id. With ``logits`` (the ones ``probs`` came
    from): the first k by logit, never one whose logit is −inf."""
    k = check_top_k(top_k)
    q = as_float_list(probs, "probs")
    return _top_k(q, k, *_ranking(q, logits))


# The three filters given a ranking (``order``) and the ids allowed at all (None: every id);
# SamplingRule.filter ranks once and calls these directly.

def _top_k(q, k, order, allowed):
    return [i for i in order[:k] if allowed is None or i in allowed]


def top_k_strict_cut(logits, top_k: int) -> list[int]:
    """nanoGPT's rule: find the k-th largest logit v, set every logit ``< v`` to −inf.

    Ties with v survive, so more than k ids can stay. Returned in ranked order (largest
    logit first, ties by smaller id). k is clipped to the vocabulary size, as nanoGPT does.
    """
    z = check_logits(logits)
    k = min(check_top_k(top_k), len(z))
    kth = sorted(z, reverse=True)[k - 1]
    kept = [i for i, v in enumerate(z) if not v < kth]
    return sorted(kept, key=lambda i: (-z[i], i))


def top_p_ids(probs, top_p: float, logits=None) -> list[int]:
    """Nucleus sampling (Holtzman et al. 2020, §3.1): walk :func:`ranked_ids`, adding each id
    and its probability to a running sum; stop as soon as the sum is ≥ p. The id that
    crosses p is kept. If rounding keeps the sum below p, every id is kept. With ``logits``:
    the walk goes in logit order, and an id whose logit is −inf is never kept."""
    p = check_top_p(top_p)
    q = as_float_list(probs, "probs")
    return _top_p(q, p, *_ranking(q, logits))


def _top_p(q, p, order, allowed):
    kept, mass = [], 0.0
    for token_id in order:
        kept.append(token_id)
        mass += q[token_id]
        if mass >= p:
            break
    return [i for i in kept if allowed is None or i in allowed]


def gpt2_legacy_cutoff(probs, top_p: float) -> tuple[int, int]:
    """GPT-2's ``top_p_logits`` (openai/gpt-2 src/sample.py, commit 9b63575):
    count = how many running sums (sorted, highest first) are ≤ p;
    cutoff index = max(count − 1, 0). Returns ``(count, cutoff_index)``."""
    p = check_top_p(top_p)
    q = as_float_list(probs, "probs")
    count, mass = 0, 0.0
    for token_id in ranked_ids(q):
        mass += q[token_id]
        if mass <= p:
            count += 1
    return count, max(count - 1, 0)


def gpt2_legacy_top_p_ids(probs, top_p: float) -> list[int]:
    """GPT-2's old rule: the value at the cutoff index becomes a threshold and every id with
    probability ≥ that threshold stays (``logits < min_value`` are removed). Where the paper
    keeps the id that crosses p, this keeps one id fewer."""
    q = as_float_list(probs, "probs")
    _, cutoff = gpt2_legacy_cutoff(q, top_p)
    threshold = q[ranked_ids(q)[cutoff]]
    return [i for i in ranked_ids(q) if q[i] >= threshold]


def min_p_ids(probs, min_p: float, logits=None) -> list[int]:
    """Min-p: keep every id whose probability is ≥ min_p × (the largest probability).
    The bar rises with the model's confidence. min_p = 0 keeps all, 1 keeps the tied top.
    With ``logits``: listed in logit order, and an id whose logit is −inf is never kept."""
    m = check_min_p(min_p)
    q = as_float_list(probs, "probs")
    return _min_p(q, m, *_ranking(q, logits))


def _min_p(q, m, order, allowed):
    bar = m * max(q)
    return [i for i in order if q[i] >= bar and (allowed is None or i in allowed)]


# ---------------------------------------------------------------------------------------------
# Drawing one id
# ---------------------------------------------------------------------------------------------


def interval_boundaries(probs, tol: float = 1e-5) -> list[float]:
    """Running sums of ``probs``: id i owns the left-closed interval [b[i−1], b[i]).

    The boundaries from the last id with positive probability onward are forced to 1.0, so
    every u in [0, 1) lands somewhere even when the sum rounds to 0.9999999, and a trailing
    zero-probability id still owns an empty interval.
    """
    p = check_probs(probs, tol=tol)
    boundaries, mass = [], 0.0
    for v in p:
        mass += v
        boundaries.append(mass)
    last_positive = max(i for i, v in enumerate(p) if v > 0)
    for i in range(last_positive, len(p)):
        boundaries[i] = 1.0
    return boundaries


def pick_interval(boundaries: list[float], u: float) -> int:
    """The id whose interval holds u: the first boundary strictly greater than u
    (``bisect_right``). A zero-length interval never wins: its boundary equals the previous
    one, which is already > u."""
    return bisect_right(boundaries, check_u(u))


def sample_interval(probs, u: float, tol: float = 1e-5) -> int:
    """Categorical draw by hand: lay the probabilities end to end on [0, 1) and return the id
    of the interval that contains u (left-closed: u = 0.2203 with a first interval
    [0, 0.2203) picks id 1)."""
    return pick_interval(interval_boundaries(probs, tol=tol), u)


def sample_interval_ranked(probs, u: float, tol: float = 1e-5) -> int:
    """The same draw with the intervals laid out in *ranked* order (highest probability first,
    ties by id), as the lab article walks its running sums (0.626, 0.770, 0.845, …). Returns
    the token id. Both layouts draw every id with its probability; a given u can differ."""
    p = check_probs(probs, tol=tol)
    order = ranked_ids(p)
    return order[sample_interval([p[i] for i in order], u, tol=tol)]


def sample_seeded(probs, generator) -> int:
    """One draw with ``torch.multinomial`` and a seeded ``torch.Generator`` (what PyTorch code
    does; the interval picture explains it, it is not PyTorch's internal loop)."""
    import torch

    p = torch.tensor(check_probs(probs), dtype=torch.float64)
    return int(torch.multinomial(p, num_samples=1, generator=generator).item())


def draw_counts(probs, n: int, seed: int) -> list[int]:
    """Draw ``n`` ids with ``random.Random(seed)``: u = rng.random(), then the interval rule.
    Returns how often each id was drawn (same distribution every draw: no context)."""
    import random

    if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
        raise ValueError(f"n must be an integer ≥ 1, got {n!r}")
    boundaries = interval_boundaries(probs)
    rng = random.Random(seed)
    counts = [0] * len(boundaries)
    for _ in range(n):
        counts[bisect_right(boundaries, rng.random())] += 1
    return counts


# ---------------------------------------------------------------------------------------------
# The pipeline: temperature → top-k → top-p → min-p → renormalise → draw
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplingRule:
    """One decoding setting, applied in a fixed, documented order.

    Order (the one Hugging Face ``transformers`` uses for its logits warpers):
    temperature → top-k → top-p → min-p → renormalise → draw. Each filter reads the
    distribution the previous stage left (renormalised over the ids still kept), so changing
    the temperature can change how many ids top-p needs. Other engines order differently
    (llama.cpp's default chain applies temperature *after* its filters), which can keep a
    different set for the same numbers. (The filters themselves are the teaching rules above:
    transformers' and nanoGPT's top-k keep ties at the k-th value, ours keeps exactly k; the
    module docstring lists every difference from transformers.) ``None`` switches a filter
    off; ``greedy=True`` replaces everything by the argmax (no temperature, no division by zero).

    :meth:`apply` ranks by the logits, never by rounded probabilities, and never keeps an id
    whose logit is −inf (so top-k with k above the number of finite logits keeps the finite
    ones); ``course_lib.sampling_batched.apply_batched`` keeps the same ids for every row.
    """

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    greedy: bool = False

    def __post_init__(self):
        check_temperature(self.temperature)
        if self.top_k is not None:
            check_top_k(self.top_k)
        if self.top_p is not None:
            check_top_p(self.top_p)
        if self.min_p is not None:
            check_min_p(self.min_p)

    def probabilities(self, logits) -> list[float]:
        """Stage 1: softmax at this temperature, or a one-hot row at the argmax if greedy."""
        if self.greedy:
            z = check_logits(logits)
            best = greedy_id(z)
            return [1.0 if i == best else 0.0 for i in range(len(z))]
        return softmax_with_temperature(logits, self.temperature)

    def filter(self, probs, logits=None) -> tuple[list[int], list[float]]:
        """Stages 2–5 on a row of probabilities: returns ``(kept ids in ranked order,
        renormalised row in id order)``. With ``logits`` (those ``probs`` came from) every
        stage ranks by logit and an id whose logit is −inf is never kept."""
        current = as_float_list(probs, "probs")
        order, allowed = _ranking(current, logits)        # one ranking for every stage
        kept = set(range(len(current))) if allowed is None else set(allowed)
        # the stages of top_k_ids, top_p_ids and min_p_ids, given the ranking
        stages = [(_top_k, self.top_k), (_top_p, self.top_p), (_min_p, self.min_p)]
        if self.greedy:
            stages = [(_top_k, 1)]
        for rule, value in stages:
            if value is None:
                continue
            kept &= set(rule(current, value, order, allowed))      # a filter only ever removes ids
            current = renormalize(current, kept)
        return [i for i in order if i in kept], current

    def apply(self, logits) -> "SamplingStep":
        """Every stage on one row of logits, kept for display (ranked by the logits)."""
        z = check_logits(logits)
        probs = self.probabilities(z)
        kept, final = self.filter(probs, logits=z)
        return SamplingStep(probs=probs, kept=kept, final=final)

    def choose(self, logits, u: float) -> int:
        """The id this rule picks for the uniform number u."""
        return sample_interval(self.apply(logits).final, u)


@dataclass
class SamplingStep:
    """What one application of a :class:`SamplingRule` produced (for tables and plots)."""

    probs: list[float]      # after temperature, id order
    kept: list[int]         # ids still in the draw, ranked
    final: list[float]      # renormalised over ``kept``, id order, others 0

    def pick(self, u: float) -> int:
        return sample_interval(self.final, u)
