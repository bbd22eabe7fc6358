"""Notebook kernels forked from a Python that has already imported torch, for ``make test``'s
nbval stages: they start 28 and 14 kernels, and a fresh kernel spends most of its start (about
2 CPU seconds here, out of a solutions notebook's 2.3) importing torch and ipykernel.

Loaded as a pytest plugin (``-p tests._kernel_zygote``, the Makefile's nbval stages only), in
the process that is not an xdist worker it starts the zygote, ``python tests/_kernel_zygote.py
serve SOCKET``, in a folder of its own, and writes the kernel spec ``course-test`` there (on
``JUPYTER_PATH``); nbval then runs every notebook on that spec instead of ``--nbval-current-env``.
The pytest run does not wait for it: a launcher that comes before it listens waits while it is
still importing. The zygote imports :data:`PRELOAD` (never ``course_lib``; it runs no torch
operation, so no thread pool exists when it forks) from an empty folder, and waits. matplotlib
is among them: a kernel's backend is still its own, set in the child as a kernel that imports
matplotlib itself would get it (:func:`matplotlib_as_imported_here`).
For each notebook the spec runs ``python tests/_kernel_zygote.py launch SOCKET <ipykernel's
arguments>``: that small process hands the zygote its folder, environment and standard
streams, and the zygote forks a child that takes them and becomes the notebook's kernel
(``IPKernelApp``, as ``python -m ipykernel_launcher`` runs it). The launcher stays the process
jupyter_client knows: it forwards the signals it gets (an interrupt, a terminate) and exits
with the kernel's exit code; when the launcher dies (SIGKILL at a kernel's shutdown) the kernel
sees the socket close and ends at once.

Linux only (elsewhere the plugin does nothing and nbval starts the usual kernels). Every
notebook still runs in a fresh process of its own that has run no other notebook's code.
A launcher that finds no zygote, or whose environment differs from the zygote's where the
preloaded libraries read it (:data:`IMPORT_TIME`), becomes a kernel started the usual way
(``exec python -m ipykernel_launcher``): slower, never different. The run's summary says how
many kernels were forked and how many started the usual way (tests/test_kernel_zygote.py).
Every kernel of the run, forked or not, talks to nbval over Unix sockets of its own
(:func:`unix_socket_kernels`), never TCP ports another process could take first.
"""
from __future__ import annotations

import array
import gc
import json
import os
import signal
import socket
import sys
import threading

# (ipykernel.debugger: each kernel imports it as it starts, and with it debugpy's pydevd)
PRELOAD = ("torch", "numpy", "ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.debugger", "ipywidgets",
           "tiktoken", "matplotlib", "matplotlib.pyplot")
INLINE = "module://matplotlib_inline.backend_inline"


def write_kernel_spec(folder: str, socket_path: str, name: str = "course-test") -> None:
    """The kernel spec ``name`` in ``folder``/kernels (``folder`` goes on JUPYTER_PATH, first: a
    spec named ``python3`` there is the one a JupyterLab started with that path uses)."""
    spec = os.path.join(folder, "kernels", name)
    os.makedirs(spec, exist_ok=True)
    with open(os.path.join(spec, "kernel.json"), "w", encoding="utf-8") as out:
        json.dump({"argv": [sys.executable, os.path.abspath(__file__), "launch", socket_path, "-f", "{connection_file}"],
                   "display_name": "Python 3 (course tests)", "language": "python",
                   "metadata": {"debugger": True}}, out)


# ---------------------------------------------------------------------------- the launcher

def launch(socket_path: str, kernel_args: list[str]) -> None:
    """Become a notebook's kernel: forked by the zygote at ``socket_path``, or started the usual way."""
    wait_for_zygote(socket_path)
    try:
        here = os.getcwd()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        os.chdir(os.path.dirname(socket_path))         # a socket's path may be 107 bytes at most:
        try:                                           # its name, from its folder
            conn.connect(os.path.basename(socket_path))
        finally:
            os.chdir(here)
        request = json.dumps({"args": kernel_args, "cwd": here, "env": dict(os.environ)}).encode()
        conn.sendmsg([len(request).to_bytes(8, "big") + request],
                     [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
        pid = int(read_line(conn))
    except (OSError, ValueError):
        try:                                   # counted in the run's summary
            with open(os.path.join(os.path.dirname(socket_path), "started-the-usual-way"), "a") as count:
                count.write("1\n")
        except OSError:
            pass
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *kernel_args])
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, lambda number, _frame: forward(pid, number))
    code = read_line(conn)                       # the kernel's exit code, once it has ended
    sys.exit(int(code) if code.lstrip("-").isdigit() else 1)


