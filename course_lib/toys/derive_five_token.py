"""How the five-token model's weights were made: round hand-set tables plus a few solved entries.

Background for notebooks 02–06 (the notebooks load the finished weights with
``course_lib.toys.five_token.FIVE_TOKEN.load()``); ``tests/test_toy_five_token.py`` runs this
derivation (marked slow, part of ``make test``) and checks it re-creates
``data/five_token_model.json`` exactly.

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
   position 2 — four numbers in closed form: X₂[2] = σ·t, where t is the article's float32
   h₂ moved inside each entry's float32 interval so that it has a mean of exactly 0 (a
   LayerNorm output does; the article's float32 h₂ sums to 2⁻²³), then the fewest decimals
   that keep LN_f's h₂ and the logits on the article's float32 values;
   position 1 — one scalar along [−1, 1, 1, 0], bisected to the middle of the interval of
   values whose float32 prints 3.3200393;
   position 0 — one scalar along [0, −1, 1, 0], bisected to the middle of the values that
   print 0.4099546 *and* make the mean of the three losses print 1.36688185.
4. lm_head is read off the article: z[0] = h[0], z[1] = h[0] + h[2] + 0.1, z[2] = h[1],
   z[3] = −h[0] − 0.2, z[4] = h[3] turns the printed h₂ into the printed logits.

The model computes in float64 and the figures the article printed from float32 are shown as
the float32 rounding of the float64 result: that value is the same on every CPU, unless the
exact value sits within float64 error of a float32 boundary. So every solved entry is
accepted only if each printed figure stays ``HEADROOM`` times further from any boundary of
its text than ``tests/test_margins.py`` requires (``course_lib.figures.margins``).

Run ``python -m course_lib.toys.derive_five_token`` to re-derive and verify (it also prints
``toys.loss_last_bound``'s proof that no weights print the article's 0.370652, the one figure
accepted within a tolerance); add ``--write`` to rewrite the weight file.
"""
from __future__ import annotations

import itertools
import math
import sys

import torch

from ..figures import margins
from ..figures.computers import compute
from ..figures.registry import check_figure, expected, figure, load_registry, to_float32
from ..model.loss import mean_loss, position_losses
from . import weights as weight_files
from .loss_last_bound import certificate_text
from .five_token import FIVE_TOKEN, FIVE_TOKEN_CONFIG, INPUT_IDS, TARGET_IDS

def figure_values(model) -> dict:
    """Every ``interface.toy.*`` figure computed from ``model`` (its computers in ``figures.interface``)."""
    return {fid: compute(fid, model) for fid in sorted(load_registry()) if fid.startswith("interface.toy.")}

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
    if len(tables["token_embedding.weight"]) != V:
        raise ValueError(f"the token table has {len(tables['token_embedding.weight'])} rows, not V = {V}")
    return tables


# ---------------------------------------------------------------------------- checks

# Every solved entry must leave each printed figure at least this many times the margin the
# tests require (``course_lib.figures.margins``): the figures sit well inside their rounding intervals.
HEADROOM = 5


def spec_of(figure_id: str, name: str) -> dict:
    return figure(figure_id)["values"][name]


def prints_with_margin(figure_id: str, name: str, values, spec: dict | None = None) -> bool:
    """Do ``values`` print as the article's figure, each far from any boundary of its text?"""
    spec = spec or spec_of(figure_id, name)
    decimals, truncated = spec.get("decimals"), spec.get("truncated", False)
    flat = torch.as_tensor(values, dtype=torch.float64).flatten().tolist()
    want = torch.as_tensor(spec["expected"], dtype=torch.float64).flatten().tolist()
    for x, w in zip(flat, want):
        shown = to_float32(x) if spec.get("float32") else x
        if margins.text_of(shown, decimals, truncated) != margins.text_of(w, decimals, truncated):
            return False
        margin = margins.text_margin(x, decimals, spec.get("float32", False), truncated)
        if margin < HEADROOM * margins.required_margin(x):
            return False
    return True


def h2_target() -> torch.Tensor:
    """The article's h₂ as float32 values (its 10 decimals single out one float32 per entry)."""
    return torch.tensor(to_float32(expected("interface.toy.h2", "h2")), dtype=torch.float64)


_SCRATCH: list = []


def scratch_model(tables):
    """One reusable GPT loaded with ``tables`` (building a fresh GPT per trial is slow)."""
    if not _SCRATCH:
        _SCRATCH.append(FIVE_TOKEN.from_tables(tables))
    model = _SCRATCH[0]
    model.load_state_dict({k: torch.tensor(v, dtype=torch.float64) for k, v in tables.items()})
    return model


