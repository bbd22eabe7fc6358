"""Every exercise checker is safe to run on any function, in the notebook.

A check never raises: each odd return value below gets a failing Result with one hint; a loop
that never ends is stopped with a hint; an interrupt is one line; the course's own answer or the
torch function a statement rules out is refused; a damaged course file is reported as the
course's problem, not the learner's; and a check leaves no global state behind.
"""
import random
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from course_lib.exercises import EXERCISES, core, guard
from course_lib.ui import language
from course_lib.ui.language import current_language, set_language

from test_exercises import SOLVED, check
from _copies import writable_copy


class RiggedList(list):
    """A list equal to anything: it must not pass bpe_merge's small cases."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = None


class RiggedTensor(torch.Tensor):
    """A tensor subclass (its comparisons could say anything)."""


class Hostile:
    """An object that raises from everything a check might try on it."""

    def __len__(self):
        raise RuntimeError("len")

    def __float__(self):
        raise RuntimeError("float")

    def __int__(self):
        raise RuntimeError("int")

    def __index__(self):
        raise RuntimeError("index")

    def __iter__(self):
        raise RuntimeError("iter")

    def __eq__(self, other):
        raise RuntimeError("eq")

    def __bool__(self):
        raise RuntimeError("bool")

    def __getitem__(self, key):
        raise RuntimeError("getitem")

    __hash__ = None


def _generator():
    yield 1


ODD = {
    "None": lambda: None,
    "a str": lambda: "zero",
    "an empty str": lambda: "",
    "an empty list": lambda: [],
    "a list of ints": lambda: [1, 2],
    "a nested list": lambda: [[1.0, 2.0], [3.0]],
    "a list of None": lambda: [None, None, None],
    "a tuple of three": lambda: (torch.zeros(2), torch.zeros(2), torch.zeros(2)),
    "a dict": lambda: {"a": 1},
    "bytes": lambda: b"\x00\xff",
    "True": lambda: True,
    "a huge int": lambda: 10 ** 100,
    "a negative int": lambda: -1,
    "NaN": lambda: float("nan"),
    "inf": lambda: float("inf"),
    "a complex": lambda: complex(1, 2),
    "a wrong-shape tensor": lambda: torch.zeros(7, 7, 7),
    "an empty tensor": lambda: torch.zeros(0),
    "an int tensor": lambda: torch.tensor([1, 2, 3]),
    "a NaN tensor": lambda: torch.full((3,), float("nan")),
    "a bool tensor": lambda: torch.tensor(True),
    "a complex tensor": lambda: torch.zeros(3, dtype=torch.complex64),
    "a rigged-__eq__ list": lambda: RiggedList(["a", "bc"]),
    "a generator": lambda: _generator(),
    "a tensor subclass": lambda: torch.zeros(3, 3).as_subclass(RiggedTensor),
    "an object raising everywhere": lambda: Hostile(),
    "a numpy array": lambda: np.zeros(3),
    "a class": lambda: int,
    "a function": lambda: print,
}


@pytest.mark.parametrize("name", list(EXERCISES))
def test_every_checker_fails_every_odd_return_with_one_hint_and_never_raises(name):
    """26 checkers × 29 odd values = 754 cases."""
    for kind, make in ODD.items():
        result = check(name, lambda *args, **kwargs: make())
        assert not result.passed and result.attempted, f"{name} passed {kind}: {result.message}"
        assert result.hint and "Traceback" not in result.message and "\n" not in result.hint, (kind, result.message)
    assert len(ODD) * len(EXERCISES) >= 500


def test_a_rigged_list_cannot_pass_the_small_merge_cases():
    result = check("bpe_merge", lambda word, ranks: RiggedList(list(word)))
    assert not result.passed and "LOWEST rank" in result.hint


def test_a_loop_that_never_ends_is_stopped_with_a_hint(monkeypatch):
    monkeypatch.setattr(guard, "CALL_SECONDS", 0.3)

    def bpe_merge(word, ranks):
        while True:
            try:
                pass
            except BaseException:          # even a bare except cannot keep it running
                pass

    result = check("bpe_merge", bpe_merge)
    assert not result.passed and "did not return within 0.3 s — a loop that never ends?" in result.hint


def test_an_interrupt_is_one_line_without_the_checks_cases(monkeypatch):
    def top_k_filter(probs, k):
        raise KeyboardInterrupt

    result = check("top_k_filter", top_k_filter)
    assert not result.passed and "\n" not in result.hint and "Traceback" not in result.message
    assert result.hint.startswith("interrupted while your function ran on")


def test_sys_exit_in_the_function_is_a_hint():
    import sys
    result = check("make_causal_mask", lambda T: sys.exit(0))
    assert not result.passed and "called exit()" in result.hint


@pytest.mark.parametrize("name, fn, called", [
    ("make_causal_mask", lambda T: __import__("course_lib.model.attention", fromlist=["x"]).causal_mask(T), "causal_mask"),
    ("top_k_filter", lambda p, k: __import__("course_lib.decoding", fromlist=["x"]).renormalize_batched(
        p.reshape(-1, p.shape[-1]), __import__("course_lib.decoding", fromlist=["x"]).top_k_mask(p.reshape(-1, p.shape[-1]), k)).reshape(p.shape),
     "top_k_mask"),
    ("stable_softmax", lambda z: torch.softmax(z, -1), "softmax"),
    ("stable_softmax", lambda z: z.softmax(-1), "softmax"),
    ("layer_norm", lambda x, eps=1e-5: torch.nn.functional.layer_norm(x, x.shape[-1:], eps=eps), "layer_norm"),
    ("cross_entropy", lambda z, t: torch.nn.functional.cross_entropy(z.reshape(-1, z.shape[-1]), t.reshape(-1)), "cross_entropy"),
    ("byte_table", lambda: __import__("course_lib.tokens.bpe", fromlist=["x"]).byte_to_char(), "byte_to_char"),
    # the same kernels by other doors: torch.special, torch.ops.aten and its overloads
    ("stable_softmax", lambda z: torch.special.softmax(z, -1), "special_softmax"),
    ("stable_softmax", lambda z: torch.ops.aten._softmax.default(z, -1, False), "_softmax.default"),
    ("layer_norm", lambda x, eps=1e-5: torch.ops.aten.native_layer_norm.default(x, x.shape[-1:], None, None, eps)[0],
     "native_layer_norm.default"),
    ("attention_head", lambda q, k, v: (torch.ops.aten.scaled_dot_product_attention(q, k, v, is_causal=True), None),
     "scaled_dot_product_attention"),
])
def test_from_scratch_exercises_refuse_the_courses_answer(name, fn, called):
    result = check(name, fn)
    assert not result.passed and "write it from scratch" in result.hint and called in result.hint, result.message


def test_the_worked_solutions_call_nothing_ruled_out():
    for name, fn in SOLVED.items():
        assert check(name, fn).passed, name


def test_a_damaged_toy_weight_file_is_the_courses_problem_not_the_learners(tmp_path, monkeypatch):
    data = Path(__file__).resolve().parent.parent / "data"
    writable_copy(data, tmp_path / "data")
    weights = tmp_path / "data" / "five_token_model.json"
    weights.write_text(weights.read_text(encoding="utf-8")[:500], encoding="utf-8")
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path / "data"))
    core._five_token.cache_clear()
    try:
        result = check("make_causal_mask", SOLVED["make_causal_mask"])
    finally:
        core._five_token.cache_clear()
    assert not result.passed and result.course_problem and "not your code" in result.hint, result.message
    assert "five_token_model.json" in result.hint


def _rude(fn):
    """The learner's function, changing every global it can reach before answering."""
    def wrapped(*args, **kwargs):
        set_language("zh")
        torch.manual_seed(123)
        torch.set_default_dtype(torch.float32)
        random.seed(5)
        np.random.seed(5)
        return fn(*args, **kwargs)
    return wrapped


def test_a_check_leaves_no_global_state_behind():
    torch.manual_seed(7)
    state, py, npy = torch.get_rng_state(), random.getstate(), np.random.get_state()
    for name in ("layer_norm", "generate_cached", "bpe_merge"):
        check(name, _rude(SOLVED[name]))
        assert current_language() == "en" and torch.get_default_dtype() == torch.float32
        assert torch.equal(torch.get_rng_state(), state) and random.getstate() == py
        assert all(np.array_equal(a, b) for a, b in zip(np.random.get_state(), npy))
    assert check("generate_cached", SOLVED["generate_cached"]).passed
    assert torch.equal(torch.get_rng_state(), state)


def test_two_checks_in_two_threads_leave_the_default_dtype_alone():
    for _ in range(5):
        threads = [threading.Thread(target=check, args=(name, SOLVED[name])) for name in ("layer_norm", "embed")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert torch.get_default_dtype() == torch.float32 and language.current_language() == "en"
