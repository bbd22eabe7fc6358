"""The sampling figures of the interface and decoding articles, computed (for tests and checks).

Notebook 07 (sampling) derives each of these step by step; this module computes the same values
in one place so that the unit tests can check every figure against the registry:
``check_figure(fid, **values)`` for each ``fid, values`` in :func:`sampling_figure_values`.

The five-token numbers come from the five-token model's last row of logits for ``a | b | a``
(never from the article's printed logits). Where an article states a premise rather than a model
output (the greedy-path thought experiment, the logits [2, 1, 0], a 96 % leader), the premise is
an input here, and the computed consequence is what is checked.
"""
from __future__ import annotations

import math

import torch

from . import sampling as S
from .five_token import INPUT_IDS, load_five_token_model
from .generate import RuleChoice, generate
from .vocab import FIVE_TOKEN_PIECES


def five_token_logits(model=None) -> list[float]:
    """The model's last row for a|b|a: logits[0, -1] as five floats."""
    model = model or load_five_token_model()
    with torch.no_grad():
        return model(torch.tensor([INPUT_IDS]))[0, -1].tolist()


def interface_figures(z: list[float]) -> dict:
    """Every ``interface.*`` sampling figure from the five-token logits ``z``."""
    probs = S.softmax_with_temperature(z)
    greedy = S.greedy_id(z)
    rounded = [round(p, 4) for p in probs]
    with_gap = rounded[:1] + [0.0] + rounded[1:]
    counts = S.draw_counts(rounded, 100_000, seed=12)
    taus = [0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 4.0, 10.0]
    ranking = S.ranked_ids(probs)
    kept_k2 = S.top_k_ids(probs, 2)
    after_k = S.renormalize(probs, kept_k2)
    tied_row = [0.5, 2.0, 1.0, 1.0, -1.0]
    shifted = [v + 1000.0 for v in z]
    try:
        S.softmax_with_temperature(z, 0.0)
        zero_rejected = False
    except ValueError:
        zero_rejected = True
    first, best_next = {"A": 0.6, "B": 0.4}, {"A": 0.5, "B": 0.99}     # the article's premise
    paths = {t: first[t] * best_next[t] for t in first}
    count, cutoff = S.gpt2_legacy_cutoff(probs, 0.90)
    top_ids = {S.greedy_id(S.softmax_with_temperature(z, t)) for t in taus}
    return {
        "interface.greedy": dict(id=greedy, token=FIVE_TOKEN_PIECES[greedy],
                                 argmax_logit_equals_argmax_prob=greedy == ranking[0]),
        "interface.greedy_path": dict(greedy_path=paths["A"], other_path=paths["B"],
                                      greedy_is_best=max(first, key=first.get) == max(paths, key=paths.get)),
        "interface.interval": dict(
            rounded_probs=rounded, rounded_sum=sum(rounded),
            picks=[[u, S.sample_interval(rounded, u)] for u in (0.50, 0.05, 0.93, 0.95, rounded[0])],
            zero_length_never_chosen=all(S.sample_interval(with_gap, k / 10_000) != 1 for k in range(10_000))),
        "interface.draws": dict(frequencies=[c / sum(counts) for c in counts]),
        "interface.temperature": dict(
            gap=z[1] - z[0],
            ranking_kept=all(S.ranked_ids(S.softmax_with_temperature(z, t)) == ranking for t in taus),
            greedy_id=top_ids.pop() if len(top_ids) == 1 else None,
            cold_limit=S.softmax_with_temperature(z, 0.01),
            tied_cold_limit=S.softmax_with_temperature([1.5, 1.5, 0.2], 0.01),
            zero_temperature_rejected=zero_rejected),
        "interface.top_k": dict(order=ranking, kept_k2=kept_k2, kept_mass=probs[kept_k2[0]] + probs[kept_k2[1]],
                                p_b=after_k[1], p_a=after_k[0], k1_equals_greedy=S.top_k_ids(probs, 1) == [greedy]),
        "interface.top_k_ties": dict(
            strict_cut_keeps_more_than_k=len(S.top_k_strict_cut(tied_row, 2)) > 2,
            teaching_rule_keeps_exactly_k=len(S.top_k_ids(S.softmax_with_temperature(tied_row), 2)) == 2),
        "interface.top_p": dict(kept_090=S.top_p_ids(probs, 0.90),
                                mass_090=sum(probs[i] for i in S.top_p_ids(probs, 0.90)),
                                kept_092=S.top_p_ids(probs, 0.92), kept_095=S.top_p_ids(probs, 0.95),
                                mass_first_three=sum(probs[i] for i in ranking[:3])),
        "interface.top_p_shape": dict(leader_kept=len(S.top_p_ids([0.96, 0.01, 0.01, 0.01, 0.01], 0.90)),
                                      uniform_kept=len(S.top_p_ids([0.2] * 5, 0.90))),
        "interface.gpt2_legacy_top_p": dict(count_at_or_below=count, cutoff_index=cutoff,
                                            legacy_kept=S.gpt2_legacy_top_p_ids(probs, 0.90),
                                            paper_kept=S.top_p_ids(probs, 0.90)),
        "interface.stable_softmax": dict(
            same_probabilities=all(abs(a - b) < 1e-12 for a, b in zip(S.softmax_with_temperature(shifted), probs)),
            naive_overflows=any(math.isnan(v) for v in S.naive_softmax(shifted))),
    }


