"""Exercises of notebook 04 (block): LayerNorm, the MLP, the Pre-Norm block.

The article's examples: the lab's u₆ = LN(x₆) (``lab.x6``), and the five-token model's h₂
(``interface.toy.h2``, float32 to 10 d.p.) with the learner's LayerNorm, MLP or block in place of
the model's. Random cases are compared with ``torch.nn.functional.layer_norm`` and the model's
own ``MLP`` and ``Block`` (``course_lib.model.gpt``).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..toys.lab import NEW_ROW
from .core import Fail, close, lab, run, seeded, tensor, toy
from .messages import say

H2 = "interface.toy.h2"


def _layer_norm_mistakes(x, eps):
    """What the usual wrong LayerNorms give on x (…, D): (output, hint) pairs."""
    mean = x.mean(-1, keepdim=True)
    return [((x - mean) / torch.sqrt(x.var(-1, keepdim=True) + eps), say('use the biased variance: divide by D, not D − 1, as LayerNorm does')),
            ((x - mean) / (x.var(-1, unbiased=False, keepdim=True).sqrt() + eps), say('eps goes inside the square root: add it to the variance, not to the standard deviation')),
            ((x - x.mean(0, keepdim=True)) / torch.sqrt(x.var(0, unbiased=False, keepdim=True) + eps),
             say("normalise each position's own features (the last dimension), not across positions")),
            ((x - mean) / x.var(-1, unbiased=False, keepdim=True).sqrt(), say('add eps to the variance before the square root'))]


def _diagnose_layer_norm(out, x, eps) -> None:
    if close(out, F.layer_norm(x, x.shape[-1:], eps=eps), 1e-12):
        return
    for wrong, hint in _layer_norm_mistakes(x, eps):
        if close(out, wrong, 1e-12):
            raise Fail(hint)


def check_layer_norm(fn):
    """``layer_norm(x, eps=1e-5)``: each row of x (…, D) to mean 0, variance 1 (scale 1, offset 0)."""
    def body(c):
        model, _, trace = lab()
        x = trace["x0"][0].clone()                                           # (6, 4)
        case = say("the lab's X₀ (6, 4)")
        out = tensor(c.call(x.clone(), 1e-5, case=case), case, shape=(6, 4))
        _diagnose_layer_norm(out, x, 1e-5)
        c.figure("lab.x6", "u6", out[NEW_ROW], say("row 6 misses lab.x6's u₆ = LN(x₆)"))
        c.proved(say("the lab's u₆ reproduces lab.x6 (3 d.p.)"))
        toy_model, _, toy_trace = toy()
        x2 = toy_trace["layers"][0]["x2"][0].clone()                         # (3, 4)
        h = tensor(c.call(x2.clone(), toy_model.ln_f.eps, case=say("the toy's X₂ (3, 4)")), say("the toy's X₂ (3, 4)"), shape=(3, 4))
        _diagnose_layer_norm(h, x2, toy_model.ln_f.eps)
        c.figure(H2, "h2", h[2], say("the toy's last row after your LayerNorm misses h₂ (interface.toy.h2, float32)"))
        c.proved(say("the toy's h₂ reproduces interface.toy.h2 (float32, 10 d.p.)"))
        constant = torch.full((2, 4), 3.0, dtype=torch.float64)
        out = tensor(c.call(constant, 1e-5, case=say('a constant row')), say('a constant row'), shape=(2, 4))
        if not torch.isfinite(out).all():
            raise Fail(say('a constant row has variance 0: add eps to the variance before the square root'))
        g = seeded(9)
        for shape, eps in (((5, 8), 1e-5), ((2, 3, 6), 1e-2), ((1, 4), 0.5)):
            x = torch.randn(*shape, generator=g, dtype=torch.float64) * 4 + 1
            case = say('random x of shape {shape}, eps = {eps}', shape=shape, eps=eps)
            out = tensor(c.call(x.clone(), eps, case=case), case, shape=shape)
            _diagnose_layer_norm(out, x, eps)
            if not close(out, F.layer_norm(x, shape[-1:], eps=eps), 1e-10):
                raise Fail(say('on {case} your result differs from LayerNorm (use the eps you are given)', case=case))
        c.proved(say('a constant row, batches and other eps match F.layer_norm'))
    return run("layer_norm", fn, body)


def _mlp_weights(mlp):
    return [t.detach().clone() for t in (mlp.up.weight, mlp.up.bias, mlp.down.weight, mlp.down.bias)]


def mlp_errors():
    """(text in the error, hint) pairs for the usual mistakes of the MLP, in the notebook's language."""
    return [("cannot be multiplied", say('nn.Linear stores its weight as (out, in): multiply x by the transposed weight, then add the bias'))]


