"""How the five-token model's weights were made: round hand-set tables plus a few solved entries.

Background for notebooks 02–06 (the notebooks load the finished weights with
``course_lib.five_token.load_five_token_model``); ``tests/test_five_token.py`` runs this
derivation and checks it re-creates ``data/five_token_model.json`` exactly.

The interface article prints the model's numbers but not its weights. Most tables here are
round numbers chosen by hand; a few entries are *solved* from the article's printed figures
(read from the registry ``data/figures.json``, never typed here):

1. Three ±1 patterns, rows of a 4×4 Hadamard matrix, carry everything:
   ``A = [1, 1, -1, -1]``, ``B = [1, -1, 1, -1]``, ``C = [1, -1, -1, 1]``.
   E[a] = A, E[b] = B, and the position rows turn a|b|a into X₀ = [A, C, B]. The LayerNorm
   of a ±1 pattern is the pattern times c = 1/sqrt(1 + eps), with no rounding surprises.
2. Attention: W_k = I and W_q = diag(g). Between patterns the score gaps are c²·(sums of two
   g's), so two gaps read off the attention table, ln(0.9810/0.0190) and ln(0.5216/0.4683),
   fix g₂ = g₃ and g₄ (g₁ adds the same amount to every score of a row and cancels).
   W_v projects onto B, so the values at a and b are exactly zero and only position 2's
   attention output is nonzero.
3. The MLP has one ReLU unit per position (its up row is that position's pattern, bias −3)
   and 13 silent units. The output column of each unit is solved:
   position 1 — one scalar along [−1, 1, 1, 0], bisected until the loss prints 3.3200393;
   position 0 — one scalar along [0, −1, 1, 0], bisected until the loss prints 0.4099546
   *and* F.cross_entropy's mean prints 1.36688185;
   position 2 — four numbers in closed form (X₂[2] = σ·h₂, with σ² from h₂'s sum of squares
   through eps), then the shortest decimals that make LN_f print h₂ bit for bit.
4. lm_head is read off the article: z[0] = h[0], z[1] = h[0] + h[2] + 0.1, z[2] = h[1],
   z[3] = −h[0] − 0.2, z[4] = h[3] turns the printed h₂ into the printed logits.

Every search runs in float32 through ``course_lib.model.GPT`` itself: some printed digits
have no float32 slack, so a float64 replica would not do.

Run ``python -m course_lib.five_token_derivation`` to re-derive and verify;
add ``--write`` to rewrite the weight file.
"""
from __future__ import annotations

import itertools
import math
import sys

import torch

from .figures import check_figure, expected, figure, tolerance
from . import weight_files
from .loss import mean_loss, position_losses
from .five_token import (FIVE_TOKEN_CONFIG, INPUT_IDS, TARGET_IDS, WEIGHTS_PATH,
                         config_summary, figure_values, input_tensor, model_from_tables)

PATTERN_A = [1, 1, -1, -1]
PATTERN_B = [1, -1, 1, -1]
PATTERN_C = [1, -1, -1, 1]

UNIT_BIAS = -3            # a unit fires (≈ 1) only on its own pattern: 4c − 3 > 0, 0 − 3 < 0
DIRECTION_0 = [0, -1, 1, 0]    # position 0's MLP output moves X₂[0] from A towards B
DIRECTION_1 = [-1, 1, 1, 0]    # position 1's MLP output pushes feature 0 down (a unlikely)


def minus(v):
    return [-x for x in v]


def diff(u, v):
    return [a - b for a, b in zip(u, v)]


def zeros(rows, cols=None):
    return [0] * rows if cols is None else [[0] * cols for _ in range(rows)]


def identity(n):
    return [[1 if i == j else 0 for j in range(n)] for i in range(n)]


