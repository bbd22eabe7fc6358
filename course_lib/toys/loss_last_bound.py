"""How high can the last position's loss go? A proof that no weights print the article's 0.370652.

Taught in notebook 06 ("How tightly the article pins the weights"). Printed by
``python -m course_lib.toys.loss_last_bound`` and by the five-token derivation
(``python -m course_lib.toys.derive_five_token``); ``tests/test_loss_last_bound.py`` checks it,
and the registry's reason for accepting ``interface.toy.loss_last`` within 1e-6 quotes it.

The article prints the last position's loss as −ln 0.690284… ≈ 0.370652. Six decimals show
0.370652 only if L = −ln p[1] = logsumexp(z) − z₁ is at least 0.3706515 (and its float32
rounding shows 0.370652 only from 0.3706514984 up). The five-token model's weights are the
course's own, except where a printed figure pins them; at the last position four figures do:

* h₂, printed as float32 to 10 decimals: each entry may be any exact value that rounds to that
  float32, an interval half a float32 step either side (6e-8 or 1.2e-7 wide);
* lm_head's row for b, [1, 0, 1, 0], and its bias 0.1 (the article's z[1] equation), so
  z₁ = h₂[0] + h₂[2] + 0.1;
* the five logits, printed as float32 reprs: each inside its own float32 interval;
* LN_f's scale 1 and offset 0: h₂ has a mean of exactly 0.

L rises with every logit but z₁ (∂L/∂z_j = p_j > 0) and falls with z₁ (∂L/∂z₁ = p₁ − 1 < 0).

**Any weights** (:func:`bound_any_weights`): z₁ is smallest with h₂[0] and h₂[2] at the bottom
of their intervals, and every other logit can at best sit at the top of its own.

**The course's weights** (:func:`bound_course_weights`): its lm_head, read off the article,
makes z = [h₂[0], h₂[0] + h₂[2] + 0.1, h₂[1], −h₂[0] − 0.2, h₂[3]], a function of h₂ alone. L is convex in h₂
(log-sum-exp of linear functions, minus a linear one) and the allowed h₂ (each entry and each
logit inside its interval, mean 0) form a polytope, so L is largest at a corner of it. Every
corner is three interval ends plus the mean of 0; all of them are tried.

Both bounds take the intervals to their very ends. The margins the tests require
(``margins.required_margin``) only narrow them, so with margins the bounds are lower still
(``margin=True``; the derivation prints both).

Everything is exact: an interval's ends lie halfway between two float32 numbers (binary
fractions), the corners are solved in :class:`~fractions.Fraction` arithmetic and L is evaluated
with 50-digit decimals. The digits printed here are the same on every CPU and need no margin.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction

from ..figures import margins
from ..figures.registry import expected, figure
from .five_token import FIVE_TOKEN

DIGITS = 50          # decimal digits for exp and ln: far beyond the 1e-9 the bound is decided by
H2_NAMES = ["h₂[0]", "h₂[1]", "h₂[2]", "h₂[3]"]
LOGIT_NAMES = ["z₀", "z₁", "z₂", "z₃", "z₄"]
TARGET = 1           # the last position's target: b (id 1)


@dataclass(frozen=True)
class Interval:
    """The exact values a printed float32 number stands for: [low, high]."""
    name: str
    printed: str
    low: Fraction
    high: Fraction

    @property
    def width(self) -> Fraction:
        return self.high - self.low

    def where(self, x: Fraction) -> float:
        """How far up the interval ``x`` sits: 0.0 at the bottom, 1.0 at the top."""
        return float((x - self.low) / self.width)


@dataclass(frozen=True)
class Bound:
    """The largest L some weights allow, the point that reaches it, and what pins it there."""
    loss: Decimal
    logits: list[Fraction]
    h2: list[Fraction | None]                 # None: this h₂ entry does not matter here
    binding: list[str] = field(default_factory=list)


def float32_interval(name: str, value: float, decimals: int | None, margin: bool = False) -> Interval:
    """The values whose float32 rounding prints ``value`` with ``decimals`` (None: full repr);
    ``margin``: without the margin the tests require at each end (``margins.required_margin``)."""
    low, high = margins.float32_interval(value, decimals)      # float64 midpoints: exact
    printed = repr(value) if decimals is None else f"{value:.{decimals}f}"
    keep = Fraction(margins.required_margin(value)) if margin else 0
    return Interval(name, printed, Fraction(low) + keep, Fraction(high) - keep)


def h2_intervals(margin: bool = False) -> list[Interval]:
    spec = figure("interface.toy.h2")["values"]["h2"]
    return [float32_interval(n, x, spec["decimals"], margin) for n, x in zip(H2_NAMES, spec["expected"])]


def logit_intervals(margin: bool = False) -> list[Interval]:
    spec = figure("interface.toy.logits")["values"]["logits"]
    return [float32_interval(n, x, spec["decimals"], margin) for n, x in zip(LOGIT_NAMES, spec["expected"])]


def thresholds() -> tuple[Decimal, Decimal]:
    """(smallest L that prints the article's 0.370652, smallest L whose float32 prints it)."""
    spec = figure("interface.toy.loss_last")["values"]["loss"]
    value, decimals = spec["expected"], spec["decimals"]
    six = Decimal(repr(value)) - Decimal(1).scaleb(-decimals) / 2
    low32, _ = margins.float32_interval(value, decimals)
    return six, Decimal(low32)


def to_decimal(x: Fraction) -> Decimal:
    return Decimal(x.numerator) / Decimal(x.denominator)


def loss_of(logits: list[Fraction]) -> Decimal:
    """L = ln(Σ exp z_j) − z₁, with 50-digit decimals."""
    with localcontext() as context:
        context.prec = DIGITS
        z = [to_decimal(x) for x in logits]
        return sum(x.exp() for x in z).ln() - z[TARGET]


def bound_any_weights(h2=None, logits=None) -> Bound:
    """The largest L of any weights whose h₂ and logits print the article's (intervals given
    or read from the registry) and whose lm_head row b and bias are the article's."""
    h2, logits = h2 or h2_intervals(), logits or logit_intervals()
    row = [Fraction(w) for w in expected("interface.toy.z1", "head_row_b")]
    bias = Fraction(expected("interface.toy.z1", "bias_b"))
    # z₁ = row·h₂ + bias is smallest with each h₂ entry at the end its weight prefers
    ends = [None if w == 0 else (h.low if w > 0 else h.high) for w, h in zip(row, h2)]
    z1 = max(logits[TARGET].low, bias + sum(w * e for w, e in zip(row, ends) if e is not None))
    point = [z1 if j == TARGET else zj.high for j, zj in enumerate(logits)]
    binding = [f"{zj.name} at the top" for j, zj in enumerate(logits) if j != TARGET]
    if z1 == logits[TARGET].low:
        binding.append(f"{logits[TARGET].name} at the bottom")
    else:
        binding += [f"{h.name} at the {'bottom' if w > 0 else 'top'}" for w, h in zip(row, h2) if w != 0]
    return Bound(loss_of(point), point, ends, binding)


def solve(rows: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction] | None:
    """The exact solution of a square linear system, or None if it is singular."""
    m = [r[:] + [b] for r, b in zip(rows, rhs)]
    n = len(m)
    for col in range(n):
        pivot = next((r for r in range(col, n) if m[r][col] != 0), None)
        if pivot is None:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col and m[r][col] != 0:
                f = m[r][col] / m[col][col]
                m[r] = [a - f * b for a, b in zip(m[r], m[col])]
    return [m[i][n] / m[i][i] for i in range(n)]


def course_lm_head() -> tuple[list[list[Fraction]], list[Fraction]]:
    """The shipped lm_head (data/five_token_model.json), as the exact values the model uses."""
    tables = FIVE_TOKEN.read_weights()["tables"]
    weight = [[Fraction(float(w)) for w in row] for row in tables["lm_head.weight"]]
    return weight, [Fraction(float(b)) for b in tables["lm_head.bias"]]


def bound_course_weights(h2=None, logits=None, lm_head=None) -> Bound:
    """The largest L of the course's model: h₂ free inside its intervals with a mean of 0,
    logits = lm_head(h₂) inside theirs. L is convex, so the best point is a corner."""
    h2, logits = h2 or h2_intervals(), logits or logit_intervals()
    weight, bias = lm_head or course_lm_head()
    unit = [[Fraction(int(i == k)) for k in range(4)] for i in range(4)]
    # each constraint: low ≤ a·h₂ + c ≤ high
    limits = [(a, Fraction(0), iv) for a, iv in zip(unit, h2)] + list(zip(weight, bias, logits))
    planes = [(a, end - c, f"{iv.name} at the {side}")
              for a, c, iv in limits for end, side in ((iv.low, "bottom"), (iv.high, "top"))]
    mean_zero = [Fraction(1)] * 4

    def inside(h):
        return all(iv.low <= sum(x * y for x, y in zip(a, h)) + c <= iv.high for a, c, iv in limits)

    best = None
    for three in itertools.combinations(planes, 3):
        h = solve([p[0] for p in three] + [mean_zero], [p[1] for p in three] + [Fraction(0)])
        if h is None or not inside(h):
            continue
        z = [sum(w * x for w, x in zip(row, h)) + b for row, b in zip(weight, bias)]
        loss = loss_of(z)
        if best is None or loss > best.loss:
            best = Bound(loss, z, h)
    if best is None:
        raise RuntimeError("no h₂ with a mean of 0 prints the article's h₂ and logits")
    active = [name for a, value, name in planes if sum(x * y for x, y in zip(a, best.h2)) == value]
    return Bound(best.loss, best.logits, best.h2, ["h₂'s mean of 0"] + active)


@dataclass(frozen=True)
class Certificate:
    """Both bounds, the thresholds they are compared with, and the intervals behind them."""
    six_decimals: Decimal       # smallest L that prints 0.370652
    float32: Decimal            # smallest L whose float32 prints 0.370652
    any_weights: Bound
    course: Bound
    h2: list[Interval]
    logits: list[Interval]

    @property
    def reachable(self) -> bool:
        return self.any_weights.loss >= self.float32 or self.course.loss >= self.float32

    def rows(self):
        """(interval, where the any-weights best point sits, where the course's sits) per number;
        a position is 0.0 at the bottom, 1.0 at the top, None where the number does not matter."""
        for i, iv in enumerate(self.h2):
            a = self.any_weights.h2[i]
            yield iv, None if a is None else iv.where(a), iv.where(self.course.h2[i])
        for j, iv in enumerate(self.logits):
            yield iv, iv.where(self.any_weights.logits[j]), iv.where(self.course.logits[j])


def certificate() -> Certificate:
    six, low32 = thresholds()
    h2, logits = h2_intervals(), logit_intervals()
    return Certificate(six, low32, bound_any_weights(h2, logits), bound_course_weights(h2, logits), h2, logits)


def certificate_text(cert: Certificate | None = None) -> str:
    """The certificate as the derivation prints it (English; notebook 06 prints its own table)."""
    cert = cert or certificate()
    lines = ["interface.toy.loss_last: how high can L = -ln p[1] go? (exact arithmetic)",
             f"  6 decimals print 0.370652 from L = {cert.six_decimals}; its float32 does from "
             f"{cert.float32:.10f}",
             f"  {'number':8s}{'printed':>20s}  {'width':>9s}  best point: any weights / course"]
    for iv, anyw, course in cert.rows():
        shown = "-" if anyw is None else f"{anyw:.0%}"
        lines.append(f"  {iv.name:8s}{iv.printed:>20s}  {float(iv.width):9.2e}  {shown:>23s} / {course:.0%}")
    for label, bound in (("any weights", cert.any_weights), ("the course's lm_head", cert.course)):
        lines += [f"  largest L, {label}: {bound.loss:.10f}", f"    binding: {', '.join(bound.binding)}"]
    h2, logits = h2_intervals(margin=True), logit_intervals(margin=True)
    lines += ["  with the margins the tests require (1e-9 of each value) the bounds are lower still:",
              f"    any weights {bound_any_weights(h2, logits).loss:.10f}, "
              f"the course's lm_head {bound_course_weights(h2, logits).loss:.10f}"]
    verdict = ("reachable" if cert.reachable else
               "out of reach: no weights print 0.370652, so the registry accepts it within 1e-06")
    return "\n".join(lines + [f"  0.370652 is {verdict}"])


def main() -> None:
    print(certificate_text())


if __name__ == "__main__":
    main()