def check_mlp_forward(fn):
    """``mlp_forward(x, W_up, b_up, W_down, b_down)`` = ReLU(x W_upᵀ + b_up) W_downᵀ + b_down, x (…, D)."""
    def body(c):
        model, _, trace = toy()
        layer, mlp = trace["layers"][0], model.blocks[0].mlp
        weights = _mlp_weights(mlp)
        ln2 = layer["ln2"][0].clone()                                        # (3, 4)
        case = say("the toy's LN₂(X₁) (3, 4) and its MLP 4→16→4")
        out = tensor(c.call(ln2.clone(), *weights, case=case, errors=mlp_errors()), case, shape=(3, 4))
        W1, b1, W2, b2 = weights
        for wrong, hint in (((ln2 @ W1.T + b1) @ W2.T + b2, say('apply ReLU between the two layers')),
                            (torch.relu(torch.relu(ln2 @ W1.T + b1) @ W2.T + b2), say('ReLU only between the two layers, not after the second')),
                            (F.gelu(ln2 @ W1.T + b1) @ W2.T + b2, say("the toy's activation is ReLU, not GELU")),
                            (torch.relu(ln2 @ W1.T) @ W2.T, say('add the biases b_up and b_down'))):
            if close(out, wrong, 1e-12):
                raise Fail(hint)
        with torch.no_grad():
            h = model.ln_f(layer["x1"][0] + out)
        c.figure(H2, "h2", h[2], say('LN_f(X₁ + your MLP) misses h₂ (interface.toy.h2, float32)'))
        c.figure("interface.toy.mlp", "x2_shape", list((layer["x1"][0] + out).shape), say('X₂ must keep the shape 3×4'))
        c.proved(say('LN_f(X₁ + your MLP) reproduces interface.toy.h2 (float32, 10 d.p.)'))
        g = seeded(10)
        for shape in ((2, 5, 4), (7, 4)):
            x = torch.randn(*shape, generator=g, dtype=torch.float64)
            case = say('random x of shape {shape}', shape=shape)
            got = tensor(c.call(x.clone(), *weights, case=case, errors=mlp_errors()), case, shape=shape)
            with torch.no_grad():
                if not close(got, mlp(x), 1e-12):
                    raise Fail(say("on {case} your MLP differs from the model's", case=case))
        c.proved(say("random batches match the model's MLP"))
    return run("mlp_forward", fn, body)


def check_pre_norm_block(fn):
    """``pre_norm_block(x, ln1, attn, ln2, mlp)``: the Pre-Norm block, X₁ = X + attn(ln1(X)),
    X₂ = X₁ + mlp(ln2(X₁)); the four arguments are functions (the model's modules)."""
    def body(c):
        model, _, trace = toy()
        b = model.blocks[0]
        x0 = trace["x0"].clone()                                             # (1, 3, 4)
        with torch.no_grad():
            out = tensor(c.call(x0.clone(), b.ln_1, b.attn, b.ln_2, b.mlp, case=say("the toy's X₀ (1, 3, 4)")),
                         say("the toy's X₀ (1, 3, 4)"), shape=(1, 3, 4))
            post = b.ln_1(x0 + b.attn(x0))
            post = b.ln_2(post + b.mlp(post))
            u = b.ln_1(x0)
            on_normed = u + b.attn(u)
            on_normed = b.ln_2(on_normed) + b.mlp(b.ln_2(on_normed))
            x1 = x0 + b.attn(b.ln_1(x0))
            no_second = b.mlp(b.ln_2(x1))
            h = model.ln_f(out)
        for wrong, hint in ((post, say("that is Post-Norm: GPT-2 normalises the INPUT of each sublayer and adds the sublayer's output to X unnormalised")),
                            (on_normed, say("add the sublayer's output to X itself, not to the normalised LN(X)")),
                            (no_second, say('the MLP has a residual add too: its output is added to X₁'))):
            if close(out, wrong, 1e-12):
                raise Fail(hint)
        c.figure(H2, "h2", h[0, 2], say("LN_f of your block's output misses h₂ (interface.toy.h2, float32)"))
        if not close(out, trace["layers"][0]["x2"], 1e-12):
            raise Fail(say("your block's X₂ differs from the model's"))
        c.proved(say('LN_f(your block(X₀)) reproduces interface.toy.h2 (float32, 10 d.p.)'))
        lab_model, _, lab_trace = lab()
        lb = lab_model.blocks[0]
        with torch.no_grad():
            got = tensor(c.call(lab_trace["x0"].clone(), lb.ln_1, lb.attn, lb.ln_2, lb.mlp, case=say("the lab's X₀ (1, 6, 4)")),
                         say("the lab's X₀ (1, 6, 4)"), shape=(1, 6, 4))
        if not close(got, lab_trace["layers"][0]["x2"], 1e-12):
            raise Fail(say("on the lab's X₀ (two heads) your block's X₂ differs from the model's"))
        c.proved(say("the lab's two-head block gives the model's X₂"))
    return run("pre_norm_block", fn, body)


EXERCISES = {"layer_norm": check_layer_norm, "mlp_forward": check_mlp_forward, "pre_norm_block": check_pre_norm_block}