def hand_set_tables() -> dict:
    """Every table of the model; the solved entries are still 0 (filled by :func:`derive_tables`)."""
    D, H, V = FIVE_TOKEN_CONFIG.n_embd, FIVE_TOKEN_CONFIG.mlp_hidden, FIVE_TOKEN_CONFIG.vocab_size
    A, B, C = PATTERN_A, PATTERN_B, PATTERN_C
    position = zeros(FIVE_TOKEN_CONFIG.n_positions, D)
    position[1] = diff(C, B)     # b at position 1: B + (C − B) = C
    position[2] = diff(B, A)     # a at position 2: A + (B − A) = B
    up = zeros(H, D)
    up[0], up[1], up[2] = A, C, B          # unit t listens for position t's pattern
    up_bias = zeros(H)
    up_bias[0] = up_bias[1] = up_bias[2] = UNIT_BIAS
    tables = {
        "token_embedding.weight": [A, B, minus(A), minus(B), minus(C)],   # a, b, c, d, e
        "position_embedding.weight": position,
        "blocks.0.ln_1.weight": [1] * D, "blocks.0.ln_1.bias": zeros(D),
        "blocks.0.attn.query.weight": identity(D),    # diagonal solved below
        "blocks.0.attn.query.bias": zeros(D),
        "blocks.0.attn.key.weight": identity(D),
        "blocks.0.attn.key.bias": zeros(D),
        "blocks.0.attn.value.weight": [[b * c / 4 for c in B] for b in B],   # v = (B·u / 4) B
        "blocks.0.attn.value.bias": zeros(D),
        "blocks.0.attn.output.weight": identity(D),
        "blocks.0.attn.output.bias": zeros(D),
        "blocks.0.ln_2.weight": [1] * D, "blocks.0.ln_2.bias": zeros(D),
        "blocks.0.mlp.up.weight": up,
        "blocks.0.mlp.up.bias": up_bias,
        "blocks.0.mlp.down.weight": zeros(D, H),     # columns 0, 1, 2 solved below
        "blocks.0.mlp.down.bias": zeros(D),
        "ln_f.weight": [1] * D, "ln_f.bias": zeros(D),
        # read off the article: z = [h0, h0 + h2 + 0.1, h1, −h0 − 0.2, h3]
        "lm_head.weight": [[1, 0, 0, 0], [1, 0, 1, 0], [0, 1, 0, 0], [-1, 0, 0, 0], [0, 0, 0, 1]],
        "lm_head.bias": [0, 0.1, 0, -0.2, 0],
    }
    assert len(tables["token_embedding.weight"]) == V
    return tables


# ---------------------------------------------------------------------------- checks

def within(figure_id: str, name: str, value: float) -> bool:
    """Does ``value`` print as the article's figure (the registry's tolerance)?"""
    spec = figure(figure_id)["values"][name]
    return abs(value - spec["expected"]) <= tolerance(spec)


def float32_bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.equal(a.float().view(torch.int32), b.float().view(torch.int32))


def h2_target() -> torch.Tensor:
    """The article's h₂ as float32 (its 10 decimals single out one float32 per entry)."""
    return torch.tensor(expected("interface.toy.h2", "h2"), dtype=torch.float32)


_SCRATCH: list = []


def scratch_model(tables):
    """One reusable GPT loaded with ``tables`` (building a fresh GPT per trial is slow)."""
    if not _SCRATCH:
        _SCRATCH.append(model_from_tables(tables))
    model = _SCRATCH[0]
    model.load_state_dict({k: torch.tensor(v, dtype=torch.float32) for k, v in tables.items()})
    return model


def forward(model):
    with torch.no_grad():
        return model.forward_trace(input_tensor(INPUT_IDS))


# ---------------------------------------------------------------------------- solving

def shortest_decimals(center: list[float], accept, max_decimals: int = 10, reach: int = 2):
    """The candidate with the fewest decimals, near ``center``, that ``accept`` takes.

    For k = 1, 2, … decimals, tries every vector ``round(center, k) + j·10⁻ᵏ`` with
    |j| ≤ ``reach`` per entry (smallest total |j| first).
    """
    offsets = sorted(itertools.product(range(-reach, reach + 1), repeat=len(center)),
                     key=lambda js: (sum(map(abs, js)), js))
    for k in range(1, max_decimals + 1):
        for js in offsets:
            candidate = [round(round(c, k) + j * 10.0 ** -k, k) for c, j in zip(center, js)]
            if accept(candidate):
                return candidate
    raise RuntimeError(f"no candidate near {center} was accepted")


