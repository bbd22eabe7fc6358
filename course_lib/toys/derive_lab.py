"""How the lab model's weights (``data/lab_model.json``) were made, as code that re-makes them.

Not taught in a notebook; read it with notebooks 02, 03 and 07 open. ``python -m
course_lib.toys.derive_lab`` prints the weight file; ``--write`` overwrites data/lab_model.json.
``tests/test_toy_lab_derivation.py`` (marked slow, part of ``make test``) checks that the shipped
file is what this code derives.

Three kinds of entries:

1. **Hand-set** (round numbers, chosen to tell a story): positions rotate through (±0.5, ±0.5)
   in features 1 and 4 (P₆ = [0.5, 0, 0, −0.5]); E[␣roof] is the article's [0, −0.5, 1, −0.5]
   and the other places (␣wall, ␣sofa, ␣floor) share it; queries, keys and values each pick
   two LayerNorm features; the output projection and the MLP are identities (so the MLP adds
   ReLU(LN₂(x))); all LayerNorms have scale 1 and offset 0. The output layer's rows: the six
   nouns share one row, ".", ␣climb and <|endoftext|> each read another feature, the, ␣the and
   ed read nothing (their score is their bias alone).
2. **Grid-searched** (multiples of 0.5): the embeddings of the five prompt tokens (the, ␣cat,
   ␣climb, ed, ␣the) among all vectors with one non-zero entry in {±0.5, ±1}, keeping those for
   which the new row 6 puts 0.40 on ␣roof and 0.28 on ␣cat in head 1 (two decimals) and ranks
   the, ed, ␣the first in head 2 (␣the with at least twice the weight of any other key, so that
   head 2 "spreads over" three tokens); among those, the one whose solved biases order rows
   5–7 with the widest margins is kept. ␣dog shares ␣cat's row.
3. **Solved** (3 decimals): the 12 output biases. The row-5 probabilities of the eight tokens
   top-p keeps come from the article's running sums; the other four tokens' probabilities
   follow from three more printed numbers (p(.) and p(␣climb) after ␣roof, p(<|endoftext|>)
   after "."), a 3 × 3 linear system because the three rows differ only in ``W_head h``. The
   biases are then log-probabilities minus ``W_head h₅``, rounded to 3 decimals, and polished
   one thousandth at a time until every printed figure holds with the largest slack.
"""
from __future__ import annotations

import argparse
import itertools
import math

import numpy as np
import torch

from ..figures.computers import compute
from ..figures.registry import expected, figure, to_plain, tolerance
from ..tokens.vocab import LAB_PIECES
from . import weights as weight_files
from .lab import LAB, LAB_CONFIG, LAB_PROMPT_IDS, lab_id, next_token_probs

D = LAB_CONFIG.n_embd
EPS = LAB_CONFIG.layer_norm_eps

# Positions: features 1 and 4 turn a quarter step per token; features 2 and 3 stay 0.
ROTATION = [(0.5, 0.5), (0.5, -0.5), (-0.5, -0.5), (-0.5, 0.5)]

# Each projection output reads one LN feature, with a sign: (sign, 0-based feature).
QUERY_PICKS = [(1, 3), (1, 1), (1, 3), (1, 0)]     # q = [u₄, u₂ | u₄, u₁]   (the article's q₆)
KEY_PICKS = [(1, 3), (1, 1), (-1, 3), (1, 1)]      # k = [u₄, u₂ | −u₄, u₂]
VALUE_PICKS = [(1, 0), (1, 1), (1, 2), (1, 3)]     # v = [u₁, u₂ | u₃, u₄]

PERIOD_EMBEDDING = [0.5, 0, 0, 0]
END_EMBEDDING = [0, 0, 0, 0]                       # never read: generation stops at it
NOUNS = [" cat", " dog", " roof", " wall", " sofa", " floor"]
PLACES = [" roof", " wall", " sofa", " floor"]
SEARCHED = ["the", " cat", " climb", "ed", " the"]     # the prompt, in order
OUTPUT_ROWS = {                                    # lm_head rows; unlisted tokens read nothing
    **{noun: [-1.5, 0, 0, 0] for noun in NOUNS},
    ".": [0, -1, 0, 0],
    " climb": [0, 0, 1, 0],
    "<|endoftext|>": [0, 0, 0, 2],
}
SPREAD = 2.0      # head 2's third key (␣the) gets at least SPREAD × any key outside its top 3
ONE_NONZERO = [[v if j == f else 0.0 for j in range(D)] for f in range(D) for v in (-1, -0.5, 0.5, 1)]


