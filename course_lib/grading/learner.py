"""The submission's side of the grader: a process that runs one notebook and answers calls.

Started by ``grading.sandbox`` inside the submission's bubblewrap sandbox, never by a learner.
Not taught. ``python -I -m course_lib.grading.learner FD``:

1. imports torch, IPython and course_lib, then limits itself (:func:`confine`): resource limits
   (threads, memory, file size, CPU seconds, open files, no core file), set inside the
   sandbox's own user namespace, so the thread limit counts this submission's threads only;
2. runs the notebook's code cells the grader sends one at a time (all but the check cells
   ``check_x(x)``) in an IPython shell, as a kernel would, and replies to each with its error
   (the grader times each cell from when it sent it), then sends the names defined;
3. answers ``call`` messages: the grader's checker sends the arguments (plain data, models as
   config + weights, ``grading.wire``), this process calls the learner's function and sends back
   the result as plain data, which calls of the course's own answer it noticed
   (``exercises.guard.watch_calls``), and the state of any model it was given (``sgd_step``
   changes it).

Nothing the grader decides on is computed here: the grade is the grader's checker comparing what
came back with what it computed itself, and the grader measures the time.
"""
from __future__ import annotations

import os
import resource
import socket
import sys
import traceback


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


def confine(spec: dict) -> None:
    """Limit this process (the whole submission: the sandbox refuses new ones) as ``spec`` says."""
    # memory: the data a submission may add (heap, anonymous maps, thread stacks: RLIMIT_DATA) on
    # top of what Python, torch and course_lib hold here. The sandbox's seccomp filter keeps the
    # submission to this one process and refuses the shared memory RLIMIT_DATA does not count, so
    # this bounds all its memory but its tmpfs folders. Not RLIMIT_AS, which also counts mapped
    # libraries: a CUDA build of torch maps and lazily loads several GB of them
    memory, cpu = _mapped_bytes() + int(spec["memory_bytes"]), int(spec["cpu_seconds"])
    for limit, value in ((resource.RLIMIT_CPU, (cpu, cpu + 5)), (resource.RLIMIT_DATA, (memory, memory)),
                         (resource.RLIMIT_FSIZE, (spec["file_bytes"], spec["file_bytes"])),
                         (resource.RLIMIT_CORE, (0, 0)), (resource.RLIMIT_NOFILE, (256, 256)),
                         (resource.RLIMIT_NPROC, (spec["processes"], spec["processes"]))):
        resource.setrlimit(limit, value)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)


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

    def run_cell(self, number: int, source: str) -> dict:
        """Cell ``number``'s reply: its error (first line) and line, or none."""
        try:
            result = self.shell.run_cell(source, store_history=False)
            error = result.error_before_exec or result.error_in_exec
        except BaseException as raised:                     # the shell itself gave up
            error = raised
        if error is None:
            return {"cell": number, "error": None, "line": None}
        line = getattr(error, "lineno", None) if isinstance(error, SyntaxError) else _where(error)[1]
        return {"cell": number, "error": f"{type(error).__name__}: {_message(error)}", "line": line}

    def defined(self) -> dict:
        """What the notebook's namespace holds: name -> "function" or the value's type."""
        return {name: ("function" if callable(value) else type(value).__name__)
                for name, value in self.shell.user_ns.items() if not name.startswith("_")}

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
            from ..exercises.ch07_sampling import ModelSpy
            spy = self.objects[data["$spy"]] = ModelSpy(wire.decode(data["model"], blobs, self.special, depth + 1))
            self.spies.add(data["$spy"])
            return spy
        raise wire.ProtocolError(f"unknown tag {tag!r}")

    def call(self, header: dict, blobs) -> tuple[dict, list]:
        from ..exercises import guard
        from . import wire
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


def serve(conn: socket.socket) -> None:
    """Start-up, then the cells and calls the grader sends, until it closes the connection."""
    from . import wire
    import matplotlib
    matplotlib.use("Agg")
    import torch
    torch.set_num_threads(1)                        # CPU seconds stay close to wall seconds
    from .. import exercises  # noqa: F401  (the checkers' modules: ModelSpy, the toys' code)
    shell = _shell()
    spec, _ = wire.receive(conn)
    confine(spec)
    learner = Learner(shell)
    wire.send(conn, {"ready": os.getpid(), "uid": os.getuid()})
    while True:
        header, blobs = wire.receive(conn)
        op = header.get("op")
        if op == "cell":
            wire.send(conn, learner.run_cell(int(header["number"]), str(header["source"])))
        elif op == "defined":
            wire.send(conn, {"defined": learner.defined()})
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
    config.DisplayFormatter.active_types = ["text/plain"]     # no one sees a picture: none is drawn
    return InteractiveShell.instance(config=config)


if __name__ == "__main__":
    try:
        serve(socket.socket(fileno=int(sys.argv[1])))
    except BaseException:                      # the grader sees the connection end
        pass
    finally:
        os._exit(0)