def query_diagonal() -> list[float]:
    """W_q's diagonal from the two score gaps that the attention table prints."""
    w = expected("interface.toy.attention", "weights")
    gap_big = math.log(w[1][1] / w[1][0])      # query 1: source 1 over source 0
    gap_small = math.log(w[2][2] / w[2][0])    # query 2: source 2 over source 0
    c2 = 1 / (1 + FIVE_TOKEN_CONFIG.layer_norm_eps)   # LN of a ±1 pattern is c·pattern
    # gap(1: C vs A) = c²(g₂ + g₄), gap(2: B vs A) = c²(g₂ + g₃), gap(2: B vs C) = c²(g₃ + g₄)
    g2 = g3 = gap_small / 2 / c2
    g4 = gap_big / c2 - g2
    return [1.0, g2, g3, g4]


def set_down_column(tables, column, values):
    for row, value in zip(tables["blocks.0.mlp.down.weight"], values):
        row[column] = value


def attention_matches(model) -> bool:
    weights = forward(model)[1]["layers"][0]["attention_weights"][0, 0]
    return within_all("interface.toy.attention", "weights", weights.tolist())


def within_all(figure_id, name, rows) -> bool:
    flat = torch.tensor(rows, dtype=torch.float64).flatten().tolist()
    want = torch.tensor(expected(figure_id, name), dtype=torch.float64).flatten().tolist()
    tol = tolerance(figure(figure_id)["values"][name])
    return all(abs(a - b) <= tol for a, b in zip(flat, want))


def solve_position_2(tables) -> list[float]:
    """MLP output column 2: LN_f(X₂[2]) must print h₂ to its last bit."""
    h = h2_target()
    layer = forward(scratch_model(tables))[1]["layers"][0]
    x1 = layer["x1"][0, 2].double()                 # X₁[2]
    unit = layer["mlp_hidden"][0, 2, 2].item()      # unit 2's ReLU output at position 2
    # LN output has sum of squares 4·var/(var + eps): solve for var, put X₂[2] = σ·h
    s = (h.double() ** 2).sum().item()
    eps = FIVE_TOKEN_CONFIG.layer_norm_eps
    sigma = math.sqrt(eps * s / (4 - s))
    center = ((sigma * h.double() - x1) / unit).tolist()

    def accept(column):
        set_down_column(tables, 2, column)
        return float32_bits_equal(forward(scratch_model(tables))[1]["h"][0, 2], h)

    column = shortest_decimals(center, accept)
    set_down_column(tables, 2, column)
    return column


def bisect(f, lo, hi, target, steps=60):
    """t in [lo, hi] with f(t) ≈ target, for f monotone on [lo, hi]."""
    f_lo, f_hi = f(lo) - target, f(hi) - target
    if f_lo * f_hi > 0:
        raise RuntimeError(f"target {target} is not bracketed by [{lo}, {hi}]")
    for _ in range(steps):
        mid = (lo + hi) / 2
        f_mid = f(mid) - target
        if (f_mid < 0) == (f_lo < 0):
            lo, f_lo = mid, f_mid
        else:
            hi = mid
    return (lo + hi) / 2


def solve_scalar(tables, position, direction, accept_losses, hi=3.0) -> float:
    """MLP output column ``position`` = t·direction, t chosen by bisection then shortest decimals."""
    target = expected("interface.toy.loss_mean", "losses")[position]

    def losses_for(t):
        set_down_column(tables, position, [t * d for d in direction])
        logits = forward(scratch_model(tables))[0]
        return position_losses(logits, TARGET_IDS).tolist(), mean_loss(logits, TARGET_IDS).item()

    t_center = bisect(lambda t: losses_for(t)[0][position], 0.0, hi, target)
    (t,) = shortest_decimals([t_center], lambda ts: accept_losses(*losses_for(ts[0])))
    set_down_column(tables, position, [t * d for d in direction])
    return t


def loss_prints(losses, position) -> bool:
    """Does the loss at ``position`` print as the article's 7-decimal figure?"""
    spec = figure("interface.toy.loss_mean")["values"]["losses"]
    return abs(losses[position] - spec["expected"][position]) <= tolerance(spec)


