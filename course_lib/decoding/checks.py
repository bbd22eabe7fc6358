"""Input checks for the sampling rules: each names the argument it rejects.

Taught with notebook 07 (sampling); used by every module of ``course_lib.decoding``, per row
and batched. Every function returns the cleaned value or raises ``ValueError`` whose message
starts with the argument's name, so a learner who passes ``top_p=1.5`` reads "top_p must be in
(0, 1]".
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Set
from numbers import Integral, Real

import numpy as np
import torch


def as_float_list(values, name: str = "logits") -> list[float]:
    """A row (list, tuple or 1-D tensor/array) as a list of Python floats; rejects empty rows
    and anything that is not a number (a string is not three numbers, True is not 1.0)."""
    if isinstance(values, (str, bytes, Mapping, Set)):
        raise ValueError(f"{name} must be a row of numbers (a list, tuple or 1-D tensor), got "
                         f"{'the text ' + repr(values) if isinstance(values, (str, bytes)) else type(values).__name__}")
    if hasattr(values, "detach"):                     # torch.Tensor
        values = values.detach().cpu()
        if values.dim() != 1:
            raise ValueError(f"{name} must be one row (1-D), got shape {tuple(values.shape)}")
        if values.is_floating_point() and values.numel():
            return values.tolist()                    # already a new list of Python floats
        values = values.tolist()
    elif hasattr(values, "tolist"):                   # numpy array
        if isinstance(values, np.ndarray) and values.dtype.kind == "f" and values.ndim == 1 and values.size:
            return values.tolist()                    # already a new list of Python floats
        values = values.tolist()
    try:
        values = values if type(values) is list else list(values)   # read only: a new list is returned
    except TypeError:
        raise ValueError(f"{name} must be a row of numbers, got {type(values).__name__}") from None
    if not {float, int}.issuperset(map(type, values)):    # the usual row: checked at C speed
        bad = next((v for v in values if isinstance(v, bool) or not isinstance(v, Real)), None)
        if bad is not None:
            raise ValueError(f"{name} must hold numbers, got {bad!r} ({type(bad).__name__}) "
                            f"at position {values.index(bad)}")
    values = list(map(float, values))
    if not values:
        raise ValueError(f"{name} is empty: give at least one value")
    return values


def check_logits(logits, name: str = "logits") -> list[float]:
    """Logits as floats. Rule: non-empty, no NaN, no +inf, and at least one finite value
    (−inf is allowed: it is how a filter says "probability 0")."""
    z = as_float_list(logits, name)
    if all(map(math.isfinite, z)):                    # the usual case, checked at C speed
        return z
    if any(map(math.isnan, z)):
        raise ValueError(f"{name} contains NaN")
    if math.inf in z:
        raise ValueError(f"{name} contains +inf")
    if max(z) == -math.inf:
        raise ValueError(f"{name} are all -inf: no token could be chosen")
    return z


PROB_TOL = 1e-3
"""How far from 1 a row of probabilities may sum. A float32 softmax divides by a sum its kernel
adds in a few vector lanes: torch's rows of 50,257 sum within ~1e-6 of 1 on x86 but ~1.2e-5 on
ARM (NEON), and a sum of 50,257 float32 values in 4 lanes can be off by up to 50,257 / 4 × 2⁻²⁴
≈ 7.5e-4. Logits or unnormalised weights passed by mistake sum far from 1 (or hold negative
values), so this still catches them."""

_LOGITS_HINT = ("; if these are logits, turn them into probabilities first "
                "(softmax_with_temperature(logits), or SamplingRule(...).apply(logits))")


def check_probs(probs, name: str = "probs", tol: float = PROB_TOL) -> list[float]:
    """Probabilities as floats. Rule: non-empty, finite, each ≥ 0, sum within ``tol`` of 1."""
    p = as_float_list(probs, name)
    if not all(map(math.isfinite, p)):
        at = next(i for i, v in enumerate(p) if not math.isfinite(v))
        raise ValueError(f"{name} contains NaN or inf ({p[at]!r} at id {at}): "
                         f"probabilities must be finite, ≥ 0 and sum to 1")
    if min(p) < 0:
        raise ValueError(f"{name} contains a negative value ({min(p)!r} at id {p.index(min(p))}): "
                         f"probabilities must be ≥ 0 and sum to 1{_LOGITS_HINT}")
    total = math.fsum(p)
    if abs(total - 1.0) > tol:
        raise ValueError(f"{name} must sum to 1 (within {tol:g}), they sum to {total!r}{_LOGITS_HINT}")
    return p


def as_numpy(x: torch.Tensor) -> np.ndarray:
    """A float tensor's values as numpy: its own memory for float32 / float64 on the CPU (no
    copy); a float32 copy (exact) of float16 and bfloat16, which numpy cannot sort or lacks."""
    x = x.detach().cpu()
    return (x if x.dtype in (torch.float32, torch.float64) else x.float()).numpy()


def check_prob_rows(x: torch.Tensor, name: str = "probs", tol: float = PROB_TOL) -> torch.Tensor:
    """The rule of :func:`check_probs` for every row of a [B, V] float tensor, kept cheap: one
    minimum and one row sum (a NaN or inf makes the minimum or the sum fail)."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise ValueError(f"{name} must be a float tensor, got {type(x).__name__}"
                         f"{'' if not isinstance(x, torch.Tensor) else ' of dtype ' + str(x.dtype)}")
    if x.dim() != 2:
        raise ValueError(f"{name} must have shape [B, V], got {tuple(x.shape)}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {tuple(x.shape)}")
    # the usual batch: a minimum ≥ 0 (False for a NaN) and row sums without a float64 copy: their
    # rounding (< 1e-6 for 50,257 float32 values) cannot move a row from within tol / 2 of 1 to
    # beyond tol; only other rows go on to the float64 sums, which decide
    a = as_numpy(x)
    if a.min() >= 0 and np.abs(a.sum(axis=-1) - 1).max() <= tol / 2:
        return x
    if not bool(x.min() >= 0):                         # False for a negative value or a NaN
        if torch.isnan(x).any():
            raise ValueError(f"{name} contains NaN: probabilities must be finite, ≥ 0 and sum to 1")
        raise ValueError(f"{name} contains a negative value ({x.min().item()!r}): probabilities "
                         f"must be ≥ 0 and each row sum to 1{_LOGITS_HINT}")
    sums = x.sum(dim=-1, dtype=torch.float64)
    off = (sums - 1).abs()
    if not bool((off <= tol).all()):                   # also catches +inf (sum inf or NaN)
        row = int(torch.nan_to_num(off, nan=math.inf).argmax())
        raise ValueError(f"{name} row {row} must sum to 1 (within {tol:g}), it sums to "
                         f"{sums[row].item()!r}{_LOGITS_HINT}")
    return x


