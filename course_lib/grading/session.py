"""The grader's side of a submission: its sandbox, its time, and the learner's functions as proxies.

Used by ``grading.cli``. Not taught. A :class:`Session` owns one submission's process (in its
own bubblewrap sandbox, ``grading.sandbox``): it sends the notebook's cells, then
``session.function(name)`` is a :class:`RemoteFunction` that an ordinary checker
(``check_bpe_merge(fn)``) calls like the learner's function. Each call sends the arguments as
plain data and gets back plain data only (``grading.wire``): the checker, its expected values and
its comparisons stay in this process, out of the submission's reach.

Time is the submission's CPU time, read from /proc, so a loaded machine cannot turn a pass into
a fail: each cell gets ``cell_seconds`` of it, each call ``call_seconds``, each exercise
``exercise_seconds``; a cell or call that waits instead (sleeps, blocks) is stopped after
:data:`WALL_FACTOR` times its budget of wall time (a cell: at least :data:`CELL_WALL`). A cell
that runs too long ends the process and is skipped when the cells run again (reported as "cell N ran longer than S s"); a call that runs
too long, a process that ends or a reply that cannot be read ends the process and fails that
exercise with the reason; the next exercise starts a fresh process in a fresh sandbox.
"""
from __future__ import annotations

import builtins
import dataclasses
import select
import socket
import time

import torch

from ..exercises import core, guard
from . import wire
from .sandbox import Limits, Sandbox

WALL_FACTOR = 10          # wall seconds allowed per CPU second of a budget (a machine at load 16 on 2 cores: 8)
CELL_WALL = 600.0         # wall seconds a cell may wait (sleep, block) whatever its CPU budget
POLL = 0.25               # seconds between two readings of the submission's CPU time


class CellTooLong(Exception):
    """A cell used up its time; ``cell`` is its number."""

    def __init__(self, cell: int, seconds: float):
        super().__init__(f"cell {cell} ran longer than {seconds:g} s")
        self.cell = cell


