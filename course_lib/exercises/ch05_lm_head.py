"""Exercises of notebook 05 (lm_head): one logit written out, all logits as dot products, a
numerically stable softmax.

The article's examples: z₁ = 2.096655 (``interface.toy.z1``), the toy's last row of logits
(``interface.toy.logits``, float32 in full), the decoding article's (0, ln 2, ln 3) → (1/6, 2/6,
3/6) (``decoding.softmax_ln``) and logits + 1000 (``interface.stable_softmax``). Random cases are
compared with the model's ``lm_head`` and ``torch.softmax``.
"""
from __future__ import annotations

import math

import torch

from .core import Fail, close, run, seeded, tensor, toy
from .messages import say


def _head():
    model, logits, trace = toy()
    return (trace["h"][0].clone(), model.lm_head.weight.detach().clone(), model.lm_head.bias.detach().clone(), logits[0])


def check_one_logit(fn):
    """``one_logit(h, w, b)``: one score, Σᵢ h[i]·w[i] + b, as a Python float (a loop is fine)."""
    def body(c):
        h, W, b, _ = _head()
        z1 = c.call(h[2].clone(), W[1].clone(), float(b[1]), case=say("h₂ and lm_head's row and bias for b"))
        if isinstance(z1, torch.Tensor) and z1.numel() == 1:
            z1 = z1.item()
        if not isinstance(z1, (int, float)):
            raise Fail(say('return one number (a float), got a {type_name}', type_name=type(z1).__name__))
        if abs(z1 - (float(h[2] @ W[1]))) < 1e-9:
            raise Fail(say("add the bias b: a logit is the dot product PLUS the token's bias"))
        c.figure("interface.toy.z1", "z1", z1, say("z₁ misses the article's 2.096655: multiply feature by feature, add them up, add the bias"))
        c.proved(say('z₁ reproduces interface.toy.z1 (6 d.p.)'))
        g = seeded(11)
        for D in (1, 4, 9):
            h, w = torch.randn(D, generator=g, dtype=torch.float64), torch.randn(D, generator=g, dtype=torch.float64)
            got = c.call(h, w, -0.5, case=say('random h, w of width {D}', D=D))
            if abs(float(got) - (float(h @ w) - 0.5)) > 1e-9:
                raise Fail(say('on random vectors of width {D} your score differs from h · w + b', D=D))
        c.proved(say('random widths 1, 4, 9 match h · w + b'))
    return run("one_logit", fn, body)


def check_all_logits(fn):
    """``all_logits(H, W, b)``: every position against every token, H Wᵀ + b; H (…, D), W (V, D) -> (…, V)."""
    def body(c):
        H, W, b, want = _head()
        case = say("the toy's H (3, 4), W (5, 4), b (5,)")
        Z = tensor(c.call(H.clone(), W, b, case=case, errors=[("cannot be multiplied", say('W is (V, D), one row per token: every row of H meets every row of W (use W transposed)'))]),
                   case, shape=(3, 5))
        if close(Z, H @ W.T, 1e-12):
            raise Fail(say('add the bias b (one per token) to every row'))
        unit = torch.nn.functional.normalize
        if close(Z, unit(H, dim=-1) @ unit(W, dim=-1).T + b, 1e-9) or close(Z, unit(H, dim=-1) @ unit(W, dim=-1).T, 1e-9):
            raise Fail(say('a logit is a plain dot product plus bias, not a cosine: do not normalise H or W'))
        c.figure("interface.toy.logits", "logits", Z[2], say('the last row misses interface.toy.logits (float32 in full)'))
        c.proved(say('the last row reproduces interface.toy.logits (float32, every digit)'))
        g = seeded(12)
        for shape, V in (((2, 3, 6), 7), ((1, 6), 50)):
            H = torch.randn(*shape, generator=g, dtype=torch.float64)
            W = torch.randn(V, shape[-1], generator=g, dtype=torch.float64)
            b = torch.randn(V, generator=g, dtype=torch.float64)
            case = say('H of shape {shape}, V = {V}', shape=shape, V=V)
            got = tensor(c.call(H, W, b, case=case), case, shape=shape[:-1] + (V,))
            if not close(got, torch.nn.functional.linear(H, W, b), 1e-9):
                raise Fail(say('on {case} your logits differ from H Wᵀ + b', case=case))
        c.proved(say('a (2, 3, 6) batch and V = 50 match nn.Linear'))
    return run("all_logits", fn, body)