def wait_for_zygote(socket_path: str, seconds: float = 120) -> None:
    """Until the zygote listens, while it is still importing (its pid file names it, alive)."""
    import time
    deadline = time.monotonic() + seconds
    while not os.path.exists(socket_path) and time.monotonic() < deadline:
        try:
            with open(os.path.join(os.path.dirname(socket_path), "zygote.pid")) as f:
                with open(f"/proc/{int(f.read())}/stat") as stat:
                    if stat.read().rsplit(")", 1)[1].split()[0] in "ZX":
                        return                          # it ended: no zygote
        except (OSError, ValueError):
            return
        time.sleep(0.05)


def forward(pid: int, number: int) -> None:
    if pid <= 1:
        return
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        pass


def read_line(conn: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        try:
            chunk = conn.recv(64)
        except InterruptedError:
            continue
        if not chunk:
            break
        data += chunk
    return data.decode().strip()


# ---------------------------------------------------------------------------- the zygote

def serve(socket_path: str) -> None:
    """Import :data:`PRELOAD`, then fork a kernel for each launcher that connects (one thread:
    it waits for a launcher, or for a kernel to end, whose exit code goes to its launcher)."""
    import importlib
    import select
    os.chdir(os.path.dirname(socket_path))             # matplotlib reads no matplotlibrc from here (a
    for name in PRELOAD:                               # new folder); the socket is bound by its name
        importlib.import_module(name)                  # (a path may be too long)
    gc.freeze()     # what is imported so far, out of the garbage collector's sight: a kernel's
                    # collections walk only its own objects (and leave the pages it shares with
                    # the zygote unwritten)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = os.path.basename(socket_path)
    listener.bind(name + ".binding")
    listener.listen(16)
    os.rename(name + ".binding", name)     # a launcher sees the socket only once it listens (between
                                           # bind and listen, one was refused and started the usual way)
    launchers: dict[int, socket.socket] = {}           # kernel pid -> its launcher's socket
    parent, zygote = os.getppid(), os.getpid()
    print(f"kernel zygote ready (pid {os.getpid()})", flush=True)
    while os.getppid() == parent:                       # ends with the pytest run that started it
        if select.select([listener], [], [], 0.2)[0]:
            conn, _ = listener.accept()
            try:
                request, fds = receive(conn)
            except (OSError, ValueError):
                conn.close()
                continue
            differ = differences(request["env"])
            if os.path.exists(os.path.join(request["cwd"], "matplotlibrc")):
                differ.append("matplotlibrc")          # read by matplotlib at import, from the kernel's folder
            if differ:                                 # another environment: the launcher starts its own
                with open(os.path.join(os.path.dirname(socket_path), "differences"), "a") as said:
                    said.write(" ".join(sorted(differ)) + "\n")
                for fd in fds:
                    os.close(fd)
                conn.close()
                continue
            pid = os.fork()
            if pid == 0:
                listener.close()
                for other in launchers.values():
                    other.close()
                become_kernel(conn, request, fds, zygote, os.path.dirname(socket_path))
            for fd in fds:
                os.close(fd)
            try:                                       # the kernel's pid first (the zygote says it: a
                conn.sendall(f"{pid}\n".encode())      # child that fails early must never send a number
            except OSError:                            # its launcher would take for a pid)
                pass
            launchers[pid] = conn
            with open(os.path.join(os.path.dirname(socket_path), "forked"), "a") as count:
                count.write(f"{pid}\n")
        for pid in list(launchers):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)       # a kernel that failed (not one stopped)
                if code > 0 or -code in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL, signal.SIGFPE):
                    with open(os.path.join(os.path.dirname(socket_path), "kernel-errors"), "a") as said:
                        said.write(f"kernel {pid} ended with {code}\n")
                conn = launchers.pop(pid)
                try:
                    conn.sendall(f"{code}\n".encode())
                except OSError:
                    pass
                conn.close()


