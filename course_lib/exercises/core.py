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

import contextlib
import math
import re
import textwrap
import unicodedata
import traceback
from functools import lru_cache
from dataclasses import dataclass, field

import torch

from ..data import ChecksumError, DamagedFileError, MissingFileError
from ..figures.registry import figure_problem
from ..ui.language import text
from .messages import say
from ..ui.strings import EN
from . import guard

NOT_ATTEMPTED = EN["exercise.not_attempted"]      # the English line; a notebook shows text(...)
WIDTH = 88                                        # a notebook cell's width: longer lines wrap


def _lines(head: str, items) -> str:
    """``head`` then one indented line per item, each wrapped at :data:`WIDTH` columns."""
    wrapped = [_fill(head, "", "  ")]
    wrapped += [_fill(item, "  · ", "    ") for item in items]
    return "\n".join(wrapped)


# what a line may break between: a run of spaces, or a character a notebook draws two columns
# wide (CJK and full-width punctuation), or a run of other characters (a word, a number, a figure
# id); Chinese line breaking keeps a closing mark (），。：) on the line before and an opening
# mark (（「) with what follows, so each piece carries its marks
_WIDE = r"\u1100-\u115f\u2e80-\u303e\u3040-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6"
_OPENING, _CLOSING = "（「『【〔《〈", "）」』】〕》〉，。、；：！？"
_PIECES = re.compile(rf"\s+|[{_OPENING}]*(?:[{_WIDE}]|[^\s{_WIDE}]+)[{_CLOSING}]*")