def check_stable_softmax(fn):
    """``stable_softmax(z)``: softmax over the last dim of z (…, V), without overflow."""
    def body(c):
        scores = torch.tensor([0.0, math.log(2), math.log(3)], dtype=torch.float64)
        p = tensor(c.call(scores.clone(), case="(0, ln 2, ln 3)"), "(0, ln 2, ln 3)", shape=(3,))
        c.figure("decoding.softmax_ln", "probs", p, say('(0, ln 2, ln 3) must give (1/6, 2/6, 3/6): exp each score, divide by their sum'))
        c.proved("(0, ln 2, ln 3) → (1/6, 2/6, 3/6) (decoding.softmax_ln)")
        _, _, _, logits = _head()
        z = logits[2].clone()
        big = tensor(c.call(z + 1000.0, case=say("the toy's logits + 1000")), say("the toy's logits + 1000"), shape=(5,))
        if not torch.isfinite(big).all():
            raise Fail(say('subtract the row max before exp: your softmax overflows on logits of 1000'))
        c.figure("interface.stable_softmax", "same_probabilities", close(big, torch.softmax(z, -1), 1e-12),
                 say('logits + 1000 must give the same probabilities as the logits'))
        c.proved(say("the toy's logits + 1000 give the same probabilities (interface.stable_softmax)"))
        rows = torch.tensor([[1000.0, 999.0, 998.0], [0.0, 1.0, -1.0]], dtype=torch.float64)
        got = tensor(c.call(rows.clone(), case=say('two rows [1000, 999, 998] and [0, 1, −1]')), say('two rows'), shape=(2, 3))
        if not torch.isfinite(got).all():
            raise Fail(say("subtract each row's OWN max, not the max of the whole tensor"))
        if not close(got, torch.softmax(rows, -1), 1e-12):
            raise Fail(say('softmax each row on its own (over the last dimension): every row must sum to 1'))
        masked = torch.tensor([[2.0, float("-inf"), 0.5]], dtype=torch.float64)
        got = tensor(c.call(masked.clone(), case=say('a row with −inf')), say('a row with −inf'), shape=(1, 3))
        if not close(got, torch.softmax(masked, -1), 1e-12):
            raise Fail(say('a −inf logit must get probability exactly 0 (exp(−inf) = 0) and the rest still sum to 1'))
        g = seeded(13)
        z = torch.randn(4, 6, 9, generator=g, dtype=torch.float64) * 50
        if not close(tensor(c.call(z.clone(), case="random (4, 6, 9)"), "random (4, 6, 9)"), torch.softmax(z, -1), 1e-12):
            raise Fail(say('on random logits of shape (4, 6, 9) your softmax differs from a softmax over the last dimension'))
        c.proved(say('rows of different scale, −inf and a (4, 6, 9) batch match torch.softmax'))
    return run("stable_softmax", fn, body)


def check_head_parameters(fn):
    """``head_parameters(V, D, tied)``: weights in the input table (V, D) plus a bias-free output
    layer (V, D), counting a table shared by both (``tied=True``) once."""
    def body(c):
        V, D = 50257, 768
        tied, untied = (c.call(V, D, flag, case=say('GPT-2 small, tied={flag}', flag=flag)) for flag in (True, False))
        if tied == untied:
            raise Fail(say('a tied table is ONE tensor used twice: count it once when tied=True'))
        if untied == V * D + V * D + V:
            raise Fail(say('the output layer here has no bias: count only its (V, D) weight'))
        c.figure("interface.tying", "tied", tied, say('tied: one (V, D) table, V·D weights'))
        c.figure("interface.tying", "untied", untied, say('untied: two (V, D) tables, 2·V·D weights'))
        c.proved(say('GPT-2 small: 38,597,376 tied, 77,194,752 untied (interface.tying)'))
        for V, D in ((5, 4), (12, 4), (1, 1)):
            for flag in (True, False):
                tables = 1 if flag else 2                      # a shared table counts once
                if c.call(V, D, flag, case=f"V = {V}, D = {D}") != tables * V * D:
                    raise Fail(say('V = {V}, D = {D}, tied={flag}: count the (V, D) table(s), a shared one once', V=V, D=D, flag=flag))
        c.proved(say("the toys' sizes (5×4, 12×4) and 1×1 count the same way"))
    return run("head_parameters", fn, body)


EXERCISES = {"one_logit": check_one_logit, "all_logits": check_all_logits, "head_parameters": check_head_parameters,
             "stable_softmax": check_stable_softmax}