def derive_tables() -> dict:
    """Re-create every table: hand-set ones plus the entries solved from the article's figures."""
    tables = hand_set_tables()
    # W_q: closed form from the attention table, rounded to the fewest decimals that still print it
    g = shortest_decimals(query_diagonal()[1:], lambda gs: attention_matches(
        scratch_model({**tables, "blocks.0.attn.query.weight": diag4([1.0] + gs)})))
    tables["blocks.0.attn.query.weight"] = diag4([1] + g)
    solve_position_2(tables)
    # position 1 first: position 0 is then chosen so that the mean also prints
    solve_scalar(tables, 1, DIRECTION_1, hi=1.5,
                 accept_losses=lambda losses, mean: loss_prints(losses, 1))
    solve_scalar(tables, 0, DIRECTION_0, hi=3.0,
                 accept_losses=lambda losses, mean: (
                     loss_prints(losses, 0) and within("interface.toy.loss_mean", "mean", mean)))
    return tables


def diag4(g):
    return [[g[i] if i == j else 0 for j in range(4)] for i in range(4)]


# ---------------------------------------------------------------------------- the weight file

ABOUT = ("Hand-set weights of the interface article's five-token GPT (course_lib.five_token). "
         "Nothing is trained. Round numbers are chosen by hand; the entries of tables whose note starts with "
         "'solved' were computed by course_lib/five_token_derivation.py from the article's "
         "printed figures (data/figures.json) so that float32 on CPU prints them exactly.")

NOTES = {
    "token_embedding.weight": "hand-set: rows a, b, c, d, e = A, B, -A, -B, -C with the ±1 patterns "
                              "A = [1,1,-1,-1], B = [1,-1,1,-1], C = [1,-1,-1,1]",
    "position_embedding.weight": "hand-set: P[1] = C - B and P[2] = B - A, so a|b|a gives X0 = [A, C, B]; "
                                 "rows 0 and 3-7 are zero",
    "blocks.0.attn.query.weight": "solved (closed form, then the fewest decimals that still print the "
                                  "table): diagonal g with g1 = 1 (cancels in softmax), "
                                  "c²(g2+g4) = ln(0.9810/0.0190), c²(g2+g3) = ln(0.5216/0.4683), "
                                  "c²(g3+g4) = ln(0.5216/0.0101) ≈ the first gap, c² = 1/(1+eps)",
    "blocks.0.attn.key.weight": "hand-set: identity",
    "blocks.0.attn.value.weight": "hand-set: B Bᵀ / 4, so V[t] = (B·u_t / 4) B is zero for A and C",
    "blocks.0.attn.output.weight": "hand-set: identity",
    "blocks.0.mlp.up.weight": "hand-set: unit t's row is position t's pattern (A, C, B); units 3-15 silent",
    "blocks.0.mlp.up.bias": "hand-set: -3 for units 0-2, so each fires only on its own position",
    "blocks.0.mlp.down.weight": "solved: column 1 = t1·[-1,1,1,0] with t1 bisected until loss[1] prints "
                                "3.3200393; column 0 = t0·[0,-1,1,0] with t0 bisected until loss[0] "
                                "prints 0.4099546 and the mean prints 1.36688185; column 2 from "
                                "X2[2] = σ·h2 (σ² = eps·S/(4-S), S = Σh2²) then the fewest decimals for "
                                "which LN_f prints h2 bit for bit; other columns zero",
    "lm_head.weight": "hand-set, read off the article: z = [h0, h0+h2+0.1, h1, -h0-0.2, h3]",
    "lm_head.bias": "hand-set, read off the article",
    "other tables": "LayerNorm scale 1 and offset 0 (PyTorch's defaults); every other bias 0",
}


def weight_file_text(tables: dict) -> str:
    """The JSON weight file, one matrix row per line."""
    return weight_files.weight_file_text({"about": ABOUT, "config": config_summary(), "notes": NOTES}, tables)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    torch.set_num_threads(1)
    tables = derive_tables()
    if "--write" in argv:
        WEIGHTS_PATH.write_text(weight_file_text(tables), encoding="utf-8")
        print(f"wrote {WEIGHTS_PATH}")
    print("solved W_q diagonal:", [tables["blocks.0.attn.query.weight"][i][i] for i in range(4)])
    print("solved MLP output columns 0, 1, 2:",
          [[row[c] for row in tables["blocks.0.mlp.down.weight"]] for c in range(3)])
    for figure_id, values in figure_values(model_from_tables(tables)).items():
        check_figure(figure_id, **values)


if __name__ == "__main__":
    main()
