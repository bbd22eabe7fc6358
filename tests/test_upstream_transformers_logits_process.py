"""Ported: Hugging Face transformers' tests of its sampling warpers, run on course_lib's rules.

Upstream file: huggingface/transformers, tests/generation/test_logits_process.py at commit
019af3ac65298aae51038a941c54a038a505bd57 — the cases of ``test_temperature_dist_warper``,
``test_top_k_dist_warper``, ``test_top_p_dist_warper`` and ``test_min_p_dist_warper``, with
their "processor should not change logits in-place" assertions. The inputs and the expected
values are upstream's, unchanged. What differs is the interface: a transformers warper returns
the logits with removed ids set to ``filter_value``; the course's rules return which ids are
kept (``SamplingRule.apply(...).kept``, the masks of ``apply_batched`` / ``top_k_mask``), so an
upstream "these entries are −inf" is checked here as "these ids are not kept".

Where the course differs by design (``course_lib.decoding.rules``, "deliberate differences"),
the case asserts the course's answer, names the difference, and shows how the upstream value
follows from it:

* TOP-K TIES (difference 1): the course keeps exactly k ids; transformers keeps every id tied
  with the k-th value (as nanoGPT's ``top_k_strict_cut`` does).
* MIN_TOKENS_TO_KEEP (difference 6): the course's rules have no such floor; upstream's count is
  max(the course's count, min_tokens_to_keep).
* FILTER_VALUE (difference 5): the course never writes a filter value into the logits; it returns kept ids.
"""
import pytest
import torch

from course_lib import decoding as D


def uniform_logits(batch_size: int, length: int) -> torch.Tensor:
    """Upstream's ``_get_uniform_logits``: float32 rows of 1 / length."""
    return torch.ones((batch_size, length), dtype=torch.float) / length


def kept_rows(rule: D.SamplingRule, logits: torch.Tensor) -> list[list[int]]:
    """The ids each row keeps, per row (teaching rules) — and the batched rule must agree."""
    per_row = [sorted(rule.apply(row).kept) for row in logits]
    mask, _ = D.apply_batched(rule, logits)
    assert [torch.nonzero(m).flatten().tolist() for m in mask] == per_row
    return per_row


def removed_pattern(kept: list[list[int]], size: int) -> list[list[bool]]:
    """Upstream's ``torch.isinf(scores)`` picture: True where an id was removed."""
    return [[i not in row for i in range(size)] for row in kept]


# --------------------------------------------------------------------------- temperature

