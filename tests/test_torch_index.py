"""Where `make setup` takes torch from (.ci/torch_index.py, the Makefile's TORCH_INDEX): on Linux
PyTorch's CPU-only index, for torch alone, when it answers within seconds; else PyPI, said in one
line. Tested against indexes on this machine's loopback: one that serves a simple-index page, a
closed port, and one that accepts and never answers."""
import http.server
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "torch_index.py"


def choose(url: str, timeout: float = 5.0):
    """(stdout, stderr, seconds) of .ci/torch_index.py URL."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, str(SCRIPT), url], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "TORCH_INDEX_TIMEOUT": str(timeout)})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip(), done.stderr.strip(), time.monotonic() - start


class SimpleIndex(http.server.BaseHTTPRequestHandler):
    """A PEP 503 index with one project, torch."""
    def do_GET(self):
        self.answer(send_body=True)

    def do_HEAD(self):
        self.answer(send_body=False)

    def answer(self, send_body):
        body = b'<html><body><a href="torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl">torch</a></body></html>'
        self.send_response(200 if self.path == "/simple/torch/" else 404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def local_index():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SimpleIndex)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_an_index_that_answers_is_used(local_index):
    out, err, _ = choose(local_index + "/simple")
    assert out == local_index + "/simple" and err == ""


def test_an_index_without_torch_is_not_used(local_index):
    out, err, _ = choose(local_index + "/elsewhere")
    assert out == "" and "HTTP 404" in err and "torch comes from PyPI instead" in err


def test_a_closed_port_falls_back_to_pypi_at_once_in_one_line():
    with socket.socket() as probe:                  # a port nobody listens on: bound, then closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out, err, seconds = choose(f"http://127.0.0.1:{port}/whl/cpu")
    assert out == ""
    assert err.count("\n") == 0 and err.startswith(f"torch: http://127.0.0.1:{port}/whl/cpu cannot be reached")
    assert "torch comes from PyPI instead" in err and "TORCH_INDEX=" in err
    assert seconds < 10, seconds


def test_an_index_that_never_answers_costs_the_timeout_not_minutes():
    with socket.socket() as silent:                 # accepts the connection, never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        out, err, seconds = choose(f"http://127.0.0.1:{silent.getsockname()[1]}/whl/cpu", timeout=1.5)
    assert out == "" and "cannot be reached" in err and "torch comes from PyPI instead" in err
    assert 1.0 < seconds < 10, seconds


@pytest.mark.parametrize("url", ["", "pypi"])
def test_empty_or_pypi_asks_nothing(url):
    out, err, _ = choose(url)
    assert out == "" and err == ""


def test_it_runs_on_the_standard_library_alone():
    """It runs before anything is installed: no third-party import."""
    done = subprocess.run([sys.executable, "-S", "-c", f"import runpy; runpy.run_path({str(SCRIPT)!r})"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
