"""Exercises of notebook 07 (sampling): the interval draw from u, temperature, top-k with ties,
top-p keeping the crossing token, min-p, greedy generation with a KV cache.

The article's examples: logits [2, 1, 0] at T = 1 and 0.5 (``lab.temp_210``); the five-token
row's top-k, top-p and interval draws (``interface.top_k``, ``interface.top_p``,
``interface.interval``); the bar of min-p (``decoding.min_p``); the lab model's greedy sentence
(``lab.detok``) and the five-token loop's shape (``decoding.loop``). Random and edge cases
(ties, −inf, rows of a batch) are compared with ``course_lib.decoding``'s rules and ``generate``.
"""
from __future__ import annotations

import torch

from .. import decoding as D
from ..model.gpt import GPT, GPTConfig
from ..toys.five_token import FIVE_TOKEN, INPUT_IDS
from ..toys.lab import LAB, LAB_PROMPT_IDS
from .core import Fail, close, run, seeded, tensor, toy
from .messages import say


def _row():
    """The five-token model's last row for a|b|a: logits (5,) and probabilities at τ = 1."""
    z = toy()[1][0, -1].clone()
    return z, torch.softmax(z, -1)


def _probs(out, like, case):
    out = tensor(out, case, shape=like.shape)
    if not torch.isfinite(out).all():
        raise Fail(say('on {case} your probabilities hold NaN or inf', case=case))
    return out


def _reference(mask_fn, probs, value):
    rows = probs.reshape(-1, probs.shape[-1])
    return D.renormalize_batched(rows, mask_fn(rows, value)).reshape(probs.shape)


def _kept(q) -> list[int]:
    """Ids with nonzero probability, most likely first (ties by id)."""
    return [i for i in D.ranked_ids(q.tolist()) if q[i] > 0]


def _random_rows(c, fn, mask_fn, values, seed, what):
    g = seeded(seed)
    for value in values:
        z = torch.randn(3, 40, generator=g, dtype=torch.float64) * 2
        z[0, 5:9] = z[0, 4]                                                  # a tie in row 0
        z[1, :6] = float("-inf")                                             # impossible ids in row 1
        probs = torch.softmax(z, -1)
        case = say('a random (3, 40) batch with ties and −inf, {what} = {value}', what=what, value=value)
        if not close(_probs(c.call(probs.clone(), value, case=case), probs, case), _reference(mask_fn, probs, value), 1e-12):
            raise Fail(say("on {case} your result differs row by row from the course's rule", case=case))


def _renormalised(c, out, case) -> None:
    if not torch.allclose(out.sum(-1), torch.ones((), dtype=out.dtype), atol=1e-9):
        raise Fail(say('on {case} renormalise: the kept probabilities must be divided by their sum (rows sum to 1)', case=case))


def check_apply_temperature(fn):
    """``apply_temperature(logits, tau)`` -> softmax(logits / τ) over the last dim; τ ≤ 0 raises ValueError."""
    def body(c):
        z = torch.tensor([2.0, 1.0, 0.0], dtype=torch.float64)
        for tau, name in ((1.0, "t_1"), (0.5, "t_05")):
            p = _probs(c.call(z.clone(), tau, case=f"[2, 1, 0] at τ = {tau}"), z, f"[2, 1, 0] at τ = {tau}")
            if tau == 0.5:
                after = torch.softmax(z, -1) / tau
                if close(p, after, 1e-9) or close(p, after / after.sum(), 1e-9):
                    raise Fail(say('divide the LOGITS by τ before the softmax (dividing probabilities does not reshape them)'))
                if close(p, torch.softmax(z * tau, -1), 1e-9):
                    raise Fail(say("divide by τ, don't multiply: τ < 1 must sharpen the distribution"))
            c.figure("lab.temp_210", name, p, say('[2, 1, 0] at τ = {tau} misses lab.temp_210', tau=tau))
        c.proved(say('[2, 1, 0] at τ = 1 and 0.5 reproduce lab.temp_210 (2 d.p.)'))
        row, _ = _row()
        cold = _probs(c.call(row.clone(), 0.01, case=say("the toy's row at τ = 0.01")), row, say("the toy's row at τ = 0.01"))
        c.figure("interface.temperature", "cold_limit", cold, say('τ = 0.01 must put almost all mass on b: subtract the max before exp'))
        tied = torch.tensor([1.5, 1.5, 0.2], dtype=torch.float64)
        c.figure("interface.temperature", "tied_cold_limit", _probs(c.call(tied, 0.01, case="[1.5, 1.5, 0.2] at τ = 0.01"), tied, "tied"),
                 say('two tied leaders at τ = 0.01 must share the mass equally'))
        c.proved(say('τ → 0 concentrates on b, tied leaders share it (interface.temperature)'))
        try:
            c.call(row.clone(), 0.0, case="τ = 0")
            refused = False
        except Fail:
            refused = True
        except ValueError:
            refused = True
        if not refused:
            raise Fail(say('τ = 0 divides by zero: raise ValueError when τ ≤ 0'))
        g = seeded(16)
        for tau in (0.3, 2.5):
            z = torch.randn(2, 30, generator=g, dtype=torch.float64) * 20 + 500
            case = say('logits around 500 at τ = {tau}', tau=tau)
            got = tensor(c.call(z.clone(), tau, case=case), case, shape=z.shape)
            if not torch.isfinite(got).all():
                raise Fail(say("subtract each row's max before exp: your probabilities overflow on logits around 500"))
            if not close(got, torch.softmax(z / tau, -1), 1e-12):
                raise Fail(say('on {case} your probabilities differ from softmax(z / τ) (subtract the row max first)', case=case))
        c.proved(say('τ = 0 refused; batches of logits around 500 match'))
    return run("apply_temperature", fn, body)


