"""Computers of the lab article's figures: one function per figure id (``lab.*``).

Taught in notebooks 01 (``lab.detok``, ``lab.partial_utf8``), 02 (``lab.x6``), 03 (``lab.q6``,
``lab.heads``) and 07 (the sampling figures). Each function takes the lab's twelve-token model
(``toys.lab.LAB``; default: the shipped weights) and returns a dict whose keys are the value
names of its registry entry, so a notebook cell and a unit test check the same numbers::

    from course_lib.figures import check_figure, lab
    check_figure("lab.x6", **lab.x6(model))

``lab.gpt2_top_p`` and ``lab.gpt2_t2`` need real GPT-2 (``course_lib.gpt2.load_gpt2``).

The sampling rules (temperature, top-k, top-p, renormalising, the interval draw) come from
``course_lib.decoding``; nothing here re-implements them. Positions: the article counts from 1,
tensors from 0; the appended ␣roof, x₆, is index 5 (``toys.lab.NEW_ROW``).
"""
from __future__ import annotations

from itertools import accumulate

import torch

from ..decoding import SamplingRule, greedy_id, kv_numbers_per_token, ranked_ids, renormalize
from ..decoding import sample_interval_ranked, softmax_with_temperature, top_k_ids, top_p_ids
from ..gpt2.config import GPT2_SMALL_CONFIG
from ..tokens.streaming import StreamingDecoder
from ..tokens.vocab import LAB_VOCAB
from ..toys.lab import (LAB, LAB_PROMPT_IDS, NEW_ROW, PERIOD, ROOF, greedy_generation, lab_id,
                        next_token_probs, piece, row6_head_weights)
from . import gpt2 as gpt2_figures


def _model(model):
    return LAB.load() if model is None else model


def x6(model=None) -> dict:
    """lab.x6: E[6], P₆, x₆ = E[6] + P₆ and u₆ = LN₁(x₆), all from the trace of row index 5."""
    model = _model(model)
    _, trace = LAB.run(model, LAB_PROMPT_IDS + [ROOF])
    return dict(e6=trace["token_vectors"][0, NEW_ROW],
                p6=trace["position_vectors"][NEW_ROW],
                x6=trace["x0"][0, NEW_ROW],
                u6=trace["layers"][0]["ln1"][0, NEW_ROW])


def q6(model=None) -> dict:
    """lab.q6: the new row's query, head 1's two numbers then head 2's."""
    model = _model(model)
    _, trace = LAB.run(model, LAB_PROMPT_IDS + [ROOF])
    q = trace["layers"][0]["q"][0, :, NEW_ROW, :]     # (H, d)
    return dict(q6=q.reshape(-1))


def heads(model=None) -> dict:
    """lab.heads: head 1's weight on ␣roof (itself) and on ␣cat; head 2's three largest, as pieces."""
    model = _model(model)
    ids = LAB_PROMPT_IDS + [ROOF]
    weights = row6_head_weights(model, ids)          # (2, 6)
    cat_position = ids.index(lab_id("␣cat"))
    head2_order = ranked_ids(weights[1])
    return dict(head1_on_roof=weights[0, NEW_ROW].item(),
                head1_on_cat=weights[0, cat_position].item(),
                head2_top3=[piece(ids[t]) for t in head2_order[:3]])


def greedy(model=None) -> dict:
    """lab.greedy: the argmax of row 5."""
    model = _model(model)
    token_id = greedy_id(LAB.last_row_logits(model))
    return dict(id=token_id, token=piece(token_id))


def top_k(model=None, k: int = 2) -> dict:
    """lab.top_k: the k kept pieces, their T = 1 probabilities and the renormalised ones."""
    model = _model(model)
    probs = next_token_probs(model)
    kept = top_k_ids(probs, k)
    final = renormalize(probs, kept)
    return dict(kept=[piece(i) for i in kept], probs=[probs[i] for i in kept],
                renormalised=[final[i] for i in kept])


def top_p(model=None, top_p: float = 0.9) -> dict:
    """lab.top_p: the running sums of the kept ids at T = 1, how many, whether ␣the and ed stay."""
    model = _model(model)
    probs = next_token_probs(model)
    kept = top_p_ids(probs, top_p)
    return dict(running_sums=list(accumulate(probs[i] for i in kept)),
                kept_count=len(kept),
                keeps_the_and_ed={lab_id("␣the"), lab_id("ed")} <= set(kept))