def check_temperature(temperature) -> float:
    """τ must be a finite real number > 0 (greedy is a separate rule, never τ = 0)."""
    if isinstance(temperature, bool) or not isinstance(temperature, Real):
        raise ValueError(f"temperature must be a number, got {temperature!r}")
    t = float(temperature)
    if not math.isfinite(t) or t <= 0:
        raise ValueError(f"temperature must be finite and > 0, got {temperature!r} "
                         f"(for greedy decoding use greedy_id, not temperature 0)")
    return t


def check_top_k(top_k) -> int:
    """k must be an integer ≥ 1 (k larger than the vocabulary keeps every id)."""
    if isinstance(top_k, bool) or not isinstance(top_k, Integral):
        raise ValueError(f"top_k must be an integer, got {top_k!r}")
    if top_k < 1:
        raise ValueError(f"top_k must be ≥ 1, got {top_k}")
    return int(top_k)


def check_top_p(top_p) -> float:
    """p must be a real number in (0, 1]."""
    if isinstance(top_p, bool) or not isinstance(top_p, Real) or not 0 < float(top_p) <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
    return float(top_p)


def check_min_p(min_p) -> float:
    """The min-p fraction must be a real number in [0, 1]."""
    if isinstance(min_p, bool) or not isinstance(min_p, Real) or not 0 <= float(min_p) <= 1:
        raise ValueError(f"min_p must be in [0, 1], got {min_p!r}")
    return float(min_p)


def check_u(u) -> float:
    """The uniform number of a draw must be a real number in [0, 1) (NaN is not)."""
    if hasattr(u, "item") and getattr(u, "ndim", 1) == 0:
        u = u.item()
    if isinstance(u, bool) or not isinstance(u, Real) or not 0 <= float(u) < 1:
        raise ValueError(f"u must be a number in [0, 1), got {u!r}")
    return float(u)


def check_rows(x: torch.Tensor, name: str = "logits") -> torch.Tensor:
    """Rule of :func:`check_logits` for every row of a [B, V] float tensor."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise ValueError(f"{name} must be a float tensor")
    if x.dim() != 2:
        raise ValueError(f"{name} must have shape [B, V], got {tuple(x.shape)}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {tuple(x.shape)}")
    if torch.isnan(x).any():
        raise ValueError(f"{name} contains NaN")
    if torch.isposinf(x).any():
        raise ValueError(f"{name} contains +inf")
    if torch.isneginf(x).all(dim=-1).any():
        raise ValueError(f"{name} has a row that is all -inf: no token could be chosen")
    return x
