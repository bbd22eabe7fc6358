"""Issue 22, "correct on every input": the decoding rules' silent wrong answers, pinned.

* No batched function writes into its input, whatever the dtype (float64 logits were once
  overwritten by ``apply_batched``, which then ranked by the overwritten values).
* The batched rules keep the per-row rules' ids on random float64 rows of every scale
  (values near 1e-30 once disagreed) and accept float16 / bfloat16 logits as the per-row rules do.
* A tiny temperature, a NaN logit, text where numbers belong, ``greedy="no"``, an unseeded
  draw: each gives the right answer or an error naming the argument, never a coerced result.
"""
import math

import pytest
import torch

from course_lib import decoding as D
from course_lib.decoding.batched import first_k, first_n
from course_lib.decoding.generate import generate
from course_lib.model import GPT, GPTConfig
from course_lib.tokens.bpe import teaching_tokenizer

from _exact import assert_close

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INF = math.inf


def logit_batch(dtype):
    """[4, 8] logits exact in every dtype: ties, a −inf, a far leader."""
    z = torch.tensor([[2.0, 1.0, 1.0, 0.5, -1.0, -INF, 0.0, 1.0],
                      [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                      [40.0, -40.0, 3.0, 3.0, 2.0, -INF, -INF, 1.0],
                      [-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0]], dtype=torch.float64)
    return z.to(dtype)


def prob_batch(dtype):
    """[2, 8] probabilities exact in every dtype (powers of two summing to 1)."""
    q = torch.tensor([[0.5, 0.25, 0.125, 0.0625, 0.03125, 0.03125, 0.0, 0.0],
                      [0.125] * 8], dtype=torch.float64)
    return q.to(dtype)


def gen():
    return torch.Generator().manual_seed(0)


RULE = D.SamplingRule(temperature=0.7, top_k=5, top_p=0.9, min_p=0.05)
BATCHED_ON_LOGITS = {
    "apply_batched": lambda z: D.apply_batched(RULE, z),
    "apply_batched greedy": lambda z: D.apply_batched(D.SamplingRule(greedy=True), z),
    "apply_batched top_k only": lambda z: D.apply_batched(D.SamplingRule(top_k=1), z),
    "sample_batched": lambda z: D.sample_batched(RULE, z, gen()),
    "sample_batched top_k only": lambda z: D.sample_batched(D.SamplingRule(top_k=1), z, gen()),
    "softmax_with_temperature_batched": lambda z: D.softmax_with_temperature_batched(z, 0.5),
    "softmax_with_temperature_batched τ=1": lambda z: D.softmax_with_temperature_batched(z),
    "softmax64_batched": lambda z: D.softmax64_batched(z, 0.5),
    "greedy_ids_batched": D.greedy_ids_batched,
    "ranked_batched": D.ranked_batched,
    "top_k_mask from logits": lambda z: D.top_k_mask(None, 3, logits=z),
    "top_k_strict_cut_mask": lambda z: D.top_k_strict_cut_mask(z, 3),
    "batched.first_n": lambda z: first_n(z, torch.full((z.shape[0], 1), 2)),
    "batched.first_k": lambda z: first_k(z, 2),
}
BATCHED_ON_PROBS = {
    "top_k_mask": lambda q: D.top_k_mask(q, 3),
    "top_p_mask": lambda q: D.top_p_mask(q, 0.8),
    "min_p_mask": lambda q: D.min_p_mask(q, 0.2),
    "gpt2_legacy_top_p_mask": lambda q: D.gpt2_legacy_top_p_mask(q, 0.8),
    "filter_batched": lambda q: D.filter_batched(RULE, q),
    "renormalize_batched": lambda q: D.renormalize_batched(q, q > 0.1),
    "sample_interval_batched": lambda q: D.sample_interval_batched(q, torch.tensor([0.3, 0.9])),
    "sample_seeded_batched": lambda q: D.sample_seeded_batched(q, gen()),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(BATCHED_ON_LOGITS))
def test_no_batched_function_on_logits_writes_into_its_input(name, dtype):
    z = logit_batch(dtype)
    copy = z.clone()
    BATCHED_ON_LOGITS[name](z)
    assert torch.equal(z, copy), f"{name} changed its {dtype} input"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(BATCHED_ON_PROBS))
