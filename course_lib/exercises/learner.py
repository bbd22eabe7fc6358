"""The submission's side of the grader: a process that runs one notebook and answers calls.

Started by ``exercises.sandbox`` (the grader), never by a learner. Not taught.
``python -I -m course_lib.exercises.learner FD`` is a *zygote*: it imports torch, IPython and
course_lib once, then waits on the socket FD; for each submission the grader sends it one end
of a socket pair, and the zygote forks a child that

1. confines itself (:func:`confine`): its own session, resource limits (CPU seconds, address
   space, file size, processes, open files, no core file); as root also a new network
   namespace (no network) and mount namespace in which /tmp, /var/tmp, /dev/shm and /run/lock
   are the submission's own temporary folder, then an unprivileged uid and gid; stdout and
   stderr go to /dev/null; the environment is emptied;
2. runs the notebook's code cells in order in an IPython shell, as a kernel would (the check
   cells ``check_x(x)`` aside), each cell's error noted and the next cell run;
3. answers ``call`` messages: the grader's checker sends the arguments (plain data, models as
   config + weights, ``exercises.wire``), the child calls the learner's function and sends back
   the result as plain data, which calls of the course's own answer it noticed
   (``guard.watch_calls``), and the state of any model it was given (``sgd_step`` changes it).

Nothing the grader decides on is computed here: the grade is the grader's checker comparing what
came back with what it computed itself.
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import socket
import sys
import traceback

CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")      # the folders anyone may write in


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _bind(libc, fd: int, target: str) -> bool:
    """Mount the folder open at ``fd`` on ``target`` (by fd: its path may be hidden by then)."""
    return libc.mount(f"/proc/self/fd/{fd}".encode(), target.encode(), None, MS_BIND | MS_REC, None) == 0


def _open_python_path(libc) -> None:
    """Let an unprivileged uid reach Python and the course's code when a folder above them is
    closed to others (e.g. Python under /root/.pyenv, /root being 0700): in this process's own
    mount namespace only, that folder becomes an empty tmpfs holding just the needed child."""
    import course_lib
    needed = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.dirname(course_lib.__file__))}
    done = set()
    for path in sorted(needed):
        parts = os.path.abspath(path).split(os.sep)[1:]
        for depth in range(1, len(parts)):
            closed, child = os.sep + os.path.join(*parts[:depth]), parts[depth]
            if os.stat(closed).st_mode & 0o001 == 0 and (closed, child) not in done:
                done.add((closed, child))
                keep = os.open(os.path.join(closed, child), os.O_PATH)
                if libc.mount(b"tmpfs", closed.encode(), b"tmpfs", 0, b"mode=0711") == 0:
                    os.mkdir(os.path.join(closed, child))
                    _bind(libc, keep, os.path.join(closed, child))
                break


def _under_shared_tmp() -> list[tuple[str, int]]:
    """(path, O_PATH fd) of Python and the course's checkout where they lie inside a folder that
    the private /tmp will hide (a clone under /tmp, a venv under /var/tmp): bound back after it, at
    the same path, so the modules imported later (lazily) are still found. Outermost paths only."""
    import course_lib
    needed = {os.path.abspath(p) for p in (sys.base_prefix, sys.prefix,
                                           os.path.dirname(os.path.dirname(course_lib.__file__)))}
    hidden = sorted(p for p in needed if any(p == s or p.startswith(s + os.sep) for s in SHARED_TMP))
    outer = [p for p in hidden if not any(p != q and p.startswith(q + os.sep) for q in hidden)]
    return [(p, os.open(p, os.O_PATH)) for p in outer]


def _mapped_bytes() -> int:
    """This process's data segment now (VmData: heap and anonymous maps), 0 where /proc does not say."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def confine(spec: dict) -> dict:
    """Limit and isolate this process as ``spec`` says; return what was achieved."""
    os.setsid()
    # memory: the data a submission may add (heap and anonymous maps, RLIMIT_DATA) on top of what
    # Python, torch and course_lib hold here; not RLIMIT_AS, which also counts mapped libraries:
    # a CUDA build of torch maps and lazily loads several GB of them
    memory, cpu = _mapped_bytes() + int(spec["memory_bytes"]), int(spec["cpu_seconds"])
    for limit, value in ((resource.RLIMIT_CPU, (cpu, cpu + 5)), (resource.RLIMIT_DATA, (memory, memory)),
                         (resource.RLIMIT_FSIZE, (spec["file_bytes"], spec["file_bytes"])),
                         (resource.RLIMIT_CORE, (0, 0)), (resource.RLIMIT_NOFILE, (256, 256))):
        resource.setrlimit(limit, value)
    achieved = {"uid": os.getuid(), "network": True, "private_tmp": False}
    tmp = spec["tmp"]
    os.chdir(tmp)                      # before /tmp is replaced by this very folder (its path then changes)
    if os.getuid() == 0:
        libc = _libc()
        if libc.unshare(CLONE_NEWNET) == 0:
            achieved["network"] = False
        if libc.unshare(CLONE_NEWNS) == 0 and libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0:
            _open_python_path(libc)
            keep = _under_shared_tmp()
            folder = os.open(tmp, os.O_PATH)
            achieved["private_tmp"] = all([_bind(libc, folder, shared) for shared in SHARED_TMP if os.path.isdir(shared)])
            for path, fd in keep:      # Python or the course checked out under /tmp: seen again, same path
                os.makedirs(path, exist_ok=True)
                _bind(libc, fd, path)
        uid = int(spec["uid"])
        resource.setrlimit(resource.RLIMIT_NPROC, (64, 64))
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        achieved["uid"] = os.getuid()
    here = "/tmp" if achieved["private_tmp"] else tmp
    os.environ.clear()
    os.environ.update({"PATH": "/usr/bin:/bin", "HOME": here, "TMPDIR": here, "MPLBACKEND": "Agg", "LANG": "C.UTF-8"})
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    return achieved


