"""Exercises of notebook 02 (embeddings): lookup as one-hot × E, X₀ = E[ids] + P[:T], the last
position's scores against every row.

The article's examples: the lab model's x₆ (``lab.x6``), the five-token model's X₀
(``interface.toy.x0``) and GPT-2-sized shapes (``interface.gpt2.sizes``); random cases are
compared with ``model.embeddings`` and the model's own embedding tables.
"""
from __future__ import annotations

import torch

from ..gpt2.config import GPT2_SMALL_CONFIG
from ..model.gpt import GPTConfig
from ..model.embeddings import gpt2_sized_lookup, one_hot_lookup, rows_read, the_one
from ..toys.five_token import INPUT_IDS
from ..toys.lab import LAB_PROMPT_IDS, NEW_ROW, ROOF
from .core import Fail, close, lab, run, seeded, tensor, toy
from .messages import say

LAB_IDS = LAB_PROMPT_IDS + [ROOF]
def one_hot_errors():
    """(text in the error, hint) pairs for the usual mistakes of a one-hot product, in the notebook's language."""
    return [("cannot be multiplied", say('the one-hot must be as wide as the vocabulary (one column per row of E), not the largest id + 1')),
                  ("dtype", say("a one-hot holds integers: give it E's dtype before the product"))]


def _tables(model):
    return model.token_embedding.weight.detach().clone(), model.position_embedding.weight.detach().clone()


def check_one_hot_rows(fn):
    """``one_hot_rows(ids, E)``: ids (T,) or (B, T) -> one_hot(ids) @ E, (…, D)."""
    def body(c):
        model, _, _ = lab()
        E, _ = _tables(model)                                               # (12, 4)
        ids = torch.tensor(LAB_IDS)
        case = say("the lab's ids [0, 2, 4, 5, 1, 6] and its (12, 4) table")
        rows = tensor(c.call(ids.clone(), E, case=case, errors=one_hot_errors()), case, shape=(6, 4))
        if not torch.equal(rows, E[ids]):
            raise Fail(say('on {case} row t must be the row of E that the one-hot of ids[t] selects', case=case))
        c.figure("lab.x6", "e6", rows[NEW_ROW], say("␣roof's row misses lab.x6's E[6]"))
        c.proved(say("the lab's ␣roof reads lab.x6's E[6] (1 d.p.)"))
        E5, _ = _tables(toy()[0])
        small = torch.tensor([0, 1, 0])                                     # largest id 1 < V − 1 = 4
        case = say('ids [0, 1, 0] of the five-token table (5, 4)')
        rows = tensor(c.call(small.clone(), E5, case=case), case, shape=(3, 4))
        c.figure("interface.toy.x0", "both_a_read_row", the_one(rows_read(small, E5, rows[[0, 2]])),
                 say("both a's must read row 0 of E"))
        c.proved(say("both a's of a|b|a read row 0 (interface.toy.x0)"))
        g = seeded(2)
        for shape, V, D in (((7,), 9, 3), ((2, 5), 6, 4), ((1,), 50, 8)):
            ids = torch.randint(0, V, shape, generator=g)
            table = torch.randn(V, D, generator=g, dtype=torch.float64)
            case = say('random ids of shape {shape}, table ({V}, {D})', shape=shape, V=V, D=D)
            got = tensor(c.call(ids.clone(), table, case=case), case, shape=shape + (D,))
            if not close(got, one_hot_lookup(ids.reshape(-1), table).reshape(shape + (D,)), 0):
                raise Fail(say("on {case} your rows are not the table's rows E[ids]", case=case))
        c.proved(say('random ids, a (2, 5) batch included, read exactly E[ids]'))
    return run("one_hot_rows", fn, body)