def check_top_k_filter(fn):
    """``top_k_filter(probs, k)``: keep exactly the k most likely ids (ties: the smaller id), renormalise."""
    def body(c):
        _, probs = _row()
        case = say("the toy's row, k = 2")
        out = _probs(c.call(probs.clone(), 2, case=case), probs, case)
        _renormalised(c, out, case)
        c.figure("interface.top_k", "kept_k2", _kept(out), say('k = 2 must keep b and a'))
        c.figure("interface.top_k", "p_b", out[1], say("k = 2: b's renormalised probability misses interface.top_k"))
        c.figure("interface.top_k", "p_a", out[0], say("k = 2: a's renormalised probability misses interface.top_k"))
        c.proved(say('k = 2 keeps b, a renormalised as interface.top_k (6 d.p.)'))
        tied = torch.softmax(torch.tensor([0.5, 2.0, 1.0, 1.0, -1.0], dtype=torch.float64), -1)
        case = say('logits [0.5, 2, 1, 1, −1], k = 2 (a tie at the 2nd place)')
        kept = _kept(_probs(c.call(tied.clone(), 2, case=case), tied, case))
        if len(kept) > 2:
            raise Fail(say("keep exactly k ids: among ties at the k-th value keep the smaller id (a '< k-th value' cut keeps them all)"))
        if kept != [1, 2]:
            raise Fail(say('among ties at the k-th value keep the SMALLER id (a stable sort keeps tied ids in id order; a top-k routine may pick either)'))
        c.figure("interface.top_k_ties", "teaching_rule_keeps_exactly_k", len(kept) == 2, say('keep exactly k'))
        c.proved(say('a tie at the k-th place keeps exactly k, the smaller id (interface.top_k_ties)'))
        _random_rows(c, fn, D.top_k_mask, (1, 3, 7), 17, "k")
        c.proved(say("random batches with ties and −inf, k = 1, 3, 7, match the course's TopK"))
    return run("top_k_filter", fn, body)


def check_top_p_filter(fn):
    """``top_p_filter(probs, p)``: walk the ids from most to least likely, keep each while the sum of
    those before it is < p (the token that crosses p is kept), renormalise."""
    def body(c):
        _, probs = _row()
        for p, name in ((0.90, "kept_090"), (0.92, "kept_092"), (0.95, "kept_095")):
            case = say("the toy's row, p = {p}", p=p)
            out = _probs(c.call(probs.clone(), p, case=case), probs, case)
            _renormalised(c, out, case)
            kept = _kept(out)
            want = D.top_p_ids(probs.tolist(), p)
            if kept == want[:-1]:
                raise Fail(say('the token that crosses p must be kept: keep a token while the sum BEFORE it is < p'))
            if sorted(kept) == sorted(range(len(kept))) and kept != want:
                raise Fail(say('walk the tokens from most to least likely (sort descending), not in id order'))
            c.figure("interface.top_p", name, kept, say("p = {p} misses interface.top_p's kept ids", p=p))
        c.proved(say("p = 0.90, 0.92, 0.95 keep interface.top_p's ids"))
        exact = torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)
        kept = _kept(_probs(c.call(exact.clone(), 0.75, case="[0.5, 0.25, 0.25], p = 0.75"), exact, "p = 0.75"))
        if len(kept) == 3:
            raise Fail(say('stop as soon as the kept mass reaches p: a sum equal to p is enough (0.5 + 0.25 = 0.75)'))
        leader = torch.tensor([0.96, 0.01, 0.01, 0.01, 0.01], dtype=torch.float64)
        c.figure("interface.top_p_shape", "leader_kept", len(_kept(c.call(leader.clone(), 0.9, case="a 96 % leader"))),
                 say('behind a 96 % leader p = 0.9 keeps the leader alone'))
        flat = torch.full((5,), 0.2, dtype=torch.float64)
        c.figure("interface.top_p_shape", "uniform_kept", len(_kept(c.call(flat.clone(), 0.9, case=say('five at 20 %')))),
                 say('five tokens at 20 % each: p = 0.9 keeps all five (the fifth crosses p)'))
        c.proved(say('a sum equal to p stops; a 96 % leader keeps 1, a flat row 5 (interface.top_p_shape)'))
        _random_rows(c, fn, D.top_p_mask, (0.5, 0.9, 0.99), 18, "p")
        c.proved(say("random batches with ties and −inf, p = 0.5, 0.9, 0.99, match the course's TopP"))
    return run("top_p_filter", fn, body)


