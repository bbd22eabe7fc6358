"""Token ids are integers: the one check every boundary that takes ids runs.

Taught with notebook 01 (an id is an integer, a row index). ``decode``, the streaming decoder,
the toy vocabularies and ``decoding.generate`` all call :func:`check_id` / :func:`check_ids`,
so ``decode([1.5])`` or ``decode(['40'])`` raises instead of silently becoming id 1 or 40.
Every message starts with the argument's name, then what was given, then what is expected.
"""
from __future__ import annotations

from collections.abc import Mapping, Set
from numbers import Integral


def check_id(token_id, name: str = "token_id") -> int:
    """One id as a Python int. Rejects bool, float, str and float tensors/arrays."""
    if hasattr(token_id, "dtype") and getattr(token_id, "ndim", 0) == 0:   # 0-d tensor / numpy scalar
        kind = str(token_id.dtype)
        if "int" not in kind:
            raise ValueError(f"{name} must be an integer id, got {token_id!r} (dtype {kind})")
        return int(token_id)
    if isinstance(token_id, bool) or not isinstance(token_id, Integral):
        raise ValueError(f"{name} must be an integer id, got {token_id!r} "
                         f"({type(token_id).__name__}); ids are integers such as 40")
    return int(token_id)


def check_ids(ids, name: str = "ids", ordered: bool = True) -> list[int]:
    """A sequence of ids (list, tuple, 1-D integer tensor/array) as a list of Python ints.
    A dict or a set is refused (no order to decode in), unless ``ordered=False`` allows a set
    (a set of kept ids, where order does not matter)."""
    if isinstance(ids, (str, bytes)):
        raise ValueError(f"{name} must be a sequence of integer ids, got the text {ids!r} "
                         f"(encode it first)")
    if hasattr(ids, "dtype"):                          # torch tensor or numpy array
        kind = str(ids.dtype)
        if "int" not in kind:
            raise ValueError(f"{name} must hold integer ids, got a {kind} tensor/array")
        if getattr(ids, "ndim", 1) != 1:
            raise ValueError(f"{name} must be one sequence (1-D), got shape {tuple(ids.shape)}")
        return [int(i) for i in ids.tolist()]
    if isinstance(ids, Mapping) or (ordered and isinstance(ids, Set)):   # a dict's keys, a set: no order
        raise ValueError(f"{name} must be a sequence of integer ids (a list, tuple or 1-D tensor), got a "
                         f"{type(ids).__name__}, which has no order of ids")
    if isinstance(ids, Integral):
        raise ValueError(f"{name} must be a sequence of ids, got the single id {ids!r} (use [{ids!r}])")
    try:
        items = list(ids)
    except TypeError:
        raise ValueError(f"{name} must be a sequence of integer ids, got {ids!r}") from None
    return [check_id(i, f"{name}[{n}]") for n, i in enumerate(items)]
