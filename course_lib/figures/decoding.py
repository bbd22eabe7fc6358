"""Computers of the decoding article's figures: one function per figure id (``decoding.*``).

Taught in notebooks 05 (``decoding.softmax_ln``) and 07 (sampling). Each function returns a
dict whose keys are the value names of its registry entry. ``loop`` runs the course's one
generation loop, ``decoding.generate``, on the five-token model; notebook 07 writes the same loop
out by hand with ``torch.multinomial`` and must reach the same values.
"""
from __future__ import annotations

import math

import torch

from .. import decoding as D
from ..toys.five_token import FIVE_TOKEN, INPUT_IDS


def softmax_ln() -> dict:
    """decoding.softmax_ln: scores [0, ln 2, ln 3] -> exponentials [1, 2, 3] -> probabilities 1/6, 2/6, 3/6."""
    scores = [0.0, math.log(2), math.log(3)]
    return dict(exponentials=[math.exp(v) for v in scores], probs=D.softmax_with_temperature(scores))


def gap_01() -> dict:
    """decoding.gap_01: a logit gap of 0.1 is a probability ratio of e^0.1."""
    pair = D.softmax_with_temperature([0.1, 0.0])
    return dict(ratio=pair[0] / pair[1])


def temp_low_high(model=None) -> dict:
    """decoding.temp_low_high: τ = 0.3 concentrates, τ = 1.5 spreads, the ranking stays."""
    z = FIVE_TOKEN.last_row_logits(model).tolist()
    low, mid, high = (D.softmax_with_temperature(z, t) for t in (0.3, 1.0, 1.5))
    return dict(low_more_concentrated=max(low) > max(mid) and D.entropy(low) < D.entropy(mid),
                high_more_spread=max(high) < max(mid) and D.entropy(high) > D.entropy(mid),
                ranking_kept=D.ranked_ids(low) == D.ranked_ids(mid) == D.ranked_ids(high))


def min_p(model=None) -> dict:
    """decoding.min_p: the bar min_p × max p rises with confidence and keeps fewer ids (premise: 0.05)."""
    z = FIVE_TOKEN.last_row_logits(model).tolist()
    confident, flat = D.softmax_with_temperature(z, 0.5), D.softmax_with_temperature(z, 2.0)
    fraction = 0.05                                    # the article's example: a premise, not a result
    return dict(bar_rises_with_confidence=(fraction * max(confident) > fraction * max(flat) and
                                           len(D.min_p_ids(confident, fraction)) < len(D.min_p_ids(flat, fraction))))


def loop(model=None) -> dict:
    """decoding.loop: five sampled steps, each reading the last row of the sequence so far, and
    the final (1, 8) shape."""
    model = FIVE_TOKEN.load() if model is None else model
    run = D.generate(model, INPUT_IDS, 5, choose=D.RuleChoice(D.SamplingRule(), torch.Generator().manual_seed(0)),
                     record_logits=True)
    with torch.no_grad():
        every_row = model(torch.tensor([run.ids]))[0]  # (8, V): the whole sequence, no cache
    return dict(new_tokens=rows_read_right(run, every_row, len(INPUT_IDS)), final_shape=[1, len(run.ids)])


def rows_read_right(run, every_row: torch.Tensor, prompt_length: int) -> int:
    """How many steps of a generation read the last row of the sequence so far: step t's
    logits must equal row ``prompt_length - 1 + t`` of one run over the final sequence (float64
    rounding aside). A loop that read another row, or lost its cache, counts fewer."""
    return sum(torch.allclose(torch.tensor(step.logits, dtype=every_row.dtype),
                              every_row[prompt_length - 1 + t], rtol=0, atol=1e-12)
               for t, step in enumerate(run.steps))
