"""The exercise checkers (course_lib.exercises) can pass and can fail, each with its intended hint.

For every exercise: the worked solution (notebooks/solutions/<chapter>_solutions.ipynb, one
notebook per chapter, read the way a grading script reads a learner's notebook) passes and
reproduces a registry figure; a stub is "not attempted yet"; and the typical wrong
implementations below are each rejected with the hint written for that mistake. Each exercise
links to its own solution, in both editions.
"""
import json
import math
import re
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from course_lib.exercises import EXERCISES, NOT_ATTEMPTED, Result, check_notebook, load_functions
from course_lib.figures import load_registry
from course_lib.ui.strings import STRINGS

from test_notebook_outputs import problems_in

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
# the worked solutions, one notebook per chapter (01_tokenizer_solutions.ipynb, …)
SOLUTIONS = sorted((NOTEBOOKS / "solutions").glob("0*_solutions.ipynb"))
SOLVED = {name: fn for path in SOLUTIONS for name, fn in load_functions(path).items()}
# both editions' solutions notebooks (the Chinese ones: notebooks/zh/solutions/)
ALL_SOLUTIONS = SOLUTIONS + sorted((NOTEBOOKS / "zh" / "solutions").glob("0*_solutions.ipynb"))


def check(name, fn) -> Result:
    return EXERCISES[name][1](fn)


# --------------------------------------------------------------------------- the solutions pass


@pytest.mark.parametrize("name", list(EXERCISES))
def test_the_worked_solution_passes_and_reproduces_an_article_figure(name):
    result = check(name, SOLVED[name])
    assert result.passed, result.message
    assert result.message.startswith(f"✓ {name}\n  · ") and result.details and result.hint is None
    assert all(len(line) <= 88 for line in result.message.splitlines()), result.message
    assert any(figure_id in result.message for figure_id in load_registry()), (
        f"{name}'s ✓ line names no registry figure: {result.message}")


def test_every_exercise_has_a_worked_solution():
    assert sorted(SOLVED) == sorted(EXERCISES)
    assert len(EXERCISES) >= 24 and {chapter for chapter, _ in EXERCISES.values()} == {f"0{i}" for i in range(1, 8)}


# --------------------------------------------------------------------------- stubs, bad calls


def stub(*args, **kwargs):
    """A stub as the notebooks ship it."""
    raise NotImplementedError


def ellipsis_stub(*args, **kwargs):
    return ...


@pytest.mark.parametrize("name", list(EXERCISES))
@pytest.mark.parametrize("fn", [stub, ellipsis_stub], ids=["raise", "ellipsis"])
def test_a_stub_is_not_attempted_yet_without_a_traceback(name, fn):
    result = check(name, fn)
    assert not result.passed and not result.attempted
    assert result.message == f"· {name}: {NOT_ATTEMPTED}" and len(result.message) <= 88
    assert "Traceback" not in result.message


def test_a_missing_return_and_a_crash_each_give_one_line():
    result = check("make_causal_mask", lambda T: None)
    assert not result.passed and result.attempted and "forget `return`" in result.hint
    result = check("make_causal_mask", lambda T: [][1])
    assert result.hint.startswith("on T = 3 your function raised IndexError: list index out of range")
    assert result.message == textwrap.fill(f"✗ make_causal_mask: {result.hint}", 88, subsequent_indent="  ")
    result = check("make_causal_mask", "not a function")
    assert not result.passed and "pass the function" in result.hint


def test_a_function_that_calls_an_unwritten_stub_says_which():
    def attention_head(q, k, v):
        mask = make_causal_mask(q.shape[-2])
        return mask, mask

    def make_causal_mask(T):
        raise NotImplementedError

    result = check("attention_head", attention_head)
    assert result.attempted and result.hint == "your function calls make_causal_mask, which is not written yet: do that exercise first"


def test_the_result_object_is_what_a_grading_script_reads(capsys):
    result = check("top_k_filter", SOLVED["top_k_filter"])
    assert bool(result) and result.name == "top_k_filter" and str(result) == result.message
    result._ipython_display_()
    assert capsys.readouterr().out == result.message + "\n"
    failed = check("top_k_filter", lambda probs, k: probs)
    assert not bool(failed) and " ".join(failed.message.split()) == f"✗ top_k_filter: {failed.hint}"


