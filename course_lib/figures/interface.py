"""Computers of the interface article's figures: one function per figure id (``interface.*``).

Notebooks 01 (``tok.hi_ni``), 02–06 (``gpt2.sizes``, ``toy.*``, ``tying``) and 07 (the sampling
figures) compute each value step by step and close with ``check_inline``, which requires their
value to equal the function's here; the unit tests call the same functions. The registry
(``data/figures.json`` → ``"computer"``) names the function of every id.

The toy figures come from the five-token model (``toys.five_token``); every function takes it as
``model`` (default: the shipped weights). The sampling figures read its last row of logits for
a|b|a; where the article states a premise (the greedy-path thought experiment, a 96 % leader),
the premise is an input here and its computed consequence is what is checked.
"""
from __future__ import annotations

import math

import torch

from .. import decoding as D
from ..gpt2.config import GPT2_SMALL_CONFIG
from ..model.attention import future_is_zero, layer_norm_is_per_position
from ..model.embeddings import dropout_rate, gpt2_sized_lookup, positions_of, rows_read, the_one
from ..model.lm_head import dot_and_cosine, logit_terms, output_table_parameters
from ..model.loss import backward_without_step, position_losses, shift_for_next_token
from ..tokens.bpe import gpt2_encoding, teaching_tokenizer
from ..toys.five_token import FIVE_TOKEN, INPUT_IDS, TEXT_IDS

# --------------------------------------------------------------------------- tokens, sizes (01, 02, 05)


def tok_hi_ni() -> dict:
    """interface.tok.hi_ni: "Hi 你!" as GPT-2 ids; the ids 你 is split over; its UTF-8 bytes."""
    tok = teaching_tokenizer()
    ids = tok.encode("Hi 你!")
    return dict(ids=ids, count=len(ids), space_id=tok.encode(" ")[0], ni_ids=tok.partial_ids(ids),
                ni_utf8=list("你".encode("utf-8")))


def gpt2_sizes() -> dict:
    """interface.gpt2.sizes: V and D of GPT-2 small; a 5-id lookup and the scores' shapes."""
    gpt2 = gpt2_sized_lookup(gpt2_encoding().encode("Hi 你!"), GPT2_SMALL_CONFIG, device="meta")   # shapes only
    V, D_ = gpt2["token_table"].shape
    return dict(vocab_size=V, width=D_, lookup_shape=list(gpt2["lookup"].shape),
                last_context_shape=list(gpt2["last_context"].shape), scores_shape=list(gpt2["scores"].shape))


def tying() -> dict:
    """interface.tying: parameters of GPT-2's input table + output layer, tied and untied."""
    V, D_ = GPT2_SMALL_CONFIG.vocab_size, GPT2_SMALL_CONFIG.n_embd
    return dict(tied=output_table_parameters(V, D_, tied=True), untied=output_table_parameters(V, D_, tied=False))


# --------------------------------------------------------------------------- the five-token model (02–06)


def _run(model):
    model = FIVE_TOKEN.load() if model is None else model
    logits, trace = FIVE_TOKEN.run(model)
    return model, logits, trace


def toy_vocab(model=None) -> dict:
    """interface.toy.vocab: pieces a…e, a|b|a as ids, B, heads, blocks, dropout, position rows."""
    model, _, _ = _run(model)
    vocab = FIVE_TOKEN.vocab
    return dict(pieces=vocab.pieces, input_ids=[vocab.id(p) for p in "a|b|a".split("|")],
                batch=FIVE_TOKEN.input_tensor().shape[0], n_head=model.config.n_head,
                n_layer=model.config.n_layer, dropout=dropout_rate(model),
                position_rows=model.position_embedding.weight.shape[0])