def check_min_p_filter(fn):
    """``min_p_filter(probs, min_p)``: keep every id with probability ≥ min_p × the row's largest, renormalise."""
    def body(c):
        _, probs = _row()
        z, _ = _row()
        confident, flat = torch.softmax(z / 0.5, -1), torch.softmax(z / 2.0, -1)
        spread = torch.tensor([0.4, 0.35, 0.25], dtype=torch.float64)
        kept = _kept(_probs(c.call(spread.clone(), 0.3, case="[0.4, 0.35, 0.25], min_p = 0.3"), spread, "min_p = 0.3"))
        if len(kept) == 2:
            raise Fail(say('the bar is min_p × the LARGEST probability, not min_p × the sum (which is 1)'))
        counts = []
        for q, name in ((confident, "τ = 0.5"), (flat, "τ = 2")):
            case = say("the toy's row at {name}, min_p = 0.05", name=name)
            out = _probs(c.call(q.clone(), 0.05, case=case), q, case)
            _renormalised(c, out, case)
            counts.append(len(_kept(out)))
        c.figure("decoding.min_p", "bar_rises_with_confidence", counts[0] < counts[1],
                 say('the bar min_p × max p must rise with confidence: fewer ids kept at τ = 0.5 than at τ = 2'))
        c.proved(say('the bar rises with confidence: fewer ids at τ = 0.5 than at τ = 2 (decoding.min_p)'))
        edge = torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)
        kept = _kept(_probs(c.call(edge.clone(), 0.5, case="[0.5, 0.25, 0.25], min_p = 0.5"), edge, say('the bar 0.25')))
        if len(kept) != 3:
            raise Fail(say('a token exactly at the bar is kept (≥ min_p × max p)'))
        rows = torch.tensor([[0.9, 0.06, 0.04], [0.5, 0.44, 0.06]], dtype=torch.float64)
        got = _probs(c.call(rows.clone(), 0.1, case=say('two rows of different confidence')), rows, say('two rows'))
        if not close(got, _reference(D.min_p_mask, rows, 0.1), 1e-12):
            raise Fail(say("each row has its own bar: min_p × that row's own largest probability"))
        _random_rows(c, fn, D.min_p_mask, (0.05, 0.3), 19, "min_p")
        c.proved(say("a token at the bar is kept; batches with ties and −inf match the course's MinP"))
    return run("min_p_filter", fn, body)


def check_interval_draw(fn):
    """``interval_draw(probs, u)``: lay the probabilities end to end on [0, 1); return the id
    whose left-closed interval [start, end) holds u."""
    def body(c):
        _, probs = _row()
        rounded = torch.tensor([round(p, 4) for p in probs.tolist()], dtype=torch.float64)
        picks = []
        for u in (0.50, 0.05, 0.93, 0.95, float(rounded[0])):
            got = c.call(rounded.clone(), u, case=f"u = {u}")
            got = int(got.item() if isinstance(got, torch.Tensor) else got)
            if u == float(rounded[0]) and got == 0:
                raise Fail(say('intervals are left-closed [start, end): u equal to a boundary belongs to the NEXT id'))
            picks.append([u, got])
        c.figure("interface.interval", "picks", picks, say('u = 0.50, 0.05, 0.93, 0.95 and 0.2203 must land as in interface.interval'))
        with_gap = torch.cat([rounded[:1], torch.zeros(1, dtype=torch.float64), rounded[1:]])
        grid = [k / 1000 for k in range(1000)] + [float(rounded[0])]
        chosen = {int(c.call(with_gap.clone(), u, case=say('a zero-probability id, u = {u}', u=u))) for u in grid}
        c.figure("interface.interval", "zero_length_never_chosen", 1 not in chosen, say('an id with probability 0 has an empty interval: it is never drawn'))
        c.proved(say('u = 0.50, 0.05, 0.93, 0.95, 0.2203 pick as interface.interval; a zero-length interval is never drawn'))
        g = seeded(20)
        for _ in range(30):
            q = torch.softmax(torch.randn(8, generator=g, dtype=torch.float64) * 2, -1)
            u = float(torch.rand((), generator=g, dtype=torch.float64)) * float(q.cumsum(0)[-1])
            if int(c.call(q.clone(), u, case=say('random probabilities, u = {u:.3f}', u=u))) != D.sample_interval(q.tolist(), u):
                raise Fail(say('on random probabilities your id differs: the first id whose running sum is > u'))
        c.proved(say('30 seeded draws match decoding.sample_interval'))
    return run("interval_draw", fn, body)