def test_no_batched_function_on_probabilities_writes_into_its_input(name, dtype):
    q = prob_batch(dtype)
    copy = q.clone()
    BATCHED_ON_PROBS[name](q)
    assert torch.equal(q, copy), f"{name} changed its {dtype} input"


@pytest.mark.parametrize("name", sorted(BATCHED_ON_LOGITS))
def test_no_batched_function_changes_a_gpt2_sized_float64_batch(name):
    """The size where the numpy paths give way to torch's (more than 65,536 values)."""
    z = D.random_logit_batch(rows=2, vocab=50_257, seed=3)
    copy = z.clone()
    BATCHED_ON_LOGITS[name](z)
    assert torch.equal(z, copy)


def test_float64_logits_are_ranked_as_given_and_left_alone():
    """Two logits whose exponentials both underflow to 0."""
    z = torch.tensor([[0.0, -801.0, -800.0]], dtype=torch.float64)
    assert D.SamplingRule(top_k=2).apply(z[0].tolist()).kept == [0, 2]
    mask, _ = D.apply_batched(D.SamplingRule(top_k=2), z)
    assert mask[0].nonzero()[:, 0].tolist() == [0, 2]
    assert z.tolist() == [[0.0, -801.0, -800.0]]


def test_the_same_rule_twice_on_one_tensor_keeps_the_same_ids():
    z = D.random_logit_batch(rows=3, vocab=2_000, seed=1)
    rule = D.SamplingRule(top_p=0.5)
    first, _ = D.apply_batched(rule, z)
    second, _ = D.apply_batched(rule, z)
    assert torch.equal(first, second)


RULES = [D.SamplingRule(top_k=3), D.SamplingRule(top_p=0.9), D.SamplingRule(min_p=0.1),
         D.SamplingRule(temperature=0.7, top_k=5, top_p=0.8, min_p=0.05), D.SamplingRule(greedy=True),
         D.SamplingRule(temperature=2.0, top_p=0.5)]


@pytest.mark.parametrize("scale", [1e-30, 1e-10, 1.0, 30.0, 1e3])
def test_batched_rules_equal_per_row_rules_on_random_float64_rows_of_every_scale(scale):
    """Logits near 1e-30 all have exp(z − max) = 1.0: only the logits can rank them."""
    z = torch.randn(12, 9, generator=torch.Generator().manual_seed(7), dtype=torch.float64) * scale
    for rule in RULES:
        mask, final = D.apply_batched(rule, z)
        for b in range(len(z)):
            step = rule.apply(z[b])
            assert mask[b].nonzero()[:, 0].tolist() == sorted(step.kept), (rule, z[b].tolist())
            assert_close(final[b], step.final, rel=1e-12, abs=1e-300, what=f"row {b}")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_half_precision_logits_go_through_the_batched_rules_like_the_per_row_ones(dtype):
    z = logit_batch(dtype)
    for rule in RULES:
        mask, _ = D.apply_batched(rule, z)
        for b in range(len(z)):
            assert mask[b].nonzero()[:, 0].tolist() == sorted(rule.apply(z[b]).kept), (rule, b)
        drawn = D.sample_batched(rule, z, gen())
        assert all(mask[b, i] for b, i in enumerate(drawn.tolist()))
    assert D.top_k_mask(None, 2, logits=z).sum(dim=-1).tolist() == [2, 2, 2, 2]


@pytest.mark.parametrize("temperature", [1e-39, 1e-300, 5e-324])
def test_a_tiny_temperature_gives_the_per_row_one_hot_not_nan(temperature):
    for dtype in (torch.float32, torch.float64):
        z = torch.tensor([[2.0, 1.0, 0.0], [0.0, 3.0, 3.0]], dtype=dtype)
        probs = D.softmax_with_temperature_batched(z, temperature)
        expected = [D.softmax_with_temperature(row, temperature) for row in z.tolist()]
        assert probs.tolist() == expected == [[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]]
        assert probs.dtype == dtype


class NanBias(torch.nn.Module):
    """A model whose logits hold one NaN (a damaged bias), else favour id 0."""

    def __init__(self):
        super().__init__()
        self.config = GPTConfig(vocab_size=4, n_positions=8, n_embd=4, n_head=1, n_layer=1)

    def forward(self, ids, cache=None, last_only=False):
        logits = torch.tensor([5.0, 0.0, math.nan, 1.0])
        return logits.expand(1, 1, 4)

    def new_cache(self, size):
        return None