def toy_x0(model=None) -> dict:
    """interface.toy.x0: shapes of E[ids], P[:T] and X₀; both a's read row 0 of E."""
    model, _, trace = _run(model)
    E = model.token_embedding.weight.detach()
    a_positions = positions_of(INPUT_IDS, FIVE_TOKEN.vocab.id("a"))           # [0, 2]
    return dict(token_vectors_shape=list(trace["token_vectors"].shape),
                position_vectors_shape=list(trace["position_vectors"].shape),
                x0_shape=list(trace["x0"].shape),
                both_a_read_row=the_one(rows_read(INPUT_IDS, E, trace["token_vectors"][0, a_positions])),
                a_positions=a_positions)


def toy_attention(model=None) -> dict:
    """interface.toy.attention: the (3, 3) attention weights, zero on the future, rows sum to 1."""
    _, _, trace = _run(model)
    weights = trace["layers"][0]["attention_weights"][0, 0]                   # (3, 3)
    return dict(weights=weights, future_is_zero=future_is_zero(weights), row_sums=weights.sum(-1))


def toy_layernorm(model=None) -> dict:
    """interface.toy.layernorm: LN_f's eps, scale 1, offset 0, and that it works per position."""
    model, _, trace = _run(model)
    return dict(eps=model.ln_f.eps, scale=model.ln_f.weight.unique().item(),
                offset=model.ln_f.bias.unique().item(),
                per_position=layer_norm_is_per_position(model.ln_f, trace["layers"][0]["x2"][0]))


def toy_mlp(model=None) -> dict:
    """interface.toy.mlp: the MLP's weight shapes, its activation, the shapes of X₁ and X₂."""
    model, _, trace = _run(model)
    layer = trace["layers"][0]
    return dict(up_shape=list(model.blocks[0].mlp.up.weight.shape),
                down_shape=list(model.blocks[0].mlp.down.weight.shape), activation=model.config.activation,
                x1_shape=list(layer["x1"][0].shape), x2_shape=list(layer["x2"][0].shape))


def toy_h2(model=None) -> dict:
    """interface.toy.h2: h₂, the last row after LN_f, (4,)."""
    _, _, trace = _run(model)
    return dict(h2=trace["h"][0][2])


def toy_head_shape(model=None) -> dict:
    """interface.toy.head_shape: lm_head's weight (5, 4); one position's logits (1, 5); all (3, 5)."""
    model, _, trace = _run(model)
    W, b = model.lm_head.weight.detach(), model.lm_head.bias.detach()
    h = trace["h"][0]                                                          # (3, 4)
    return dict(weight_shape=list(W.shape), one_position_shape=list((h[2].unsqueeze(0) @ W.T + b).shape),
                all_positions_shape=list((h @ W.T + b).shape))


def toy_z1(model=None) -> dict:
    """interface.toy.z1: h₂, lm_head's row and bias for b, and z₁ = h₂ · W[1] + b[1]."""
    model, _, trace = _run(model)
    W, b = model.lm_head.weight.detach(), model.lm_head.bias.detach()
    h2 = trace["h"][0][2]
    _, z1 = logit_terms(h2, W[1], b[1])
    return dict(h2_6dp=h2, head_row_b=W[1], bias_b=b[1], z1=z1)


def toy_logits(model=None) -> dict:
    """interface.toy.logits: the last row of logits for a|b|a, (5,)."""
    _, logits, _ = _run(model)
    return dict(logits=logits[0, -1])


def toy_dot_vs_cos(model=None) -> dict:
    """interface.toy.dot_vs_cos: a logit is a dot product plus a bias, not a cosine."""
    model, logits, trace = _run(model)
    W, b = model.lm_head.weight.detach(), model.lm_head.bias.detach()
    cos = dot_and_cosine(trace["h"][0][2], W[1])
    return dict(dot_equals_norms_times_cos=abs(cos["dot"] - cos["norms_times_cosine"]) < 1e-12,
                logit_is_dot_plus_bias=abs(cos["dot"] + b[1].item() - logits[0, 2, 1].item()) < 1e-6,
                logit_differs_from_cosine=abs(logits[0, 2, 1].item() - cos["cosine"]) > 0.1)


