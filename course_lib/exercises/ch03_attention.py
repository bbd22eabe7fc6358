"""Exercises of notebook 03 (attention): the causal mask, one head of attention, splitting heads.

Each ``check_*`` takes the learner's function and returns a :class:`~.core.Result`. The
article's examples come from the five-token model's trace (``interface.toy.attention``) and the
lab model's new row (``lab.q6``, ``lab.heads``); the random cases are compared with
``course_lib.model.attention.causal_mask`` and ``model.gpt.CausalSelfAttention.split_heads``.
"""
from __future__ import annotations

import math

import torch

from ..model.attention import causal_mask
from ..model.gpt import CausalSelfAttention, GPTConfig
from .core import Fail, close, lab, run, seeded, tensor, toy
from .messages import say

def upper_or_lower():
    """The hint for a mask that lets a query read its future, in the notebook's language."""
    return say('position 0 attends to position 1: is your mask upper- or lower-triangular? True must mark the future (column > row)')


def _masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)


def check_make_causal_mask(fn):
    """``make_causal_mask(T)`` -> (T, T) booleans, True where the key is in the query's future."""
    def body(c):
        mask = tensor(c.call(3, case="T = 3"), "T = 3", shape=(3, 3))
        if mask.dtype != torch.bool:
            raise Fail(say('return booleans (dtype torch.bool), True where the key is in the future, so masked_fill can use it'))
        if not mask[0, 1] and mask[1, 0]:
            raise Fail(upper_or_lower())
        if mask.diagonal().any():
            raise Fail(say('the diagonal is masked: position t must see itself; mask only the keys strictly after the query'))
        if not torch.equal(mask, causal_mask(3)):
            raise Fail(say("for T = 3 your mask is not 'True exactly where column > row'"))
        _, _, trace = toy()
        weights = _masked_softmax(trace["layers"][0]["scores"][0, 0], mask)
        c.figure("interface.toy.attention", "weights", weights, say("with your mask the toy's weights miss the article's table"))
        c.figure("interface.toy.attention", "future_is_zero", bool((weights[mask] == 0).all()), upper_or_lower())
        c.proved(say('with your mask the toy reproduces interface.toy.attention (4 d.p., future = 0)'))
        for T in (1, 2, 5, 8):
            got = tensor(c.call(T, case=f"T = {T}"), f"T = {T}", shape=(T, T))
            if not torch.equal(got.bool(), causal_mask(T)):
                raise Fail(say("for T = {T} your mask is not 'True exactly where column > row' (build it from T, not from 3)", T=T))
        c.proved(say('T = 1, 2, 5, 8 match the causal rule'))
    return run("make_causal_mask", fn, body)


