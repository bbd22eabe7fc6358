"""Reading and writing the hand-set toy models' weight files (data/*_model.json).

Used by ``toys.spec.ToyModel`` (loading, notebooks 02–07) and by the two derivations
(``toys.derive_five_token``, ``toys.derive_lab``: writing). A weight file holds ``config`` (the
GPTConfig it was written for), ``notes`` (which entries are hand-set and which were solved)
and ``tables`` (parameter name -> nested lists, one matrix row per line).
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from ..data import DamagedFileError, read_json, restore_hint
from ..model import GPT, GPTConfig


def read_weight_file(path: Path, what: str) -> dict:
    """The weight file as a dict; ``what`` names the model in the error if it is missing."""
    return read_json(path, f"the weight file of the {what}")


def config_summary(config: GPTConfig) -> dict:
    """The config as a plain dict (stored in the weight file so a mismatch is caught)."""
    return dict(vars(config))


# The toy models compute in float64 and show float32 values (see ``course_lib.figures.margins`` and
# notebook 06): float64 rounded to float32 is the same on every IEEE CPU, while float32
# kernels differ in the last bits between x86 SIMD widths, ARM NEON/SVE and Apple's kernels.
TOY_DTYPE = torch.float64


def table_tensor(name: str, rows, where: str = "", fix: str = "") -> torch.Tensor:
    """One table (nested lists of numbers) as a float64 tensor; a ragged row, a value that is
    not a number or a non-finite value raises :class:`DamagedFileError` naming the table."""
    def fail(problem):
        raise DamagedFileError(f"table {name!r}{where} {problem}{fix}")
    try:
        tensor = torch.tensor(rows, dtype=TOY_DTYPE)
    except (TypeError, ValueError, RuntimeError) as e:
        fail(f"is not a table of numbers ({e})")
    if isinstance(rows, (list, tuple)) and _has_non_number(rows):
        fail("holds a value that is not a number")
    if not bool(torch.isfinite(tensor).all()):
        bad = tensor[~torch.isfinite(tensor)][0].item()
        fail(f"holds a non-finite value ({bad!r}); every weight must be a finite number")
    return tensor


def _has_non_number(rows) -> bool:
    """True if a leaf is not an int/float (True/False would otherwise become 1.0/0.0)."""
    for x in rows:
        if isinstance(x, (list, tuple)):
            if _has_non_number(x):
                return True
        elif isinstance(x, bool) or not isinstance(x, (int, float)):
            return True
    return False


def model_from_tables(config: GPTConfig, tables: dict, what: str = "model", path: Path | None = None) -> GPT:
    """A float64 GPT in eval mode whose parameters are exactly ``tables`` (name -> nested lists).

    Each decimal of the file is read as the nearest float64, as Python's ``float`` does.
    ``path``: the file the tables came from, named in every error.
    """
    where = f" in {path}" if path is not None else ""
    fix = f"; {restore_hint(path)}" if path is not None else ""
    if not isinstance(tables, dict):
        raise DamagedFileError(f"weight tables{where} must be an object of name -> table, got "
                               f"{type(tables).__name__}{fix}")
    model = GPT(config).to(TOY_DTYPE)
    expected = model.state_dict()
    if set(tables) != set(expected):
        missing = sorted(set(expected) - set(tables))
        extra = sorted(set(tables) - set(expected))
        raise DamagedFileError(f"weight tables{where} do not fit the {what}: missing {missing}, "
                               f"unexpected {extra}{fix}")
    state = {name: table_tensor(name, rows, where, fix) for name, rows in tables.items()}
    for name, tensor in state.items():
        if tensor.shape != expected[name].shape:
            raise DamagedFileError(f"table {name!r}{where} has shape {tuple(tensor.shape)}, the {what} "
                                   f"needs {tuple(expected[name].shape)}{fix}")
    model.load_state_dict(state)
    return model.eval()


def load_model_file(config: GPTConfig, path: Path, what: str) -> GPT:
    """Read a weight file, check it was written for ``config``, and build the model."""
    weights = read_weight_file(path, what)
    fix = f"; {restore_hint(path)}"
    if not isinstance(weights, dict):
        raise DamagedFileError(f"the weight file of the {what} ({path}) must be a JSON object, "
                               f"got {type(weights).__name__}{fix}")
    check_weight_file(weights, path, what)
    if weights["config"] != config_summary(config):
        raise DamagedFileError(f"{path} was written for another config: {weights['config']}{fix}")
    return model_from_tables(config, weights["tables"], what, path=path)


# The fields of a weight file: name -> (required?, test, what it must be). "tables" is checked
# table by table when the model is built (model_from_tables: names, numbers, shapes).
WEIGHT_FILE_FIELDS = {
    "about": (False, lambda x: isinstance(x, str), "a string"),
    "config": (True, lambda x: isinstance(x, dict), "an object (the GPTConfig the file was written for)"),
    "notes": (False, lambda x: isinstance(x, dict) and all(isinstance(v, str) for v in x.values()),
              "an object of table name -> string"),
    "tables": (True, lambda x: isinstance(x, dict), "an object of table name -> table"),
}


def check_weight_file(weights: dict, path, what: str) -> None:
    """Every field of a weight file present (when required) and of its type; else
    :class:`DamagedFileError` naming the file, the field and what it must be."""
    for key, (required, test, kind) in WEIGHT_FILE_FIELDS.items():
        if key not in weights:
            if required:
                raise DamagedFileError(f"the weight file of the {what} ({path}) has no {key!r} entry "
                                       f"(it must be {kind}); {restore_hint(path)}")
        elif not test(weights[key]):
            raise DamagedFileError(f"the weight file of the {what} ({path}) → {key!r}: must be {kind}, "
                                   f"got {type(weights[key]).__name__}; {restore_hint(path)}")


def format_number(x, decimals: int | None = None) -> str:
    """A weight as the file writes it: round numbers stay round (1, -0.5), others in full
    (``repr``), or with exactly ``decimals`` decimals when given."""
    x = float(x)
    if decimals is not None:
        return f"{x:.{decimals}f}"
    return str(int(x)) if x.is_integer() else repr(x)


def format_table(value, indent: str, decimals: int | None = None) -> str:
    """A vector on one line, a matrix with one row per line."""
    if value and isinstance(value[0], list):
        rows = [indent + "  [" + ", ".join(format_number(x, decimals) for x in row) + "]" for row in value]
        return "[\n" + ",\n".join(rows) + "\n" + indent + "]"
    return "[" + ", ".join(format_number(x, decimals) for x in value) + "]"


def weight_file_text(head: dict, tables: dict, decimals: dict | None = None) -> str:
    """The JSON text of a weight file: ``head`` entries (about, config, notes) first, then
    ``tables`` with one matrix row per line; ``decimals`` fixes the decimals of named tables."""
    decimals = decimals or {}
    lines = ["{"]
    for key, value in head.items():
        text = json.dumps(value, ensure_ascii=False, indent=2).replace("\n", "\n  ")
        lines.append(f"  {json.dumps(key)}: {text},")
    lines.append('  "tables": {')
    body = [f"    {json.dumps(name)}: {format_table(value, '    ', decimals.get(name))}"
            for name, value in tables.items()]
    lines.append(",\n".join(body))
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def describe_table_differences(file_tables: dict, derived_tables: dict, limit: int = 10) -> str:
    """The entries where a shipped weight file and a re-derivation differ, one line each:
    ``lm_head.bias[3]: file -1.921, re-derived -1.956`` (at most ``limit`` lines, then
    "and N more"). Tables are name -> nested lists of numbers, as in ``tables`` of a weight
    file. Returns "" when the two agree entry for entry."""
    lines = []

    def walk(name, path, a, b):
        if isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                lines.append(f"{name}{path}: file has {len(a)} entries, re-derived {len(b)}")
            for i, (x, y) in enumerate(zip(a, b)):
                walk(name, f"{path}[{i}]", x, y)
        elif isinstance(a, list) or isinstance(b, list):
            lines.append(f"{name}{path}: file {a!r}, re-derived {b!r} (different shapes)")
        elif a != b:
            lines.append(f"{name}{path}: file {a!r}, re-derived {b!r}")

    for name in file_tables:
        if name not in derived_tables:
            lines.append(f"{name}: in the file, not re-derived")
        else:
            walk(name, "", file_tables[name], derived_tables[name])
    for name in derived_tables:
        if name not in file_tables:
            lines.append(f"{name}: re-derived, not in the file")
    if len(lines) > limit:
        lines = lines[:limit] + [f"and {len(lines) - limit} more"]
    return "\n".join(lines)
