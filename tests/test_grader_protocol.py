"""The grader's side of what a submission sends or raises, without a sandbox: each malformed,
forged or hostile thing becomes a reason, never the grader's own exception.

The same cases graded end to end, in real sandboxes: tests/test_grader_attacks.py.
"""
import json
import socket
import struct

import pytest

from course_lib.grading import cli, session, wire
from course_lib.grading.sandbox import seccomp_filter
from course_lib.grading.submissions import Found


def _frame(head: bytes) -> bytes:
    return struct.pack("<QI", len(head), 0) + head


@pytest.mark.parametrize("kind", ["BaseException", "GeneratorExit", "Gone", "TimeLimit", "Ended", "not an identifier!"])
def test_an_exception_the_learner_raised_comes_back_as_an_Exception(kind):
    error = session._rebuilt(kind, "bye", ["f", 3])
    assert isinstance(error, Exception), type(error).__mro__
    assert type(error).__name__ == (kind if kind.isidentifier() else "Error")
    assert error.where == ("f", 3)


def test_exit_and_interrupt_are_rebuilt_as_themselves_for_the_checkers_to_name():
    assert type(session._rebuilt("SystemExit", "3", None)) is SystemExit
    assert type(session._rebuilt("KeyboardInterrupt", "", None)) is KeyboardInterrupt
    assert type(session._rebuilt("ValueError", "bad", None)) is ValueError


@pytest.mark.parametrize("reply", [
    {"done": {"cell_errors": ["boom", 7], "defined": {}}},
    {"cell": 9999},
    {"cell": 2, "error": ["boom", 7], "line": 1},
    {"cell": True, "error": None},
    {"cell": "2", "error": None},
])
def test_a_reply_that_is_not_the_cell_s_own_is_refused(reply):
    with pytest.raises(session.Unexpected):
        session._cell_error(2, reply)


def test_a_cell_s_reply_keeps_only_plain_text_and_a_line_number():
    assert session._cell_error(2, {"cell": 2, "error": None, "line": None}) is None
    error = session._cell_error(2, {"cell": 2, "error": "x" * 1000, "line": "1; rm -rf"})
    assert error == {"cell": 2, "error": "x" * 300, "line": "-"}


def test_a_message_nested_too_deeply_or_not_json_is_a_protocol_error():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(_frame(b"[" * 100_000 + b"]" * 100_000))
        with pytest.raises(wire.ProtocolError, match="not JSON"):
            wire.receive(ours, None)
        theirs.sendall(_frame(b"\xff\xfe"))
        with pytest.raises(wire.ProtocolError, match="not JSON"):
            wire.receive(ours, None)
        theirs.sendall(_frame(json.dumps([1, 2]).encode()))
        with pytest.raises(wire.ProtocolError, match="not a JSON object"):
            wire.receive(ours, None)


def test_whatever_grading_one_submission_raises_becomes_its_rows(tmp_path, monkeypatch):
    path = tmp_path / "03_attention.ipynb"
    path.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))

    def raising(*args):
        raise BaseException("bye")
    monkeypatch.setattr(cli, "grade_submission", raising)
    monkeypatch.setitem(cli._worker, "limits", None)
    monkeypatch.setitem(cli._worker, "uid", 0)
    monkeypatch.setitem(cli._worker, "namespaces", True)
    rows, errors, startup = cli._grade_one(Found(str(path), "alice"))
    assert [r["exercise"] for r in rows] == ["make_causal_mask", "attention_head", "split_heads"]
    assert all("the grader failed on this submission (BaseException: bye)" in r["reason"] for r in rows)
    assert errors == [] and startup == 0.0


def test_a_submission_that_cannot_even_be_loaded_again_still_gets_a_row(monkeypatch):
    def recursing(found):
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(cli.submissions, "load", recursing)
    rows = cli._grader_failed(Found("class/deep.ipynb", "deep"), RecursionError("deep"))
    assert len(rows) == 1 and rows[0]["student"] == "deep" and not rows[0]["passed"]
    assert "RecursionError" in rows[0]["reason"]


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_seccomp_filter_refuses_shared_memory_and_memory_files_and_allows_the_rest(machine):
    program = seccomp_filter(machine)
    ops = [struct.unpack("<HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    assert ops[0] == (0x20, 0, 0, 4)                                    # the architecture first
    assert ops[-2] == (0x06, 0, 0, 0x7FFF0000) and ops[-1] == (0x06, 0, 0, 0x00050001)   # allow; EPERM
    denied = {k for code, jt, jf, k in ops if code == 0x15 and jt + ops.index((code, jt, jf, k)) + 1 == len(ops) - 1}
    numbers = {"x86_64": {29, 319, 447}, "aarch64": {194, 279, 447}}[machine]
    assert denied == numbers
    assert seccomp_filter("riscv64") is None
