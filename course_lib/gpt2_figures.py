"""The gpt2 article's figures (and the lab's GPT-2 figures), computed with course_lib's GPT-2.

Taught in notebooks 05 (lm_head: ``gpt2.logits_shape``, ``gpt2.top5``) and 07 (sampling:
``gpt2.greedy``, ``gpt2.loop30``, ``lab.gpt2_top_p``, ``lab.gpt2_t2``).

Each ``*_values`` function returns a dict whose keys are the registry's value names, so a
notebook writes ``check_figure("gpt2.top5", **top5_values(model, enc))``. Only
:func:`logits_shape_values` makes sense with random weights (it is about shapes); the others
need real GPT-2 (``course_lib.gpt2.load_gpt2``). Where the weights are absent, notebooks call
:func:`gpt2_or_none` and print :func:`no_weights_line` instead.
"""
from __future__ import annotations

import os

import torch

from course_lib.gpt2 import WEIGHTS_ENV, WeightsNotFound, load_gpt2
from course_lib.model import GPT

MEANING_PROMPT = "The meaning of life is"                        # the gpt2 article's prompt
# The lab article prints only the end of this prompt ("…the 44th President of the United");
# its beginning is the course's choice.
UNITED_PROMPT = "Barack Obama was the 44th President of the United"
ONCE_PROMPT = "Once upon a time, there was a"


# --------------------------------------------------------------------------- weights or not

def gpt2_or_none() -> GPT | None:
    """Real GPT-2 small if its weights are on this machine (never downloads), else None.

    If ``COURSE_GPT2_WEIGHTS`` is set but wrong, the error is raised rather than hidden.
    """
    try:
        return load_gpt2()
    except WeightsNotFound:
        if os.environ.get(WEIGHTS_ENV):     # the learner pointed at a file that is not there
            raise
        return None


def no_weights_line(what: str) -> str:
    """The one fixed line a notebook cell prints when GPT-2's weights are absent."""
    return (f"[GPT-2 weights not found: this cell would {what}. Get them with "
            f"`python -m course_lib.gpt2 --download` or set {WEIGHTS_ENV}; see the README.]")


# --------------------------------------------------------------------------- small pieces

def encode(enc, text: str) -> torch.Tensor:
    """Text -> ids of shape (1, T) with the tiktoken GPT-2 encoding ``enc``."""
    return torch.tensor([enc.encode(text)])


@torch.no_grad()
def next_token_logits(model: GPT, ids: torch.Tensor) -> torch.Tensor:
    """The logits of the last position, (V,), for a (1, T) prompt."""
    return model(ids)[0, -1, :]


@torch.no_grad()
def greedy_continue(model: GPT, ids: torch.Tensor, steps: int, use_cache: bool = False) -> torch.Tensor:
    """Append ``steps`` argmax tokens to ``ids`` (1, T) -> (1, T + steps).

    ``use_cache=False`` reruns the whole sequence each step, as the gpt2 article's loop does;
    ``use_cache=True`` feeds only the newest token and keeps the keys and values (notebook 07).
    """
    cache = model.new_cache() if use_cache else None
    generated = ids
    step_input = ids
    for _ in range(steps):
        logits = model(step_input if use_cache else generated, cache=cache)   # (1, T_in, V)
        next_id = logits[:, -1, :].argmax(dim=-1, keepdim=True)               # (1, 1)
        generated = torch.cat([generated, next_id], dim=1)
        step_input = next_id
    return generated


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

@torch.no_grad()
def logits_shape_values(model: GPT, enc, prompt: str = MEANING_PROMPT) -> dict:
    """gpt2.logits_shape: (1, 5) ids -> logits (1, 5, V); the last row (V,); one argmax per position."""
    ids = encode(enc, prompt)                     # (1, 5)
    logits = model(ids)                           # (1, 5, 50257)
    last_row = logits[0, -1, :]                   # (50257,)
    predictions = logits[0].argmax(dim=-1)        # (5,): one predicted id per position
    return {"logits_shape": list(logits.shape), "last_row_shape": list(last_row.shape),
            "predictions": predictions.numel()}