def test_greedy_generation_refuses_a_nan_logit():
    with pytest.raises(ValueError, match="logits contains NaN"):
        generate(NanBias(), [0], 3)
    with pytest.raises(ValueError, match="logits contains NaN"):
        generate(NanBias(), [0], 3, choose=D.RuleChoice(D.SamplingRule(), us=[0.5, 0.5, 0.5]))


@pytest.mark.parametrize("row", [[0.0, math.inf], [-math.inf, -math.inf]])
def test_greedy_choice_refuses_inf_rows(row):
    with pytest.raises(ValueError, match="^logits"):
        D.greedy_choice(torch.tensor(row), 0)


@pytest.mark.parametrize("call, message", [
    (lambda: D.softmax_with_temperature("123"), r"^logits must be a row of numbers .*the text '123'"),
    (lambda: D.greedy_id(["1", "9"]), r"^logits must hold numbers, got '1' \(str\)"),
    (lambda: D.greedy_id([True, False]), r"^logits must hold numbers, got True \(bool\)"),
    (lambda: D.softmax_with_temperature({0: 1.0, 1: 2.0}), r"^logits must be a row of numbers .*dict"),
    (lambda: D.SamplingRule(greedy="no"), r"^greedy must be True or False, got 'no'"),
    (lambda: D.SamplingRule(greedy=1), r"^greedy must be True or False, got 1"),
    (lambda: D.RuleChoice(D.SamplingRule(), us=["0.5"]), r"^u must be a number in \[0, 1\), got '0.5'"),
    (lambda: D.RuleChoice(D.SamplingRule(), us="0.5"), r"^us must be a list of numbers"),
    (lambda: D.RuleChoice(D.SamplingRule(), generator=0), r"^generator must be a seeded torch.Generator"),
    (lambda: D.draw_counts([0.5, 0.5], 10, seed=None), r"^seed must be an integer"),
    (lambda: D.draw_counts([0.5, 0.5], 10, seed="1"), r"^seed must be an integer"),
    (lambda: D.sample_seeded([0.5, 0.5], None), r"^generator must be a seeded torch.Generator"),
    (lambda: D.sample_seeded_batched(prob_batch(torch.float32), None), r"^generator must be a seeded"),
    (lambda: D.sample_batched(D.SamplingRule(), logit_batch(torch.float32), None), r"^generator must be"),
    (lambda: D.renormalize_batched(torch.tensor([[math.nan, 1.0]]), torch.tensor([[True, True]])),
     r"^probs contains NaN"),
    (lambda: D.renormalize_batched(torch.tensor([[-0.5, 1.5]]), torch.tensor([[True, True]])),
     r"^probs contains a negative value"),
    (lambda: D.renormalize_batched(torch.tensor([[2.0, 1.0]]), torch.tensor([[True, True]])),
     r"^probs row 0 must sum to 1"),
    (lambda: D.renormalize_batched(torch.tensor([[0.5, 0.5]]), torch.tensor([[1, 0]])), r"^mask must be a bool tensor"),
    (lambda: D.renormalize_batched(torch.tensor([[0.5, 0.5]]), torch.tensor([True, False])), r"^mask has shape"),
])
def test_coerced_inputs_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_generate_refuses_an_end_id_that_is_not_an_integer():
    from course_lib.toys.five_token import FIVE_TOKEN
    with pytest.raises(ValueError, match=r"^end_id must be an integer id, got 1.0"):
        generate(FIVE_TOKEN.load(), [0], 2, end_id=1.0)


@pytest.mark.parametrize("ids", [{40: "I"}, {40, 314}, frozenset([40])], ids=["dict", "set", "frozenset"])
def test_decode_refuses_a_dict_or_a_set(ids):
    with pytest.raises(ValueError, match=r"^ids must be a sequence of integer ids .* no order"):
        teaching_tokenizer().decode(ids)


def test_renormalize_still_takes_a_set_of_kept_ids():
    assert D.renormalize([0.5, 0.25, 0.25], {0, 2}) == [2 / 3, 0.0, 1 / 3]