class Session:
    """One submission: its cells, its limits, its process (started again after a failure)."""

    def __init__(self, cells: list[str], limits: Limits, uid: int, namespaces: bool = True):
        self.cells, self.limits, self.uid, self.namespaces = cells, limits, uid, namespaces
        self.sandbox, self.alive = None, False
        self.too_long: dict[int, str] = {}             # cell number -> why it is skipped
        self.failed: str | None = None                 # why the cells could not be run, once known
        self.exercise_cpu_end = float("inf")
        self.handles: dict[int, int] = {}          # id(object) -> handle, for objects sent once
        self.kept: list = []                       # those objects (kept alive: an id is never reused)

    # ------------------------------------------------------------------ the process
    def start(self) -> dict:
        """A fresh process that has run the notebook's cells: {"cell_errors", "defined"}. A cell
        that runs too long is skipped on the next try (at most 5 such cells). When the cells
        cannot be run, Ended, and the same Ended for every later exercise (not run again)."""
        if self.failed is not None:
            raise guard.Ended(self.failed)
        try:
            for _ in range(6):
                try:
                    return self._start()
                except CellTooLong as long:
                    self.too_long[long.cell] = str(long)
            raise guard.Ended("the notebook's cells ran too long: " + "; ".join(self.too_long.values()))
        except guard.Ended as ended:
            self.failed = str(ended)
            raise

    def _start(self) -> dict:
        self.handles, self.kept = {}, []
        try:
            self.sandbox = Sandbox(self.uid, self.limits.disk_bytes, self.namespaces)
        except OSError as error:             # e.g. a Python its uid cannot reach (weaker isolation, as root)
            self.sandbox = None
            raise guard.Ended(f"the submission's process could not start ({type(error).__name__}: {error})") from None
        self.alive = True
        limits = self.limits
        spec = {"memory_bytes": limits.memory_bytes, "cpu_seconds": int(limits.submission_seconds) + 1,
                "file_bytes": limits.file_bytes, "processes": limits.processes}
        try:
            wire.send(self.sandbox.sock, spec)
            hello, _ = self._receive(time.monotonic() + 300)          # imports: torch, IPython, course_lib
            if "ready" not in hello:
                raise wire.ProtocolError("no greeting")
            wire.send(self.sandbox.sock, {"op": "cells", "cells": self.cells, "skip": sorted(self.too_long)})
            cell = None
            while True:
                try:
                    message, _ = self.wait(limits.cell_seconds, float("inf"), limit=64 << 20, wall=CELL_WALL)
                except wire.Timeout:
                    self.kill()
                    if cell is None:
                        raise guard.Ended("the submission's process did not start") from None
                    raise CellTooLong(cell, limits.cell_seconds) from None
                if "cell" in message and type(message["cell"]) is int:
                    cell = message["cell"]
                    continue
                done = message["done"]
                errors = [{"cell": c, "error": why, "line": "-"} for c, why in self.too_long.items()]
                return {"cell_errors": errors + list(done["cell_errors"]), "defined": dict(done["defined"])}
        except (wire.ProtocolError, OSError, KeyError, TypeError, ValueError, wire.Timeout) as error:
            why = self.sandbox.error_text() if self.sandbox else ""
            self.kill()
            raise guard.Ended(f"the submission's process ended while running the notebook's cells "
                              f"(os._exit, a crash or a limit: {why or error})") from None

    def _receive(self, deadline: float):
        return wire.receive(self.sandbox.sock, deadline, limit=64 << 20)

    def wait(self, cpu_seconds: float, cpu_left: float, limit: int = wire.MAX_MESSAGE, wall: float = 5.0):
        """The next message; wire.Timeout once the submission has used ``cpu_seconds`` of CPU
        since now (or ``cpu_left``), or waited :data:`WALL_FACTOR` times that (at least ``wall``
        seconds) in wall time."""
        sock, sandbox = self.sandbox.sock, self.sandbox
        budget = min(cpu_seconds, cpu_left)
        cpu_start, wall_end = sandbox.cpu_seconds(), time.monotonic() + max(wall, WALL_FACTOR * budget + 5)
        while True:
            ready, _, _ = select.select([sock], [], [], POLL)
            if ready:        # a message has begun: all of it is on its way (a GPT-2-sized table takes a while)
                return wire.receive(sock, time.monotonic() + 120 + WALL_FACTOR * budget, limit=limit)
            if sandbox.cpu_seconds() - cpu_start > budget or time.monotonic() > wall_end:
                raise wire.Timeout

    def begin_exercise(self) -> None:
        """The exercise's CPU budget starts now (its calls share it)."""
        self.exercise_cpu_end = (self.sandbox.cpu_seconds() if self.alive else 0.0) + self.limits.exercise_seconds

    def exercise_cpu_left(self) -> float:
        if self.exercise_cpu_end == float("inf"):
            return float("inf")
        return max(0.0, self.exercise_cpu_end - self.sandbox.cpu_seconds())

    def kill(self) -> None:
        """End the process and everything it started."""
        self.alive = False
        if self.sandbox is not None:
            self.sandbox.kill()

    close = kill

    # ------------------------------------------------------------------ values sent to the child
    def _handle(self, value) -> tuple[int, bool]:
        """(handle, new?) of an object sent once and referred to afterwards."""
        key = id(value)
        if key in self.handles:
            return self.handles[key], False
        self.handles[key] = len(self.kept)
        self.kept.append(value)
        return self.handles[key], True

    def _owner(self, module):
        from ..model.gpt import GPT
        candidates = [v for v in self.kept if isinstance(v, GPT)] + [core.toy()[0], core.lab()[0]]
        for model in candidates:
            for path, sub in model.named_modules():
                if sub is module:
                    return model, path
        raise TypeError(f"the grader cannot send a {type(module).__name__} that belongs to no known model")

    def special(self, value, encoder: wire.Encoder):
        if type(value) in (tuple, list):
            return None
        from ..model.gpt import GPT
        from ..exercises.ch07_sampling import ModelSpy
        if isinstance(value, (GPT, ModelSpy)) or (type(value) is torch.Tensor and value.numel() >= 1 << 16) or (
                type(value) is dict and len(value) >= 1000):
            handle, new = self._handle(value)
            if not new:
                return {"$ref": handle}
            if isinstance(value, GPT):
                state = {k: v.detach() for k, v in value.state_dict().items()}
                return {"$gpt": handle, "config": dataclasses.asdict(value.config), "training": value.training,
                        "state": encoder(state)}
            if isinstance(value, ModelSpy):
                return {"$spy": handle, "model": encoder(value.model)}
            plain = _encoded_once(value, encoder)
            return {"$keep": handle, "value": plain}
        if isinstance(value, torch.nn.Module):
            owner, path = self._owner(value)
            return {"$part": encoder(owner), "path": path}
        return None

    # ------------------------------------------------------------------ calls
    def call(self, name: str, args: tuple, kwargs: dict, seconds: float):
        """The learner's ``name(*args, **kwargs)`` in the child: (plain result, ruled-out call).
        The call gets ``seconds`` of the submission's CPU time (and what is left of the
        exercise's), counted once the arguments are sent."""
        if not self.alive:
            raise guard.Ended("the submission's process had already ended")
        encoder = wire.Encoder(self.special)
        header = {"op": "call", "name": name, "args": encoder(list(args)), "kwargs": encoder(dict(kwargs))}
        header["args"] = {"$tuple": header["args"]}
        try:
            self.sandbox.sock.settimeout(WALL_FACTOR * seconds + 60)     # a child that stops reading
            wire.send(self.sandbox.sock, header, encoder.blobs)
            reply, blobs = self.wait(seconds, self.exercise_cpu_left())
        except wire.Timeout:
            self.kill()
            raise guard.TimeLimit from None
        except (socket.timeout, TimeoutError):
            self.kill()
            raise guard.TimeLimit from None
        except (wire.ProtocolError, OSError) as error:
            self.kill()
            raise guard.Ended(f"the submission's process ended ({error}: os._exit, a crash or a limit)") from None
        if "raised" in reply:                      # the learner's exception, rebuilt from its name and text
            raise _rebuilt(str(reply["raised"]), str(reply.get("message", "")), reply.get("where"))
        if "missing" in reply:
            raise NameError(f"the notebook defines no function {self.name_of(reply)!r}")
        try:
            return self._read(reply, blobs, args, kwargs)
        except (wire.ProtocolError, KeyError, TypeError, ValueError, RuntimeError, AttributeError) as error:
            self.kill()
            raise guard.Ended(f"the submission's process sent an unreadable reply ({type(error).__name__})") from None

    @staticmethod
    def name_of(reply) -> str:
        return str(reply.get("missing"))[:80]

    def _read(self, reply: dict, blobs, args, kwargs):
        value = wire.decode(reply["ok"], blobs)
        forbidden = reply.get("forbidden")
        self._update_models(reply, blobs, list(args) + list(kwargs.values()))
        return value, (str(forbidden)[:120] if forbidden else None)

    def _update_models(self, reply, blobs, args) -> None:
        """Copy back the weights of a model the learner's function was given (sgd_step changes
        them), and a spy's record of calls; never those of the checkers' shared toy models."""
        from ..model.gpt import GPT
        from ..exercises.ch07_sampling import ModelSpy
        shared = {id(core.toy()[0]), id(core.lab()[0])}
        for arg in args:
            handle = self.handles.get(id(arg))
            if isinstance(arg, GPT) and id(arg) not in shared and str(handle) in reply["state"]:
                state = wire.decode(reply["state"][str(handle)], blobs)
                own = arg.state_dict()
                if set(state) != set(own) or any(state[k].shape != own[k].shape or state[k].dtype != own[k].dtype for k in own):
                    raise wire.ProtocolError("a model's weights changed shape")
                with torch.no_grad():
                    for k, v in state.items():
                        own[k].copy_(v)
            if isinstance(arg, ModelSpy) and str(handle) in reply["spy"]:
                arg.calls = [(int(T), None if none else "cache") for T, none in reply["spy"][str(handle)]]

    def function(self, name: str, seconds: float | None = None) -> "RemoteFunction":
        return RemoteFunction(self, name, self.limits.call_seconds if seconds is None else seconds)