def check_embed(fn):
    """``embed(ids, E, P)``: ids (B, T) -> X₀ = E[ids] + P[:T], (B, T, D)."""
    def body(c):
        model, _, trace = lab()
        E, P = _tables(model)
        ids = torch.tensor([LAB_IDS])
        case = say("the lab's ids (1, 6)")
        x0 = tensor(c.call(ids.clone(), E, P, case=case), case, shape=(1, 6, 4))
        if torch.equal(x0, E[ids] + P[ids]):
            raise Fail(say('P is indexed by the position t = 0 … T−1, not by the token id'))
        if torch.equal(x0[0, 1:], (E[ids] + P[1:7])[0, 1:]):
            raise Fail(say('positions count from 0 in tensors: the first token adds P[0]'))
        if torch.equal(x0, E[ids] + P[:1]):
            raise Fail(say('T is the length of each sequence (ids is (B, T)), not the batch size'))
        c.figure("lab.x6", "x6", x0[0, NEW_ROW], say("row 6 misses lab.x6's x₆ = E[6] + P₆"))
        c.proved(say("the lab's row 6 is lab.x6's x₆ (1 d.p.)"))
        toy_model, _, toy_trace = toy()
        E5, P5 = _tables(toy_model)
        case = "a|b|a (1, 3)"
        x0 = tensor(c.call(torch.tensor([INPUT_IDS]), E5, P5, case=case), case)
        c.figure("interface.toy.x0", "x0_shape", list(x0.shape), say('on {case} X₀ must be (B, T, D) = (1, 3, 4)', case=case))
        if not close(x0, toy_trace["x0"], 0):
            raise Fail(say("on {case} X₀ differs from the model's: each position adds its token's row of E and its position's row of P", case=case))
        c.proved(say("a|b|a gives the model's X₀, shape (1, 3, 4) (interface.toy.x0)"))
        g = seeded(6)
        for B, T in ((2, 3), (4, 7), (1, 1)):
            ids = torch.randint(0, 12, (B, T), generator=g)
            case = say('a batch of shape {shape}', shape=(B, T))
            got = tensor(c.call(ids.clone(), E, P, case=case), case, shape=(B, T, 4))
            if not close(got, model.token_embedding(ids).detach() + P[:T], 0):
                raise Fail(say('on {case} X₀ differs: T is the length of each sequence, and the same position rows are added to every sequence of the batch', case=case))
        c.proved(say("batches (2, 3), (4, 7), (1, 1) match the model's embeddings"))
    return run("embed", fn, body)


# GPT-2's 50,257 rows with 64 features instead of 768: the scores' shape (1, 50257) is GPT-2's
# (interface.gpt2.sizes), from a 13 MB table instead of 154 MB, so notebook 02's kernel stays
# within Binder's memory
GPT2_ROWS = GPTConfig(vocab_size=GPT2_SMALL_CONFIG.vocab_size, n_embd=64)


def _gpt2_sized():
    """A random table of GPT-2's rows (50257, 64) looked up for "Hi 你!" (interface.tok.hi_ni's ids)."""
    ids = [17250, 220, 19526, 254, 0]
    return ids, gpt2_sized_lookup(ids, GPT2_ROWS)


def check_last_scores(fn):
    """``last_scores(ids, E)``: the last position's vector E[ids[-1]] against every row of E, (1, V)."""
    def body(c):
        ids, gpt2 = _gpt2_sized()
        table = gpt2["token_table"]                                         # (50257, 64), random
        case = say("'Hi 你!' and a table of GPT-2's 50,257 rows (50257, 64)")
        scores = tensor(c.call(torch.tensor(ids), table, case=case), case)
        if tuple(scores.shape) == (50257,):
            raise Fail(say('keep the row dimension: take the last position as a (1, D) slice, not a (D,) vector'))
        c.figure("interface.gpt2.sizes", "scores_shape", list(scores.shape), say('on {case} expected shape (1, 50257), got {shape}', case=case, shape=tuple(scores.shape)))
        if not close(scores, gpt2["scores"], 1e-5):
            raise Fail(say('the scores are the dot products of the last vector with every row of E: one score per token, (1, V)'))
        c.proved(say("at GPT-2's size the scores are (1, 50,257) (interface.gpt2.sizes)"))
        g = seeded(8)
        for T, V, D in ((1, 5, 4), (6, 12, 3)):
            ids = torch.randint(0, V, (T,), generator=g)
            E = torch.randn(V, D, generator=g, dtype=torch.float64)
            case = say('{T} random ids, table ({V}, {D})', T=T, V=V, D=D)
            got = tensor(c.call(ids.clone(), E, case=case), case, shape=(1, V))
            if not close(got, E[ids[-1:]] @ E.T):
                raise Fail(say("on {case} the scores differ: use the LAST id's row", case=case))
        c.proved(say('random tables match E[ids[-1:]] @ Eᵀ'))
    return run("last_scores", fn, body)


EXERCISES = {"one_hot_rows": check_one_hot_rows, "embed": check_embed, "last_scores": check_last_scores}
