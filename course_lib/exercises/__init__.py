"""Exercises with automatic checks: the learner writes a function, a checker says ✓ or gives one hint.

Used by notebooks 01–07 (each exercise sits after the idea it practises: a statement, a stub to
fill in, then ``check_<name>(<name>)``) and by the worked solutions, one notebook per chapter
(notebooks/solutions/03_attention_solutions.ipynb, …), each followed by the same call. One
module per chapter holds its checkers:

    ch01_tokenizer  byte_table, bpe_merge, stream_decode
    ch02_embeddings one_hot_rows, embed, last_scores
    ch03_attention  make_causal_mask, attention_head, split_heads
    ch04_block      layer_norm, mlp_forward, pre_norm_block
    ch05_lm_head    one_logit, all_logits, head_parameters, stable_softmax
    ch06_loss       shift_targets, target_probs, cross_entropy, sgd_step
    ch07_sampling   interval_draw, apply_temperature, top_k_filter, top_p_filter, min_p_filter, generate_cached

A checker returns a :class:`Result` (``passed``, ``name``, ``message``, ``details``); a notebook
shows its one line. A check never raises, has a time limit per call and leaves no global state
behind (``guard``). To grade learners' notebooks, use the class grader (``course_lib.grading``), which
runs each one in its own sandbox and keeps the checkers out of its reach::

    python -m course_lib.grading ~/course --out ~/grading/grades.csv --feedback ~/grading/feedback

:func:`check_notebook` runs a notebook's exercise cells (those tagged ``exercise``) in THIS
process: for the course's own notebooks (the tests), never for a learner's.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from . import ch01_tokenizer, ch02_embeddings, ch03_attention, ch04_block, ch05_lm_head, ch06_loss, ch07_sampling
from .ch01_tokenizer import check_bpe_merge, check_byte_table, check_stream_decode
from .ch02_embeddings import check_embed, check_last_scores, check_one_hot_rows
from .ch03_attention import check_attention_head, check_make_causal_mask, check_split_heads
from .ch04_block import check_layer_norm, check_mlp_forward, check_pre_norm_block
from .ch05_lm_head import check_all_logits, check_head_parameters, check_one_logit, check_stable_softmax
from .ch06_loss import check_cross_entropy, check_sgd_step, check_shift_targets, check_target_probs
from .ch07_sampling import (check_apply_temperature, check_generate_cached, check_interval_draw, check_min_p_filter,
                            check_top_k_filter, check_top_p_filter)
from .core import NOT_ATTEMPTED, Result

CHAPTERS = {"01": ch01_tokenizer, "02": ch02_embeddings, "03": ch03_attention, "04": ch04_block,
            "05": ch05_lm_head, "06": ch06_loss, "07": ch07_sampling}
# exercise name -> (chapter, checker)
EXERCISES = {name: (chapter, check) for chapter, module in CHAPTERS.items() for name, check in module.EXERCISES.items()}
EXERCISE_TAG = "exercise"


def exercise_cells(notebook) -> list[str]:
    """The source of every code cell tagged ``exercise`` in a notebook (a path), in order."""
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    return ["".join(cell["source"]) for cell in nb["cells"]
            if cell["cell_type"] == "code" and EXERCISE_TAG in cell.get("metadata", {}).get("tags", [])]


def load_functions(notebook) -> dict:
    """Run a notebook's exercise cells (with ``torch``, ``math`` and ``F`` imported) and return
    the functions they define, by name."""
    import torch
    namespace = {"torch": torch, "math": math, "F": torch.nn.functional}
    for source in exercise_cells(notebook):
        exec(compile(source, str(notebook), "exec"), namespace)
    return {name: namespace[name] for name in EXERCISES if callable(namespace.get(name))}


def check_notebook(notebook) -> list[Result]:
    """Check every exercise function a notebook's exercise cells define (in course order), in
    this process: for trusted notebooks only (a learner's goes to ``python -m
    course_lib.grading``)."""
    found = load_functions(notebook)
    return [check(found[name]) for name, (_, check) in EXERCISES.items() if name in found]


__all__ = ["CHAPTERS", "EXERCISES", "NOT_ATTEMPTED", "Result", "check_notebook", "exercise_cells", "load_functions"] + [
    check.__name__ for _, check in EXERCISES.values()]
