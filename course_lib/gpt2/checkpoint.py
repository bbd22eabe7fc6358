"""GPT-2's checkpoint file: its pinned identity, reading it, and checking what it holds.

Used by ``gpt2.loader`` (notebooks 05 and 07, where GPT-2's weights are available); not taught.
Every problem is a ``course_lib.data`` error that names the file, says what is wrong and what
to do: a file that is not a whole safetensors file, cannot be read, holds a tensor that is not
floating-point (int, bool, float8) or a NaN / inf.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from ..data import DamagedFileError, unreadable

HF_REPO_ID = "openai-community/gpt2"
HF_OLD_REPO_ID = "gpt2"                      # the same repository's name before 2024
HF_REVISION = "607a30d783dfa663caf39e06633721c8d4cfcd7e"
WEIGHTS_FILENAME = "model.safetensors"
WEIGHTS_SHA256 = "248dfc3911869ec493c76e65bf2fcf7f615828b0254c12b473182f0f81d3a707"
WEIGHTS_BYTES = 548_105_171
WEIGHTS_ENV = "COURSE_GPT2_WEIGHTS"

# The dtypes a GPT-2 checkpoint may hold: "any float dtype" (float16 and bfloat16 become float32
# when loaded). float8 is refused too: too coarse for GPT-2's weights, and torch cannot sum it.
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def how_to_replace(file: Path) -> str:
    """What to do with a damaged weights file: delete it (in the Hugging Face cache, the whole
    model folder, or the damaged blob would be reused) and get the official file again."""
    cached = next((parent for parent in file.parents if parent.name.startswith("models--")), None)
    target = f"the cached copy {cached}" if cached is not None else str(file)
    return (f"What to do: delete {target}, then run python -m course_lib.gpt2 --download (with "
            f"{WEIGHTS_ENV} unset), or fetch "
            f"https://huggingface.co/{HF_REPO_ID}/resolve/{HF_REVISION}/{WEIGHTS_FILENAME} "
            f"({WEIGHTS_BYTES:,} bytes, SHA-256 {WEIGHTS_SHA256[:16]}…) yourself and point "
            f"{WEIGHTS_ENV} at it.")


def safetensors_problem(file: Path) -> str | None:
    """What is wrong with ``file`` as a safetensors file, in words, or None if it looks whole.

    The layout: 8 bytes (little-endian length N), N bytes of JSON header naming every tensor
    with its dtype, shape and byte range, then the tensors' bytes.
    """
    size = file.stat().st_size
    with open(file, "rb") as f:
        start = f.read(4096)
    text = start.lstrip().lower()
    if text.startswith((b"<!doctype", b"<html", b"<head", b"<body", b"<?xml", b"<!--")) or (
            start[8:9] != b"{" and b"<html" in text):
        return ("it is an HTML page, not a checkpoint (a web page — a login, error or 'blob' page — "
                "was saved under the weights' name; download the 'resolve' link, not the page)")
    if size < 8:
        return f"it is only {size} bytes long (an empty or interrupted download)"
    n = int.from_bytes(start[:8], "little")
    if n > 100_000_000:                               # safetensors' own limit for a header
        return f"its first 8 bytes announce a {n:,}-byte header: it is not a safetensors file"
    if n > size - 8:
        return (f"its first 8 bytes announce a {n:,}-byte header but the file has {size:,} bytes "
                f"(it is truncated, or not a safetensors file)")
    with open(file, "rb") as f:
        f.seek(8)
        header_bytes = f.read(n)
    try:
        header = json.loads(header_bytes)
        end = max((info["data_offsets"][1] for name, info in header.items() if name != "__metadata__"),
                  default=0)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
        return "its header is not valid safetensors JSON (the file is damaged)"
    if size < 8 + n + end:
        return (f"it is truncated: {size:,} bytes where its header needs {8 + n + end:,} "
                f"(an interrupted download or copy)")
    return None


def read_safetensors(file: Path) -> dict[str, torch.Tensor]:
    """All tensors of a safetensors file, or a :class:`DamagedFileError` that names the file,
    says what is wrong and what to do."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        problem = safetensors_problem(file)
    except OSError as err:                           # a folder, no permission, a failing disk
        raise unreadable(file, "GPT-2 weights file", err, how_to_replace(file)) from None
    if problem is None:
        try:
            return load_file(str(file))
        except (SafetensorError, OSError, ValueError, RuntimeError) as err:
            problem = f"safetensors cannot read it ({err})"
    raise DamagedFileError(f"GPT-2 weights file {file} cannot be loaded: {problem}. {how_to_replace(file)}")


# --------------------------------------------------------------------------- what it holds

def check_dtypes(tensors: dict[str, torch.Tensor], file) -> None:
    """Every tensor is floating-point (:data:`FLOAT_DTYPES`): integers or booleans would load as
    numbers that were never GPT-2's weights, so they raise :class:`DamagedFileError` naming the
    tensor, its dtype and the file."""
    for name, t in tensors.items():
        if t.dtype not in FLOAT_DTYPES:
            raise DamagedFileError(
                f"GPT-2 weights file {file}: tensor {name!r} has dtype {t.dtype}, but GPT-2's weights "
                f"are floating-point numbers (float16, bfloat16, float32 or float64); this is not "
                f"GPT-2's checkpoint, or it was converted wrongly. {how_to_replace(Path(file))}")


def check_finite(tensors: dict[str, torch.Tensor], file) -> None:
    """Every tensor of a checkpoint holds finite numbers; a NaN or inf raises
    :class:`DamagedFileError` naming the tensor and the file (else every logit would be NaN)."""
    for name, t in tensors.items():
        # one sum per table, no copy of it: NaN or ±inf anywhere makes the sum non-finite; only
        # then (or if finite values overflow it) are the values checked one by one
        if (t.is_floating_point() and not math.isfinite(t.sum())
                and not bool(torch.isfinite(t).all())):
            count = int((~torch.isfinite(t)).sum())
            raise DamagedFileError(f"GPT-2 weights file {file}: tensor {name!r} holds {count} "
                                   f"non-finite value(s) (NaN or inf); the file is damaged. "
                                   f"{how_to_replace(Path(file))}")


