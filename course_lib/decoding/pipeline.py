"""One decoding setting, applied in a fixed order: ``SamplingRule`` → kept ids → the draw.

Taught in notebook 07 (sampling: "the whole pipeline"; the panel and the generation loop use
it). The order — temperature → top-k → top-p → min-p → renormalise → draw — is the one of
``rules.FILTERS``; :meth:`SamplingRule.filter` (one row, readable) and :func:`filter_batched`
([B, V], vectorised) both iterate it and keep the same ids for every row.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

from .batched import check_batch, first_k, key_and_allowed
from .checks import check_logits, check_prob_rows, check_probs, check_temperature
from .draw import check_generator, sample_interval
from .probs import greedy_id, renormalize, renormalize_rows
from .rules import FILTERS, TEMPERATURE, TOP_K, _ranking

# The fields every repr shows, in this order; a field added later is shown only when set, so
# the notebooks' printed rules do not change.
_REPR_FIELDS = ("temperature", "top_k", "top_p", "min_p", "greedy")


@dataclass(frozen=True, repr=False)
class SamplingRule:
    """One decoding setting, applied in a fixed, documented order.

    Order (the one Hugging Face ``transformers`` uses for its logits warpers):
    temperature → top-k → top-p → min-p → renormalise → draw. Each filter reads the
    distribution the previous stage left (renormalised over the ids still kept), so changing
    the temperature can change how many ids top-p needs. Other engines order differently
    (llama.cpp's default chain applies temperature *after* its filters), which can keep a
    different set for the same numbers. ``None`` switches a filter off; ``greedy=True``
    replaces everything by the argmax (no temperature, no division by zero). The rules
    themselves, and how they differ from transformers', are in ``course_lib.decoding.rules``.

    :meth:`apply` ranks by the logits, never by rounded probabilities, and never keeps an id
    whose logit is −inf (so top-k with k above the number of finite logits keeps the finite
    ones); :func:`apply_batched` keeps the same ids for every row.
    """

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    greedy: bool = False

    def __post_init__(self):
        if not isinstance(self.greedy, bool):      # "no" would be truthy: greedy by accident
            raise ValueError(f"greedy must be True or False, got {self.greedy!r}")
        for rule in (TEMPERATURE, *FILTERS):
            if rule is TEMPERATURE and self.greedy:
                continue                                  # greedy ignores the temperature (even 0)
            if getattr(self, rule.field) is not None:
                rule.check(getattr(self, rule.field))

    def __repr__(self) -> str:
        shown = [f"{name}={getattr(self, name)!r}" for name in _REPR_FIELDS]
        shown += [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)
                  if f.name not in _REPR_FIELDS and getattr(self, f.name) is not None]
        return f"SamplingRule({', '.join(shown)})"

    def stages(self):
        """(rule, value) for every filter this setting switches on, in order."""
        if self.greedy:
            return [(TOP_K, 1)]
        return [(rule, getattr(self, rule.field)) for rule in FILTERS if getattr(self, rule.field) is not None]

    def probabilities(self, logits) -> list[float]:
        """Stage 1: softmax at this temperature, or a one-hot row at the argmax if greedy."""
        if self.greedy:
            z = check_logits(logits)
            best = greedy_id(z)
            return [1.0 if i == best else 0.0 for i in range(len(z))]
        return TEMPERATURE.probs(logits, self.temperature)

    def filter(self, probs, logits=None) -> tuple[list[int], list[float]]:
        """Stages 2–5 on a row of probabilities: returns ``(kept ids in ranked order,
        renormalised row in id order)``. With ``logits`` (those ``probs`` came from) every
        stage ranks by logit and an id whose logit is −inf is never kept."""
        current = check_probs(probs)
        order, allowed = _ranking(current, logits)        # one ranking for every stage
        kept = set(range(len(current))) if allowed is None else set(allowed)
        for rule, value in self.stages():
            kept &= set(rule.ids(current, value, order, allowed))    # a filter only ever removes ids
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


# --------------------------------------------------------------------------- a batch [B, V]


def filter_batched(rule: SamplingRule, probs: torch.Tensor,
                   logits: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``SamplingRule.filter`` for a batch: ``(keep-mask [B, V], renormalised float64 [B, V])``.
    With ``logits`` (those ``probs`` came from) every stage ranks by logit and a −inf logit is
    never kept, as in ``SamplingRule.filter(probs, logits=...)``."""
    current = check_prob_rows(probs).double()
    return _all_columns(*_filter(rule, current, *key_and_allowed(current, logits)), current.shape[-1])


def _filter(rule: SamplingRule, current: torch.Tensor, key: torch.Tensor, allowed, total=None):
    """Every stage of ``rule`` on ``current`` [B, V] float64 (divided by ``total`` [B, 1] first
    when given), each stage followed by the renormalising, as :meth:`SamplingRule.filter` does.
    After a first top-k stage only its k candidates can be kept, so every stage runs on those
    k columns: the same values (a sum that skips zeros is the same sum), the same decisions.
    Returns (the columns' ids [B, k] or None for all V, keep-mask, renormalised values)."""
    stages = rule.stages()
    (B, V), ids = current.shape, None
    if stages and stages[0][0] is TOP_K and stages[0][1] < V:
        k = stages[0][1]
        ids = torch.from_numpy(np.nonzero(first_k(key, k).numpy())[1].reshape(B, k))   # [B, k], increasing
        current, key = current.gather(1, ids), key.gather(1, ids)
        allowed = None if allowed is None else allowed.gather(1, ids)
    if total is not None:
        current = current / total
    mask = torch.ones_like(current, dtype=torch.bool) if allowed is None else allowed.clone()
    for stage, value in stages:
        mask &= stage.mask(current, value, key, allowed)
        current = renormalize_rows(current, mask)
    return ids, mask, current


def _all_columns(ids, mask, current, V: int):
    """(keep-mask [B, V], final float64 [B, V]) from :func:`_filter`'s columns."""
    if ids is None:
        return mask, current
    return (torch.zeros(len(ids), V, dtype=torch.bool).scatter_(1, ids, mask),
            torch.zeros(len(ids), V, dtype=torch.float64).scatter_(1, ids, current))


def _weights(rule: SamplingRule, z: torch.Tensor):
    """Stage 1 for checked logits [B, V]: (float64 weights [B, V], their row sums [B, 1] or None).
    weights / sums is ``TEMPERATURE.probs_batched`` (``softmax64_batched``) bit for bit:
    exp((z − max z) / τ), added left to right; greedy: the one-hot row at the argmax."""
    if rule.greedy:
        return torch.nn.functional.one_hot(torch.argmax(z, dim=-1), z.shape[-1]).double(), None
    t = check_temperature(rule.temperature)
    w = z.to(torch.float64, copy=True)      # a NEW buffer: ``z.double()`` IS a float64 caller's tensor
    w -= w.amax(dim=-1, keepdim=True)
    if t != 1.0:
        w /= t
    w.exp_()
    return w, torch.cumsum(w, dim=-1)[:, -1:]


def apply_batched(rule: SamplingRule, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``SamplingRule.apply`` for a batch of logits [B, V]: ``(keep-mask [B, V], final float64
    [B, V])``, the float64 softmax at the rule's temperature (or a greedy one-hot), then the
    filters ranking by the logits. Keeps, row for row, the ids ``rule.apply(logits[b]).kept``
    keeps — also where a float32 softmax would underflow."""
    return _all_columns(*_filter_logits(rule, logits), logits.shape[-1])


def _filter_logits(rule: SamplingRule, logits: torch.Tensor):
    z, allowed = check_batch(logits)
    weights, total = _weights(rule, z)
    return _filter(rule, weights, z, allowed, total)


def sample_batched(rule: SamplingRule, logits: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One id per row of logits [B, V], drawn with ``torch.multinomial`` from the distribution
    ``apply_batched(rule, logits)`` leaves (its ``final`` rows): [B] ids. With a top-k stage
    first the draw is among the k candidates only (the others have probability 0)."""
    check_generator(generator)
    ids, _, final = _filter_logits(rule, logits)
    drawn = torch.multinomial(final, 1, generator=generator)                  # [B, 1]
    return (drawn if ids is None else ids.gather(1, drawn)).squeeze(-1)
