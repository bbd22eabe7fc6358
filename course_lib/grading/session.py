"""The grader's side of a submission: its sandbox, its time, and the learner's functions as proxies.

Used by ``grading.cli``. Not taught. A :class:`Session` owns one submission's process (in its
own bubblewrap sandbox, ``grading.sandbox``): it sends the notebook's cells, then
``session.function(name)`` is a :class:`RemoteFunction` that an ordinary checker
(``check_bpe_merge(fn)``) calls like the learner's function. Each call sends the arguments as
plain data and gets back plain data only (``grading.wire``): the checker, its expected values and
its comparisons stay in this process, out of the submission's reach.

Time is the submission's own, read by the grader from /proc (every process of its sandbox), so
neither a loaded machine nor anything the submission sends changes it. The grader sends the
cells one at a time: each cell gets ``cell_seconds`` of CPU from when it is sent to its reply,
each call ``call_seconds``, each exercise ``exercise_seconds``, the whole submission
``submission_seconds``. A cell or call that waits instead (sleeps, blocks: neither running nor
waiting for a CPU) is stopped once it has waited its budget plus :data:`IDLE_GRACE`; one that
a loaded machine starves keeps its time, up to :data:`WALL_FACTOR` times its budget. The
submission's processes together hold at most ``memory_bytes`` more than its process held
before any of its code ran (read four times a second). A cell that runs too long ends the
process and is skipped when the cells run again (reported as "cell N ran longer than S s"); a
call that runs too long, a process that ends, a limit of the whole submission, or a message that
is not the reply asked for ends the process and fails that exercise with the reason; the next
exercise starts a fresh process in a fresh sandbox.
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

WALL_FACTOR = 10          # wall seconds allowed per CPU second of a budget, whatever else (a machine at load 16 on 2 cores: 8)
IDLE_GRACE = 10.0         # seconds a cell or call may wait (sleep, block) beyond its budget
POLL = 0.25               # seconds between two readings of the submission's use of CPU and memory
QUICK = 0.05              # a reply within this many seconds is taken without reading /proc (the
                          # submission's totals are read at the next longer wait)
SEND_SECONDS = 60.0       # how long the grader waits for the submission to read what it sends
CELL_REPLY = 1 << 20      # bytes of a cell's reply (its error's first line)


class Unexpected(wire.ProtocolError):
    """A message that is not the reply the grader asked for (forged, stray or malformed)."""


class OverLimit(Exception):
    """The submission as a whole used up a limit (its CPU time, its waiting, its memory)."""


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
        self.spent_cpu = self.spent_idle = 0.0     # used by the processes of this submission that ended
        self.baseline = 0                          # memory its process held before any of its code ran

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
        """The cells, sent one at a time (check cells and cells that ran too long left out): the
        process replies to each, then sends the names it defined. A cell's budget runs from
        when the grader sends it; a reply that is not that cell's ends the process."""
        from .learner import is_check_cell
        self.handles, self.kept = {}, []
        try:
            self.sandbox = Sandbox(self.uid, self.limits.disk_bytes, self.namespaces, self.limits.sandbox_bytes())
        except OSError as error:             # e.g. a Python its uid cannot reach (weaker isolation, as root)
            self.sandbox = None
            raise guard.Ended(f"the submission's process could not start ({type(error).__name__}: {error})") from None
        self.alive = True
        limits = self.limits
        spec = {"memory_bytes": limits.memory_bytes, "cpu_seconds": int(limits.submission_seconds) + 1,
                "file_bytes": limits.file_bytes, "processes": limits.processes}
        try:
            self._send(spec)
            hello, _ = wire.receive(self.sandbox.sock, time.monotonic() + 300, limit=1 << 16)   # torch, IPython, course_lib
            if "ready" not in hello:
                raise wire.ProtocolError("no greeting")
            self.baseline = self.sandbox.usage(memory=True).memory
            errors = [{"cell": c, "error": why, "line": "-"} for c, why in self.too_long.items()]
            todo = [[number, source] for number, source in enumerate(self.cells, 1)
                    if not is_check_cell(source) and number not in self.too_long]
            for number, source in todo:
                self._send({"op": "cell", "number": number, "source": source})
                try:
                    reply, _ = self.wait(limits.cell_seconds, float("inf"), limit=CELL_REPLY)
                except wire.Timeout:
                    self.kill()
                    raise CellTooLong(number, limits.cell_seconds) from None
                error = _cell_error(number, reply)
                if error is not None:
                    errors.append(error)
            self._send({"op": "defined"})
            reply, _ = self.wait(limits.cell_seconds, float("inf"), limit=64 << 20)
            defined = reply["defined"]
            if type(defined) is not dict or not all(type(v) is str for v in defined.values()):
                raise Unexpected("a malformed list of names")
            return {"cell_errors": errors, "defined": {k: v[:80] for k, v in defined.items()}}
        except OverLimit as over:
            self.kill()
            raise guard.Ended(str(over)) from None
        except (Unexpected, KeyError, TypeError, ValueError, RuntimeError) as error:     # forged, stray or malformed
            self.kill()
            raise guard.Ended(f"the submission's process sent the grader a message that is not the reply it asked "
                              f"for, while running the notebook's cells ({_said(error)})") from None
        except (wire.ProtocolError, wire.Timeout, OSError) as error:
            why = self.sandbox.error_text() if self.sandbox else ""
            self.kill()
            raise guard.Ended(f"the submission's process ended while running the notebook's cells "
                              f"(os._exit, a crash or a limit: {why or error})") from None

    def _send(self, header: dict, blobs=()) -> None:
        """Send to the submission; wire.Timeout when it stops reading."""
        self.sandbox.sock.settimeout(SEND_SECONDS)
        try:
            wire.send(self.sandbox.sock, header, blobs)
        except (socket.timeout, TimeoutError):
            raise wire.Timeout from None

    def wait(self, cpu_seconds: float, cpu_left: float, limit: int = wire.MAX_MESSAGE):
        """The reply to what was just sent. wire.Timeout once, since now, the submission has
        used ``cpu_seconds`` of CPU (or ``cpu_left``), or spent longer than that plus
        :data:`IDLE_GRACE` neither running nor waiting for a CPU (sleeping, blocked), or
        :data:`WALL_FACTOR` times it in wall time; :class:`OverLimit` when the submission as a
        whole has used its CPU time or its memory. Every number is read from /proc, every
        :data:`POLL` seconds until the whole reply has arrived: a message, whole or begun,
        cannot stop or restart the clocks."""
        sock, sandbox, limits = self.sandbox.sock, self.sandbox, self.limits
        budget = min(cpu_seconds, cpu_left)
        began = time.monotonic()
        wall_end = began + WALL_FACTOR * budget + 5
        reader = wire.Reader(limit)
        self._count_files()                                # what the cells and calls before this one left
        if select.select([sock], [], [], QUICK)[0]:        # a quick reply (most cells): no need to read /proc
            message = reader.read_from(sock)
            if message is not None:
                return message
        start, read_at, idle = sandbox.usage(), time.monotonic(), 0.0
        while True:
            if select.select([sock], [], [], POLL)[0]:
                message = reader.read_from(sock)
                if message is not None:
                    self.spent_idle += max(0.0, idle)
                    return message
                if time.monotonic() - read_at < POLL:     # more of a long message: read on, the clocks at each POLL
                    continue
            now, read_at = sandbox.usage(memory=True), time.monotonic()
            cpu, wall = now.cpu - start.cpu, read_at - began
            idle = wall - cpu - (now.waiting - start.waiting)
            if self.spent_cpu + now.cpu > limits.submission_seconds:
                raise OverLimit(f"the submission used all of its {limits.submission_seconds:g} CPU seconds")
            if self.spent_idle + max(0.0, idle) > limits.submission_seconds:
                raise OverLimit(f"the submission waited (slept, blocked) longer than {limits.submission_seconds:g} s in all")
            self._count_files()
            if now.memory > self.baseline + limits.memory_bytes:
                raise OverLimit(f"the submission's processes held more than {limits.memory_bytes / (1 << 30):g} GiB "
                                f"of memory together (private and shared)")
            if cpu > budget or idle > budget + IDLE_GRACE or read_at > wall_end:
                self.spent_idle += max(0.0, idle)
                raise wire.Timeout

    def _count_files(self) -> None:
        """OverLimit once the submission's tmpfs folders hold more than ``limits.files`` entries
        (an empty file costs a tmpfs no space, and the kernel about a kilobyte)."""
        if self.sandbox.files() > self.limits.files:
            raise OverLimit(f"the submission made more than {self.limits.files:,} files and folders in /tmp and /dev/shm")

    def begin_exercise(self) -> None:
        """The exercise's CPU budget starts now (its calls share it)."""
        self.exercise_cpu_end = (self.sandbox.cpu_seconds() if self.alive else 0.0) + self.limits.exercise_seconds

    def exercise_cpu_left(self) -> float:
        if self.exercise_cpu_end == float("inf"):
            return float("inf")
        return max(0.0, self.exercise_cpu_end - self.sandbox.cpu_seconds())

    def kill(self) -> None:
        """End the process and everything it started (its CPU time counts on in the next one's)."""
        if self.sandbox is not None and self.alive:
            self.spent_cpu += self.sandbox.usage().cpu
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
            self._send(header, encoder.blobs)
            reply, blobs = self.wait(seconds, self.exercise_cpu_left())
        except wire.Timeout:
            self.kill()
            raise guard.TimeLimit from None
        except OverLimit as over:
            self.kill()
            raise guard.Ended(str(over)) from None
        except (wire.ProtocolError, OSError) as error:
            self.kill()
            raise guard.Ended(f"the submission's process ended ({error}: os._exit, a crash or a limit)") from None
        if "raised" in reply:                      # the learner's exception, rebuilt from its name and text
            raise _rebuilt(str(reply["raised"])[:80], str(reply.get("message", ""))[:300], reply.get("where"))
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


