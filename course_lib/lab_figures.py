"""Every offline figure of the lab article, computed from the lab's twelve-token model.

Taught in notebooks 02 (``lab.x6``), 03 (``lab.q6``, ``lab.heads``) and 07 (the sampling
figures). Each ``*_figure(model)`` function is pure: it runs the model and returns a dict
whose keys are the value names of one registry entry, so a notebook cell and a unit test
check the same numbers the same way::

    from course_lib.figures import check_figure
    from course_lib.lab_model import load_lab_model
    from course_lib import lab_figures as lab

    model = load_lab_model()
    check_figure("lab.x6", **lab.x6_figure(model))

==============================  ======================  =======================================
function                        figure id               returns
==============================  ======================  =======================================
``x6_figure``                   lab.x6                  e6, p6, x6, u6 (row 5 of the tensors)
``q6_figure``                   lab.q6                  q6 = [head 1's q | head 2's q]
``heads_figure``                lab.heads               head1_on_roof, head1_on_cat, head2_top3
``greedy_figure``               lab.greedy              id, token
``top_k_figure``                lab.top_k               kept, probs, renormalised
``top_p_figure``                lab.top_p               running_sums, kept_count, keeps_the_and_ed
``t07_top_p_figure``            lab.t07_top_p           kept, probs, running_sums, u_05, u_08
``append_figure``               lab.append              ids, rows_unchanged
``next_after_roof_figure``      lab.next_after_roof     first, p_first, second, p_second
``eot_figure``                  lab.eot                 first, p_first, stopped
``kv_size_figure``              lab.kv_size             toy, gpt2_small
==============================  ======================  =======================================

Helpers for tables and plots: :func:`last_row_logits`, :func:`next_token_probs`,
:func:`row6_head_weights` (2 heads × 6 keys), :func:`ranked_table` (id, piece, p, running sum
in ranked order), :func:`greedy_generation`.
``lab_figure_values(model)`` returns all of them at once (figure id -> values) and
``check_lab_figures(model)`` checks them all.

The sampling rules themselves (temperature, top-k, top-p, renormalising, the interval draw)
come from ``course_lib.sampling``; nothing here re-implements them.

Positions: the article counts from 1, tensors from 0. The article's row 5 (the last prompt
token, ␣the) is index 4; the appended ␣roof, x₆, is index 5.
"""
from __future__ import annotations

from itertools import accumulate

import torch

from .figures import check_figure
from .generate import Generation, generate, kv_numbers_per_token
from .generate import last_row_logits as model_last_row
from .gpt2 import GPT2_SMALL_CONFIG
from .lab_model import LAB_END_ID, LAB_PROMPT_IDS, LAB_VOCAB, lab_id
from .sampling import (SamplingRule, greedy_id, ranked_ids, renormalize, sample_interval_ranked,
                       softmax_with_temperature, top_k_ids, top_p_ids)

ROOF = lab_id("␣roof")          # 6: the token the article appends first
PERIOD = lab_id(".")            # 10: appended second
NEW_ROW = len(LAB_PROMPT_IDS)   # 5: tensor index of the article's x₆ (the sixth token)


def piece(token_id: int) -> str:
    return LAB_VOCAB.piece(int(token_id))


# ------------------------------------------------------------------------------ model outputs

@torch.no_grad()
def last_row_logits(model, ids=LAB_PROMPT_IDS) -> torch.Tensor:
    """The scores for the token after ``ids`` (default: "the cat climbed the"), shape (V,)."""
    return model_last_row(model, ids)


def next_token_probs(model, ids=LAB_PROMPT_IDS, temperature: float = 1.0) -> list[float]:
    """softmax(last row / T), in id order (list of V floats)."""
    return softmax_with_temperature(last_row_logits(model, ids), temperature)


@torch.no_grad()
def trace_of(model, ids):
    """``model.forward_trace`` on ``ids`` (batch of one): (logits (1, T, V), trace dict)."""
    return model.forward_trace(torch.tensor([list(ids)]))