def forward(model):
    with torch.no_grad():
        return model.forward_trace(FIVE_TOKEN.input_tensor(INPUT_IDS))


# ---------------------------------------------------------------------------- solving

def shortest_decimals(center: list[float], accept, max_decimals: int = 14, reach: int = 2):
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
    return prints_with_margin("interface.toy.attention", "weights", weights)


def h2_with_room(h: torch.Tensor) -> torch.Tensor:
    """The exact h₂ to aim at: inside every entry's float32 interval, with a mean of exactly 0.

    LN_f has scale 1 and offset 0, so its output sums to 0; the article's float32 h₂ sums to
    2⁻²³ instead. Each entry moves by part of its half-interval so that the sum is 0 and every
    entry keeps the same distance from the ends of its interval.
    """
    spec = spec_of("interface.toy.h2", "h2")
    halves = [(hi - lo) / 2 for lo, hi in (margins.float32_interval(x, spec["decimals"]) for x in h.tolist())]
    excess = sum(h.tolist())                     # must be removed
    room = (sum(halves) - abs(excess)) / len(halves)   # the common distance to the ends
    if room <= 0:
        raise RuntimeError("the article's h2 leaves no room for a mean of 0")
    sign = 1.0 if excess > 0 else -1.0
    return torch.tensor([x - sign * (half - room) for x, half in zip(h.tolist(), halves)], dtype=torch.float64)


def solve_position_2(tables) -> list[float]:
    """MLP output column 2: LN_f(X₂[2]) must print h₂ to its last bit, far from any boundary."""
    target = h2_with_room(h2_target())
    layer = forward(scratch_model(tables))[1]["layers"][0]
    x1 = layer["x1"][0, 2]                          # X₁[2]
    unit = layer["mlp_hidden"][0, 2, 2].item()      # unit 2's ReLU output at position 2
    # LN(σ·t) = σ·t / sqrt(σ²·var(t) + eps) = t when σ² = eps / (1 − var(t)) (t has mean 0)
    var = (target ** 2).mean().item()
    eps = FIVE_TOKEN_CONFIG.layer_norm_eps
    sigma = math.sqrt(eps / (1 - var))
    center = ((sigma * target - x1) / unit).tolist()

    def accept(column):
        set_down_column(tables, 2, column)
        logits, trace = forward(scratch_model(tables))
        return (prints_with_margin("interface.toy.h2", "h2", trace["h"][0, 2])
                and prints_with_margin("interface.toy.logits", "logits", logits[0, 2]))

    column = shortest_decimals(center, accept)
    set_down_column(tables, 2, column)
    return column


def bisect(f, lo, hi, target, steps=80):
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


def losses_for(tables, position, direction, t):
    """(per-position losses, mean loss) with MLP output column ``position`` = t·direction."""
    set_down_column(tables, position, [t * d for d in direction])
    logits = forward(scratch_model(tables))[0]
    return position_losses(logits, TARGET_IDS).tolist(), mean_loss(logits, TARGET_IDS).item()


def solve_scalar(tables, position, direction, target, accept_losses, hi=3.0) -> float:
    """MLP output column ``position`` = t·direction: t bisected until the loss is ``target``,
    then rounded to the fewest decimals that ``accept_losses(losses, mean)`` takes."""
    t_center = bisect(lambda t: losses_for(tables, position, direction, t)[0][position], 0.0, hi, target)
    (t,) = shortest_decimals([t_center], lambda ts: accept_losses(*losses_for(tables, position, direction, ts[0])))
    set_down_column(tables, position, [t * d for d in direction])
    return t


def printed_interval(figure_id: str, name: str, index: int | None = None) -> tuple[float, float]:
    """The exact values that print as the article's figure (float32 rounding included)."""
    spec = spec_of(figure_id, name)
    value = spec["expected"] if index is None else spec["expected"][index]
    if spec.get("float32"):
        return margins.float32_interval(value, spec.get("decimals"), spec.get("truncated", False))
    return margins.decimal_interval(value, spec["decimals"], spec.get("truncated", False))


def loss_targets(loss_2: float, loss_1: float) -> float:
    """The loss at position 0 to aim at: inside its printed interval, and such that the mean of
    the three losses is inside the mean's printed interval — the middle of both."""
    low_0, high_0 = printed_interval("interface.toy.loss_mean", "losses", 0)
    low_m, high_m = printed_interval("interface.toy.loss_mean", "mean")
    low = max(low_0, 3 * low_m - loss_1 - loss_2)
    high = min(high_0, 3 * high_m - loss_1 - loss_2)
    if low >= high:
        raise RuntimeError("no loss at position 0 prints both its own figure and the mean")
    return (low + high) / 2