def top5_values(model: GPT, enc, prompt: str = MEANING_PROMPT) -> dict:
    """gpt2.top5: the five most likely next tokens after the prompt and their probabilities."""
    probs = torch.softmax(next_token_logits(model, encode(enc, prompt)), dim=-1)   # (V,)
    top = torch.topk(probs, 5)
    return {"tokens": [enc.decode([i]) for i in top.indices.tolist()],
            "probs": top.values.tolist()}


def greedy_values(model: GPT, enc, prompt: str = MEANING_PROMPT) -> dict:
    """gpt2.greedy: the argmax id after the prompt and the prompt with it appended."""
    ids = encode(enc, prompt)
    next_id = int(next_token_logits(model, ids).argmax())
    return {"id": next_id, "text": enc.decode(ids[0].tolist() + [next_id])}


def loop30_continuation(model: GPT, enc, prompt: str = MEANING_PROMPT, steps: int = 30) -> list[int]:
    """The ``steps`` ids greedy decoding appends, rerunning the whole sequence every step."""
    ids = encode(enc, prompt)
    return greedy_continue(model, ids, steps)[0, ids.shape[1]:].tolist()


def loop30_values(new_ids: list[int]) -> dict:
    """gpt2.loop30: how many tokens were added, and whether a phrase of 3+ tokens repeats."""
    return {"new_tokens": len(new_ids), "repeats": len(longest_repeat(new_ids)) >= 3}


def top_p_values(model: GPT, enc, p: float = 0.9) -> dict:
    """lab.gpt2_top_p: how many tokens top-p 0.9 keeps after two prompts (at T = 1)."""
    from course_lib.sampling import top_p_ids   # helper of notebook 07: the ids top-p keeps

    united = torch.softmax(next_token_logits(model, encode(enc, UNITED_PROMPT)), dim=-1)
    once = torch.softmax(next_token_logits(model, encode(enc, ONCE_PROMPT)), dim=-1)
    top = int(united.argmax())
    return {"kept_after_united": len(top_p_ids(united, p)),
            "top_after_united": enc.decode([top]),
            "p_states": float(united[top]),
            "kept_after_once": len(top_p_ids(once, p))}


@torch.no_grad()
def sampled_ranks(model: GPT, enc, temperature: float, steps: int = 40,
                  prompt: str = ONCE_PROMPT, seed: int = 0) -> list[int]:
    """Sample ``steps`` tokens at ``temperature`` (no filter) and return each one's rank.

    The rank is the token's place in GPT-2's own ordering at that step (0 = the most likely
    token); temperature does not change that ordering, only how far down a draw may land.
    """
    from course_lib.sampling import sample_seeded   # notebook 07's seeded draw

    generator = torch.Generator().manual_seed(seed)
    ids = encode(enc, prompt)
    cache = model.new_cache()
    logits = model(ids, cache=cache)[0, -1, :]
    ranks = []
    for _ in range(steps):
        probs = torch.softmax(logits.double() / temperature, dim=-1)   # (V,), float64
        token = sample_seeded(probs, generator)
        ranks.append(int((logits > logits[token]).sum()))
        logits = model(torch.tensor([[token]]), cache=cache)[0, -1, :]
    return ranks


def t2_values(ranks_t2: list[int], ranks_t07: list[int], top: int = 50) -> dict:
    """lab.gpt2_t2, measured: the share of sampled tokens outside GPT-2's top ``top``.

    Noise at T = 2: at least half of the draws come from outside the top 50; at T = 0.7 on
    the same prompt, at most a fifth do.
    """
    off_t2 = sum(r >= top for r in ranks_t2) / len(ranks_t2)
    off_t07 = sum(r >= top for r in ranks_t07) / len(ranks_t07)
    return {"t2_is_noise": off_t2 >= 0.5, "t07_is_not_noise": off_t07 <= 0.2}