# what the libraries this zygote imported read from the environment when they loaded: a
# launcher whose environment differs here gets no fork
IMPORT_TIME = ("ATEN_", "OMP_", "GOMP_", "KMP_", "MKL_", "OPENBLAS_", "TORCH", "PYTORCH_", "MPL", "MATPLOTLIB",
               "NUMPY_", "PYTHON", "LD_", "COURSE_", "HF_", "TIKTOKEN_", "JUPYTER")


def differences(env: dict) -> list[str]:
    here = os.environ
    return [key for key in set(env) | set(here)
            if key.startswith(IMPORT_TIME) and env.get(key) != here.get(key)]


def receive(conn: socket.socket) -> tuple[dict, list[int]]:
    fds = array.array("i")
    data, ancillary, _, _ = conn.recvmsg(1 << 20, socket.CMSG_LEN(3 * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    size = int.from_bytes(data[:8], "big")
    data = data[8:]
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ValueError("a short request")
        data += chunk
    if len(fds) != 3:
        raise ValueError("no standard streams")
    return json.loads(data), list(fds)


def become_kernel(conn: socket.socket, request: dict, fds: list[int], zygote: int, folder: str) -> None:
    """In the forked child: the launcher's streams, folder and environment, then IPKernelApp
    (a kernel that fails writes why to ``folder``/kernel-errors too: nbval sends its stderr nowhere).
    It dies with the zygote (which ends with its pytest run): else this child, holding the
    zygote's end of the launcher's socket, and the launcher, waiting for an exit code on it,
    would wait for each other for ever."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)      # PR_SET_PDEATHSIG
        if os.getppid() != zygote:                                      # it ended before that
            os._exit(1)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        matplotlib_as_imported_here()
        os.setsid()
        threading.Thread(target=die_with_launcher, args=(conn,), daemon=True).start()
        sys.argv = [sys.executable, *request["args"]]
        from ipykernel.kernelapp import IPKernelApp
        IPKernelApp.launch_instance(argv=request["args"])
        code = 0
    except SystemExit as end:
        code = end.code if isinstance(end.code, int) else 1
    except BaseException:
        import traceback
        traceback.print_exc()
        try:
            with open(os.path.join(folder, "kernel-errors"), "a") as said:
                said.write(f"kernel {os.getpid()} in {request['cwd']}:\n{traceback.format_exc()}")
        except OSError:
            pass
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def matplotlib_as_imported_here() -> None:
    """matplotlib's backend as a kernel started the usual way has it: IPKernelApp sets MPLBACKEND
    to the inline backend unless it is set, and importing matplotlib then reads MPLBACKEND into
    rcParams (the zygote imported it without that setting; pyplot has chosen no backend yet)."""
    if not os.environ.get("MPLBACKEND"):
        os.environ["MPLBACKEND"] = INLINE
    import matplotlib
    matplotlib.rcParams["backend"] = os.environ["MPLBACKEND"]


def die_with_launcher(conn: socket.socket) -> None:
    """The launcher's end of the socket closed (it was killed): the kernel ends too."""
    try:
        while conn.recv(64):
            pass
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGKILL)


# ---------------------------------------------------------------------------- the pytest plugin

SOCKET_ENV = "COURSE_KERNEL_ZYGOTE"     # the zygote's socket, for the xdist workers
_zygote = None


def pytest_configure(config):
    """Start the zygote (not in an xdist worker: its socket is in the environment the workers
    inherit), then point nbval at the kernel spec ``course-test``."""
    global _zygote
    if not getattr(config.option, "nbval", False) or not getattr(config.option, "nbval_current_env", False) \
            or config.option.collectonly:               # no kernel will start
        return
    if not sys.platform.startswith("linux"):       # macOS forbids much after a fork (Objective-C,
        return                                     # Accelerate): the usual kernels there
    if not hasattr(config, "workerinput"):
        import tempfile
        folder = tempfile.mkdtemp(prefix="course-kernels-")
        socket_path = os.path.join(folder, "zygote.sock")
        write_kernel_spec(folder, socket_path)
        os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [folder, os.environ.get("JUPYTER_PATH")]))
        os.environ[SOCKET_ENV] = socket_path
        _zygote = start_zygote(socket_path)
    if os.environ.get(SOCKET_ENV):
        config.option.nbval_current_env = False
        config.option.nbval_kernel_name = "course-test"
        unix_socket_kernels()