def toy_targets(model=None) -> dict:
    """interface.toy.targets: a|b|a|b shifted into inputs and targets."""
    inputs, targets = shift_for_next_token(TEXT_IDS)
    return dict(inputs=inputs, targets=targets)


def toy_loss_last(model=None) -> dict:
    """interface.toy.loss_last: p(target) at the last position and its loss −log p."""
    _, logits, _ = _run(model)
    _, targets = shift_for_next_token(TEXT_IDS)
    losses = position_losses(logits, [targets])
    return dict(p_target=torch.softmax(logits[0, -1], dim=-1)[targets[-1]], loss=losses[-1])


def toy_loss_mean(model=None) -> dict:
    """interface.toy.loss_mean: the three position losses and the training loss (their mean)."""
    model, logits, _ = _run(model)
    _, targets = shift_for_next_token(TEXT_IDS)
    grads = backward_without_step(model, FIVE_TOKEN.input_tensor(), [targets])
    return dict(losses=position_losses(logits, [targets]), mean=grads["loss"])


def toy_grads(model=None) -> dict:
    """interface.toy.grads: after ``loss.backward()``, which weight groups got gradients; no step.
    (Fills ``model``'s ``.grad`` fields; no weight changes.)"""
    model, _, _ = _run(model)
    _, targets = shift_for_next_token(TEXT_IDS)
    grads = backward_without_step(model, FIVE_TOKEN.input_tensor(), [targets])
    return dict(**grads["groups"], weights_unchanged=grads["weights_unchanged"])


# --------------------------------------------------------------------------- sampling (07)


def five_token_logits(model=None) -> list[float]:
    """The five-token model's last row for a|b|a: logits[0, -1] as five floats."""
    return FIVE_TOKEN.last_row_logits(model).tolist()


def greedy(model=None) -> dict:
    """interface.greedy: the argmax id and its piece; argmax of logits = argmax of probabilities."""
    logits = FIVE_TOKEN.last_row_logits(model)
    z = logits.tolist()
    best = D.greedy_id(z)
    same = best == int(torch.argmax(torch.softmax(logits, dim=-1))) == D.ranked_ids(D.softmax_with_temperature(z))[0]
    return dict(id=best, token=FIVE_TOKEN.vocab.pieces[best], argmax_logit_equals_argmax_prob=same)


def greedy_path() -> dict:
    """interface.greedy_path: the article's premise (A 0.6 then 0.5, B 0.4 then 0.99): greedy
    takes A, whose path is less likely."""
    first, best_next = {"A": 0.6, "B": 0.4}, {"A": 0.5, "B": 0.99}
    paths = {t: first[t] * best_next[t] for t in first}
    return dict(greedy_path=paths["A"], other_path=paths["B"],
                greedy_is_best=max(first, key=first.get) == max(paths, key=paths.get))


def _rounded(model) -> list[float]:
    return [round(p, 4) for p in D.softmax_with_temperature(five_token_logits(model))]


def interval(model=None) -> dict:
    """interface.interval: the 4-d.p. probabilities laid end to end, five draws by u, and a
    zero-probability id never drawn (u on a 10,000-step grid plus the first boundary)."""
    rounded = _rounded(model)
    with_gap = rounded[:1] + [0.0] + rounded[1:]            # an id with probability 0 as id 1
    grid = [k / 10_000 for k in range(10_000)] + [rounded[0]]
    return dict(rounded_probs=rounded, rounded_sum=sum(rounded),
                picks=[[u, D.sample_interval(rounded, u)] for u in (0.50, 0.05, 0.93, 0.95, rounded[0])],
                zero_length_never_chosen=all(D.sample_interval(with_gap, u) != 1 for u in grid))


def draws(model=None) -> dict:
    """interface.draws: the frequencies of 100,000 seeded interval draws."""
    counts = D.draw_counts(_rounded(model), 100_000, seed=12)
    return dict(frequencies=[c / sum(counts) for c in counts])