def _columns(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _fill(text: str, first: str, rest: str) -> str:
    """``text`` wrapped at :data:`WIDTH` columns: textwrap for a line of narrow characters (an
    English hint), else a break between any two wide characters or at a space (a Chinese hint)."""
    if _columns(text) == len(text):
        return textwrap.fill(text, WIDTH, initial_indent=first, subsequent_indent=rest)
    lines, line = [], first
    for piece in _PIECES.findall(text):
        if _columns(line) + _columns(piece) > WIDTH and line.strip() and line not in (first, rest):
            lines.append(line.rstrip())
            line = rest
            if piece.isspace():
                continue
        line += piece
    lines.append(line.rstrip())
    return "\n".join(lines)


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
    course_problem: bool = False       # a file of the course is missing or damaged, not the learner's code

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

    def __init__(self, name: str, fn, seconds: float | None = None):
        self.name, self.fn, self.proven = name, fn, []
        self.seconds = getattr(fn, "seconds", guard.CALL_SECONDS) if seconds is None else seconds
        self.case, self.last = say('the article example'), None

    def call(self, *args, case: str = "", errors=(), **kwargs):
        """The learner's function on one case, under a time limit (``guard.time_limit``), with
        its result rebuilt from plain types (``guard.plain``). A stub raises NotAttempted; an
        exception, a missing ``return``, a time-out, an interrupt or a call of the course's own
        answer becomes a hint naming the case. ``errors``: (text in the exception's message,
        hint) pairs for the usual mistakes."""
        case = case or say('the article example')
        self.case = case
        remote = getattr(self.fn, "remote", False)         # the grader's proxy times and watches itself
        try:
            with guard.watch_calls(self.name) if not remote else contextlib.nullcontext() as seen, \
                    guard.time_limit(self.seconds) if not remote else contextlib.nullcontext():
                out = self.fn(*args, **kwargs)
            if remote:
                out, forbidden = out
            else:
                out, forbidden = guard.plain(out), seen.first
        except guard.TimeLimit:
            raise Fail(say('on {case} your function did not return within {seconds:g} s — a loop that never ends?', case=case, seconds=self.seconds)) from None
        except guard.Ended as ended:
            raise Fail(f"on {case} {ended}") from None
        except KeyboardInterrupt:
            raise Fail(say('interrupted while your function ran on {case} — a loop that never ends?', case=case)) from None
        except SystemExit:
            raise Fail(say('on {case} your function called exit(): return a value instead', case=case)) from None
        except NotImplementedError as error:
            stub = _where(error)[0]
            if stub != getattr(self.fn, "__name__", stub):      # a stub the function calls
                raise Fail(say('your function calls {stub}, which is not written yet: do that exercise first', stub=stub)) from None
            raise NotAttempted from None
        except (Fail, NotAttempted):
            raise
        except Exception as error:                  # the learner's bug: one line, no traceback
            message = _first_line(error)
            for text, hint in errors:
                if text in message:
                    raise Fail(hint) from None
            raise Fail(say('on {case} your function raised {error_type}: {message} (line {line})', case=case, error_type=type(error).__name__, message=message, line=_where(error)[1])) from None
        if forbidden:
            owner, named, function = forbidden.partition("'s ")      # "torch's softmax", in the language
            forbidden = say("{owner}'s {function}", owner=owner, function=function) if named else forbidden
            raise Fail(say('your function calls {forbidden}, the answer this exercise asks you to write: write it from scratch', forbidden=forbidden)) from None
        if isinstance(out, guard.Opaque) and out.kind == "ellipsis":
            raise NotAttempted
        if out is None:
            raise Fail(say('your function returned None on {case}: did you forget `return`?', case=case))
        self.last = out
        return out

    def proved(self, text: str) -> None:
        self.proven.append(text)

    def figure(self, figure_id: str, name: str, value, hint: str) -> None:
        """``value`` must reproduce the registry's figure at the article's precision."""
        if isinstance(value, torch.Tensor) and (value.is_complex() or not torch.isfinite(value.double()).all()):
            raise Fail(say('{hint} (your result has NaN or inf)', hint=hint))
        if figure_problem(figure_id, name, value):
            raise Fail(hint)


def tensor(out, case: str, shape=None, dtype=None) -> torch.Tensor:
    """``out`` must be a tensor of ``shape`` (and ``dtype``), else a hint saying what came back."""
    if not isinstance(out, torch.Tensor):
        raise Fail(say('on {case} your function returned {describe}; return a torch tensor', case=case, describe=describe(out)))
    if shape is not None and tuple(out.shape) != tuple(shape):
        raise Fail(say('on {case} expected shape {shape}, got {got}', case=case, shape=tuple(shape), got=tuple(out.shape)))
    if dtype is not None and out.dtype != dtype:
        raise Fail(say('on {case} expected dtype {dtype}, got {dtype2}', case=case, dtype=dtype, dtype2=out.dtype))
    return out


def close(got: torch.Tensor, want: torch.Tensor, atol: float = 1e-9) -> bool:
    """Same shape, same places of NaN/inf, finite entries within ``atol``."""
    got, want = got.double(), want.double()
    if got.shape != want.shape:
        return False
    return bool(torch.allclose(got, want, rtol=0, atol=atol, equal_nan=True))


def describe(value) -> str:
    """What came back, in a few words and the notebook's language, never the values: "a list of
    3 items", "a tensor of shape (2, 3) and dtype torch.int64"."""
    if isinstance(value, torch.Tensor):
        return say('a tensor of shape {shape} and dtype {dtype}', shape=tuple(value.shape), dtype=value.dtype)
    if isinstance(value, (list, tuple, dict)):
        return say('a {kind} of {count} items', kind=type(value).__name__, count=len(value))
    if isinstance(value, float) and not math.isfinite(value):
        return say('the float {value}', value=value)
    return say('a {kind}', kind=type(value).__name__)


def _first_line(error: BaseException) -> str:
    try:
        lines = str(error).splitlines()
    except Exception:                                           # a __str__ that raises
        return say('(its message could not be read)')
    return lines[0][:200] if lines else ""


def _where(error: BaseException) -> tuple[str, int | str]:
    """(function, line) where ``error`` was raised: the grader's proxy sets ``where`` itself."""
    if getattr(error, "where", None):
        return error.where
    frames = traceback.extract_tb(error.__traceback__)
    return (frames[-1].name, frames[-1].lineno) if frames else ("?", "?")


COURSE_DATA_ERRORS = (MissingFileError, ChecksumError, DamagedFileError)


def _course_problem(name: str, error: BaseException) -> Result:
    """A file of the course is missing or damaged: not the learner's mistake, and said so."""
    hint = (say('the check could not run: a file of the course is missing or damaged, not your code ({error_type}: {error}); reinstall or ask your instructor', error_type=type(error).__name__, error=_first_line(error)))
    return Result(name, False, _lines(f"✗ {name}: {hint}", []), hint=hint, course_problem=True)


def run(name: str, fn, body, seconds: float | None = None) -> Result:
    """Run ``body(check)`` on the learner's ``fn`` and turn the outcome into a Result. Never
    raises: whatever the function returns, a value the check cannot use becomes a hint; the
    check runs alone and leaves no global state behind (``guard.isolated``)."""
    if not callable(fn):
        return Result(name, False, f"✗ {name}: " + text("exercise.pass_function", name=name),
                      hint=say('pass the function, not its result'))
    check = Check(name, fn, seconds)
    try:
        with guard.isolated():
            try:
                body(check)
            except COURSE_DATA_ERRORS as error:
                return _course_problem(name, error)
            except (Fail, NotAttempted, KeyboardInterrupt):
                raise
            except Exception as error:              # the check could not read what came back
                raise Fail(say('on {case} your function returned {describe}, which the check could not use ({error_type}): return what the docstring asks for', case=check.case, describe=describe(check.last), error_type=type(error).__name__)) from None
    except NotAttempted:
        return Result(name, False, _lines(f"· {name}: " + text("exercise.not_attempted"), []), attempted=False)
    except Fail as fail:
        hint = str(fail)
        return Result(name, False, _lines(f"✗ {name}: {hint}", []), details=list(check.proven), hint=hint)
    except KeyboardInterrupt:
        hint = say('interrupted during the check of {case}', case=check.case)
        return Result(name, False, _lines(f"✗ {name}: {hint}", []), details=list(check.proven), hint=hint)
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
