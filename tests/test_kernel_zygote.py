"""The notebook kernels of `make test`'s nbval stages, forked from a Python that has imported
torch (tests/_kernel_zygote.py): each is fresh, in its launcher's folder and environment, can be
interrupted and dies with its launcher or with the zygote; without the zygote, or in another environment, the
kernel starts the usual way; the plugin says how many kernels it forked; and the zygote and its
kernels end with the process that started it."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

import _kernel_zygote  # noqa: E402
from _kernel_zygote import INLINE  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    """A zygote serving at <folder>/zygote.sock, with the kernel spec beside it: the folder (its
    files ``forked``, ``differences``, ``started-the-usual-way`` count for the whole module)."""
    folder = tmp_path_factory.mktemp("zygote")
    socket_path = folder / "zygote.sock"
    _kernel_zygote.write_kernel_spec(str(folder), str(socket_path))
    with open(folder / "zygote.log", "w") as log:
        server = subprocess.Popen([sys.executable, _kernel_zygote.__file__, "serve", str(socket_path)],
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not socket_path.exists():
        assert server.poll() is None and time.monotonic() < deadline, (folder / "zygote.log").read_text()
        time.sleep(0.05)
    yield folder
    server.kill()
    server.wait()


def started(folder: Path, cwd: Path, **env):
    """A kernel of the spec ``course-test`` in ``folder``, started in ``cwd`` with ``env`` added."""
    km = KernelManager(kernel_name="course-test", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(folder / "kernels")]))
    km.start_kernel(cwd=str(cwd), env=dict(os.environ, **env))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc


def run(kc, code: str, timeout: float = 60) -> tuple[str, dict]:
    """What ``code`` prints in the kernel, and its execute_reply's content."""
    printed = []

    def hook(msg):
        if msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])
    reply = kc.execute_interactive(code, timeout=timeout, output_hook=hook)
    return "".join(printed), reply["content"]


def stop(km, kc) -> None:
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def lines(folder: Path, name: str) -> list[str]:
    path = folder / name
    return path.read_text().splitlines() if path.exists() else []


def test_each_kernel_is_a_fresh_fork_in_its_launchers_folder_and_environment(zygote, tmp_path_factory):
    here, there = tmp_path_factory.mktemp("here"), tmp_path_factory.mktemp("there")
    forked, usual = len(lines(zygote, "forked")), len(lines(zygote, "started-the-usual-way"))
    pictures = []
    first = started(zygote, here, ZYGOTE_TEST_VALUE="one")
    second = started(zygote, there, ZYGOTE_TEST_VALUE="two")
    try:
        # torch and matplotlib already imported, course_lib not; matplotlib's backend is the inline
        # one IPKernelApp chooses (the test of the usual way checks the same); no plot made yet
        probe = ("import os, sys\nprint(os.getcwd(), os.environ.get('ZYGOTE_TEST_VALUE'), 'torch' in sys.modules, "
                 "'course_lib' in sys.modules, 'matplotlib.pyplot' in sys.modules, 'answer' in dir())\n"
                 "import matplotlib, matplotlib.pyplot as plt\nprint(matplotlib.get_backend(), len(plt.get_fignums()))\n"
                 "answer = 42")
        assert run(first[1], probe)[0].split() == [str(here), "one", "True", "False", "True", "False", INLINE, "0"]
        assert run(second[1], probe)[0].split() == [str(there), "two", "True", "False", "True", "False", INLINE, "0"]
        # a figure shown comes out as the inline backend's picture, in the kernel's own output
        shown = first[1].execute_interactive("plt.plot([0, 1]); plt.show()", timeout=60,
                                             output_hook=lambda msg: pictures.append(msg["msg_type"]))
        assert shown["content"]["status"] == "ok" and "display_data" in pictures, (shown["content"], pictures)
        assert run(first[1], "print(answer, os.getpid() != os.getppid())")[0].split() == ["42", "True"]
    finally:
        stop(*first)
        stop(*second)
    assert len(lines(zygote, "forked")) == forked + 2 and len(lines(zygote, "started-the-usual-way")) == usual