def position_table(n_positions: int = LAB_CONFIG.n_positions) -> list[list[float]]:
    """Row t = [a, 0, 0, b] with (a, b) = ROTATION[t mod 4]; row 5 is the article's P₆."""
    return [[ROTATION[t % 4][0], 0, 0, ROTATION[t % 4][1]] for t in range(n_positions)]


def picker(picks) -> list[list[float]]:
    """A (D, D) nn.Linear weight whose output i is sign · input feature j."""
    return [[float(sign) if j == feature else 0.0 for j in range(D)] for sign, feature in picks]


def identity() -> list[list[float]]:
    return [[1.0 if i == j else 0.0 for j in range(D)] for i in range(D)]


def hand_set_tables(prompt_embeddings: dict, biases=None) -> dict:
    """Every table of the model; ``prompt_embeddings`` maps the SEARCHED pieces to their rows."""
    roof = expected("lab.x6", "e6")
    rows = {**{p: roof for p in PLACES}, ".": PERIOD_EMBEDDING, "<|endoftext|>": END_EMBEDDING,
            **prompt_embeddings, " dog": prompt_embeddings[" cat"]}
    zeros, ones = [0.0] * D, [1.0] * D
    tables = {
        "token_embedding.weight": [list(rows[p]) for p in LAB_PIECES],
        "position_embedding.weight": position_table(),
        "blocks.0.ln_1.weight": ones, "blocks.0.ln_1.bias": zeros,
        "blocks.0.attn.query.weight": picker(QUERY_PICKS), "blocks.0.attn.query.bias": zeros,
        "blocks.0.attn.key.weight": picker(KEY_PICKS), "blocks.0.attn.key.bias": zeros,
        "blocks.0.attn.value.weight": picker(VALUE_PICKS), "blocks.0.attn.value.bias": zeros,
        "blocks.0.attn.output.weight": identity(), "blocks.0.attn.output.bias": zeros,
        "blocks.0.ln_2.weight": ones, "blocks.0.ln_2.bias": zeros,
        "blocks.0.mlp.up.weight": identity(), "blocks.0.mlp.up.bias": zeros,
        "blocks.0.mlp.down.weight": identity(), "blocks.0.mlp.down.bias": zeros,
        "ln_f.weight": ones, "ln_f.bias": zeros,
        "lm_head.weight": [list(OUTPUT_ROWS.get(p, zeros)) for p in LAB_PIECES],
        "lm_head.bias": list(biases) if biases is not None else [0.0] * len(LAB_PIECES),
    }
    return tables


# ------------------------------------------------------------------ 2. grid search, row 6's heads

def layer_norm(x: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS)