_ONCE: dict[int, tuple] = {}      # id -> (object, its encoding, its blob): the grader's long-lived inputs


def _encoded_once(value, encoder: wire.Encoder) -> dict:
    """A large input encoded once per grader process when it is one of the checkers' cached
    objects (GPT-2's merge ranks, the GPT-2-sized table); others are encoded each time."""
    big = isinstance(value, dict) or value.numel() >= 1 << 20
    cached = _ONCE.get(id(value))
    if cached is None or cached[0] is not value:
        data = encoder.dict(value) if isinstance(value, dict) else encoder.tensor(value)
        if big:
            _ONCE[id(value)] = (value, data, encoder.blobs[data["$t"]] if "$t" in data else None)
        return data
    _, data, blob = cached
    return {**data, "$t": encoder.blob(blob)} if blob is not None else data


class RemoteFunction:
    """The learner's function as a checker sees it; it lives in the submission's process."""

    remote = True            # core.Check: the result is already plain, timed and watched

    def __init__(self, session: Session, name: str, seconds: float):
        self.session, self.__name__, self.seconds = session, name, seconds

    def __call__(self, *args, **kwargs):
        return self.session.call(self.__name__, args, kwargs, self.seconds)


def _rebuilt(kind: str, message: str, where) -> BaseException:
    """The learner's exception, rebuilt here from its name and first line (never unpickled)."""
    cls = getattr(builtins, kind, None)
    error = None
    if isinstance(cls, type) and issubclass(cls, BaseException) and cls not in (GeneratorExit,):
        try:
            error = cls(message)
        except Exception:
            error = None
    if error is None:
        error = type(kind[:60] if kind.isidentifier() else "Error", (Exception,), {})(message)
    if isinstance(where, list) and len(where) == 2:
        error.where = (str(where[0])[:80], where[1] if isinstance(where[1], int) else "?")
    return error
