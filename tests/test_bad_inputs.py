"""Nothing silent: every bad input pinned to its error message.

Each message starts with the argument's (or file's / table's) name, then what was given, then
what is expected. The cases where a wrong result could come back silently are listed first.
"""
from __future__ import annotations

import json
import math
import random
import heapq
import string

import pytest
import torch

from course_lib import decoding as D
from course_lib.data import DamagedFileError
from course_lib.decoding.generate import generate
from course_lib.tokens import bpe as bpe_module
from course_lib.tokens.bpe import bytes_to_chars, gpt2_encoding, teaching_tokenizer
from course_lib.tokens.streaming import StreamingDecoder
from course_lib.tokens.vocab import FIVE_TOKEN_VOCAB
from course_lib.toys.five_token import FIVE_TOKEN
from course_lib.toys.lab import LAB
from course_lib.ui.token_display import PLAYGROUND_MAX_CHARS, playground_view

NAN = math.nan


@pytest.fixture(scope="module")
def tok():
    return teaching_tokenizer()


@pytest.fixture(scope="module")
def five():
    return FIVE_TOKEN.load()


# --------------------------------------------------------------------------- ids are integers

@pytest.mark.parametrize("ids, message", [
    ([1.5], r"ids\[0\] must be an integer id, got 1.5 \(float\)"),
    (["40"], r"ids\[0\] must be an integer id, got '40' \(str\)"),
    ([True], r"ids\[0\] must be an integer id, got True \(bool\)"),
    (torch.tensor([1.0]), r"ids must hold integer ids, got a torch.float32 tensor"),
    ("abc", r"ids must be a sequence of integer ids, got the text 'abc'"),
])
def test_decode_rejects_non_integer_ids(tok, ids, message):
    with pytest.raises(ValueError, match=message):
        tok.decode(ids)


def test_decode_still_takes_integer_tensors(tok):
    assert tok.decode(torch.tensor([40])) == tok.decode([40]) == "I"


def test_streaming_decoder_and_piece_reject_floats(tok):
    with pytest.raises(ValueError, match=r"token_id must be an integer id, got 1.5 \(float\)"):
        StreamingDecoder().push(1.5)
    with pytest.raises(ValueError, match=r"token_id must be an integer id, got 1.0 \(float\)"):
        tok.piece(1.0)


def test_vocabulary_rejects_non_integer_ids():
    with pytest.raises(ValueError, match=r"token_id must be an integer id, got 1.0"):
        FIVE_TOKEN_VOCAB.piece(1.0)
    with pytest.raises(ValueError, match=r"ids\[0\] must be an integer id, got True \(bool\)"):
        FIVE_TOKEN_VOCAB.decode([True])


# --------------------------------------------------------------------------- generate

def test_generate_rejects_float_prompt(five):
    with pytest.raises(ValueError, match=r"prompt_ids\[0\] must be an integer id, got 0.9 \(float\)"):
        generate(five, [0.9, 1.2], 2)


@pytest.mark.parametrize("batch", [torch.tensor([[0, 1], [1, 0]]), [[0, 1], [1, 0]]])
def test_generate_takes_one_sequence(five, batch):
    with pytest.raises(ValueError, match=r"prompt_ids must be one sequence of ids, got a batch"):
        generate(five, batch, 1)


def test_generate_still_takes_one_row_tensor(five):
    assert generate(five, torch.tensor([[0, 1]]), 2).ids == generate(five, [0, 1], 2).ids


def test_generate_checks_the_chosen_id(five):
    with pytest.raises(ValueError, match=r"the id chosen at step 0 is 99, outside the vocabulary 0..4"):
        generate(five, [0, 1], 2, choose=lambda row, step: (99, None))
    with pytest.raises(ValueError, match=r"the id chosen at step 0 must be an integer id, got 1.0"):
        generate(five, [0, 1], 2, choose=lambda row, step: (1.0, None))


# --------------------------------------------------------------------------- probability rows

LOGITS_HINT = r"if these are logits, turn them into probabilities first"