def test_temperature_dist_warper():
    length = 20
    scores = uniform_logits(batch_size=2, length=length)
    scores[1, 5] = (1 / length) + 0.1          # peak, 1st batch
    scores[1, 10] = (1 / length) - 0.4         # valley, 1st batch
    before = scores.clone()
    probs = torch.nn.functional.softmax(scores, dim=-1)

    warped_sharp = D.softmax_with_temperature_batched(scores, 0.5)
    warped_smooth = D.softmax_with_temperature_batched(scores, 1.3)
    per_row_sharp = torch.tensor([D.softmax_with_temperature(row, 0.5) for row in scores.tolist()])

    # uniform distribution stays uniform
    torch.testing.assert_close(probs[0, :], warped_sharp[0, :], rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(probs[0, :], warped_smooth[0, :], rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(per_row_sharp.float(), warped_sharp, rtol=1e-5, atol=1e-7)

    # sharp peaks get higher, valleys get lower
    assert probs[1, :].max() < warped_sharp[1, :].max()
    assert probs[1, :].min() > warped_sharp[1, :].min()

    # smooth peaks get lower, valleys get higher
    assert probs[1, :].max() > warped_smooth[1, :].max()
    assert probs[1, :].min() < warped_smooth[1, :].min()

    # processor should not change logits in-place (here: the input is exactly as it was)
    assert torch.equal(scores, before)
    assert not torch.equal(warped_smooth, scores)


# --------------------------------------------------------------------------- top-k

def test_top_k_dist_warper():
    vocab_size, batch_size = 10, 2
    ramp_logits = torch.arange(vocab_size, dtype=torch.float).unsqueeze(0).repeat(batch_size, 1)
    ramp_logits[1:, : vocab_size // 2] = ramp_logits[1:, : vocab_size // 2] + vocab_size
    before = ramp_logits.clone()

    kept = kept_rows(D.SamplingRule(top_k=3), ramp_logits)
    mask = D.top_k_mask(None, 3, logits=ramp_logits)

    # check that correct tokens are filtered
    assert removed_pattern(kept, vocab_size)[0] == 7 * [True] + 3 * [False]
    assert removed_pattern(kept, vocab_size)[1] == 2 * [True] + 3 * [False] + 5 * [True]
    assert (~mask).tolist() == removed_pattern(kept, vocab_size)

    # processor should not change logits in-place
    assert torch.equal(ramp_logits, before)


def test_top_k_dist_warper_special_cases():
    """Upstream: ``TopKLogitsWarper(top_k=1, filter_value=0.0, min_tokens_to_keep=3)``."""
    length, batch_size = 5, 2
    logits = uniform_logits(batch_size=batch_size, length=length)

    # upstream: "uniform dist is not changed" — no score set to 0.0, all five ids kept,
    # because transformers keeps every id tied with the k-th (and at least 3).
    upstream_removed = [0, 0]
    # TOP-K TIES + MIN_TOKENS_TO_KEEP: the course's top_k=1 keeps exactly one id, the first
    # of the tie (id 0); the tie-keeping rule (nanoGPT's cut) keeps all five, as upstream.
    assert kept_rows(D.SamplingRule(top_k=1), logits) == [[0], [0]]
    assert [length - len(D.top_k_strict_cut(row, 1)) for row in logits] == upstream_removed
    assert (length - D.top_k_strict_cut_mask(logits, 1).sum(dim=-1)).tolist() == upstream_removed

    ramp_logits = torch.arange(length, dtype=torch.float).unsqueeze(0).repeat(batch_size, 1)
    # upstream: "min_tokens overwrites k: 3 tokens are kept => 2 tokens are nullified"
    upstream_nullified = [2, 2]
    # MIN_TOKENS_TO_KEEP: the course's top_k=1 keeps 1; top_k = max(1, 3) gives upstream's count
    assert [length - len(row) for row in kept_rows(D.SamplingRule(top_k=1), ramp_logits)] == [4, 4]
    assert [length - len(row) for row in kept_rows(D.SamplingRule(top_k=max(1, 3)), ramp_logits)] == upstream_nullified


# --------------------------------------------------------------------------- top-p

def test_top_p_dist_warper():
    dist = torch.log(torch.tensor([[0.3, 0.1, 0.1, 0.5], [0.15, 0.3, 0.3, 0.25]], dtype=torch.float))
    before = dist.clone()
    rule = D.SamplingRule(top_p=0.8)

    # dist should be filtered to keep min num values so that sum is >= top_p
    EXPECTED_FILTERED_DIST = torch.tensor([[0.3, 0.0, 0.0, 0.5], [0.0, 0.3, 0.3, 0.25]], dtype=torch.float)
    kept = kept_rows(rule, dist)
    assert kept == [torch.nonzero(row).flatten().tolist() for row in EXPECTED_FILTERED_DIST]
    # upstream compares exp(filtered logits): the kept ids' probabilities before renormalising
    probs = torch.tensor([rule.apply(row).probs for row in dist], dtype=torch.float)
    filtered = torch.where(torch.tensor([[i in k for i in range(4)] for k in kept]), probs, 0.0)
    torch.testing.assert_close(filtered, EXPECTED_FILTERED_DIST, rtol=1e-3, atol=1e-3)

    # processor should not change logits in-place
    assert torch.equal(dist, before)


def test_top_p_dist_warper_edge_cases():
    """Upstream: ``TopPLogitsWarper(0.9, min_tokens_to_keep=2, filter_value=0.0)`` on ramps."""
    vocab_size, batch_size = 10, 2
    ramp_logits = torch.arange(vocab_size, dtype=torch.float).unsqueeze(0).repeat(batch_size, 1) - (vocab_size // 2)
    ramp_logits[1] = ramp_logits[1] * 100.0

    # upstream: "first batch should keep three tokens, second batch would keep only 1, but due
    # to `min_tokens_to_keep=2` keeps 2."
    upstream_kept = [3, 2]
    counts = [len(row) for row in kept_rows(D.SamplingRule(top_p=0.9), ramp_logits)]
    # MIN_TOKENS_TO_KEEP: the course keeps what the rule keeps (3 and 1)
    assert counts == [3, 1]
    assert [max(c, 2) for c in counts] == upstream_kept


# --------------------------------------------------------------------------- min-p

def test_min_p_dist_warper():
    dist = torch.log(torch.tensor([
        [0.9, 0.0274, 0.047, 0.0274],   # two tokens should be kept (0.047 > 0.9*0.05=0.045)
        [0.15, 0.3, 0.3, 0.25],         # all should be kept -- no high-probability token
        [0.97, 0.01, 0.01, 0.01],       # only the first token should be kept
    ], dtype=torch.float))
    before = dist.clone()
    rule = D.SamplingRule(min_p=0.05)

    EXPECTED_FILTERED_DIST = torch.tensor(
        [[0.9, 0.0, 0.047, 0.0], [0.15, 0.3, 0.3, 0.25], [0.97, 0.0, 0.0, 0.0]], dtype=torch.float)
    kept = kept_rows(rule, dist)
    assert kept == [torch.nonzero(row).flatten().tolist() for row in EXPECTED_FILTERED_DIST]
    probs = torch.tensor([rule.apply(row).probs for row in dist], dtype=torch.float)
    filtered = torch.where(torch.tensor([[i in k for i in range(4)] for k in kept]), probs, 0.0)
    torch.testing.assert_close(filtered, EXPECTED_FILTERED_DIST, rtol=1e-3, atol=1e-3)
    # the same ids from the probabilities alone (min_p_mask)
    assert D.min_p_mask(torch.softmax(dist.double(), dim=-1), 0.05).tolist() == \
        (EXPECTED_FILTERED_DIST > 0).tolist()

    # processor should not change logits in-place
    assert torch.equal(dist, before)


def test_min_p_dist_warper_edge_cases():
    """Upstream: ``MinPLogitsWarper(0.9, min_tokens_to_keep=2, filter_value=0.0)`` on ramps."""
    vocab_size, batch_size = 10, 2
    ramp_logits = torch.arange(vocab_size, dtype=torch.float) - (vocab_size // 2)
    ramp_logits = ramp_logits.unsqueeze(0).repeat(batch_size, 1)
    ramp_logits[1] = ramp_logits[1] * 100.0

    # upstream: "first batch should keep two tokens, second batch would keep only 1, but due to
    # `min_tokens_to_keep=2` keeps 2."
    upstream_kept = [2, 2]
    counts = [len(row) for row in kept_rows(D.SamplingRule(min_p=0.9), ramp_logits)]
    # MIN_TOKENS_TO_KEEP: the course keeps what the rule keeps (e³ / e⁴ ≈ 0.37 < 0.9: one id)
    assert counts == [1, 1]
    assert [max(c, 2) for c in counts] == upstream_kept


# --------------------------------------------------------------------------- the in-place rule

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_no_rule_changes_the_logits_in_place(dtype):
    """Upstream asserts after every warper that it did not change the logits in place; here the
    whole pipeline, every batched entry point, on every dtype."""
    logits = (torch.arange(10, dtype=torch.float64).unsqueeze(0).repeat(3, 1) - 5).to(dtype)
    logits[2, :3] = float("-inf")
    before = logits.clone()
    for rule in (D.SamplingRule(temperature=0.5), D.SamplingRule(top_k=3), D.SamplingRule(top_p=0.8),
                 D.SamplingRule(min_p=0.05), D.SamplingRule(temperature=1.3, top_k=4, top_p=0.9, min_p=0.1)):
        D.apply_batched(rule, logits)
        D.sample_batched(rule, logits, torch.Generator().manual_seed(0))
        for row in logits:
            rule.apply(row)
        assert torch.equal(logits, before), rule