def is_check_cell(source: str) -> bool:
    """A notebook's ``from course_lib.exercises import check_x`` / ``check_x(x)`` cell."""
    lines = [line.strip() for line in source.strip().splitlines() if line.strip()]
    return bool(lines) and all(line.startswith(("from course_lib.exercises import check_", "check_")) for line in lines)


def _where(error: BaseException, own_file: bool = False):
    """(function, line) of the innermost frame of ``error`` that is not this module's."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename != __file__]
    if not frames:
        return ["?", getattr(error, "lineno", "?")]
    return [frames[-1].name, frames[-1].lineno]


def _message(error: BaseException) -> str:
    try:
        text = str(error)
    except BaseException:
        text = ""
    return (text.splitlines() or [""])[0][:300]


class Learner:
    """The notebook's namespace, and the objects the grader sent (by handle)."""

    def __init__(self, shell):
        self.shell, self.objects, self.touched = shell, {}, set()
        self.models, self.spies = set(), set()              # handles of the GPTs and spies received

    def run_cells(self, cells: list[str]) -> dict:
        errors = []
        for number, source in enumerate(cells, 1):
            if is_check_cell(source):
                continue
            try:
                result = self.shell.run_cell(source, store_history=False)
                error = result.error_before_exec or result.error_in_exec
            except BaseException as raised:                 # the shell itself gave up
                error = raised
            if error is not None:
                line = getattr(error, "lineno", None) if isinstance(error, SyntaxError) else _where(error)[1]
                errors.append({"cell": number, "error": f"{type(error).__name__}: {_message(error)}", "line": line})
        kinds = {name: ("function" if callable(value) else type(value).__name__)
                 for name, value in self.shell.user_ns.items() if not name.startswith("_")}
        return {"cell_errors": errors, "defined": kinds}

    def special(self, data, blobs, depth):
        """Decode the grader's extra tags: cached inputs, models, model parts, spies."""
        from . import wire
        tag = next(iter(data))
        if tag == "$ref":
            value = self.objects[data["$ref"]]
            if data["$ref"] in self.models:
                self.touched.add(data["$ref"])
            return value
        if tag == "$keep":
            value = self.objects[data["$keep"]] = wire.decode(data["value"], blobs, self.special, depth + 1)
            return value
        if tag == "$gpt":
            from ..model.gpt import GPT, GPTConfig
            state = wire.decode(data["state"], blobs, self.special, depth + 1)
            dtype = next(iter(state.values())).dtype
            model = GPT(GPTConfig(**data["config"])).to(dtype)
            model.load_state_dict(state)
            model.train(bool(data["training"]))
            self.objects[data["$gpt"]] = model
            self.models.add(data["$gpt"])
            self.touched.add(data["$gpt"])
            return model
        if tag == "$part":
            owner = wire.decode(data["$part"], blobs, self.special, depth + 1)
            return owner.get_submodule(str(data["path"]))
        if tag == "$spy":
            from .ch07_sampling import ModelSpy
            spy = self.objects[data["$spy"]] = ModelSpy(wire.decode(data["model"], blobs, self.special, depth + 1))
            self.spies.add(data["$spy"])
            return spy
        raise wire.ProtocolError(f"unknown tag {tag!r}")

    def call(self, header: dict, blobs) -> tuple[dict, list]:
        from . import guard, wire
        name = header["name"]
        fn = self.shell.user_ns.get(name)
        if not callable(fn):
            return {"missing": type(fn).__name__ if fn is not None else None}, []
        self.touched = set()
        args = wire.decode(header["args"], blobs, self.special)
        kwargs = wire.decode(header["kwargs"], blobs, self.special)
        try:
            with guard.watch_calls(name) as seen:
                out = fn(*args, **kwargs)
            out = guard.plain(out)
        except BaseException as error:          # SystemExit and KeyboardInterrupt too
            return {"raised": type(error).__name__, "message": _message(error), "where": _where(error)}, []
        encoder = wire.Encoder()
        reply = {"ok": encoder(out), "forbidden": seen.first,
                 "state": {str(h): encoder({k: v.detach() for k, v in self.objects[h].state_dict().items()})
                           for h in self.touched},
                 "spy": {str(h): [[int(T), cache is None] for T, cache in self.objects[h].calls] for h in self.spies}}
        return reply, encoder.blobs