def test_a_check_leaves_the_default_dtype_alone():
    before = torch.get_default_dtype()
    check("layer_norm", SOLVED["layer_norm"])
    check("layer_norm", stub)
    assert torch.get_default_dtype() == before


# --------------------------------------------------------------------------- typical mistakes


def _renorm(probs, keep):
    kept = torch.where(keep, probs, 0.0)
    return kept / kept.sum(-1, keepdim=True)


def _by_rank(probs, keep_sorted_fn):
    sorted_probs, order = torch.sort(probs, dim=-1, descending=True, stable=True)
    return _renorm(probs, torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, keep_sorted_fn(sorted_probs)))


def _merge_all(parts, pair):
    out, i = [], 0
    while i < len(parts):
        if i + 1 < len(parts) and (parts[i], parts[i + 1]) == pair:
            out.append(parts[i] + parts[i + 1])
            i += 2
        else:
            out.append(parts[i])
            i += 1
    return out


def _merge_all_from_the_right(parts, pair):
    """_merge_all scanning from the word's end: the word and every piece spelled backwards."""
    backwards = _merge_all([p[::-1] for p in parts[::-1]], (pair[1][::-1], pair[0][::-1]))
    return [p[::-1] for p in backwards[::-1]]


def bpe_loop(word, ranks, pick=min, merge=_merge_all):
    """A merge loop with one step swapped: which pair (``pick``) or how it is merged (``merge``)."""
    parts = list(word)
    while (known := [p for p in zip(parts, parts[1:]) if p in ranks]):
        parts = merge(parts, pick(known, key=ranks.get))
    return parts


def bpe_one_step_only(word, ranks):
    parts = list(word)
    known = [p for p in zip(parts, parts[1:]) if p in ranks]
    return _merge_all(parts, min(known, key=ranks.get)) if known else parts


def _head(q, k, v, scale, mask_fn, dim=-1, mask_after=False):
    scores = q @ k.transpose(-2, -1) / scale(q.shape[-1])
    T = q.shape[-2]
    if mask_after:
        weights = torch.softmax(scores, dim) * ~mask_fn(T)
    else:
        weights = torch.softmax(scores.masked_fill(mask_fn(T), float("-inf")), dim)
    return weights @ v, weights


def top_k_ties_to_larger_id(probs, k):
    flipped = torch.sort(probs.flip(-1), dim=-1, descending=True, stable=True).indices    # ranks, ids reversed
    order = probs.shape[-1] - 1 - flipped
    return _renorm(probs, torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order[..., :k], True))


def upper(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), 1)