class ModelSpy:
    """The model as the learner's loop sees it, noting each call's length and cache."""

    def __init__(self, model):
        self.model, self.config, self.calls = model, model.config, []

    def new_cache(self):
        return self.model.new_cache()

    def __call__(self, ids, cache=None):
        ids = torch.as_tensor(ids)
        self.calls.append((ids.shape[-1], cache))
        return self.model(ids, cache=cache)


def _spied_run(c, model, prompt, n, case):
    spy = ModelSpy(model)
    with torch.no_grad():
        ids = c.call(spy, list(prompt), n, case=case, errors=[("longer than the position table",
                     say('with a cache feed only the new id (shape (1, 1)): the cache already holds the earlier positions'))])
    ids = [int(i) for i in (ids.reshape(-1).tolist() if isinstance(ids, torch.Tensor) else ids)]
    later = spy.calls[1:]
    if not spy.calls or spy.calls[0][1] is None:
        raise Fail(say('use the KV cache: make a new cache from the model and run the whole prompt through it once'))
    if any(cache is None for _, cache in later):
        raise Fail(say('feed each new id together WITH the cache: alone, the model sees a one-token sequence'))
    if any(T != 1 for T, _ in later):
        raise Fail(say('with a cache feed only the new id (shape (1, 1)): the cache already holds the earlier positions'))
    if len(ids) != len(prompt) + n:
        raise Fail(say('return the prompt plus the {n} new ids ({total} in all), got {got}: append each chosen id', n=n, total=len(prompt) + n, got=len(ids)))
    return ids


def check_generate_cached(fn):
    """``generate_cached(model, prompt_ids, n_new)``: greedy generation with a KV cache: run the prompt
    once, then feed only each new id; return the prompt's ids plus the n_new new ones (a list)."""
    def body(c):
        lab_model = LAB.load()
        ids = _spied_run(c, lab_model, LAB_PROMPT_IDS, 2, say("the lab's 'the cat climbed the', 2 new ids"))
        c.figure("lab.detok", "ids", ids, say("greedy with a cache must write 'the cat climbed the roof.' (lab.detok's ids)"))
        c.proved(say("the lab model writes 'the cat climbed the roof.' (lab.detok)"))
        five = FIVE_TOKEN.load()
        ids = _spied_run(c, five, INPUT_IDS, 5, say('a|b|a, 5 new ids'))
        c.figure("decoding.loop", "final_shape", [1, len(ids)], say('five new ids after a|b|a make a (1, 8) sequence'))
        if ids != D.generate(five, INPUT_IDS, 5).ids:
            raise Fail(say("on a|b|a your greedy ids differ: take the argmax of the LAST row of each step's logits"))
        c.proved(say('a|b|a + 5 greedy steps: (1, 8) (decoding.loop), the ids of decoding.generate'))
        torch.manual_seed(0)
        random_model = GPT(GPTConfig(vocab_size=30, n_positions=24, n_embd=8, n_head=2, n_layer=2)).double().eval()
        ids = _spied_run(c, random_model, [3, 1, 4, 1, 5], 12, say('a random 2-layer model, 12 new ids'))
        if ids != D.generate(random_model, [3, 1, 4, 1, 5], 12).ids:
            raise Fail(say('on a random 2-layer model your ids differ from greedy decoding without shortcuts'))
        c.proved(say('a random 2-layer model: 12 cached steps equal decoding.generate'))
    return run("generate_cached", fn, body)


EXERCISES = {"interval_draw": check_interval_draw, "apply_temperature": check_apply_temperature,  # notebook 07's order
             "top_k_filter": check_top_k_filter, "top_p_filter": check_top_p_filter, "min_p_filter": check_min_p_filter,
             "generate_cached": check_generate_cached}
