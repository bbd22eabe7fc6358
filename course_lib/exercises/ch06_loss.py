"""Exercises of notebook 06 (loss): shifted targets, the mean cross-entropy, one optimizer step.

The article's examples: a|b|a|b → inputs [0, 1, 0], targets [1, 0, 1] (``interface.toy.targets``);
the three position losses and their mean 1.36688185 (``interface.toy.loss_mean``, float32) and
the last position's 0.370652 (``interface.toy.loss_last``). Beyond the articles, one SGD step
on the five-token model must lower that loss. Random cases are compared with
``model.loss.shift_for_next_token`` and ``F.cross_entropy``.
"""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from ..model.loss import shift_for_next_token
from ..toys.five_token import FIVE_TOKEN, TEXT_IDS
from .core import Fail, close, run, seeded, tensor, toy
from .messages import say


def check_shift_targets(fn):
    """``shift_targets(text_ids)`` -> (inputs, targets): each position's target is the next id.
    ``text_ids`` is a list, a (T + 1,) tensor or a (B, T + 1) batch."""
    def body(c):
        out = c.call(list(TEXT_IDS), case="a|b|a|b = [0, 1, 0, 1]")
        if not (isinstance(out, tuple) and len(out) == 2):
            raise Fail(say('return two things: (inputs, targets)'))
        inputs, targets = (list(map(int, x)) for x in out)
        if targets == inputs or targets == TEXT_IDS:
            raise Fail(say("targets are the NEXT ids: each position's target is the id after it (yours are not shifted)"))
        if inputs == TEXT_IDS[1:] and targets == TEXT_IDS[:-1]:
            raise Fail(say('inputs and targets are swapped: the inputs are the text without its LAST id'))
        if len(inputs) != len(TEXT_IDS) - 1:
            raise Fail(say('the last id has no next token: the inputs drop the last id, the targets drop the first'))
        c.figure("interface.toy.targets", "inputs", inputs, say('a|b|a|b must give the inputs [0, 1, 0]'))
        c.figure("interface.toy.targets", "targets", targets, say('a|b|a|b must give the targets [1, 0, 1]'))
        c.proved("a|b|a|b → interface.toy.targets")
        g = seeded(14)
        batch = torch.randint(0, 50, (3, 9), generator=g)
        case = say('a (3, 9) batch tensor')
        out = c.call(batch.clone(), case=case)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise Fail(say('on {case} return two tensors: (inputs, targets)', case=case))
        if tuple(getattr(out[0], "shape", ())) == (2, 9):
            raise Fail(say('shift along the LAST dimension (the positions): a batch keeps its rows, each row loses one id'))
        inputs, targets = (tensor(x, case, shape=(3, 8)) for x in out)
        if not (torch.equal(inputs, batch[..., :-1]) and torch.equal(targets, batch[..., 1:])):
            raise Fail(say('shift along the LAST dimension (the positions): a batch keeps its rows, each row loses one id'))
        one = torch.tensor([7, 3])
        inputs, targets = c.call(one.clone(), case=say('a text of two ids'))
        if list(map(int, inputs)) != [7] or list(map(int, targets)) != [3]:
            raise Fail(say('a text of two ids gives one position: input [first], target [second]'))
        c.proved(say('a (3, 9) batch and a two-id text shift like {helper}', helper=shift_for_next_token.__name__))
    return run("shift_targets", fn, body)


def check_target_probs(fn):
    """``target_probs(logits, targets)``: at every position, the probability the model gives its
    target, softmax(logits)[target]; logits (…, V), targets (…) -> (…)."""
    def body(c):
        _, logits, _ = toy()
        targets = torch.tensor([TEXT_IDS[1:]])
        case = say("the toy's logits (1, 3, 5) and targets [[1, 0, 1]]")
        p = tensor(c.call(logits.clone(), targets.clone(), case=case, errors=ce_errors()), case, shape=(1, 3))
        probs = torch.softmax(logits, -1)
        if close(p, probs[0, :, [0, 1, 0]].diagonal().unsqueeze(0), 1e-12):
            raise Fail(say("look up each position's TARGET (the next id), not its input id"))
        if close(p, probs.amax(-1), 1e-12):
            raise Fail(say("take the target's probability, not the largest one"))
        c.figure("interface.toy.loss_last", "p_target", p[0, 2], say("the last position's p(target) misses 0.690284… (interface.toy.loss_last)"))
        c.proved(say("the last position's p(b) is 0.690284… (interface.toy.loss_last)"))
        g = seeded(21)
        z = torch.randn(2, 4, 7, generator=g, dtype=torch.float64) * 3
        t = torch.randint(0, 7, (2, 4), generator=g)
        got = tensor(c.call(z.clone(), t.clone(), case="a random (2, 4, 7) batch"), "a random (2, 4, 7) batch", shape=(2, 4))
        if not close(got, torch.softmax(z, -1).gather(-1, t.unsqueeze(-1)).squeeze(-1), 1e-12):
            raise Fail(say("on a random (2, 4, 7) batch your probabilities differ: softmax over dim=-1, then the target's entry per position"))
        c.proved(say('a random (2, 4, 7) batch matches softmax(logits).gather(-1, targets)'))
    return run("target_probs", fn, body)


def ce_errors():
    """(text in the error, hint) pairs for the usual mistakes of the loss, in the notebook's language."""
    return [("only integer tensors", say('pick one entry per position with integer indices: the row of each position, the column of its target'))]


