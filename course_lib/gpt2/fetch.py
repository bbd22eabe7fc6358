"""Getting GPT-2's weights from inside a notebook: ``course_lib.gpt2.download()`` in a cell.

Taught in notebooks 05 and 07, whose GPT-2 cells print :func:`download_hint` when the weights
are absent. The download itself is ``loader.download_weights`` (pinned revision, SHA-256
checked); in JupyterLab huggingface_hub shows its progress bar under the cell.
"""
from __future__ import annotations

from pathlib import Path

from .loader import WEIGHTS_ENV, download_weights, gpt2_or_message, no_weights_line

DOWNLOAD_CALL = "import course_lib.gpt2; course_lib.gpt2.download()"


def download(cache_dir=None) -> Path:
    """Download GPT-2 small's ``model.safetensors`` (548 MB, once) into the Hugging Face cache,
    check its SHA-256 and return its path; then run the notebook again from the top."""
    file = download_weights(cache_dir)
    print("Done. Run the notebook again from the top (Kernel → Restart and Run All): its GPT-2 "
          "cells now compute the real predictions.")
    return file


def download_hint(what: str) -> str:
    """The line a GPT-2 cell prints when the weights are simply not on this machine."""
    import textwrap

    text = (f"[GPT-2 weights not found: this cell would {what}. To get them (548 MB, once), run "
            f"this in a cell:\n    {DOWNLOAD_CALL}\nor set {WEIGHTS_ENV}; see the README.]")
    return "\n".join(textwrap.fill(line, 88, subsequent_indent="  ") if len(line) > 88 else line
                     for line in text.splitlines())


def gpt2_or_hint(what: str):
    """``(GPT-2, None)``, or ``(None, one line)``: :func:`download_hint` when the weights are
    absent, the loader's own message when a file or setting is wrong (``gpt2_or_message``)."""
    model, problem = gpt2_or_message(what)
    if model is None and problem == no_weights_line(what):
        problem = download_hint(what)
    return model, problem
