"""Property tests (hypothesis): the promises of the tokenizers and the sampling rules on
arbitrary inputs, not only on the cases someone thought of.

* both encoders give tiktoken's own ``gpt2`` ids on any text (tests/_tiktoken_real.py builds it
  offline and checks its files against tiktoken's pinned hashes), special-token text included;
* decode(encode(text)) is the text, for both;
* the batched rules keep, row for row, the ids the per-row teaching rules keep, on arbitrary
  float32 / float64 / bfloat16 rows with ties, −inf and values that underflow;
* no function changes its input.

Every test is derandomized (the same examples on every run and machine), has a deadline and a
small ``max_examples``: together they add a few seconds to ``make test``. The 267 code points
whose letter class differs between the regex module and tiktoken (pinned in
tests/test_tokenizer_inputs.py) are left out of the text compared with tiktoken.
"""
import math

import _hypothesis_home  # noqa: F401  (before any strategy: hypothesis's files go to artifacts/)
import hypothesis
import hypothesis.strategies as st
import pytest
import torch

from course_lib import decoding as D
from course_lib.tokens import bpe as T
from course_lib.tokens.streaming import StreamingDecoder
from _tiktoken_real import DISAGREE, real_gpt2_encoding

SETTINGS = hypothesis.settings(max_examples=40, deadline=3000, derandomize=True, database=None,
                               suppress_health_check=[hypothesis.HealthCheck.too_slow])

CHARS = st.characters(exclude_characters="".join(map(chr, DISAGREE)))
# text: arbitrary characters, with GPT-2's special token, contractions and whitespace runs mixed in
PIECES = st.one_of(st.text(alphabet=CHARS, max_size=12), st.sampled_from(
    ["<|endoftext|>", "'s", "'LL", " ", "  ", "\n\n", "\t ", "123", " 你好", "<|fim_prefix|>", "\r\n"]))
TEXT = st.lists(PIECES, max_size=8).map("".join)


@SETTINGS
@hypothesis.given(text=TEXT)
def test_both_encoders_give_tiktokens_gpt2_ids(text):
    real = real_gpt2_encoding()
    for name, enc in (("teaching", T.teaching_tokenizer()), ("course tiktoken", T.gpt2_encoding())):
        assert enc.encode(text, disallowed_special=()) == real.encode(text, disallowed_special=()), name
        assert enc.encode(text, allowed_special="all") == real.encode(text, allowed_special="all"), name
        if T.ENDOFTEXT in text:
            with pytest.raises(ValueError):
                enc.encode(text)
        else:
            assert enc.encode(text) == real.encode(text), name


@SETTINGS
@hypothesis.given(text=st.text())
def test_decode_of_encode_is_the_text(text):
    tok = T.teaching_tokenizer()
    for enc in (tok, T.gpt2_encoding()):
        assert enc.decode(enc.encode(text, allowed_special="all")) == text
    ids = tok.encode(text, allowed_special="all")
    decoder = StreamingDecoder()
    assert "".join(decoder.push(i) for i in ids) + decoder.flush() == text


# --------------------------------------------------------------------------- the sampling rules

VALUES = st.one_of(
    st.sampled_from([0.0, 1.0, 1.0, 2.0, -1.0, -math.inf, -800.0, -801.0, 1e-30, -1e-30, 40.0]),
    st.floats(min_value=-60, max_value=60, allow_nan=False, width=32))
DTYPES = st.sampled_from([torch.float32, torch.float64, torch.bfloat16])


@st.composite
def logit_batches(draw):
    """[B, V] logits in one dtype: every row has a finite value; ties, −inf, underflow likely."""
    B, V = draw(st.integers(1, 4)), draw(st.integers(1, 12))
    rows = [draw(st.lists(VALUES, min_size=V, max_size=V)) for _ in range(B)]
    for row in rows:
        if all(v == -math.inf for v in row):
            row[draw(st.integers(0, V - 1))] = 0.0
    return torch.tensor(rows, dtype=torch.float64).to(draw(DTYPES))


RULES = st.builds(
    D.SamplingRule,
    temperature=st.sampled_from([1.0, 0.5, 1.7, 0.01, 1e-40]),
    top_k=st.one_of(st.none(), st.integers(1, 14)),
    top_p=st.one_of(st.none(), st.sampled_from([0.1, 0.5, 0.9, 0.95, 1.0]), st.floats(0.01, 1.0)),
    min_p=st.one_of(st.none(), st.sampled_from([0.0, 0.05, 0.5, 1.0]), st.floats(0.0, 1.0)),
    greedy=st.booleans())


@SETTINGS
@hypothesis.given(logits=logit_batches(), rule=RULES)
def test_batched_rules_keep_the_per_row_ids_and_leave_the_logits_alone(logits, rule):
    before = logits.clone()
    mask, final = D.apply_batched(rule, logits)
    drawn = D.sample_batched(rule, logits, torch.Generator().manual_seed(0))
    for b, row in enumerate(logits):
        step = rule.apply(row)
        assert torch.nonzero(mask[b]).flatten().tolist() == sorted(step.kept), (b, row.tolist())
        assert final[b].tolist() == pytest.approx(step.final, rel=1e-9, abs=1e-300)
        assert drawn[b].item() in step.kept
    assert torch.equal(logits, before)


@SETTINGS
@hypothesis.given(logits=logit_batches(), t=st.sampled_from([1.0, 0.7, 2.0, 1e-39]))
def test_batched_softmax_equals_the_per_row_softmax(logits, t):
    before = logits.clone()
    probs64 = D.softmax64_batched(logits, t)
    probs = D.softmax_with_temperature_batched(logits, t)
    for b, row in enumerate(logits.tolist()):
        expected = D.softmax_with_temperature(row, t)
        assert probs64[b].tolist() == pytest.approx(expected, rel=1e-12, abs=1e-300)
        tol = {torch.float64: 1e-12, torch.float32: 1e-5, torch.bfloat16: 2e-2}[logits.dtype]
        assert probs[b].double().tolist() == pytest.approx(expected, rel=tol, abs=tol)
    assert D.greedy_ids_batched(logits).tolist() == [D.greedy_id(row) for row in logits.tolist()]
    assert torch.equal(logits, before)


@SETTINGS
@hypothesis.given(logits=logit_batches(), k=st.integers(1, 14), p=st.floats(0.01, 1.0), m=st.floats(0.0, 1.0))
def test_single_rule_masks_equal_the_per_row_rules_and_change_nothing(logits, k, p, m):
    probs = D.softmax64_batched(logits)
    before, probs_before = logits.clone(), probs.clone()
    rows, prob_rows = logits.tolist(), probs.tolist()
    for batched, per_row, value in ((D.top_k_mask, D.top_k_ids, k), (D.top_p_mask, D.top_p_ids, p),
                                    (D.min_p_mask, D.min_p_ids, m)):
        mask = batched(probs, value, logits=logits)
        for b in range(len(rows)):
            assert torch.nonzero(mask[b]).flatten().tolist() == sorted(per_row(prob_rows[b], value, logits=rows[b]))
    assert torch.equal(logits, before) and torch.equal(probs, probs_before)