def _cell_error(number: int, reply: dict) -> dict | None:
    """The error of cell ``number`` from its reply, or None; ProtocolError when the reply is not
    one for that cell (a forged or stray message)."""
    error, line = reply.get("error"), reply.get("line")
    if reply.get("cell") != number or type(reply.get("cell")) is not int or not (error is None or type(error) is str):
        raise Unexpected(f"a reply that is not cell {number}'s")
    if error is None:
        return None
    return {"cell": number, "error": error[:300], "line": line if type(line) is int else "-"}


def _said(error: BaseException) -> str:
    """What was wrong with a message, as a reason (a malformed message's KeyError says little)."""
    if isinstance(error, Unexpected):
        return str(error)
    return f"a malformed message ({type(error).__name__})"


def _rebuilt(kind: str, message: str, where) -> Exception | KeyboardInterrupt | SystemExit:
    """The learner's exception, rebuilt here from its name and first line (never unpickled):
    an Exception of the builtins' class of that name, or SystemExit and KeyboardInterrupt (the
    checkers name both); any other (BaseException, GeneratorExit, a class of the learner's) an
    Exception of that name, so nothing the learner raises escapes the grader's checkers."""
    cls = getattr(builtins, kind, None)
    error = None
    if isinstance(cls, type) and (issubclass(cls, Exception) or cls in (SystemExit, KeyboardInterrupt)):
        try:
            error = cls(message)
        except Exception:
            error = None
    if error is None:
        error = type(kind[:60] if kind.isidentifier() else "Error", (Exception,), {})(message)
    if isinstance(where, list) and len(where) == 2:
        error.where = (str(where[0])[:80], where[1] if isinstance(where[1], int) else "?")
    return error