def reference_head(q, k, v):
    """softmax(q kᵀ / √d + mask) v with the course's mask, any leading dims: (out, weights)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = _masked_softmax(scores, causal_mask(q.shape[-2]))
    return weights @ v, weights


def _pair(out, case, q, v):
    if not (isinstance(out, tuple) and len(out) == 2):
        raise Fail(say('on {case} return two tensors: (output, weights)', case=case))
    T = q.shape[-2]
    weights = tensor(out[1], case, shape=q.shape[:-1] + (T,))
    return tensor(out[0], case, shape=v.shape), weights


def _diagnose_head(q, k, v, weights) -> None:
    """The usual mistakes, each with its hint (weights of one (T, T) head)."""
    T, d = q.shape[-2], q.shape[-1]
    if not torch.allclose(weights.sum(-1), torch.ones(T, dtype=weights.dtype), atol=1e-6):
        if torch.allclose(weights.sum(-2), torch.ones(T, dtype=weights.dtype), atol=1e-6):
            raise Fail(say("softmax each ROW (dim=-1): every query's weights must sum to 1"))
        raise Fail(say('the rows of your weights do not sum to 1: mask the scores with −inf BEFORE the softmax'))
    if (weights[causal_mask(T)] != 0).any():
        raise Fail(upper_or_lower() + say(' — apply the causal mask before the softmax'))
    scores = q @ k.transpose(-2, -1)
    for wrong, hint in ((scores, say('scale the scores by 1/√d, d the width of one head')),
                        (scores / d, say('divide the scores by √d, not by d'))):
        if close(weights, _masked_softmax(wrong, causal_mask(T)), 1e-9):
            raise Fail(hint)


def check_attention_head(fn):
    """``attention_head(q, k, v)`` -> (output, weights): softmax(q kᵀ / √d + mask) v, q/k/v (..., T, d)."""
    def body(c):
        _, _, trace = toy()
        layer = trace["layers"][0]
        q, k, v = (layer[n][0, 0].clone() for n in "qkv")                  # (3, 4) each
        out, weights = _pair(c.call(q, k, v, case=say("the toy's q, k, v (3, 4)")), say("the toy's q, k, v (3, 4)"), q, v)
        _diagnose_head(q, k, v, weights)
        c.figure("interface.toy.attention", "weights", weights, say("your weights miss the article's table (interface.toy.attention, 4 d.p.)"))
        if not close(out, weights @ v):
            raise Fail(say('the output is the weighted sum of the value rows: each query mixes the values with its own weights'))
        c.proved(say("the toy's weights reproduce interface.toy.attention (4 d.p.)"))
        _, _, lab_trace = lab()
        lab_layer = lab_trace["layers"][0]
        lq, lk, lv = (lab_layer[n].clone() for n in "qkv")                   # (1, 2, 6, 2)
        case = say("the lab's two heads, q of shape (1, 2, 6, 2)")
        try:
            _, lab_weights = _pair(c.call(lq, lk, lv, case=case), case, lq, lv)
        except Fail as fail:
            raise Fail(say('{fail} — with a batch, swap only the last two dimensions of k (the leading ones are batch and head), and softmax each row', fail=fail)) from None
        c.figure("lab.heads", "head1_on_roof", lab_weights[0, 0, 5, 5], say("on the lab's two heads row 6 misses lab.heads"))
        c.figure("lab.heads", "head1_on_cat", lab_weights[0, 0, 5, 1], say("on the lab's two heads row 6 misses lab.heads"))
        c.proved(say('batched over two heads it reproduces lab.heads (2 d.p.)'))
        g = seeded(3)
        for shape in ((1, 4), (5, 3), (2, 3, 6, 4)):
            q, k, v = (torch.randn(*shape, generator=g, dtype=torch.float64) * 3 for _ in range(3))
            case = say('random q, k, v of shape {shape}', shape=shape)
            out, weights = _pair(c.call(q, k, v, case=case), case, q, v)
            want_out, want_weights = reference_head(q, k, v)
            if not (close(weights, want_weights) and close(out, want_out)):
                raise Fail(say('on {case} your result differs from softmax(q kᵀ / √d + mask) v', case=case))
        c.proved(say("random (1, 4), (5, 3) and (2, 3, 6, 4) inputs match the course's reference"))
    return run("attention_head", fn, body)


def check_split_heads(fn):
    """``split_heads(x, n_head)``: (B, T, D) -> (B, H, T, d), head h holds features h·d … (h+1)·d − 1."""
    def body(c):
        model, _, trace = lab()
        with torch.no_grad():
            x = model.blocks[0].attn.query(trace["layers"][0]["ln1"])          # (1, 6, 4) before splitting
        case = say("the lab's queries (1, 6, 4), H = 2")
        heads = tensor(c.call(x.clone(), 2, case=case), case, shape=(1, 2, 6, 2))
        if torch.equal(heads, x.reshape(1, 2, 6, 2)):
            raise Fail(say("a plain reshape to (B, H, T, d) mixes positions into heads: first cut each position's D features into H groups, then move the head dimension in front of the positions"))
        c.figure("lab.q6", "q6", heads[0, :, 5, :].reshape(-1), say("row 6's two heads miss lab.q6: head h must hold features h·d … (h+1)·d − 1 of each position"))
        c.proved(say("the lab's row 6 splits into lab.q6's two heads (3 d.p.)"))
        g = seeded(4)
        for B, T, D, H in ((2, 5, 6, 3), (1, 1, 4, 1), (3, 4, 8, 2)):
            x = torch.randn(B, T, D, generator=g, dtype=torch.float64)
            case = say('x of shape {shape}, H = {H}', shape=(B, T, D), H=H)
            want = CausalSelfAttention(GPTConfig(n_embd=D, n_head=H)).split_heads(x)
            got = tensor(c.call(x.clone(), H, case=case), case, shape=want.shape)
            if not torch.equal(got, want):
                raise Fail(say("on {case} your heads differ from the course's split (head h holds features h·d … (h+1)·d − 1 of every position)", case=case))
        c.proved(say('random batches with H = 1, 2, 3 match CausalSelfAttention.split_heads'))
    return run("split_heads", fn, body)


EXERCISES = {"make_causal_mask": check_make_causal_mask, "attention_head": check_attention_head, "split_heads": check_split_heads}