def row6_scores(u: np.ndarray, u6: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """exp(score) of key rows ``u`` (..., D) against row 6's query, for head 1 and head 2."""
    q, k = np.array(picker(QUERY_PICKS)) @ u6, u @ np.array(picker(KEY_PICKS)).T
    d = LAB_CONFIG.head_dim
    return np.exp(k[..., :d] @ q[:d] / math.sqrt(d)), np.exp(k[..., d:] @ q[d:] / math.sqrt(d))


def search_prompt_embeddings(options=ONE_NONZERO) -> list[dict]:
    """All choices of the five prompt rows (each from ``options``) that give lab.heads, best
    slack first. Exhaustive: len(options)⁵ combinations, vectorised (float64)."""
    P = np.array(position_table())
    u6 = layer_norm(np.array(expected("lab.x6", "e6")) + P[5])
    e1, e2 = row6_scores(u6, u6)                                   # ␣roof's own scores
    opts = np.array(options, dtype=float)
    per_position = [row6_scores(layer_norm(opts + P[t]), u6) for t in range(5)]
    n = len(options)
    grids = np.ix_(*[range(n)] * 5)
    head1 = [per_position[t][0][grids[t]] for t in range(5)]
    head2 = [per_position[t][1][grids[t]] for t in range(5)]
    z1 = sum(head1) + e1
    on_roof, on_cat = e1 / z1, head1[1] / z1
    specs = figure("lab.heads")["values"]
    slack = np.minimum(tolerance(specs["head1_on_roof"]) - abs(on_roof - specs["head1_on_roof"]["expected"]),
                       tolerance(specs["head1_on_cat"]) - abs(on_cat - specs["head1_on_cat"]["expected"]))
    rest = np.maximum(np.maximum(head2[1], head2[2]), e2)          # ␣cat, ␣climb, ␣roof
    # the > ed > ␣the, and ␣the holds at least twice any other key: head 2 "spreads over" three
    order_ok = (head2[0] > head2[3]) & (head2[3] > head2[4]) & (head2[4] > SPREAD * rest)
    found = np.nonzero((slack > 0) & order_ok)
    result = [dict(slack=float(slack[idx]),
                   rows={p: options[i] for p, i in zip(SEARCHED, idx)})
              for idx in zip(*found)]
    return sorted(result, key=lambda c: -c["slack"])


# ------------------------------------------------------------------ 3. the output biases

KEPT_ORDER = [" roof", " wall", " sofa", " floor", " cat", " dog", " the", "ed"]   # row 5, ranked
SOLVED_BY_ROWS_6_7 = [".", " climb", "<|endoftext|>"]                              # plus "the"


def row5_targets() -> dict:
    """Row-5 probabilities of the eight kept tokens: differences of the printed running sums."""
    sums = [0.0] + expected("lab.top_p", "running_sums")
    return {p: sums[i + 1] - sums[i] for i, p in enumerate(KEPT_ORDER)}


@torch.no_grad()
def last_rows_h(model) -> np.ndarray:
    """LN_f outputs h of rows 5, 6, 7 (indices 4, 5, 6) of "the cat climbed the roof." (3, D)."""
    _, trace = model.forward_trace(torch.tensor([LAB_PROMPT_IDS + [lab_id("␣roof"), lab_id(".")]]))
    return trace["h"][0, 4:7].double().numpy()


def solve_biases(model) -> list[float]:
    """Unrounded biases that give the row-5 targets, p(.) and p(␣climb) at row 6 and
    p(<|endoftext|>) at row 7 exactly (a 3 × 3 linear system, see the module docstring)."""
    W = model.lm_head.weight.detach().double().numpy()            # (V, D)
    h5, h6, h7 = last_rows_h(model)
    F6, F7 = np.exp(W @ (h6 - h5)), np.exp(W @ (h7 - h5))         # per-token factor vs row 5
    p5 = np.zeros(len(LAB_PIECES))
    for p, value in row5_targets().items():
        p5[lab_id(p)] = value
    rest = 1.0 - p5.sum()                 # shared by ., ␣climb, <|endoftext|> and "the"
    dot, climb, end, the = (lab_id(p) for p in (".", " climb", "<|endoftext|>", "the"))
    unknown = [dot, climb, end]
    # Z_r = Σ_kept p5 F_r + rest·F_r[the] + Σ_unknown p5_i (F_r[i] − F_r[the])
    rows = [(F6, dot, expected("lab.next_after_roof", "p_first")),
            (F6, climb, expected("lab.next_after_roof", "p_second")),
            (F7, end, expected("lab.eot", "p_first"))]
    A, b = np.zeros((3, 3)), np.zeros(3)
    for r, (F, token, target) in enumerate(rows):     # p5[token] F[token] = target · Z
        for c, i in enumerate(unknown):
            A[r, c] = -target * (F[i] - F[the])
        A[r, unknown.index(token)] += F[token]
        b[r] = target * (p5 @ F + rest * F[the])
    p5[unknown] = np.linalg.solve(A, b)
    p5[the] = rest - p5[unknown].sum()
    if (p5 <= 0).any():
        raise ValueError(f"no positive solution for these weights: {p5}")
    biases = np.log(p5) - W @ h5
    return (biases - biases.mean()).tolist()


def with_biases(model, biases):
    """Set lm_head.bias in place and return the model."""
    with torch.no_grad():
        model.lm_head.bias.copy_(torch.tensor(biases, dtype=model.lm_head.bias.dtype))
    return model


def slacks(computed, wanted, tol) -> list[float]:
    """How far each value is inside its tolerance (negative: outside); exact values give ±1."""
    if isinstance(wanted, list):
        if not isinstance(computed, list) or len(computed) != len(wanted):
            return [-1.0]
        return [s for c, w in zip(computed, wanted) for s in slacks(c, w, tol)]
    if isinstance(wanted, (bool, str)) or tol == 0:
        return [1.0 if computed == wanted else -1.0]
    return [tol - abs(computed - wanted)]


BIAS_FIGURES = ["lab.greedy", "lab.top_k", "lab.top_p", "lab.t07_top_p",
                "lab.next_after_roof", "lab.eot"]


def figure_slacks(model, ids=BIAS_FIGURES) -> list[float]:
    """Sorted slacks of every value of the given lab figures (smallest first)."""
    out = []
    for fid in ids:
        values = compute(fid, model)
        specs = figure(fid)["values"]
        for name, value in values.items():
            out += slacks(to_plain(value), specs[name]["expected"], tolerance(specs[name]))
    return sorted(out)


def structure_margin(model) -> float:
    """How comfortably the solved (unrounded) biases order the rows: log-ratios that must be
    > 0 for the four solved row-5 probabilities (between 0.001 and the 8th kept one), row 6's
    2nd vs 3rd token and row 7's 1st vs 2nd. Used to choose among the grid-search results."""
    p5 = next_token_probs(model)
    four = [p5[lab_id(p)] for p in SOLVED_BY_ROWS_6_7 + ["the"]]
    eighth = min(p5[lab_id(p)] for p in KEPT_ORDER)
    p6 = sorted(next_token_probs(model, LAB_PROMPT_IDS + [lab_id("␣roof")]), reverse=True)
    p7 = sorted(next_token_probs(model, LAB_PROMPT_IDS + [lab_id("␣roof"), lab_id(".")]), reverse=True)
    return min(math.log(min(four) / 1e-3), math.log(eighth / max(four)),
               math.log(p6[1] / p6[2]), math.log(p7[0] / p7[1]))


class OutputLayerOnly:
    """While only ``lm_head`` changes (polishing moves the output biases), everything before it
    gives the same numbers for the same ids. Installed on a model (``with OutputLayerOnly(model):``),
    its forward pass remembers, per id sequence, LN_f's output h and the keys and values it
    appended to the KV cache; the next time the same ids arrive after the same cached ids it
    appends those keys and values again and runs only the output layer — the same numbers the full
    pass gives, bit for bit (tests/test_toy_lab_derivation.py), for a fraction of the work."""

    def __init__(self, model):
        self.model, self.seen = model, {}

    def __enter__(self):
        self.model.forward = self.forward          # nn.Module.__call__ finds it before GPT.forward
        return self

    def __exit__(self, *exc):
        del self.model.forward

    def forward(self, ids, cache=None, trace=None, last_only: bool = False):
        model = self.model
        if trace is not None:
            return type(model).forward(model, ids, cache=cache, trace=trace, last_only=last_only)
        before = getattr(cache, "ids_seen", ()) if cache is not None else None
        ids = model.check_ids(ids, len(cache) if cache is not None else 0)
        key = (before, tuple(map(tuple, ids.tolist())), last_only)
        if key not in self.seen:
            past = len(cache) if cache is not None else 0
            run: dict = {}
            type(model).forward(model, ids, cache=cache, trace=run, last_only=last_only)
            kv = [(layer["k"][:, :, past:].clone(), layer["v"][:, :, past:].clone()) for layer in run["layers"]]
            self.seen[key] = (run["h"], kv if cache is not None else None)
        elif cache is not None:
            cache.check_use(model, ids.shape[0])
            for layer, (k, v) in enumerate(self.seen[key][1]):
                cache.append(layer, k, v)
        if cache is not None:
            cache.ids_seen = key[:2]
        return model.lm_head(self.seen[key][0])


def polish(model, thousandths: list[int]) -> list[int]:
    """Steepest ascent on the 0.001 grid: move one bias, or two in opposite directions, by
    0.001 while the sorted slacks of the printed figures improve (smallest first)."""
    with OutputLayerOnly(model):
        return _polish(model, thousandths)


def _polish(model, thousandths: list[int]) -> list[int]:
    n = len(thousandths)
    moves = [{i: s} for i in range(n) for s in (1, -1)]
    moves += [{i: s, j: -s} for i, j in itertools.combinations(range(n), 2) for s in (1, -1)]

    def score(t):
        return tuple(figure_slacks(with_biases(model, [v / 1000 for v in t])))

    best, best_score = list(thousandths), score(thousandths)
    while True:
        trials = []
        for move in moves:
            t = [v + move.get(i, 0) for i, v in enumerate(best)]
            trials.append((score(t), t))
        top_score, top = max(trials, key=lambda st: st[0])
        if top_score <= best_score:
            with_biases(model, [v / 1000 for v in best])
            return best
        best, best_score = top, top_score


def derive_tables(verbose: bool = False) -> dict:
    """Search, solve, round, polish: the full weight tables of data/lab_model.json."""
    torch.set_num_threads(1)
    best = None
    for candidate in search_prompt_embeddings():
        model = LAB.from_tables(hand_set_tables(candidate["rows"]))
        try:
            margin = structure_margin(with_biases(model, solve_biases(model)))
        except ValueError:
            continue
        if best is None or margin > best[0]:
            best = (margin, candidate)
    if best is None:
        raise RuntimeError("no grid-search result admits positive biases")
    rows = best[1]["rows"]
    if verbose:
        print("prompt rows:", rows, "margin", round(best[0], 3))
    model = LAB.from_tables(hand_set_tables(rows))
    thousandths = [round(b * 1000) for b in solve_biases(model)]
    thousandths = polish(model, thousandths)
    if verbose:
        print("smallest slacks:", [f"{s:.6f}" for s in figure_slacks(model)[:4]])
    return hand_set_tables(rows, [v / 1000 for v in thousandths])


# ------------------------------------------------------------------ the weight file

NOTES = {
    "token_embedding.weight": "rows the, ␣cat, ␣climb, ed, ␣the: grid-searched (one non-zero entry each, see course_lib.toys.derive_lab.search_prompt_embeddings); ␣roof: the article's [0, -0.5, 1, -0.5], shared by ␣wall, ␣sofa, ␣floor (hand-set); ␣dog = ␣cat; '.' hand-set; <|endoftext|> zero (never an input)",
    "position_embedding.weight": "hand-set: features 1 and 4 rotate through (0.5, 0.5), (0.5, -0.5), (-0.5, -0.5), (-0.5, 0.5); row 5 (the article's P6) = [0.5, 0, 0, -0.5]",
    "blocks.0.attn.query.weight": "hand-set: q = [u4, u2 | u4, u1] (head 1 | head 2)",
    "blocks.0.attn.key.weight": "hand-set: k = [u4, u2 | -u4, u2]",
    "blocks.0.attn.value.weight": "hand-set: identity, v = [u1, u2 | u3, u4]",
    "blocks.0.attn.output.weight": "hand-set: identity",
    "blocks.0.mlp.up.weight": "hand-set: identity (the MLP adds ReLU(LN2(x)))",
    "blocks.0.mlp.down.weight": "hand-set: identity",
    "lm_head.weight": "hand-set: the six nouns share the row [-1.5, 0, 0, 0]; '.' reads -h2, ␣climb reads h3, <|endoftext|> reads 2 h4; the, ␣the, ed read nothing",
    "lm_head.bias": "solved (3 decimals): row-5 probabilities from the printed running sums, p(.), p(␣climb) after ␣roof and p(<|endoftext|>) after '.', a 3 x 3 linear system, then rounded and polished on the 0.001 grid until every printed lab figure holds (course_lib.toys.derive_lab.derive_tables)",
    "other tables": "LayerNorm scale 1 and offset 0 (eps 1e-5); every other bias 0",
}
ABOUT = ("Hand-set weights of the lab article's twelve-token GPT (course_lib.toys.lab). Nothing is "
         "trained. Every entry is a multiple of 0.5 except the 12 output biases (3 decimals). "
         "'notes' says which entries are hand-set, grid-searched or solved; "
         "course_lib/toys/derive_lab.py re-derives them from the article's figures (data/figures.json).")


def weight_file_text(tables: dict) -> str:
    """The JSON text of data/lab_model.json: one table row per line, biases with 3 decimals."""
    head = {"about": ABOUT, "config": LAB.config_summary(), "notes": NOTES}
    return weight_files.weight_file_text(head, tables, decimals={"lm_head.bias": 3})


def main(argv=None):
    parser = argparse.ArgumentParser(description="Re-derive the lab model's weights.")
    parser.add_argument("--write", action="store_true", help="overwrite data/lab_model.json")
    args = parser.parse_args(argv)
    text = weight_file_text(derive_tables(verbose=True))
    if args.write:
        LAB.weights_path.write_text(text, encoding="utf-8")
        print(f"wrote {LAB.weights_path}")
    else:
        print(text)


if __name__ == "__main__":
    main()