def head_with_k_T(q, k, v):
    """Written for (T, d) only: k.T reverses every dim of a batch (spelled out, without the warning)."""
    k_T = k.permute(*range(k.dim() - 1, -1, -1))
    scores = (q @ k_T / math.sqrt(q.shape[-1])).masked_fill(upper(q.shape[-2]), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def temperature_checked(fn):
    def wrapped(z, tau):
        if tau <= 0:
            raise ValueError("tau")
        return fn(z, tau)
    return wrapped


def _ln(x, eps, var, eps_outside=False, dim=-1):
    mean = x.mean(dim, keepdim=True)
    return (x - mean) / (var(x, dim).sqrt() + eps) if eps_outside else (x - mean) / torch.sqrt(var(x, dim) + eps)


def biased(x, dim):
    return x.var(dim, unbiased=False, keepdim=True)


def _stream_each(errors):
    return lambda chunks: [c.decode("utf-8", errors=errors) for c in chunks]


def _sgd(sign=-1, zero=True, no_grad=True):
    def step(model, ids, targets, lr):
        if zero:
            model.zero_grad()
        loss = F.cross_entropy(model(ids).reshape(-1, model.config.vocab_size), targets.reshape(-1))
        loss.backward()
        with torch.no_grad() if no_grad else torch.enable_grad():
            for p in model.parameters():
                if no_grad:
                    p += sign * lr * p.grad
                else:
                    p -= lr * p.grad
        return loss.item()
    return step


def _generate(feed_cache=True, whole=False, append=True):
    def loop(model, prompt, n):
        cache, ids = model.new_cache(), list(prompt)
        logits = model(torch.tensor([ids]), cache=cache)
        out = list(ids)
        for _ in range(n):
            nxt = int(logits[0, -1].argmax())
            ids.append(nxt)
            if append:
                out.append(nxt)
            feed = torch.tensor([ids]) if whole else torch.tensor([[nxt]])
            logits = model(feed, cache=cache) if feed_cache else model(feed)
        return out
    return loop


def _draw(closed_right):
    def draw(probs, u):
        total = 0.0
        for i, p in enumerate(probs.tolist()):
            total += p
            if (u <= total) if closed_right else (u < total):
                return i
        return len(probs) - 1
    return draw


def _ce(z, t, reduce="mean", stable=True, sign=-1):
    V = z.shape[-1]
    z, t = z.reshape(-1, V), t.reshape(-1)
    log_probs = torch.log_softmax(z, -1) if stable else torch.log(torch.exp(z) / torch.exp(z).sum(-1, keepdim=True))
    picked = log_probs[torch.arange(len(t)), t]
    return sign * (picked.sum() if reduce == "sum" else picked.mean())


def _byte_table(shift_space=True):
    def table():
        keep = set(range(33, 127)) | set(range(161, 173)) | set(range(174, 256))
        if not shift_space:
            keep.add(32)
        out, n = {b: chr(b) for b in keep}, 0
        for b in range(256):
            if b not in out:
                out[b] = chr(256 + n)
                n += 1
        return out
    return table


MISTAKES = [
    # exercise, mistake, wrong implementation, the hint it must get (a substring)
    ("byte_table", "space kept as itself", _byte_table(shift_space=False), "byte 32 (' ') is not printable in GPT-2's sense"),
    ("byte_table", "identity table", lambda: {b: chr(b) for b in range(256)}, "byte 0 ('\\x00') is not printable"),
    ("byte_table", "Latin-1 shifted wholesale", lambda: {b: chr(b + 256) for b in range(256)}, "byte 33 ('!') is printable: it must map to itself"),
    ("byte_table", "only 255 entries", lambda: {b: chr(b + 256) for b in range(255)}, "one entry for each byte value 0..255"),
    ("bpe_merge", "highest rank first", lambda w, r: bpe_loop(w, r, pick=max), "merge the pair with the LOWEST rank first"),
    ("bpe_merge", "merges right to left", lambda w, r: bpe_loop(w, r, merge=_merge_all_from_the_right), "scan left to right"),
    ("bpe_merge", "one merge step only", bpe_one_step_only, "keep merging until no adjacent pair has a rank"),
    ("stream_decode", "decodes each id with errors='replace'", _stream_each("replace"), "you showed U+FFFD"),
    ("stream_decode", "decodes each id with errors='ignore'", _stream_each("ignore"), "keep the held-back bytes"),
    ("one_hot_rows", "one_hot without num_classes", lambda ids, E: F.one_hot(ids).to(E.dtype) @ E, "as wide as the vocabulary"),
    ("one_hot_rows", "integer one-hot", lambda ids, E: F.one_hot(ids, E.shape[0]) @ E, "give it E's dtype"),
    ("embed", "P indexed by the token ids", lambda ids, E, P: E[ids] + P[ids], "P is indexed by the position"),
    ("embed", "positions counted from 1", lambda ids, E, P: E[ids] + P[1:ids.shape[-1] + 1], "the first token adds P[0]"),
    ("embed", "T taken from the batch axis", lambda ids, E, P: E[ids] + P[:ids.shape[0]], "T is the length of each sequence"),
    ("last_scores", "last row without its dimension", lambda ids, E: E[ids][-1] @ E.T, "keep the row dimension"),
    ("last_scores", "first row instead of last", lambda ids, E: E[ids][:1] @ E.T, "the last vector with every row of E"),
    ("make_causal_mask", "lower-triangular", lambda T: torch.tril(torch.ones(T, T, dtype=torch.bool), -1), "is your mask upper- or lower-triangular?"),
    ("make_causal_mask", "off by one: the diagonal masked", lambda T: torch.triu(torch.ones(T, T, dtype=torch.bool)), "the diagonal is masked"),
    ("make_causal_mask", "0/1 floats instead of booleans", lambda T: torch.triu(torch.ones(T, T), 1), "return booleans"),
    ("make_causal_mask", "built for T = 3 only", lambda T: upper(3), "on T = 1 expected shape (1, 1), got (3, 3)"),
    ("attention_head", "no 1/√d", lambda q, k, v: _head(q, k, v, lambda d: 1.0, upper), "scale the scores by 1/√d"),
    ("attention_head", "divides by d", lambda q, k, v: _head(q, k, v, lambda d: d, upper), "divide the scores by √d, not by d"),
    ("attention_head", "no mask", lambda q, k, v: _head(q, k, v, math.sqrt, lambda T: torch.zeros(T, T, dtype=torch.bool)), "position 0 attends to position 1"),
    ("attention_head", "mask applied after the softmax", lambda q, k, v: _head(q, k, v, math.sqrt, upper, mask_after=True), "BEFORE the softmax"),
    ("attention_head", "softmax over columns", lambda q, k, v: _head(q, k, v, math.sqrt, upper, dim=-2), "softmax each ROW"),
    ("attention_head", "k.T breaks a batch", lambda q, k, v: head_with_k_T(q, k, v), "swap only the last two dimensions of k"),
    ("split_heads", "plain view to (B, H, T, d)", lambda x, H: x.view(x.shape[0], H, x.shape[1], -1), "a plain reshape to (B, H, T, d) mixes positions into heads"),
    ("layer_norm", "unbiased variance", lambda x, eps=1e-5: _ln(x, eps, lambda x, d: x.var(d, keepdim=True)), "use the biased variance"),
    ("layer_norm", "eps outside the root", lambda x, eps=1e-5: _ln(x, eps, biased, eps_outside=True), "eps goes inside the square root"),
    ("layer_norm", "no eps", lambda x, eps=1e-5: _ln(x, 0.0, biased), "add eps to the variance"),
    ("layer_norm", "eps fixed at 1e-5", lambda x, eps=1e-5: _ln(x, 1e-5, biased), "use the eps you are given"),
    ("layer_norm", "across positions", lambda x, eps=1e-5: _ln(x, eps, biased, dim=0), "normalise each position's own features"),
    ("mlp_forward", "weights not transposed", lambda x, W1, b1, W2, b2: torch.relu(x @ W1 + b1) @ W2 + b2, "stores its weight as (out, in)"),
    ("mlp_forward", "no activation", lambda x, W1, b1, W2, b2: (x @ W1.T + b1) @ W2.T + b2, "apply ReLU between the two layers"),
    ("mlp_forward", "ReLU after both layers", lambda x, W1, b1, W2, b2: torch.relu(torch.relu(x @ W1.T + b1) @ W2.T + b2), "not after the second"),
    ("mlp_forward", "GELU", lambda x, W1, b1, W2, b2: F.gelu(x @ W1.T + b1) @ W2.T + b2, "ReLU, not GELU"),
    ("mlp_forward", "no biases", lambda x, W1, b1, W2, b2: torch.relu(x @ W1.T) @ W2.T, "add the biases"),
    ("pre_norm_block", "Post-Norm", lambda x, l1, a, l2, m: (lambda y: l2(y + m(y)))(l1(x + a(x))), "that is Post-Norm"),
    ("pre_norm_block", "residual on the normalised input", lambda x, l1, a, l2, m: (lambda y: l2(y) + m(l2(y)))(l1(x) + a(l1(x))), "not to the normalised"),
    ("pre_norm_block", "no second residual", lambda x, l1, a, l2, m: m(l2(x + a(l1(x)))), "the MLP has a residual add too"),
    ("one_logit", "no bias", lambda h, w, b: float(h @ w), "add the bias b"),
    ("one_logit", "cosine", lambda h, w, b: float(F.cosine_similarity(h, w, dim=0)) + b, "misses the article's 2.096655"),
    ("all_logits", "W not transposed", lambda H, W, b: H @ W + b, "every row of H meets every row of W"),
    ("all_logits", "no bias", lambda H, W, b: H @ W.T, "add the bias b"),
    ("all_logits", "cosines", lambda H, W, b: F.normalize(H, dim=-1) @ F.normalize(W, dim=-1).T + b, "not a cosine"),
    ("head_parameters", "a tied table counted twice", lambda V, D, tied: 2 * V * D, "count it once"),
    ("head_parameters", "an output bias counted", lambda V, D, tied: V * D if tied else 2 * V * D + V, "no bias"),
    ("stable_softmax", "no max-shift", lambda z: torch.exp(z) / torch.exp(z).sum(-1, keepdim=True), "your softmax overflows on logits of 1000"),
    ("stable_softmax", "the whole tensor's max", lambda z: (lambda e: e / e.sum(-1, keepdim=True))(torch.exp(z - z.max())), "each row's OWN max"),
    ("stable_softmax", "sum over everything", lambda z: (lambda e: e / e.sum())(torch.exp(z - z.max(-1, keepdim=True).values)), "every row must sum to 1"),
    ("shift_targets", "unshifted targets", lambda t: (t[:-1], t[:-1]), "targets are the NEXT ids"),
    ("shift_targets", "inputs and targets swapped", lambda t: (t[..., 1:], t[..., :-1]) if torch.is_tensor(t) else (t[1:], t[:-1]), "swapped"),
    ("shift_targets", "inputs keep the last id", lambda t: (t, t[1:]), "the inputs drop the last id"),
    ("shift_targets", "a batch shifted along its rows", lambda t: (t[:-1], t[1:]), "shift along the LAST dimension"),
    ("target_probs", "the largest probability", lambda z, t: torch.softmax(z, -1).amax(-1), "not the largest one"),
    ("target_probs", "log-probabilities", lambda z, t: torch.log_softmax(z, -1).gather(-1, t.unsqueeze(-1)).squeeze(-1), "misses 0.690284"),
    ("cross_entropy", "sum instead of mean", lambda z, t: _ce(z, t, reduce="sum"), "average over the positions"),
    ("cross_entropy", "+log p", lambda z, t: _ce(z, t, sign=1), "POSITIVE loss"),
    ("cross_entropy", "unstable log-softmax", lambda z, t: _ce(z, t, stable=False), "overflows on logits of 1000"),
    ("cross_entropy", "picks whole columns", lambda z, t: -torch.log_softmax(z.reshape(-1, z.shape[-1]), -1)[:, t.reshape(-1)].mean(), "takes whole columns"),
    ("sgd_step", "steps up the gradient", _sgd(sign=+1), "step AGAINST the gradient"),
    ("sgd_step", "gradients never zeroed", _sgd(zero=False), "clear them before each backward pass"),
    ("sgd_step", "update outside no_grad", _sgd(no_grad=False), "gradient tracking switched off"),
    ("apply_temperature", "τ applied after the softmax", temperature_checked(lambda z, t: (lambda p: p / p.sum(-1, keepdim=True))(torch.softmax(z, -1) / t)), "divide the LOGITS by τ before the softmax"),
    ("apply_temperature", "multiplies by τ", temperature_checked(lambda z, t: torch.softmax(z * t, -1)), "don't multiply"),
    ("apply_temperature", "τ = 0 accepted", lambda z, t: torch.softmax(z / max(t, 1e-9), -1), "raise ValueError when τ ≤ 0"),
    ("apply_temperature", "no max-shift", temperature_checked(lambda z, t: (lambda e: e / e.sum(-1, keepdim=True))(torch.exp(z / t))), "subtract each row's max before exp"),
    ("top_k_filter", "keeps every tie at the k-th value", lambda p, k: _renorm(p, p >= torch.topk(p, k, -1).values[..., -1:]), "keep exactly k ids"),
    ("top_k_filter", "ties to the larger id", lambda p, k: top_k_ties_to_larger_id(p, k), "keep the SMALLER id"),
    ("top_k_filter", "not renormalised", lambda p, k: torch.where(torch.zeros_like(p, dtype=torch.bool).scatter(-1, torch.sort(p, dim=-1, descending=True, stable=True).indices[..., :k], True), p, 0.0), "renormalise"),
    ("top_p_filter", "drops the crossing token", lambda p, P: _by_rank(p, lambda s: (s.cumsum(-1) <= P) | (torch.arange(s.shape[-1]) == 0)), "the token that crosses p must be kept"),
    ("top_p_filter", "a sum equal to p does not stop", lambda p, P: _by_rank(p, lambda s: s.cumsum(-1) - s <= P), "a sum equal to p is enough"),
    ("top_p_filter", "walks in id order", lambda p, P: _renorm(p, p.cumsum(-1) - p < P), "walk the tokens from most to least likely"),
    ("min_p_filter", "bar relative to the sum", lambda p, m: _renorm(p, p >= m * p.sum(-1, keepdim=True)), "not min_p × the sum"),
    ("min_p_filter", "strict > at the bar", lambda p, m: _renorm(p, p > m * p.amax(-1, keepdim=True)), "a token exactly at the bar is kept"),
    ("min_p_filter", "one bar for the whole batch", lambda p, m: _renorm(p, p >= m * p.max()), "each row has its own bar"),
    ("interval_draw", "right-closed intervals", _draw(closed_right=True), "intervals are left-closed"),
    ("generate_cached", "no cache at all", lambda model, prompt, n: _no_cache(model, prompt, n), "use the KV cache"),
    ("generate_cached", "the new id fed without the cache", _generate(feed_cache=False), "together WITH the cache"),
    ("generate_cached", "the whole sequence fed with the cache", _generate(whole=True), "feed only the new id"),
    ("generate_cached", "chosen ids not appended", _generate(append=False), "append each chosen id"),
]


def _no_cache(model, prompt, n):
    ids = list(prompt)
    for _ in range(n):
        ids.append(int(model(torch.tensor([ids]))[0, -1].argmax()))
    return ids


@pytest.mark.parametrize("name, mistake, fn, hint", MISTAKES, ids=[f"{m[0]}: {m[1]}" for m in MISTAKES])
def test_a_typical_mistake_is_rejected_with_its_hint(name, mistake, fn, hint):
    result = check(name, fn)
    assert result.attempted and not result.passed, f"{mistake} passed: {result.message}"
    assert hint in result.hint, f"{mistake}: expected a hint with {hint!r}, got {result.hint!r}"


def test_every_exercise_has_a_typical_mistake():
    assert {m[0] for m in MISTAKES} == set(EXERCISES)


# --------------------------------------------------------------------------- notebooks


def _notebook_with(cells, path):
    nb = {"cells": [{"cell_type": "code", "metadata": {"tags": tags}, "source": src, "outputs": [], "execution_count": None}
                    for src, tags in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def test_check_notebook_grades_only_the_exercise_cells(tmp_path):
    path = _notebook_with([("raise RuntimeError('an untagged cell never runs')", []),
                           ("def top_p_filter(probs, p):\n    raise NotImplementedError", ["exercise"]),
                           ("def make_causal_mask(T):\n    return torch.tril(torch.ones(T, T, dtype=torch.bool), -1)", ["exercise"])],
                          tmp_path / "learner.ipynb")
    results = {r.name: r for r in check_notebook(path)}
    assert set(results) == {"top_p_filter", "make_causal_mask"}
    assert not results["top_p_filter"].attempted
    assert "upper- or lower-triangular" in results["make_causal_mask"].hint


def chapter_notebook(chapter: str, edition: str = "") -> Path:
    """notebooks/[zh/]03_attention.ipynb for chapter "03"."""
    return next((NOTEBOOKS / edition).glob(f"{chapter}_*.ipynb"))


def solutions_of(chapter: str, edition: str = "") -> Path:
    return NOTEBOOKS / edition / "solutions" / f"{chapter_notebook(chapter).stem}_solutions.ipynb"


@pytest.mark.parametrize("solutions", ALL_SOLUTIONS, ids=lambda p: p.relative_to(NOTEBOOKS).as_posix())
def test_the_solutions_notebook_is_executed_and_every_check_prints_its_tick(solutions):
    nb = json.loads(solutions.read_text(encoding="utf-8"))
    chapter = solutions.name[:2]
    names = [name for name, (c, _) in EXERCISES.items() if c == chapter]
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1))
    checks = [c for c in code if "".join(c["source"]).startswith("check_")]
    assert ["".join(c["source"]) for c in checks] == [f"check_{name}({name})" for name in names]
    for cell in checks:
        name = "".join(cell["source"]).split("(")[1].rstrip(")")
        printed = "".join("".join(o.get("text", "")) for o in cell["outputs"])
        assert printed.startswith(f"✓ {name}\n"), printed
    assert all(o["output_type"] == "stream" and o["name"] == "stdout" for c in code for o in c["outputs"])
    assert not problems_in(solutions)
    graded = check_notebook(solutions)                 # graded the way a learner's notebook is
    assert [r.name for r in graded] == names and all(r.passed for r in graded), [r.message for r in graded if not r.passed]


# --------------------------------------------------------------------------- the learner notebooks

# chapter -> its notebook, in both editions ("zh/01" -> notebooks/zh/01_tokenizer.ipynb)
LEARNER = {f"{edition}{chapter}": path for chapter in sorted({c for c, _ in EXERCISES.values()})
           for edition in ("", "zh/") for path in sorted((NOTEBOOKS / edition).glob(f"{chapter}_*.ipynb"))}


@pytest.mark.parametrize("edition_chapter", sorted(LEARNER))
def test_each_notebook_ships_its_exercises_as_stubs_with_their_not_attempted_lines(edition_chapter):
    path, chapter = LEARNER[edition_chapter], edition_chapter[-2:]
    not_attempted = STRINGS["zh" if edition_chapter.startswith("zh/") else "en"]["exercise.not_attempted"]
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    names = [name for name, (c, _) in EXERCISES.items() if c == chapter]
    stubs = [i for i, c in enumerate(cells) if "exercise" in c.get("metadata", {}).get("tags", [])]
    defined = ["".join(cells[i]["source"]).split("def ", 1)[1].split("(", 1)[0] for i in stubs]
    assert defined == names, f"{path.name}: exercise cells define {defined}, expected {names} in that order"
    for i, name in zip(stubs, names):
        assert "raise NotImplementedError" in "".join(cells[i]["source"]), f"{path.name}: {name} is shipped solved"
        statement, check_cell = cells[i - 1], cells[i + 1]
        assert statement["cell_type"] == "markdown" and f"`{name}`" in "".join(statement["source"])
        assert "".join(check_cell["source"]) == f"from course_lib.exercises import check_{name}\ncheck_{name}({name})"
        printed = "".join("".join(o.get("text", "")) for o in check_cell["outputs"])
        assert printed == f"· {name}: {not_attempted}\n", f"{path.name}: {name}'s check cell shows {printed!r}"
    assert [r.attempted for r in check_notebook(path)] == [False] * len(names)


# module alias -> the import line that binds it in a notebook
MODULES = {"math": "import math", "torch": "import torch", "F": "import torch.nn.functional as F"}


@pytest.mark.parametrize("edition_chapter", sorted(LEARNER))
def test_each_notebook_imports_what_its_statements_and_worked_solutions_use_before_the_exercise(edition_chapter):
    """The learner's own check and the grader run the notebook's cells with nothing injected:
    a worked solution that uses math or F, or a statement that says "use `F.one_hot`", must find
    it imported above the exercise's cell."""
    path, chapter = LEARNER[edition_chapter], edition_chapter[-2:]
    solution_cells = ["".join(c["source"]) for c in json.loads(solutions_of(chapter).read_text(encoding="utf-8"))["cells"]
                      if c["cell_type"] == "code"]
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) for c in cells]
    for name in [n for n, (c, _) in EXERCISES.items() if c == chapter]:
        solved = next(c for c in solution_cells if c.startswith(f"def {name}("))
        at = next(i for i, c in enumerate(cells) if c["cell_type"] == "code" and sources[i].startswith(f"def {name}("))
        above = "\n".join(src for c, src in zip(cells[:at + 1], sources) if c["cell_type"] == "code")
        used = {m for m in MODULES if re.search(rf"(?<![\w.]){m}\.", solved) or re.search(rf"`{m}\.", sources[at - 1])
                and f"`{m}." in sources[at - 1].split("use ", 1)[-1][:40]}
        for module in used:
            assert re.search(rf"^{re.escape(MODULES[module])}$", above, re.M), f"{path.name}: {name} uses {module}, not imported above it"