def serve(conn: socket.socket, spec: dict, shell) -> None:
    from . import wire
    achieved = confine(spec)
    learner = Learner(shell)
    wire.send(conn, {"pid": os.getpid(), **achieved})
    while True:
        header, blobs = wire.receive(conn)
        op = header.get("op")
        if op == "cells":
            wire.send(conn, learner.run_cells(header["cells"]))
        elif op == "call":
            reply, out_blobs = learner.call(header, blobs)
            wire.send(conn, reply, out_blobs)
        else:
            return


def _shell():
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config
    config = Config()
    config.HistoryManager.enabled = False
    return InteractiveShell.instance(config=config)


def zygote(control: socket.socket) -> None:
    """Import what every submission needs once; fork one confined child per request."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import torch  # noqa: F401
    from .. import exercises  # noqa: F401  (every checker module, the toys' code, decoding)
    from . import wire  # noqa: F401
    shell = _shell()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)               # children are reaped by the kernel
    while True:
        message, fds, _, _ = socket.recv_fds(control, 1 << 16, 1)
        if not message or not fds:
            return
        if os.fork() == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            conn = socket.socket(fileno=fds[0])
            spec = json.loads(message)
            log = os.open(spec["debug_log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600) if spec.get("debug_log") else None
            try:
                serve(conn, spec, shell)
            except BaseException:                      # the grader sees the connection end
                if log is not None:
                    os.write(log, traceback.format_exc().encode())
            finally:
                os._exit(0)
        os.close(fds[0])


if __name__ == "__main__":
    zygote(socket.socket(fileno=int(sys.argv[1])))
