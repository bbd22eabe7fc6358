"""What every exercise checker shares: the result object, the "not attempted yet" rule, hints.

Used by the exercise checkers of notebooks 01–07 (``course_lib.exercises.ch0*``). A checker
runs the learner's function on the article's example (it must reproduce a registry figure at
the article's precision, ``figures.registry.figure_problem``), then on seeded random and edge
cases against the course's own code. It stops at the first failure with ONE hint and never
shows the expected numbers::

    result = check_make_causal_mask(causal_mask)    # a Result; a notebook shows its one line
    result.passed, result.name, result.message, result.details

A function whose body still raises ``NotImplementedError`` (or returns ``...``) is "not
attempted yet": a friendly line, no traceback.
"""
from __future__ import annotations

import textwrap
import traceback
from functools import lru_cache
from dataclasses import dataclass, field

import torch

from ..figures.registry import figure_problem

NOT_ATTEMPTED = "not attempted yet: write the function above, then run both cells"
WIDTH = 88                                        # a notebook cell's width: longer lines wrap


def _lines(head: str, items) -> str:
    """``head`` then one indented line per item, each wrapped at :data:`WIDTH`."""
    wrapped = [textwrap.fill(head, WIDTH, subsequent_indent="  ")]
    wrapped += [textwrap.fill(item, WIDTH, initial_indent="  · ", subsequent_indent="    ") for item in items]
    return "\n".join(wrapped)


@dataclass
class Result:
    """What a checker found: ``passed``, the exercise ``name``, the ``message`` a notebook shows
    (✓ and one line per thing proven; ✗ and one hint; or "not attempted yet"), ``details`` (what
    was proven) and ``hint``. Lines are wrapped at 88 columns."""

    name: str
    passed: bool
    message: str
    details: list[str] = field(default_factory=list)
    attempted: bool = True
    hint: str | None = None

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return self.message

    __repr__ = __str__

    def _ipython_display_(self) -> None:          # a notebook cell prints the line, no Out[n]
        print(self.message)


class Fail(Exception):
    """Raised inside a checker: the learner's function failed, with this hint."""


class NotAttempted(Exception):
    """The learner's function is still the stub."""


class Check:
    """One run of a checker: calls the learner's function and collects what it proved."""

    def __init__(self, name: str, fn):
        self.name, self.fn, self.proven = name, fn, []

    def call(self, *args, case: str = "", errors=(), **kwargs):
        """The learner's function on one case; a stub raises NotAttempted, an exception or a
        missing ``return`` becomes a hint naming the case. ``errors``: (text in the exception's
        message, hint) pairs for the usual mistakes."""
        try:
            out = self.fn(*args, **kwargs)
        except NotImplementedError as error:
            stub = traceback.extract_tb(error.__traceback__)[-1].name
            if stub != getattr(self.fn, "__name__", stub):      # a stub the function calls
                raise Fail(f"your function calls {stub}, which is not written yet: do that exercise first") from None
            raise NotAttempted from None
        except Fail:
            raise
        except Exception as error:                  # the learner's bug: one line, no traceback
            for text, hint in errors:
                if text in str(error):
                    raise Fail(hint) from None
            where = traceback.extract_tb(error.__traceback__)[-1]
            raise Fail(f"on {case or 'the article example'} your function raised {type(error).__name__}: "
                       f"{str(error).splitlines()[0] if str(error) else ''} (line {where.lineno})") from None
        if out is Ellipsis:
            raise NotAttempted
        if out is None:
            raise Fail(f"your function returned None on {case or 'the article example'}: did you forget `return`?")
        return out

    def proved(self, text: str) -> None:
        self.proven.append(text)

    def figure(self, figure_id: str, name: str, value, hint: str) -> None:
        """``value`` must reproduce the registry's figure at the article's precision."""
        if isinstance(value, torch.Tensor) and not torch.isfinite(value.double()).all():
            raise Fail(f"{hint} (your result has NaN or inf)")
        if figure_problem(figure_id, name, value):
            raise Fail(hint)


def tensor(out, case: str, shape=None, dtype=None) -> torch.Tensor:
    """``out`` must be a tensor of ``shape`` (and ``dtype``), else a hint saying what came back."""
    if not isinstance(out, torch.Tensor):
        raise Fail(f"on {case} your function returned a {type(out).__name__}; return a torch tensor")
    if shape is not None and tuple(out.shape) != tuple(shape):
        raise Fail(f"on {case} expected shape {tuple(shape)}, got {tuple(out.shape)}")
    if dtype is not None and out.dtype != dtype:
        raise Fail(f"on {case} expected dtype {dtype}, got {out.dtype}")
    return out


def close(got: torch.Tensor, want: torch.Tensor, atol: float = 1e-9) -> bool:
    """Same shape, same places of NaN/inf, finite entries within ``atol``."""
    got, want = got.double(), want.double()
    if got.shape != want.shape:
        return False
    return bool(torch.allclose(got, want, rtol=0, atol=atol, equal_nan=True))


def run(name: str, fn, body) -> Result:
    """Run ``body(check)`` on the learner's ``fn`` and turn the outcome into a Result."""
    if not callable(fn):
        return Result(name, False, f"✗ {name}: pass your function itself, e.g. check_{name}({name})",
                      hint="pass the function, not its result")
    check = Check(name, fn)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)       # as notebooks 02–06 do: the toys compute in float64
    try:
        body(check)
    except NotAttempted:
        return Result(name, False, _lines(f"· {name}: {NOT_ATTEMPTED}", []), attempted=False)
    except Fail as fail:
        hint = str(fail)
        return Result(name, False, _lines(f"✗ {name}: {hint}", []), details=list(check.proven), hint=hint)
    finally:
        torch.set_default_dtype(default)
    return Result(name, True, _lines(f"✓ {name}", check.proven), details=list(check.proven))


def seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# The toy models' runs, loaded once per kernel; checkers pass clones to the learner's function.
@lru_cache(maxsize=None)
def _five_token():
    from ..toys.five_token import FIVE_TOKEN
    model = FIVE_TOKEN.load()
    logits, trace = FIVE_TOKEN.run(model)
    return model, logits, trace


@lru_cache(maxsize=None)
def _lab(ids: tuple):
    from ..toys.lab import LAB
    model = LAB.load()
    logits, trace = LAB.run(model, list(ids))
    return model, logits, trace


def toy():
    """The five-token model on a|b|a: (model, logits (1, 3, 5), trace). Do not modify them."""
    return _five_token()


def lab(ids=None):
    """The lab model on "the cat climbed the roof" (or ``ids``): (model, logits, trace)."""
    from ..toys.lab import LAB_PROMPT_IDS, ROOF
    return _lab(tuple(LAB_PROMPT_IDS + [ROOF] if ids is None else ids))