def row6_head_weights(model, ids=LAB_PROMPT_IDS + [ROOF]) -> torch.Tensor:
    """Attention weights of the new row (x₆, index 5) in both heads: (H=2, 6 keys)."""
    _, trace = trace_of(model, ids)
    return trace["layers"][0]["attention_weights"][0, :, NEW_ROW, :]


def ranked_table(probs, kept=None) -> list[tuple[int, str, float, float]]:
    """(id, piece, probability, running sum) rows in ranked order, for the ids in ``kept``
    (default: all ids). The running sum is the walk the article's u falls into."""
    order = [i for i in ranked_ids(probs) if kept is None or i in set(kept)]
    sums = accumulate(probs[i] for i in order)
    return [(i, piece(i), probs[i], total) for i, total in zip(order, sums)]


def greedy_generation(model, prompt_ids=LAB_PROMPT_IDS, max_new_tokens: int = 8) -> Generation:
    """Greedy generation (with the KV cache) until <|endoftext|> or ``max_new_tokens`` ids."""
    return generate(model, prompt_ids, max_new_tokens, end_id=LAB_END_ID)


# ------------------------------------------------------------------------------ figures

def x6_figure(model) -> dict:
    """lab.x6: E[6], P₆, x₆ = E[6] + P₆ and u₆ = LN₁(x₆), all from the trace of row index 5."""
    _, trace = trace_of(model, LAB_PROMPT_IDS + [ROOF])
    return dict(e6=trace["token_vectors"][0, NEW_ROW],
                p6=trace["position_vectors"][NEW_ROW],
                x6=trace["x0"][0, NEW_ROW],
                u6=trace["layers"][0]["ln1"][0, NEW_ROW])


def q6_figure(model) -> dict:
    """lab.q6: the new row's query, head 1's two numbers then head 2's."""
    _, trace = trace_of(model, LAB_PROMPT_IDS + [ROOF])
    q = trace["layers"][0]["q"][0, :, NEW_ROW, :]     # (H, d)
    return dict(q6=q.reshape(-1))


def heads_figure(model) -> dict:
    """lab.heads: head 1's weight on ␣roof (itself) and on ␣cat; head 2's three largest, as pieces."""
    ids = LAB_PROMPT_IDS + [ROOF]
    weights = row6_head_weights(model, ids)          # (2, 6)
    cat_position = ids.index(lab_id("␣cat"))
    head2_order = ranked_ids(weights[1])
    return dict(head1_on_roof=weights[0, NEW_ROW].item(),
                head1_on_cat=weights[0, cat_position].item(),
                head2_top3=[piece(ids[t]) for t in head2_order[:3]])


def greedy_figure(model) -> dict:
    """lab.greedy: the argmax of row 5."""
    token_id = greedy_id(last_row_logits(model))
    return dict(id=token_id, token=piece(token_id))


def top_k_figure(model, k: int = 2) -> dict:
    """lab.top_k: the k kept pieces, their T = 1 probabilities and the renormalised ones."""
    probs = next_token_probs(model)
    kept = top_k_ids(probs, k)
    final = renormalize(probs, kept)
    return dict(kept=[piece(i) for i in kept], probs=[probs[i] for i in kept],
                renormalised=[final[i] for i in kept])


def top_p_figure(model, top_p: float = 0.9) -> dict:
    """lab.top_p: the running sums of the kept ids at T = 1, how many, whether ␣the and ed stay."""
    probs = next_token_probs(model)
    kept = top_p_ids(probs, top_p)
    return dict(running_sums=list(accumulate(probs[i] for i in kept)),
                kept_count=len(kept),
                keeps_the_and_ed={lab_id("␣the"), lab_id("ed")} <= set(kept))