def derive_tables() -> dict:
    """Re-create every table: hand-set ones plus the entries solved from the article's figures."""
    tables = hand_set_tables()
    # W_q: closed form from the attention table, rounded to the fewest decimals that still print it
    g = shortest_decimals(query_diagonal()[1:], lambda gs: attention_matches(
        scratch_model({**tables, "blocks.0.attn.query.weight": diag4([1.0] + gs)})))
    tables["blocks.0.attn.query.weight"] = diag4([1] + g)
    solve_position_2(tables)
    loss_2 = current_losses(tables)[2]          # fixed by h₂ and lm_head
    # position 1 aims at the middle of its printed interval; position 0 then makes the mean print
    low_1, high_1 = printed_interval("interface.toy.loss_mean", "losses", 1)
    solve_scalar(tables, 1, DIRECTION_1, (low_1 + high_1) / 2, hi=1.5,
                 accept_losses=lambda losses, mean: loss_prints(losses, 1))
    loss_1 = current_losses(tables)[1]
    solve_scalar(tables, 0, DIRECTION_0, loss_targets(loss_2, loss_1), hi=3.0,
                 accept_losses=lambda losses, mean: loss_prints(losses, 0) and mean_prints(mean))
    return tables


def current_losses(tables) -> list[float]:
    """The three per-position losses of ``tables`` as they stand."""
    return position_losses(forward(scratch_model(tables))[0], TARGET_IDS).tolist()


def loss_prints(losses, position) -> bool:
    """Does the loss at ``position`` print as the article's figure, far from its boundaries?"""
    spec = spec_of("interface.toy.loss_mean", "losses")
    one = {**spec, "expected": [spec["expected"][position]]}
    return prints_with_margin("interface.toy.loss_mean", "losses", [losses[position]], one)


def mean_prints(mean) -> bool:
    """Does F.cross_entropy's mean print as the article's 1.36688185, far from its boundaries?"""
    return prints_with_margin("interface.toy.loss_mean", "mean", [mean])


def diag4(g):
    return [[g[i] if i == j else 0 for j in range(4)] for i in range(4)]


# ---------------------------------------------------------------------------- the weight file

ABOUT = ("Hand-set weights of the interface article's five-token GPT (course_lib.toys.five_token). "
         "Nothing is trained. Round numbers are chosen by hand; the entries of tables whose note starts with "
         "'solved' were computed by course_lib/toys/derive_five_token.py from the article's "
         "printed figures (data/figures.json) so that the model, computed in float64 and shown as float32, "
         "prints them exactly on every CPU, each far from any rounding boundary.")

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
    "blocks.0.mlp.down.weight": "solved: column 2 from X2[2] = σ·t, t = the article's float32 h2 moved "
                                "inside its float32 intervals to a mean of 0, σ² = eps/(1 - var(t)), then "
                                "the fewest decimals that keep h2 and the logits on the article's float32 "
                                "values; column 1 = t1·[-1,1,1,0] with t1 bisected to the middle of the "
                                "values whose float32 prints loss[1] = 3.3200393; column 0 = t0·[0,-1,1,0] "
                                "with t0 bisected to the middle of the values that print loss[0] = 0.4099546 "
                                "and the mean 1.36688185; other columns zero",
    "lm_head.weight": "hand-set, read off the article: z = [h0, h0+h2+0.1, h1, -h0-0.2, h3]",
    "lm_head.bias": "hand-set, read off the article",
    "other tables": "LayerNorm scale 1 and offset 0 (PyTorch's defaults); every other bias 0",
}


def weight_file_text(tables: dict) -> str:
    """The JSON weight file, one matrix row per line."""
    return weight_files.weight_file_text({"about": ABOUT, "config": FIVE_TOKEN.config_summary(), "notes": NOTES}, tables)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    torch.set_num_threads(1)
    tables = derive_tables()
    if "--write" in argv:
        FIVE_TOKEN.weights_path.write_text(weight_file_text(tables), encoding="utf-8")
        print(f"wrote {FIVE_TOKEN.weights_path}")
    print("solved W_q diagonal:", [tables["blocks.0.attn.query.weight"][i][i] for i in range(4)])
    print("solved MLP output columns 0, 1, 2:",
          [[row[c] for row in tables["blocks.0.mlp.down.weight"]] for c in range(3)])
    for figure_id, values in figure_values(FIVE_TOKEN.from_tables(tables)).items():
        check_figure(figure_id, **values)
    print(certificate_text())


if __name__ == "__main__":
    main()
