"""The shape of ``data/figures.json``, checked once when the registry is loaded.

Used by ``registry.load_registry`` (every notebook's closing cell, 01–07); not taught. Without
it, an entry edited by hand (``"decimals": "four"``, no ``"values"``) failed later, deep inside
a comparison, with a line that named neither the file nor the entry. Here every field of every
entry is checked for presence and type, and the first problem raises ``DamagedFileError``:
``data/figures.json → "lab.top_p" → values → "kept" → "decimals": must be an integer ≥ 0 or
null, got 'four'``. The fields themselves are described in ``registry``'s docstring.
"""
from __future__ import annotations

import math
import re
from numbers import Integral, Real

from ..data import DamagedFileError, restore_hint

# "computer" names a function of one of these modules, nothing else (the registry must not be
# able to import and call an arbitrary module:function such as os:getcwd).
COMPUTER_MODULES = ("interface", "lab", "decoding", "gpt2")
COMPUTER = re.compile(r"course_lib\.figures\.(" + "|".join(COMPUTER_MODULES) + r"):([A-Za-z][A-Za-z0-9_]*)")


def _is_int(x) -> bool:
    return isinstance(x, Integral) and not isinstance(x, bool)


def _is_number(x) -> bool:
    return isinstance(x, Real) and not isinstance(x, bool) and math.isfinite(x)


def _is_expected(x) -> bool:
    """A number, a string, a boolean, or a (nested) list of those."""
    if isinstance(x, list):
        return all(map(_is_expected, x))
    return isinstance(x, (str, bool)) or _is_number(x)


def _text(x) -> bool:
    return isinstance(x, str) and x.strip() != ""


# field -> (required?, test, what it must be)
ENTRY_FIELDS = {
    "figure": (True, _text, "a non-empty string (the figure's description)"),
    "article": (True, None, "one of the articles"),                  # tested against ARTICLES
    "notebooks": (True, lambda x: isinstance(x, list) and x != [] and all(map(_text, x)),
                  "a non-empty list of notebook names"),
    "needs_pretrained_weights": (True, lambda x: isinstance(x, bool), "true or false"),
    "computer": (True, lambda x: isinstance(x, str) and COMPUTER.fullmatch(x) is not None,
                 "\"course_lib.figures.<module>:<function>\" with <module> one of "
                 + ", ".join(COMPUTER_MODULES)),
    "values": (True, lambda x: isinstance(x, dict) and x != {}, "a non-empty object of value name -> spec"),
    "weights_derived_from": (False, None, "one of the derived weight files"),  # tested against DERIVATIONS
}
VALUE_FIELDS = {
    "expected": (True, _is_expected, "a number, string, boolean or list of them"),
    "decimals": (False, lambda x: x is None or (_is_int(x) and 0 <= x <= 17), "an integer 0..17 or null"),
    "tol": (False, lambda x: _is_number(x) and x >= 0, "a finite number ≥ 0"),
    "tol_reason": (False, _text, "a non-empty string"),
    "float32": (False, lambda x: isinstance(x, bool), "true or false"),
    "truncated": (False, lambda x: isinstance(x, bool), "true or false"),
    "source": (False, lambda x: x == "course", '"course" (or absent: the article)'),
    "source_reason": (False, _text, "a non-empty string"),
    "note": (False, _text, "a non-empty string"),
}


def _check_fields(obj: dict, fields: dict, where: str, fail) -> None:
    for name in obj:
        if name not in fields:
            fail(f"{where} → \"{name}\": unknown field (known: {', '.join(fields)})")
    for name, (required, test, what) in fields.items():
        if name not in obj:
            if required:
                fail(f"{where} → \"{name}\": missing (it must be {what})")
        elif test is not None and not test(obj[name]):
            fail(f"{where} → \"{name}\": must be {what}, got {obj[name]!r}")


def check_registry(registry, path, articles, derivations) -> dict:
    """``registry`` (parsed JSON) if every entry has the fields it needs, with the right types;
    else :class:`DamagedFileError` naming ``path``, the entry, the value and the field."""
    def fail(problem):
        raise DamagedFileError(f"the figures registry {path} is not valid: {problem}; fix that field "
                               f"(the fields are described in course_lib/figures/registry.py) or "
                               f"{restore_hint(path)}")

    if not isinstance(registry, dict) or not registry:
        fail(f"it must be a non-empty JSON object of figure id -> entry, got {type(registry).__name__}")
    for figure_id, entry in registry.items():
        where = f"\"{figure_id}\""
        if not isinstance(entry, dict):
            fail(f"{where}: an entry must be a JSON object, got {entry!r}")
        _check_fields(entry, ENTRY_FIELDS, where, fail)
        if entry["article"] not in articles:
            fail(f"{where} → \"article\": must be one of {sorted(articles)}, got {entry['article']!r}")
        if "weights_derived_from" in entry and entry["weights_derived_from"] not in derivations:
            fail(f"{where} → \"weights_derived_from\": must be one of {sorted(derivations)}, "
                 f"got {entry['weights_derived_from']!r}")
        for name, spec in entry["values"].items():
            at = f"{where} → values → \"{name}\""
            if not isinstance(spec, dict):
                fail(f"{at}: must be an object with \"expected\", got {spec!r}")
            _check_fields(spec, VALUE_FIELDS, at, fail)
            if spec.get("truncated") and not _is_int(spec.get("decimals")):
                fail(f"{at} → \"decimals\": a truncated value needs an integer number of decimals")
    return registry


def check_computer_name(name: str, figure_id: str) -> tuple[str, str]:
    """(module, function) of a registry "computer", which must be a function of a module of
    ``course_lib.figures`` (also when the registry was replaced in memory, as the tests do)."""
    found = COMPUTER.fullmatch(name) if isinstance(name, str) else None
    if found is None:
        raise DamagedFileError(f"figure {figure_id!r}: the registry's computer {name!r} is not a function "
                               f"of course_lib.figures ({', '.join(COMPUTER_MODULES)}); only those "
                               f"compute figures")
    return f"course_lib.figures.{found.group(1)}", found.group(2)