def check_cross_entropy(fn):
    """``cross_entropy(logits, targets)``: the mean over positions of −log softmax(logits)[target];
    logits (…, V), targets (…) integers."""
    def body(c):
        _, logits, _ = toy()
        z, targets = logits.clone(), torch.tensor([TEXT_IDS[1:]])            # (1, 3, 5), (1, 3)
        case = say("the toy's logits (1, 3, 5) and targets [[1, 0, 1]]")
        loss = tensor(c.call(z.clone(), targets.clone(), case=case, errors=ce_errors()), case)
        if loss.numel() != 1:
            raise Fail(say('return one number (a 0-dim tensor), the mean over all positions; got shape {shape}', shape=tuple(loss.shape)))
        losses = F.cross_entropy(z.reshape(-1, 5), targets.reshape(-1), reduction="none")
        for wrong, hint in ((losses.sum(), say('average over the positions: divide the sum by their number')),
                            (-losses.mean(), say('the loss is −log p: a probability below 1 gives a POSITIVE loss')),
                            (F.cross_entropy(z.reshape(-1, 5), torch.tensor([0, 1, 0])), say('score the TARGETS (the next ids), not the inputs')),
                            (-torch.log_softmax(z.reshape(-1, 5), -1)[:, targets.reshape(-1)].mean(),
                             say("pick ONE entry per position (its own row, its target's column): indexing with the targets alone takes whole columns"))):
            if close(loss, wrong, 1e-9):
                raise Fail(hint)
        c.figure("interface.toy.loss_mean", "mean", loss, say('the mean loss misses interface.toy.loss_mean (float32, 8 d.p.)'))
        c.proved(say("the toy's loss reproduces interface.toy.loss_mean (float32, 8 d.p.)"))
        last = tensor(c.call(z[:, 2:].clone(), targets[:, 2:].clone(), case=say('the last position alone')), say('the last position alone'))
        c.figure("interface.toy.loss_last", "loss", last, say("the last position's loss misses interface.toy.loss_last (−ln 0.690284…)"))
        c.proved(say('the last position alone gives 0.370652 (interface.toy.loss_last)'))
        big = z + 1000.0
        got = tensor(c.call(big.clone(), targets.clone(), case="logits + 1000"), "logits + 1000")
        if not torch.isfinite(got).all():
            raise Fail(say("compute log-softmax stably: subtract each row's max before exp (your loss overflows on logits of 1000)"))
        g = seeded(15)
        for shape, V in (((4, 6), 11), ((5,), 3)):
            z = torch.randn(*shape, V, generator=g, dtype=torch.float64) * 5
            t = torch.randint(0, V, shape, generator=g)
            case = say('random logits {shape}', shape=shape + (V,))
            got = tensor(c.call(z.clone(), t.clone(), case=case, errors=ce_errors()), case)
            if not close(got.reshape(()), F.cross_entropy(z.reshape(-1, V), t.reshape(-1)), 1e-10):
                raise Fail(say('on {case} your loss differs from F.cross_entropy (flatten all positions, then average)', case=case))
        c.proved(say('logits + 1000, a (4, 6) batch and a flat (5, 3) case match F.cross_entropy'))
    return run("cross_entropy", fn, body)


def check_sgd_step(fn):
    """``sgd_step(model, ids, targets, lr)``: one plain gradient-descent step on the mean
    cross-entropy, w ← w − lr · ∂loss/∂w for every parameter; returns the loss BEFORE the step."""
    def body(c):
        ids, targets = FIVE_TOKEN.input_tensor(), torch.tensor([TEXT_IDS[1:]])
        model = FIVE_TOKEN.load()
        reference = copy.deepcopy(model)
        case = say('the five-token model, a|b|a → b|a|b, lr = 0.1')
        loss = c.call(model, ids, targets, 0.1, case=case,
                      errors=[("leaf Variable", say("update the weights with gradient tracking switched off (torch's no-grad mode)"))])
        c.figure("interface.toy.loss_mean", "mean", loss, say("return the loss before the step: it must be interface.toy.loss_mean's 1.36688185"))
        reference.zero_grad()
        F.cross_entropy(reference(ids).reshape(-1, 5), targets.reshape(-1)).backward()
        moved = {n: p.detach() - q.detach() for (n, p), (_, q) in zip(model.named_parameters(), reference.named_parameters())}
        if all(not d.any() for d in moved.values()):
            raise Fail(say('no weight changed: move every parameter by −lr times its gradient'))
        pairs = list(zip(model.named_parameters(), reference.named_parameters()))
        if all(close(p.detach(), q.detach() + 0.1 * q.grad, 1e-12) for (_, p), (_, q) in pairs):
            raise Fail(say('step AGAINST the gradient: subtract lr times the gradient (your loss goes up)'))
        for (name, p), (_, q) in pairs:
            if not close(p.detach(), q.detach() - 0.1 * q.grad, 1e-12):
                raise Fail(say('{name} did not move by −lr × its gradient', name=name))
        with torch.no_grad():
            after = F.cross_entropy(model(ids).reshape(-1, 5), targets.reshape(-1))
        if not after < loss:
            raise Fail(say('the loss did not go down after your step'))
        c.proved(say("the step lowers the loss below interface.toy.loss_mean's 1.36688185"))
        second_ref = copy.deepcopy(model)
        c.call(model, ids, targets, 0.1, case=say('a second step'))
        second_ref.zero_grad()
        F.cross_entropy(second_ref(ids).reshape(-1, 5), targets.reshape(-1)).backward()
        for (name, p), (_, q) in zip(model.named_parameters(), second_ref.named_parameters()):
            if not close(p.detach(), q.detach() - 0.1 * q.grad, 1e-12):
                raise Fail(say('the second step used stale gradients: clear them before each backward pass — they accumulate'))
        c.proved(say('a second step uses fresh gradients'))
    return run("sgd_step", fn, body)


EXERCISES = {"shift_targets": check_shift_targets, "target_probs": check_target_probs,
             "cross_entropy": check_cross_entropy, "sgd_step": check_sgd_step}