@pytest.mark.parametrize("call, message", [
    (lambda: D.top_p_ids([3.0, 1.0, -1.0], 0.9), r"probs contains a negative value \(-1.0 at id 2\).*" + LOGITS_HINT),
    (lambda: D.top_p_ids([3.0, 1.0, 0.5], 0.9), r"probs must sum to 1 \(within 0.001\), they sum to 4.5.*" + LOGITS_HINT),
    (lambda: D.min_p_ids([NAN, .5, .5], 0.1), r"probs contains NaN or inf \(nan at id 0\)"),
    (lambda: D.top_k_ids([0.2, NAN, 0.8], 1), r"probs contains NaN or inf \(nan at id 1\)"),
    (lambda: D.SamplingRule(top_k=1).filter([NAN, .5, .5]), r"probs contains NaN or inf \(nan at id 0\)"),
    (lambda: D.entropy([-0.5, 1.5]), r"probs contains a negative value \(-0.5 at id 0\)"),
    (lambda: D.renormalize([0.5, 0.5], [1.9]), r"kept\[0\] must be an integer id, got 1.9 \(float\)"),
    (lambda: D.sample_interval([0.5, 0.5], NAN), r"u must be a number in \[0, 1\), got nan"),
])
def test_per_row_rules_reject_rows_that_are_not_probabilities(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("call, message", [
    (lambda: D.sample_interval_batched(torch.full((1, 5), 0.2), [NAN]), r"u must hold numbers in \[0, 1\), got \[nan\]"),
    (lambda: D.sample_interval_batched(torch.tensor([[-0.5, 1.5]]), [0.1]), r"probs contains a negative value.*" + LOGITS_HINT),
    (lambda: D.top_p_mask(torch.tensor([[2.0, 1.0]]), 0.9), r"probs row 0 must sum to 1 \(within 0.001\), it sums to 3.0.*" + LOGITS_HINT),
    (lambda: D.top_k_mask(torch.tensor([[NAN, 1.0]]), 1), r"probs contains NaN"),
    (lambda: D.filter_batched(D.SamplingRule(top_k=1), torch.tensor([[0.5, math.inf]])), r"probs row 0 must sum to 1"),
])
def test_batched_rules_reject_rows_that_are_not_probabilities(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_greedy_ignores_temperature():
    rule = D.SamplingRule(greedy=True, temperature=0)
    assert rule.apply([0.1, 2.0, 0.3]).kept == [1]
    with pytest.raises(ValueError, match="temperature must be finite and > 0"):
        D.SamplingRule(temperature=0)


# --------------------------------------------------------------------------- weight files

@pytest.fixture(scope="module")
def lab_text():
    return LAB.weights_path.read_text(encoding="utf-8")


def _broken(lab_text, change):
    weights = json.loads(lab_text)
    change(weights)
    return json.dumps(weights)


def _matrix_name(weights):
    return next(name for name, rows in weights["tables"].items() if isinstance(rows[0], list))


CASES = {
    "cut short": (lambda text: text[: len(text) // 2], r"is not valid JSON: .* at line \d+ column \d+"),
    "no tables": (lambda text: _broken(text, lambda w: w.pop("tables")), r"has no 'tables' entry"),
    "no config": (lambda text: _broken(text, lambda w: w.pop("config")), r"has no 'config' entry"),
    "ragged row": (lambda text: _broken(text, lambda w: w["tables"][_matrix_name(w)].__setitem__(
        1, w["tables"][_matrix_name(w)][1][:-1])), r"table 'token_embedding.weight' in .* is not a table of numbers"),
    "string value": (lambda text: _broken(text, lambda w: w["tables"][_matrix_name(w)][0].__setitem__(0, "0.5")),
                     r"table 'token_embedding.weight' in .* is not a table of numbers"),
    "NaN value": (lambda text: _broken(text, lambda w: w["tables"][_matrix_name(w)][0].__setitem__(0, NAN)),
                  r"table 'token_embedding.weight' in .* holds a non-finite value \(nan\)"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_broken_weight_file_names_file_table_and_fix(tmp_path, lab_text, case):
    damage, message = CASES[case]
    path = tmp_path / "lab_model.json"
    path.write_text(damage(lab_text), encoding="utf-8")
    with pytest.raises(DamagedFileError, match=message) as info:
        LAB.load(path)
    assert str(path) in str(info.value)
    assert "git checkout -- data/lab_model.json" in str(info.value)


def test_kv_cache_with_another_batch_or_model(five):
    cache = five.new_cache()
    five(torch.tensor([[0, 1]]), cache=cache)
    with pytest.raises(ValueError, match=r"cache holds a batch of 1 sequence\(s\), the ids have 2"):
        five(torch.tensor([[0], [1]]), cache=cache)
    with pytest.raises(ValueError, match=r"cache belongs to another model"):
        FIVE_TOKEN.load()(torch.tensor([[0]]), cache=cache)


def test_gpt2_checkpoint_with_nan_names_tensor_and_file(tmp_path):
    from safetensors.torch import save_file
    from course_lib.gpt2.loader import load_gpt2
    from course_lib.model import GPTConfig

    file = tmp_path / "model.safetensors"
    save_file({"wte.weight": torch.tensor([[NAN, 0.0]])}, str(file))
    with pytest.raises(DamagedFileError, match=r"model.safetensors: tensor 'wte.weight' holds 1 non-finite value"):
        load_gpt2(file, config=GPTConfig())


def test_corrupt_config_json_beside_gpt2_weights_names_it(tmp_path):
    from safetensors.torch import save_file
    from course_lib.gpt2.loader import load_gpt2

    save_file({"wte.weight": torch.zeros(2, 2)}, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text('{"n_layer": 12, ', encoding="utf-8")
    with pytest.raises(DamagedFileError, match=r"config.json is not a readable GPT-2 config.json"):
        load_gpt2(tmp_path / "model.safetensors")


# --------------------------------------------------------------------------- no freezes

def test_bpe_merges_match_the_step_by_step_loop(tok):
    rng = random.Random(16)
    for n in (1, 2, 5, 30, 300):
        for _ in range(20):
            word = bytes_to_chars("".join(rng.choice("aabé你 ") for _ in range(n)).encode())
            assert tok.merge_fast(word) == tok.merge_steps(word)[-1]


class CountedRanks(dict):
    """``merge_ranks`` that counts its pair-rank lookups and stops a run past ``budget`` (so a
    quadratic loop fails at once instead of running for minutes)."""

    def __init__(self, ranks, budget):
        super().__init__(ranks)
        self.lookups, self.budget = 0, budget

    def get(self, pair, default=None):
        self.lookups += 1
        assert self.lookups <= self.budget, f"more than {self.budget:,} pair-rank lookups"
        return super().get(pair, default)


class CountedHeap:
    """``heapq`` for bpe.py, counting every entry heapified, pushed or popped."""

    def __init__(self):
        self.ops = 0

    def heapify(self, heap):
        self.ops += len(heap)
        heapq.heapify(heap)

    def heappush(self, heap, item):
        self.ops += 1
        heapq.heappush(heap, item)

    def heappop(self, heap):
        self.ops += 1
        return heapq.heappop(heap)


def merge_work(tok, word: str, monkeypatch) -> tuple[int, int]:
    """(pair-rank lookups, heap operations) of ``tok.merge_fast(word)``, which must also give
    the pieces the step-by-step rule gives (checked by tiktoken below)."""
    n = len(word)
    ranks, heap = CountedRanks(tok.merge_ranks, budget=4 * n), CountedHeap()
    with monkeypatch.context() as m:
        m.setattr(tok, "merge_ranks", ranks)
        m.setattr(bpe_module, "heapq", heap)
        tok.merge_fast(word)
    return ranks.lookups, heap.ops


def test_long_word_merges_in_near_linear_work(tok, monkeypatch):
    """A word's merge loop does O(n log n) work, counted, not timed (speed itself is measured by
    benchmarks). Every merge joins two parts, so there are < n merges; each looks up at most two
    new pairs' ranks and pushes them, so lookups stay ≤ 3n and heap operations ≤ 7n (the old
    loop rescanned the word for every merge: ~n²/2 lookups). From 10,000 to 100,000 letters the
    work may grow at most by 10 × log(100,000) / log(10,000) = 12.5."""
    rng = random.Random(0)
    words = {n: "".join(rng.choice(string.ascii_lowercase) for _ in range(n)) for n in (10_000, 100_000)}
    work = {n: merge_work(tok, word, monkeypatch) for n, word in words.items()}
    for n, (lookups, heap_ops) in work.items():
        assert n - 1 <= lookups <= 3 * n, (n, lookups)
        assert n // 2 <= heap_ops <= 7 * n, (n, heap_ops)
    for small, large in zip(work[10_000], work[100_000]):
        assert large <= 12.5 * small, work
    # and the long word's ids are tiktoken's
    assert tok.encode(words[100_000]) == gpt2_encoding().encode(words[100_000])


def test_playground_caps_long_text():
    view = playground_view("a" * (PLAYGROUND_MAX_CHARS * 10), gpt2_encoding())
    assert f"showing the tokens of the first {PLAYGROUND_MAX_CHARS:,} only" in view
    assert "showing" not in playground_view("Hi 你!", gpt2_encoding())


# --------------------------------------------------------------------------- notebooks go on

def test_a_broken_gpt2_setting_prints_one_line_and_goes_on(tmp_path, monkeypatch):
    from course_lib.gpt2 import WEIGHTS_ENV, gpt2_or_message

    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path / "typo.safetensors"))
    model, line = gpt2_or_message("show something")
    assert model is None and "\n" not in line and "typo.safetensors" in line and WEIGHTS_ENV in line
    (tmp_path / "model.safetensors").write_bytes(b"<html>not a checkpoint</html>")
    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path / "model.safetensors"))
    model, line = gpt2_or_message("show something")
    assert model is None and "\n" not in line and "model.safetensors" in line and "could not be loaded" in line
