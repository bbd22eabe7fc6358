"""The grader's side of a submission: its process, its limits, and the learner's functions as proxies.

Used by ``exercises.grade``. Not taught. A :class:`Zygote` (``exercises.learner``) has torch
and course_lib imported once and forks a confined child per submission; a :class:`Session`
owns that child: a fresh temporary folder, the notebook's cells run there, then
``session.function(name)`` is a :class:`RemoteFunction` that an ordinary checker
(``check_bpe_merge(fn)``) calls like the learner's function. Each call sends the arguments as
plain data, waits at most the time left, and gets back plain data only (``exercises.wire``):
the checker, its expected values and its comparisons stay in this process, out of the
submission's reach. A call that times out, a process that ends or a reply that cannot be
read ends that child (it is killed with everything it started) and the exercise fails with
the reason; the next exercise starts a fresh child.
"""
from __future__ import annotations

import builtins
import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import torch

from . import core, guard, wire

BASE_UID = 61000                # a submission runs as uid/gid 61000… (one per job slot) when the grader is root
UIDS = 1000                     # how many such uids graders on one machine may use at once
_claimed: list = []             # the lock file that keeps this process's uid its own


def claim_uid() -> int:
    """A uid in 61000…61999 no other grader process on this machine is using (an exclusive lock
    on a file per uid, held until this process ends): its submissions' leftovers are killed by
    uid, so two graders running side by side must never share one."""
    import fcntl
    if os.getuid() != 0:
        return os.getuid()
    for uid in range(BASE_UID, BASE_UID + UIDS):
        handle = open(os.path.join(tempfile.gettempdir(), f"course-grader-uid-{uid}.lock"), "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _claimed.append(handle)
        return uid
    raise RuntimeError(f"all uids {BASE_UID}…{BASE_UID + UIDS - 1} are in use by other graders")


def clean_env() -> dict:
    """The environment a zygote starts with: none of the grader's variables."""
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1",
            "HOME": tempfile.gettempdir()}


class Zygote:
    """A process with torch and course_lib imported that forks one child per submission."""

    def __init__(self):
        self.lock = threading.Lock()
        self.start()

    def start(self) -> None:
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = subprocess.Popen([sys.executable, "-I", "-m", "course_lib.exercises.learner", str(theirs.fileno())],
                                        pass_fds=[theirs.fileno()], env=clean_env(), cwd="/",
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        theirs.close()

    def spawn(self, spec: dict) -> socket.socket:
        """A connection to a new child; a zygote that died is started again, once."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with self.lock:
            try:
                socket.send_fds(self.control, [wire.json.dumps(spec).encode()], [theirs.fileno()])
            except OSError:
                self.close()
                self.start()
                socket.send_fds(self.control, [wire.json.dumps(spec).encode()], [theirs.fileno()])
        theirs.close()
        return ours

    def close(self) -> None:
        self.control.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()


@dataclasses.dataclass
class Limits:
    call_seconds: float = 10.0            # one call of the learner's function
    exercise_seconds: float = 60.0        # all calls of one exercise's check
    submission_seconds: float = 600.0     # the whole submission, cells included
    memory_bytes: int = 4 << 30           # data (heap, anonymous maps) the submission may add to the zygote's
    file_bytes: int = 64 << 20            # largest file it may write (in its own folder)


def _kill_uid(uid: int) -> None:
    """Kill every process running as ``uid`` (what a submission may have left behind)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    os.kill(int(entry), signal.SIGKILL)
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                pass


class Session:
    """One child of the zygote for one submission: its folder, its limits, its calls."""

    def __init__(self, zygote: Zygote, cells: list[str], limits: Limits, uid: int, deadline: float):
        self.zygote, self.cells, self.limits, self.deadline = zygote, cells, limits, deadline
        self.uid = uid                                 # claim_uid(): this grader process's own
        self.conn, self.pid, self.tmp, self.alive = None, None, None, False
        self.exercise_deadline = deadline
        self.handles: dict[int, int] = {}          # id(object) -> handle, for objects sent once
        self.kept: list = []                       # those objects (kept alive: an id is never reused)
        self.confinement: dict = {}

    # ------------------------------------------------------------------ the process
    def start(self) -> dict:
        """Fork a child, run the notebook's cells; returns {"cell_errors", "defined"}."""
        self.handles, self.kept = {}, []
        self.tmp = tempfile.mkdtemp(prefix="submission-")
        if os.getuid() == 0:
            os.chown(self.tmp, self.uid, self.uid)
        os.chmod(self.tmp, 0o700)
        spec = {"tmp": self.tmp, "uid": self.uid, "memory_bytes": self.limits.memory_bytes,
                "cpu_seconds": int(self.limits.submission_seconds) + 1, "file_bytes": self.limits.file_bytes,
                "debug_log": os.environ.get("COURSE_GRADER_DEBUG_LOG")}      # where a child's own failure is written
        self.conn = self.zygote.spawn(spec)
        self.alive = True
        try:
            hello, _ = wire.receive(self.conn, time.monotonic() + 60)
            self.pid = int(hello["pid"])
            self.confinement = {k: hello.get(k) for k in ("uid", "network", "private_tmp")}
            wire.send(self.conn, {"op": "cells", "cells": self.cells})
            reply, _ = wire.receive(self.conn, self.deadline, limit=64 << 20)
            return {"cell_errors": list(reply["cell_errors"]), "defined": dict(reply["defined"])}
        except wire.Timeout:
            self.kill()
            raise guard.Ended(f"the notebook's cells did not finish within the submission's "
                              f"{self.limits.submission_seconds:g} s") from None
        except (wire.ProtocolError, OSError, KeyError, TypeError, ValueError) as error:
            self.kill()
            raise guard.Ended(f"the submission's process ended while running the notebook's cells "
                              f"(os._exit, a crash or a limit: {error})") from None

    def kill(self) -> None:
        """End the child and everything it started; remove its folder."""
        self.alive = False
        if self.pid is not None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if os.getuid() == 0:
            _kill_uid(self.uid)
        if self.conn is not None:
            self.conn.close()
        self.conn, self.pid = None, None
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

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
        from .ch07_sampling import ModelSpy
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
        """The learner's ``name(*args, **kwargs)`` in the child: (plain result, ruled-out call)."""
        if not self.alive:
            raise guard.Ended("the submission's process had already ended")
        encoder = wire.Encoder(self.special)
        header = {"op": "call", "name": name, "args": encoder(list(args)), "kwargs": encoder(dict(kwargs))}
        header["args"] = {"$tuple": header["args"]}
        try:
            self.conn.settimeout(max(0.001, min(self.exercise_deadline, self.deadline) - time.monotonic()))
            wire.send(self.conn, header, encoder.blobs)
            # the call's own seconds start once the arguments are sent (a 154 MB table takes a while)
            deadline = min(time.monotonic() + seconds, self.exercise_deadline, self.deadline)
            reply, blobs = wire.receive(self.conn, deadline)
        except wire.Timeout:
            self.kill()
            raise guard.TimeLimit from None
        except socket.timeout:
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
        from .ch07_sampling import ModelSpy
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