def t07_top_p(model=None, temperature: float = 0.7, top_p: float = 0.9) -> dict:
    """lab.t07_top_p: T = 0.7 then top-p 0.9; the kept pieces, renormalised, their running sums,
    and the draws for u = 0.5 and u = 0.8 (``decoding.sample_interval_ranked``: the article walks
    the running sum in ranked order; in id order u = 0.8 would land in ␣wall)."""
    model = _model(model)
    step = SamplingRule(temperature=temperature, top_p=top_p).apply(LAB.last_row_logits(model))
    probs = [step.final[i] for i in step.kept]
    return dict(kept=[piece(i) for i in step.kept], probs=probs,
                running_sums=list(accumulate(probs)),
                u_05=piece(sample_interval_ranked(step.final, 0.5)),
                u_08=piece(sample_interval_ranked(step.final, 0.8)))


@torch.no_grad()
def append(model=None, new_id: int = ROOF) -> dict:
    """lab.append: the six-token input, and whether its rows 1–5 (indices 0–4) equal the
    five-token run's logits.

    In exact arithmetic they are equal (the causal mask). In float64 they agree to ~1e-16, but
    not always bit for bit on every CPU: a kernel may add the same numbers in another order
    for a longer input. So "unchanged" means within 1e-12, a million times finer than any
    change a token could make through attention (without the mask row 1 moves by ~0.1)."""
    model = _model(model)
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


def next_after_roof(model=None) -> dict:
    """lab.next_after_roof: the two most likely tokens after "the cat climbed the roof"."""
    model = _model(model)
    probs = next_token_probs(model, LAB_PROMPT_IDS + [ROOF])
    first, second = _first_two(probs)
    return dict(first=piece(first), p_first=probs[first], second=piece(second), p_second=probs[second])


def eot(model=None) -> dict:
    """lab.eot: the top token after "… roof." and whether greedy generation stops at it."""
    model = _model(model)
    probs = next_token_probs(model, LAB_PROMPT_IDS + [ROOF, PERIOD])
    first, _ = _first_two(probs)
    return dict(first=piece(first), p_first=probs[first],
                stopped=greedy_generation(model).stopped_by == "end id")


@torch.no_grad()
def kv_size(model=None) -> dict:
    """lab.kv_size: numbers a real KV cache holds per token after the prompt, and GPT-2 small's
    count from its config (2 × layers × heads × head width)."""
    model = _model(model)
    cache = model.new_cache()
    model(torch.tensor([LAB_PROMPT_IDS]), cache=cache)
    return dict(toy=cache.numbers_per_token(), gpt2_small=kv_numbers_per_token(GPT2_SMALL_CONFIG))


def temp_210() -> dict:
    """lab.temp_210: softmax of the article's logits [2, 1, 0] at T = 1 and T = 0.5."""
    return dict(t_1=softmax_with_temperature([2.0, 1.0, 0.0], 1.0),
                t_05=softmax_with_temperature([2.0, 1.0, 0.0], 0.5))


def detok() -> dict:
    """lab.detok: "the cat climbed the roof." as lab ids, their pieces, and the text back."""
    ids = LAB_VOCAB.encode("the cat climbed the roof.")
    return dict(ids=ids, pieces=LAB_VOCAB.decode_pieces(ids), text=LAB_VOCAB.decode(ids))


def partial_utf8() -> dict:
    """lab.partial_utf8: ã's two UTF-8 bytes as two ids: nothing shown after the first, ã after both."""
    a_tilde = "ã".encode("utf-8")
    split = StreamingDecoder(token_bytes=lambda i: [a_tilde[:1], a_tilde[1:]][i])
    return dict(utf8=list(a_tilde), shown_after_first_byte=split.push(0), shown_after_second_byte=split.push(1))


def gpt2_top_p(model, enc) -> dict:
    """lab.gpt2_top_p (real GPT-2): how many tokens top-p 0.9 keeps after two prompts."""
    return gpt2_figures.top_p_values(model, enc)


def gpt2_t2(model, enc) -> dict:
    """lab.gpt2_t2 (real GPT-2): at T = 2 most draws fall outside the top 50, at T = 0.7 few do."""
    ranks = {t: gpt2_figures.sampled_ranks(model, enc, temperature=t) for t in (2.0, 0.7)}
    return gpt2_figures.t2_values(ranks[2.0], ranks[0.7])
