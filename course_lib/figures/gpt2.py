"""Computers of the gpt2 article's figures (``gpt2.*``), and the measurements behind the lab's GPT-2 figures.

Taught in notebooks 01 (``gpt2.prompt_ids``), 05 (lm_head: ``gpt2.logits_shape``, ``gpt2.top5``)
and 07 (sampling: ``gpt2.greedy``, ``gpt2.loop30``; ``lab.gpt2_top_p`` and ``lab.gpt2_t2`` are
in ``figures.lab`` and use :func:`top_p_values`, :func:`sampled_ranks` and :func:`t2_values`).

Each function returns a dict whose keys are the registry's value names, so a notebook writes
``check_figure("gpt2.top5", **top5(model, enc))``. Only :func:`prompt_ids` and
:func:`logits_shape` make sense without real GPT-2 (ids and shapes); the others need
``course_lib.gpt2.load_gpt2``. Where the weights are absent, notebooks call
``gpt2.gpt2_or_none`` and print ``gpt2.no_weights_line`` instead. Every generation runs the
course's one loop, ``decoding.generate``.
"""
from __future__ import annotations

import torch

from ..decoding import generate, sample_seeded, top_p_ids
from ..model import GPT
from ..tokens.bpe import gpt2_encoding

MEANING_PROMPT = "The meaning of life is"                        # the gpt2 article's prompt
# The lab article prints only the end of this prompt ("…the 44th President of the United");
# its beginning is the course's choice.
UNITED_PROMPT = "Barack Obama was the 44th President of the United"
ONCE_PROMPT = "Once upon a time, there was a"


# --------------------------------------------------------------------------- small pieces

def encode(enc, text: str) -> torch.Tensor:
    """Text -> ids of shape (1, T) with the tiktoken GPT-2 encoding ``enc``."""
    return torch.tensor([enc.encode(text)])


@torch.no_grad()
def next_token_logits(model: GPT, ids: torch.Tensor) -> torch.Tensor:
    """The logits of the last position, (V,), for a (1, T) prompt."""
    return model(ids)[0, -1, :]


def longest_repeat(ids: list[int]) -> list[int]:
    """The longest run of tokens that occurs at least twice in ``ids`` (overlaps allowed)."""
    best: list[int] = []
    n = len(ids)
    for length in range(1, n):
        seen = set()
        found = None
        for start in range(n - length + 1):
            run = tuple(ids[start:start + length])
            if run in seen:
                found = list(run)
                break
            seen.add(run)
        if found is None:
            break
        best = found
    return best


# --------------------------------------------------------------------------- the figures


def prompt_ids(enc=None, prompt: str = MEANING_PROMPT) -> dict:
    """gpt2.prompt_ids: the article's prompt as GPT-2 ids, their pieces, the (1, T) input's shape."""
    enc = gpt2_encoding() if enc is None else enc
    ids = enc.encode(prompt)
    return dict(ids=ids, pieces=[enc.decode([i]) for i in ids], input_ids_shape=list(torch.tensor([ids]).shape))


@torch.no_grad()
def logits_shape(model: GPT, enc, prompt: str = MEANING_PROMPT) -> dict:
    """gpt2.logits_shape: (1, 5) ids -> logits (1, 5, V); the last row (V,); one argmax per position."""
    ids = encode(enc, prompt)                     # (1, 5)
    logits = model(ids)                           # (1, 5, 50257)
    last_row = logits[0, -1, :]                   # (50257,)
    predictions = logits[0].argmax(dim=-1)        # (5,): one predicted id per position
    return {"logits_shape": list(logits.shape), "last_row_shape": list(last_row.shape),
            "predictions": predictions.numel()}


def top5(model: GPT, enc, prompt: str = MEANING_PROMPT) -> dict:
    """gpt2.top5: the five most likely next tokens after the prompt and their probabilities."""
    probs = torch.softmax(next_token_logits(model, encode(enc, prompt)), dim=-1)   # (V,)
    top = torch.topk(probs, 5)
    return {"tokens": [enc.decode([i]) for i in top.indices.tolist()],
            "probs": top.values.tolist()}


def greedy(model: GPT, enc, prompt: str = MEANING_PROMPT) -> dict:
    """gpt2.greedy: the argmax id after the prompt and the prompt with it appended."""
    ids = encode(enc, prompt)
    next_id = int(next_token_logits(model, ids).argmax())
    return {"id": next_id, "text": enc.decode(ids[0].tolist() + [next_id])}


def loop30_continuation(model: GPT, enc, prompt: str = MEANING_PROMPT, steps: int = 30) -> list[int]:
    """The ``steps`` ids greedy decoding appends, rerunning the whole sequence every step, as
    the gpt2 article's loop does (``decoding.generate`` with ``use_cache=False``)."""
    return generate(model, enc.encode(prompt), steps, use_cache=False).new_ids


def loop30(model: GPT, enc) -> dict:
    """gpt2.loop30: 30 greedy steps after the prompt; a phrase of 3+ tokens comes back."""
    return loop30_values(loop30_continuation(model, enc))


def loop30_values(new_ids: list[int]) -> dict:
    """gpt2.loop30: how many tokens were added, and whether a phrase of 3+ tokens repeats."""
    return {"new_tokens": len(new_ids), "repeats": len(longest_repeat(new_ids)) >= 3}


def top_p_values(model: GPT, enc, p: float = 0.9) -> dict:
    """lab.gpt2_top_p: how many tokens top-p 0.9 keeps after two prompts (at T = 1)."""
    united = torch.softmax(next_token_logits(model, encode(enc, UNITED_PROMPT)), dim=-1)
    once = torch.softmax(next_token_logits(model, encode(enc, ONCE_PROMPT)), dim=-1)
    top = int(united.argmax())
    return {"kept_after_united": len(top_p_ids(united, p)),
            "top_after_united": enc.decode([top]),
            "p_states": float(united[top]),
            "kept_after_once": len(top_p_ids(once, p))}


def sampled_ranks(model: GPT, enc, temperature: float, steps: int = 40,
                  prompt: str = ONCE_PROMPT, seed: int = 0) -> list[int]:
    """Sample ``steps`` tokens at ``temperature`` (no filter) and return each one's rank.

    The rank is the token's place in GPT-2's own ordering at that step (0 = the most likely
    token); temperature does not change that ordering, only how far down a draw may land.
    The loop is ``decoding.generate`` with the KV cache; each draw is ``sample_seeded`` on the
    float64 softmax of logits / T.
    """
    generator = torch.Generator().manual_seed(seed)
    ranks = []

    def choose(logits, step):                                   # logits: (V,)
        probs = torch.softmax(logits.double() / temperature, dim=-1)   # (V,), float64
        token = sample_seeded(probs, generator)
        ranks.append(int((logits > logits[token]).sum()))
        return token, None

    generate(model, enc.encode(prompt), steps, choose=choose)
    return ranks


def t2_values(ranks_t2: list[int], ranks_t07: list[int], top: int = 50) -> dict:
    """lab.gpt2_t2, measured: the share of sampled tokens outside GPT-2's top ``top``.

    Noise at T = 2: at least half of the draws come from outside the top 50; at T = 0.7 on
    the same prompt, at most a fifth do.
    """
    off_t2 = sum(r >= top for r in ranks_t2) / len(ranks_t2)
    off_t07 = sum(r >= top for r in ranks_t07) / len(ranks_t07)
    return {"t2_is_noise": off_t2 >= 0.5, "t07_is_not_noise": off_t07 <= 0.2}