def test_an_interrupt_reaches_the_kernel_and_a_killed_launcher_ends_it(zygote, tmp_path):
    km, kc = started(zygote, tmp_path)
    try:
        pid = int(run(kc, "import os\nprint(os.getpid())")[0])
        assert pid != km.provisioner.process.pid          # the kernel is the launcher's fork, not the launcher
        # stop_on_error=False: the interrupted cell's error must not make ipykernel abort the next
        # request, as it does with requests that arrive just after an error (on a busy machine)
        asleep = kc.execute("import time\nprint('asleep', flush=True)\ntime.sleep(60)", stop_on_error=False)
        while True:                                        # interrupted once the cell runs, not before
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") == asleep and msg["msg_type"] == "stream":
                break
        start = time.monotonic()
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=20)["content"]
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
        assert time.monotonic() - start < 20
        # the kernel still answers (asked in the reply itself, which no stream message can overtake)
        reply = kc.execute_interactive("answer = 6 * 7", user_expressions={"answer": "answer"}, timeout=60)["content"]
        assert reply["status"] == "ok" and reply["user_expressions"]["answer"]["data"]["text/plain"] == "42", reply
    finally:
        stop(km, kc)                                          # SIGKILL to the launcher
    deadline = time.monotonic() + 10
    while state(pid) not in ("gone", "Z") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert state(pid) in ("gone", "Z"), f"the kernel {pid} outlived its launcher (state {state(pid)})"


def test_without_the_zygote_or_in_another_environment_the_kernel_starts_the_usual_way(zygote, tmp_path):
    forked, usual = len(lines(zygote, "forked")), len(lines(zygote, "started-the-usual-way"))
    other = str(int(os.environ.get("OMP_NUM_THREADS", "1")) + 1)
    # another OMP_NUM_THREADS (read by libgomp when torch loaded), in a folder with a matplotlibrc
    # (read by matplotlib when it is imported, from the kernel's folder): each is a reason
    styled = tmp_path / "styled"
    styled.mkdir()
    (styled / "matplotlibrc").write_text("lines.linewidth: 4.5\n")
    km, kc = started(zygote, styled, OMP_NUM_THREADS=other)
    try:
        assert run(kc, "import sys, os\nprint('torch' in sys.modules, os.environ['OMP_NUM_THREADS'])\nimport matplotlib\n"
                       "print(matplotlib.get_backend(), matplotlib.rcParams['lines.linewidth'])")[0].split() \
            == ["False", other, INLINE, "4.5"]
    finally:
        stop(km, kc)
    assert lines(zygote, "differences")[-1:] == ["OMP_NUM_THREADS matplotlibrc"]
    assert len(lines(zygote, "started-the-usual-way")) == usual + 1 and len(lines(zygote, "forked")) == forked
    # no zygote at all: a spec whose socket nobody listens on (and no zygote.pid to wait for)
    nobody = tmp_path / "nobody"
    _kernel_zygote.write_kernel_spec(str(nobody), str(nobody / "zygote.sock"))
    km, kc = started(nobody, tmp_path)
    try:
        assert run(kc, "import sys\nprint('torch' in sys.modules)")[0].split() == ["False"]
    finally:
        stop(km, kc)
    assert len(lines(nobody, "started-the-usual-way")) == 1


# a notebook whose one cell prints how its kernel is connected, stored with what the plugin's
# kernels must print: Unix sockets of their own (tests/_kernel_zygote.py, unix_socket_kernels)
TRANSPORT_NOTEBOOK = {
    "cells": [{"cell_type": "code", "execution_count": 1, "id": "transport", "metadata": {},
               "outputs": [{"name": "stdout", "output_type": "stream", "text": ["ipc True\n"]}],
               "source": ["import json\n", "from ipykernel.connect import get_connection_info\n",
                          "info = json.loads(get_connection_info())\n",
                          "print(info['transport'], info['ip'].startswith('@course-kernel-'))"]}],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
    "nbformat": 4, "nbformat_minor": 5}


