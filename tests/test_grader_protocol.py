"""The grader's side of what a submission sends or raises, without a sandbox: each malformed,
forged or hostile thing becomes a reason, never the grader's own exception.

The same cases graded end to end, in real sandboxes: tests/test_grader_attacks.py.
"""
import json
import socket
import struct

import pytest

from course_lib.grading import cli, session, wire
from course_lib.grading import seccomp
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


def test_a_message_read_a_piece_at_a_time_is_the_message_sent():
    """The grader's reader takes whatever has arrived, and gives the message once it is whole."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        blob = bytes(range(256)) * 1000
        data = struct.pack("<QI", 9, 2) + b'{"ok": 1}' + struct.pack("<Q", len(blob)) + blob + struct.pack("<Q", 0)
        reader = wire.Reader()
        for start in range(0, len(data), 7000):
            assert reader.read_from(ours) is None
            theirs.sendall(data[start:start + 7000])
        header, blobs = reader.read_from(ours)
        assert header == {"ok": 1} and [bytes(b) for b in blobs] == [blob, b""]
        theirs.sendall(struct.pack("<QI", 2, 0) + b"{")
        reader = wire.Reader()
        assert reader.read_from(ours) is None
        theirs.close()
        with pytest.raises(wire.ProtocolError, match="ended"):
            reader.read_from(ours)


def test_a_message_larger_than_the_limit_is_refused_before_it_is_read():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(struct.pack("<QI", 1 << 20, 0))
        with pytest.raises(wire.ProtocolError, match="larger than allowed"):
            wire.Reader(limit=1 << 16).read_from(ours)


def _run(program: bytes, nr: int, args=(), arch=None, machine="x86_64") -> int:
    """What the classic-BPF ``program`` returns for system call ``nr`` with ``args``: a small
    interpreter of the instructions grading.seccomp uses (the kernel runs the real one)."""
    audit = seccomp._ARCH[machine][0] if arch is None else arch
    data = struct.pack("<iIQ6Q", nr, audit, 0, *(list(args) + [0] * (6 - len(args))))
    ops = [struct.unpack("<HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = ops[pc]
        if code == seccomp.RET:
            return k
        if code == seccomp.LD:
            acc = struct.unpack_from("<I", data, k)[0]
        elif code == seccomp.AND:
            acc &= k
        else:
            taken = {seccomp.JEQ: acc == k, seccomp.JGE: acc >= k, seccomp.JSET: bool(acc & k)}[code]
            pc += jt if taken else jf
        pc += 1


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_seccomp_filter_keeps_one_process_and_no_uncounted_shared_memory(machine):
    program = seccomp.seccomp_filter(machine)
    nr = seccomp._ARCH[machine][1]
    run = lambda name, *args: _run(program, nr[name], args, machine=machine)   # noqa: E731
    for name in ("shmget", "memfd_create", "memfd_secret") + (("fork", "vfork") if machine == "x86_64" else ()):
        assert run(name) == seccomp.EPERM, name
    assert run("clone3") == seccomp.ENOSYS                       # the C library falls back on clone
    assert run("clone", 0x11) == seccomp.EPERM                   # fork as clone(SIGCHLD)
    assert run("clone", 0x4111) == seccomp.EPERM                 # posix_spawn: CLONE_VM | CLONE_VFORK
    assert run("clone", 0x3D0F00) == seccomp.ALLOW               # pthread_create: CLONE_THREAD among its flags
    assert run("mmap", 0, 1 << 20, 3, 0x21) == seccomp.EPERM     # MAP_SHARED | MAP_ANONYMOUS
    assert run("mmap", 0, 1 << 20, 3, 0x23) == seccomp.EPERM     # MAP_SHARED_VALIDATE | MAP_ANONYMOUS
    assert run("mmap", 0, 1 << 20, 3, 0x22) == seccomp.ALLOW     # MAP_PRIVATE | MAP_ANONYMOUS: counted by RLIMIT_DATA
    assert run("mmap", 0, 1 << 20, 3, 0x01) == seccomp.ALLOW     # a shared map of a file (bounded by its tmpfs)
    for other in (0, 1, 60, 231):                                # read, write, exit, exit_group (x86-64 numbers)
        assert _run(program, other, machine=machine) == seccomp.ALLOW
    assert _run(program, 0, arch=0x40000003, machine=machine) == seccomp.KILL    # another ABI ends the process
    if machine == "x86_64":
        assert _run(program, 0x40000000 + 1) == seccomp.EPERM   # x32
    assert seccomp.seccomp_filter("riscv64") is None