def decoding_figures(z: list[float], model=None) -> dict:
    """The ``decoding.*`` sampling figures and ``lab.temp_210``."""
    model = model or load_five_token_model()
    ln_scores = [0.0, math.log(2), math.log(3)]
    pair = S.softmax_with_temperature([0.1, 0.0])
    low, mid, high = (S.softmax_with_temperature(z, t) for t in (0.3, 1.0, 1.5))
    confident, flat = S.softmax_with_temperature(z, 0.5), S.softmax_with_temperature(z, 2.0)
    fraction = 0.05                                    # the article's example: a premise, not a result
    run = generate(model, INPUT_IDS, 5, choose=RuleChoice(S.SamplingRule(), torch.Generator().manual_seed(0)))
    with torch.no_grad():
        every_row = model(torch.tensor([run.ids]))[0]  # (8, V): the whole sequence, no cache
    return {
        "decoding.softmax_ln": dict(exponentials=[math.exp(v) for v in ln_scores],
                                    probs=S.softmax_with_temperature(ln_scores)),
        "decoding.gap_01": dict(ratio=pair[0] / pair[1]),
        "decoding.temp_low_high": dict(
            low_more_concentrated=max(low) > max(mid) and S.entropy(low) < S.entropy(mid),
            high_more_spread=max(high) < max(mid) and S.entropy(high) > S.entropy(mid),
            ranking_kept=S.ranked_ids(low) == S.ranked_ids(mid) == S.ranked_ids(high)),
        "decoding.min_p": dict(
            bar_rises_with_confidence=(fraction * max(confident) > fraction * max(flat) and
                                       len(S.min_p_ids(confident, fraction)) < len(S.min_p_ids(flat, fraction)))),
        "decoding.loop": dict(new_tokens=rows_read_right(run, every_row, len(INPUT_IDS)),
                              final_shape=[1, len(run.ids)]),
        "lab.temp_210": dict(t_1=S.softmax_with_temperature([2.0, 1.0, 0.0], 1.0),
                             t_05=S.softmax_with_temperature([2.0, 1.0, 0.0], 0.5)),
    }


def rows_read_right(run, every_row: torch.Tensor, prompt_length: int) -> int:
    """How many steps of a generation read the last row of the sequence so far: step t's
    logits must equal row ``prompt_length - 1 + t`` of one run over the final sequence (float64
    rounding aside). A loop that read another row, or lost its cache, counts fewer."""
    return sum(torch.allclose(torch.tensor(step.logits, dtype=every_row.dtype),
                              every_row[prompt_length - 1 + t], rtol=0, atol=1e-12)
               for t, step in enumerate(run.steps))


def random_logit_batch(rows: int = 4, vocab: int = 50_257, scale: float = 3.0, seed: int = 0) -> torch.Tensor:
    """A seeded (rows, vocab) batch of GPT-2-sized logits, N(0, scale²), in float64.

    Notebook 07's batched example. float64, so that the rules' decisions (a running sum
    against p, a probability against the min-p bar) do not depend on the CPU's float32
    kernels; ``tests/test_margins.py`` checks each is far from flipping."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, vocab, generator=generator, dtype=torch.float64) * scale


def sampling_figure_values(model=None) -> dict:
    """figure id -> values, for every sampling figure computed from the five-token model."""
    model = model or load_five_token_model()
    z = five_token_logits(model)
    return {**interface_figures(z), **decoding_figures(z, model)}