def test_the_plugin_forks_every_notebooks_kernel_and_says_so(tmp_path):
    """nbval as `make test`'s scalar stage runs it, on two notebooks: every cell passes, the
    summary counts the kernels forked, each kernel is connected over a Unix socket of its own
    (no TCP port another process could take first), and the zygote's folder is gone after."""
    notebook = ROOT / "notebooks" / "solutions" / "03_attention_solutions.ipynb"
    transport = tmp_path / "transport.ipynb"
    transport.write_text(json.dumps(TRANSPORT_NOTEBOOK), encoding="utf-8")
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default", OMP_NUM_THREADS="1", TMPDIR=str(tmp_path))
    env.pop("JUPYTER_PATH", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests._kernel_zygote", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-p", "no:hypothesispytest", "--nbval", "--nbval-current-env", "--nbval-sanitize-with", ".ci/nbval_sanitize.cfg", "-q",
                           str(notebook), str(transport)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "notebook kernels: 2 forked from a Python with torch imported" in done.stdout, done.stdout[-2000:]
    assert "0 started the usual way" in done.stdout
    assert not list(tmp_path.glob("course-kernels-*")), "the zygote's folder was left behind"


def state(pid: int) -> str:
    """A process's state letter (Z: a zombie), or "gone"."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


def test_the_zygote_and_its_kernels_end_with_the_process_that_started_it(tmp_path):
    """A pytest run killed outright leaves nothing behind: the zygote sees its parent gone and
    ends, a kernel forked from it ends with it, and so does that kernel's launcher."""
    socket_path = tmp_path / "zygote.sock"
    _kernel_zygote.write_kernel_spec(str(tmp_path), str(socket_path))
    starter = f"""
import os, subprocess, sys, time
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_kernel_zygote import started
z = subprocess.Popen([sys.executable, {_kernel_zygote.__file__!r}, "serve", {str(socket_path)!r}],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
while not os.path.exists({str(socket_path)!r}):
    time.sleep(0.05)
from pathlib import Path
km, kc = started(Path({str(tmp_path)!r}), Path({str(tmp_path)!r}))
kernel = kc.execute_interactive("import os", user_expressions={{"pid": "os.getpid()"}}, timeout=60)
Path({str(tmp_path / "pids")!r}).write_text(
    f"{{z.pid}} {{km.provisioner.process.pid}} {{kernel['content']['user_expressions']['pid']['data']['text/plain']}}")
os._exit(0)
"""
    with open(tmp_path / "log", "w") as log:             # a file: the kernel, were it left, holds it open
        subprocess.run([sys.executable, "-c", starter], stdout=log, stderr=subprocess.STDOUT, timeout=120)
    written = (tmp_path / "pids").read_text().split() if (tmp_path / "pids").exists() else []
    pids = dict(zip(("zygote", "launcher", "kernel"), map(int, written)))
    assert len(pids) == 3, (tmp_path / "log").read_text()[-3000:]
    deadline = time.monotonic() + 10
    while any(state(pid) not in ("gone", "Z") for pid in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = {name: pid for name, pid in pids.items() if state(pid) not in ("gone", "Z")}
    for pid in alive.values():
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"outlived the process that started the zygote: {alive}"



def test_a_forked_kernel_that_fails_says_why_in_the_zygotes_folder(zygote, tmp_path):
    """nbval sends a kernel's stderr nowhere: a forked child that fails before it is a kernel (here
    the folder it is asked to run in is a file) writes its traceback to ``kernel-errors``, the
    zygote the exit code, which its launcher gets (the plugin's summary prints the file's lines)."""
    import array
    import socket
    afile = tmp_path / "afile"
    afile.write_text("")
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(60)
    conn.connect(str(zygote / "zygote.sock"))
    request = json.dumps({"args": ["-f", str(tmp_path / "kernel.json")], "cwd": str(afile), "env": dict(os.environ)}).encode()
    conn.sendmsg([len(request).to_bytes(8, "big") + request],
                 [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
    pid = int(_kernel_zygote.read_line(conn))
    assert _kernel_zygote.read_line(conn) == "1"              # its exit code, to its launcher
    conn.close()
    said = (zygote / "kernel-errors").read_text()
    assert f"kernel {pid} in {afile}:" in said and "NotADirectoryError" in said, said
    assert f"kernel {pid} ended with 1" in said, said