def temperature(model=None) -> dict:
    """interface.temperature: τ keeps the ranking and the argmax; τ → 0 is greedy; τ = 0 is refused."""
    z = five_token_logits(model)
    table = [D.softmax_with_temperature(z, t) for t in (0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 4.0, 10.0)]
    ranking = D.ranked_ids(D.softmax_with_temperature(z))
    tops = {D.ranked_ids(p)[0] for p in table}
    try:
        D.softmax_with_temperature(z, 0.0)
        zero_rejected = False
    except ValueError:
        zero_rejected = True
    return dict(gap=z[1] - z[0], ranking_kept=all(D.ranked_ids(p) == ranking for p in table),
                greedy_id=next(iter(tops)) if len(tops) == 1 else None,
                cold_limit=D.softmax_with_temperature(z, 0.01),
                tied_cold_limit=D.softmax_with_temperature([1.5, 1.5, 0.2], 0.01),
                zero_temperature_rejected=zero_rejected)


def top_k(model=None) -> dict:
    """interface.top_k: the ranking, the two kept by k = 2, their mass, renormalised; k = 1 is greedy."""
    z = five_token_logits(model)
    probs = D.softmax_with_temperature(z)
    kept = D.top_k_ids(probs, 2)
    after = D.renormalize(probs, kept)
    return dict(order=D.ranked_ids(probs), kept_k2=kept, kept_mass=probs[kept[0]] + probs[kept[1]],
                p_b=after[1], p_a=after[0], k1_equals_greedy=D.top_k_ids(probs, 1) == [D.greedy_id(z)])


def top_k_ties() -> dict:
    """interface.top_k_ties: on a row with a tie at the k-th value, the strict cut keeps more
    than k ids, the course's rule exactly k."""
    tied_row = [0.5, 2.0, 1.0, 1.0, -1.0]
    return dict(strict_cut_keeps_more_than_k=len(D.top_k_strict_cut(tied_row, 2)) > 2,
                teaching_rule_keeps_exactly_k=len(D.top_k_ids(D.softmax_with_temperature(tied_row), 2)) == 2)


def top_p(model=None) -> dict:
    """interface.top_p: the ids top-p keeps at 0.90, 0.92, 0.95, and the masses involved."""
    probs = D.softmax_with_temperature(five_token_logits(model))
    kept_090 = D.top_p_ids(probs, 0.90)
    return dict(kept_090=kept_090, mass_090=sum(probs[i] for i in kept_090),
                kept_092=D.top_p_ids(probs, 0.92), kept_095=D.top_p_ids(probs, 0.95),
                mass_first_three=sum(probs[i] for i in D.ranked_ids(probs)[:3]))


def top_p_shape() -> dict:
    """interface.top_p_shape: top-p 0.9 keeps 1 id behind a 96 % leader, all 5 of a flat row."""
    return dict(leader_kept=len(D.top_p_ids([0.96, 0.01, 0.01, 0.01, 0.01], 0.90)),
                uniform_kept=len(D.top_p_ids([0.2] * 5, 0.90)))


def gpt2_legacy_top_p(model=None) -> dict:
    """interface.gpt2_legacy_top_p: GPT-2's old cutoff keeps one id fewer than the paper's rule."""
    probs = D.softmax_with_temperature(five_token_logits(model))
    count, cutoff = D.gpt2_legacy_cutoff(probs, 0.90)
    return dict(count_at_or_below=count, cutoff_index=cutoff,
                legacy_kept=D.gpt2_legacy_top_p_ids(probs, 0.90), paper_kept=D.top_p_ids(probs, 0.90))


def stable_softmax(model=None) -> dict:
    """interface.stable_softmax: logits + 1000 give the same probabilities; the naive softmax overflows."""
    z = five_token_logits(model)
    shifted = [v + 1000.0 for v in z]
    probs = D.softmax_with_temperature(z)
    return dict(same_probabilities=all(abs(a - b) < 1e-12 for a, b in zip(D.softmax_with_temperature(shifted), probs)),
                naive_overflows=any(math.isnan(v) for v in D.naive_softmax(shifted)))