def start_zygote(socket_path: str, env: dict | None = None):
    """The zygote (``serve``) listening at ``socket_path``, in that socket's folder, with ``env``
    (the environment its kernels' launchers will have: else they start the usual way); its pid
    file there lets launchers wait while it imports. Ends with the process that started it."""
    import subprocess
    folder = os.path.dirname(socket_path)
    with open(os.path.join(folder, "zygote.log"), "w") as log:
        zygote = subprocess.Popen([sys.executable, os.path.abspath(__file__), "serve", socket_path],
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=folder, env=env)
    with open(os.path.join(folder, "zygote.pid"), "w") as pid:
        pid.write(str(zygote.pid))
    return zygote


def stop_process(process, seconds: float = 10) -> None:
    """End ``process`` (a Popen): SIGTERM, then SIGKILL after ``seconds``. The zygote's kernels end with it."""
    import subprocess
    process.terminate()
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def unix_socket_kernels() -> None:
    """nbval's kernels talk to it over Unix sockets of their own, not TCP ports on localhost.
    jupyter_client chooses a kernel's five ports free when it writes the connection file, and the
    kernel binds them a moment later: with notebook kernels starting in two stages at once (and
    JupyterLab's in the unit tests), another process could take one in between, and the kernel
    died at its start ("Address already in use"; nbval: "Kernel died before replying to
    kernel_info"). A socket in Linux's abstract namespace has a name no other kernel has, and no
    file to leave behind."""
    import uuid

    import nbval.kernel

    class UnixSocketKernelManager(nbval.kernel.KernelManager):
        unix_sockets = True

        def __init__(self, **kwargs):
            super().__init__(transport="ipc", ip=f"@course-kernel-{uuid.uuid4().hex}", **kwargs)

    if not getattr(nbval.kernel.KernelManager, "unix_sockets", False):    # once per process
        nbval.kernel.KernelManager = UnixSocketKernelManager


def pytest_terminal_summary(terminalreporter):
    if _zygote is None:
        return
    folder = os.path.dirname(os.environ[SOCKET_ENV])

    def lines(name):
        try:
            with open(os.path.join(folder, name)) as f:
                return f.read().splitlines()
        except OSError:
            return []
    usual, differ = lines("started-the-usual-way"), sorted(set(lines("differences")))
    terminalreporter.write_line(
        f"notebook kernels: {len(lines('forked'))} forked from a Python with torch imported (tests/_kernel_zygote.py), "
        f"{len(usual)} started the usual way" + (f" (environment differs: {differ})" if differ else "")
        + ("" if os.path.exists(os.environ[SOCKET_ENV]) else f"; the zygote did not start: {lines('zygote.log')[-5:]}"))
    if lines("kernel-errors"):                  # a forked kernel that failed: why (its stderr went nowhere)
        terminalreporter.write_line("forked kernels that failed:\n" + "\n".join(lines("kernel-errors")[-60:]))


def pytest_unconfigure(config):
    global _zygote
    if _zygote is None:
        return
    import shutil
    stop_process(_zygote)
    shutil.rmtree(os.path.dirname(os.environ[SOCKET_ENV]), ignore_errors=True)
    _zygote = None


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2])
    elif sys.argv[1:2] == ["launch"]:
        launch(sys.argv[2], sys.argv[3:])
    else:
        sys.exit("usage: _kernel_zygote.py serve SOCKET | launch SOCKET <kernel arguments>")