def t07_top_p_figure(model, temperature: float = 0.7, top_p: float = 0.9) -> dict:
    """lab.t07_top_p: T = 0.7 then top-p 0.9; the kept pieces, renormalised, their running sums,
    and the draws for u = 0.5 and u = 0.8 (``sampling.sample_interval_ranked``: the article walks
    the running sum in ranked order; in id order u = 0.8 would land in ␣wall)."""
    step = SamplingRule(temperature=temperature, top_p=top_p).apply(last_row_logits(model))
    probs = [step.final[i] for i in step.kept]
    return dict(kept=[piece(i) for i in step.kept], probs=probs,
                running_sums=list(accumulate(probs)),
                u_05=piece(sample_interval_ranked(step.final, 0.5)),
                u_08=piece(sample_interval_ranked(step.final, 0.8)))


@torch.no_grad()
def append_figure(model, new_id: int = ROOF) -> dict:
    """lab.append: the six-token input, and whether its rows 1–5 (indices 0–4) equal the
    five-token run's logits.

    In exact arithmetic they are equal (the causal mask). In float64 they agree to ~1e-16, but
    not always bit for bit on every CPU: a kernel may add the same numbers in another order
    for a longer input. So "unchanged" means within 1e-12, a million times finer than any
    change a token could make through attention (without the mask row 1 moves by ~0.1)."""
    ids = LAB_PROMPT_IDS + [new_id]
    before = model(torch.tensor([LAB_PROMPT_IDS]))[0]    # (5, V)
    after = model(torch.tensor([ids]))[0]                # (6, V)
    return dict(ids=ids, rows_unchanged=rows_equal(after[:NEW_ROW], before))


def rows_equal(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-12) -> bool:
    """Equal up to float64 rounding: same shape and no entry more than ``atol`` apart."""
    return a.shape == b.shape and bool((a - b).abs().max() <= atol)


def _first_two(probs) -> tuple[int, int]:
    order = ranked_ids(probs)
    return order[0], order[1]


def next_after_roof_figure(model) -> dict:
    """lab.next_after_roof: the two most likely tokens after "the cat climbed the roof"."""
    probs = next_token_probs(model, LAB_PROMPT_IDS + [ROOF])
    first, second = _first_two(probs)
    return dict(first=piece(first), p_first=probs[first], second=piece(second), p_second=probs[second])


def eot_figure(model) -> dict:
    """lab.eot: the top token after "… roof." and whether greedy generation stops at it."""
    probs = next_token_probs(model, LAB_PROMPT_IDS + [ROOF, PERIOD])
    first, _ = _first_two(probs)
    return dict(first=piece(first), p_first=probs[first],
                stopped=greedy_generation(model).stopped_by == "end id")


@torch.no_grad()
def kv_size_figure(model) -> dict:
    """lab.kv_size: numbers a real KV cache holds per token after the prompt, and GPT-2 small's
    count from its config (2 × layers × heads × head width)."""
    cache = model.new_cache()
    model(torch.tensor([LAB_PROMPT_IDS]), cache=cache)
    return dict(toy=cache.numbers_per_token(), gpt2_small=kv_numbers_per_token(GPT2_SMALL_CONFIG))


LAB_FIGURES = {
    "lab.x6": x6_figure,
    "lab.q6": q6_figure,
    "lab.heads": heads_figure,
    "lab.greedy": greedy_figure,
    "lab.top_k": top_k_figure,
    "lab.top_p": top_p_figure,
    "lab.t07_top_p": t07_top_p_figure,
    "lab.append": append_figure,
    "lab.next_after_roof": next_after_roof_figure,
    "lab.eot": eot_figure,
    "lab.kv_size": kv_size_figure,
}


def lab_figure_values(model, ids=None) -> dict:
    """figure id -> the values its function computes (all lab figures, or the ids given)."""
    return {fid: LAB_FIGURES[fid](model) for fid in (ids or LAB_FIGURES)}


def check_lab_figures(model, ids=None) -> None:
    """``check_figure`` for each lab figure (prints one ✓ line per value, raises on a mismatch)."""
    for fid, values in lab_figure_values(model, ids).items():
        check_figure(fid, **values)
