"""`make lab-zh` makes the learner's copy and opens the Chinese edition's notebook 01 in it, and
`make stop` stops that JupyterLab on the port it was given (as with the README's
`LAB_ARGS="--port 8899 --no-browser"`), where `jupyter lab stop` alone only looks at 8888.
JupyterLab serves a copy of the Makefile and notebooks/ in a temporary folder: the checkout is
only read."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def list_servers(env) -> subprocess.Popen:
    """Start ``jupyter server list --json`` (what `make stop` reads; about a second of CPU):
    :func:`listed_ports` reads its answer, so the test does other work meanwhile."""
    return subprocess.Popen([BIN / "jupyter", "server", "list", "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def listed_ports(listing: subprocess.Popen) -> list[int]:
    out, _ = listing.communicate(timeout=60)
    return [json.loads(line)["port"] for line in out.splitlines() if line.strip()]


def announced_ports(runtime: Path) -> list[int]:
    """The ports in the server files of ``runtime`` (the jpserver-*.json that a JupyterLab writes
    once it listens, and that ``jupyter server list`` reads): a cheap wait, where polling
    ``jupyter server list`` itself starts a Python that imports jupyter_server, about a second
    of CPU each time, while the server it waits for is starting."""
    ports = []
    for info in runtime.glob("jpserver-*.json"):
        try:
            ports.append(json.loads(info.read_text(encoding="utf-8"))["port"])
        except (OSError, ValueError, KeyError):     # being written or removed: the next poll sees it
            pass
    return ports


@pytest.mark.skipif(not (BIN / "jupyter").exists(), reason="needs the .venv's jupyter")
def test_make_lab_opens_the_chinese_edition_and_make_stop_stops_it_on_its_port(tmp_path):
    port = free_port()
    runtime = tmp_path / "runtime"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime)}              # this test's servers only
    course = tmp_path / "course"
    for name in ("Makefile", "pyproject.toml", ".ci/constraints.txt", ".ci/stop_lab.py"):
        (course / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, course / name)
    shutil.copytree(ROOT / "notebooks", course / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for path in [course, *course.rglob("*")]:           # a read-only checkout's modes came along
        path.chmod(path.stat().st_mode | 0o200)
    make = ["make", "-C", str(course), f"BIN={BIN}", f"STAMP={tmp_path / 'stamp'}"]
    (tmp_path / "stamp").touch()
    zh = "/lab/tree/my-notebooks/zh/01_tokenizer.ipynb"
    lab = subprocess.Popen(make + ["lab-zh", f"LAB_ARGS=--port {port} --no-browser --ServerApp.token=x"],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while port not in announced_ports(runtime):
            assert lab.poll() is None, "make lab ended before serving"
            assert time.monotonic() < deadline, "JupyterLab did not start within 120 s"
            time.sleep(0.2)
        listing = list_servers(env)                        # what `make stop` reads: read below
        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None
        try:
            urllib.request.build_opener(NoRedirect).open(f"http://127.0.0.1:{port}/?token=x", timeout=30)
            location = None
        except urllib.error.HTTPError as redirect:
            location = redirect.headers.get("Location")
        assert location is not None and location.startswith(zh), location
        served = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents/my-notebooks/zh/"
                                                  f"01_tokenizer.ipynb?token=x&content=0", timeout=30))
        assert served["path"] == "my-notebooks/zh/01_tokenizer.ipynb" and served["type"] == "notebook", served
        assert (course / "my-notebooks" / "zh" / "01_tokenizer.ipynb").read_bytes() == \
            (ROOT / "notebooks" / "zh" / "01_tokenizer.ipynb").read_bytes()
        assert port in listed_ports(listing)               # what `make stop` reads lists it
        stop = subprocess.run(make + ["stop"], env=env, capture_output=True, text=True, timeout=120)
        assert stop.returncode == 0, stop.stdout + stop.stderr
        lab.wait(timeout=60)
        listing = list_servers(env)                        # beside the second `make stop`
        again = subprocess.run(make + ["stop"], env=env, capture_output=True, text=True, timeout=120)
        assert port not in listed_ports(listing)
        assert again.returncode == 0 and "no JupyterLab started from" in again.stdout
    finally:
        if lab.poll() is None:
            os.killpg(lab.pid, 9)
