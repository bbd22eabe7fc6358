"""``python -m course_lib.gpt2 --download`` (and ``course_lib.gpt2.download()``) without a connection:
one line saying there is none and what to do instead, at once — no retries, no traceback.

No test here touches the network: the Hub is a closed port on 127.0.0.1 (``HF_ENDPOINT``), or
the name lookup / huggingface_hub's call is replaced by one that raises what it raises offline.
"Quickly" is proven by counting, not timing: huggingface_hub is never called (so it never
retries), nothing sleeps, and one connection attempt is made.
"""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course_lib.gpt2 import WEIGHTS_ENV, fetch
from course_lib.gpt2 import __main__ as gpt2_main
from test_gpt2_loader import no_weights_anywhere  # noqa: F401  (the fixture: a machine without GPT-2)

ROOT = Path(__file__).resolve().parent.parent
PROXY_VARIABLES = ["http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released): a connection is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def offline(no_weights_anywhere, monkeypatch):  # noqa: F811
    """No weights anywhere, the Hub at a closed local port, no proxy; counts huggingface_hub's
    calls, every sleep and every connection attempt."""
    import huggingface_hub

    for name in PROXY_VARIABLES + ["HF_HUB_OFFLINE"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    counts = {"hub": 0, "sleep": 0, "connect": 0}

    def hub_call(*args, **kwargs):
        counts["hub"] += 1
        raise AssertionError("huggingface_hub was called although the Hub cannot be reached")

    def no_sleep(seconds):
        counts["sleep"] += 1

    real_connect = socket.socket.connect

    def counted_connect(self, address):
        counts["connect"] += 1
        return real_connect(self, address)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hub_call)
    monkeypatch.setattr(time, "sleep", no_sleep)
    monkeypatch.setattr(socket.socket, "connect", counted_connect)
    return counts


def check_one_line(message: str, why: str) -> None:
    assert "\n" not in message.strip(), message
    assert message.startswith("No connection to the Hugging Face Hub"), message
    assert why in message, message
    assert f"set {WEIGHTS_ENV}=" in message and "copy model.safetensors" in message, message
    assert '"Getting the weights"' in message, message
    assert "Traceback" not in message


def test_download_at_a_closed_port_says_so_in_one_line_without_retrying(offline):
    with pytest.raises(SystemExit) as stop:
        gpt2_main.main(["--download"])
    message = stop.value.code
    assert isinstance(message, str)            # SystemExit(str): exit status 1, the line on stderr
    check_one_line(message, "cannot be reached")
    assert "127.0.0.1" in message
    assert offline == {"hub": 0, "sleep": 0, "connect": 1}


def test_an_unresolvable_host_is_named(offline, monkeypatch):
    def no_dns(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setenv("HF_ENDPOINT", "https://huggingface.co")
    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    with pytest.raises(SystemExit) as stop:
        gpt2_main.main(["--download"])
    check_one_line(stop.value.code, "the name huggingface.co cannot be resolved")
    assert offline == {"hub": 0, "sleep": 0, "connect": 0}


def test_hf_hub_offline_is_respected_without_any_connection(offline, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SystemExit) as stop:
        gpt2_main.main(["--download"])
    check_one_line(stop.value.code, "HF_HUB_OFFLINE is set")
    assert offline == {"hub": 0, "sleep": 0, "connect": 0}


def test_the_proxy_is_what_is_tried_when_one_is_set(offline, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "https://huggingface.co")
    port = closed_port()
    monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("no_proxy", "")
    with pytest.raises(SystemExit) as stop:
        gpt2_main.main(["--download"])
    check_one_line(stop.value.code, f"the proxy 127.0.0.1:{port} cannot be reached")
    assert offline == {"hub": 0, "sleep": 0, "connect": 1}


def test_a_connection_lost_during_the_download_is_one_line_too(offline, monkeypatch):
    """The Hub answered the first check, then huggingface_hub gave up (as it does offline: a
    LocalEntryNotFoundError after its retries): still one line, not its traceback."""
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    def gives_up(*args, **kwargs):
        raise LocalEntryNotFoundError("An error happened while trying to locate the file on the Hub")

    monkeypatch.setattr(fetch, "connection_problem", lambda *args, **kwargs: None)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", gives_up)
    with pytest.raises(SystemExit) as stop:
        gpt2_main.main(["--download"])
    check_one_line(stop.value.code, "the connection failed during the download")


def test_the_notebook_call_prints_the_line_and_returns_none(offline, capsys):
    assert fetch.download() is None
    out = capsys.readouterr().out
    check_one_line(out, "cannot be reached")
    assert "Run the notebook again" not in out
    assert offline["hub"] == 0 and offline["sleep"] == 0


def test_the_command_prints_one_line_on_stderr_and_exits_1(tmp_path):
    """The real command in a fresh process: exit status 1, stderr exactly one line, stdout empty."""
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARIABLES + [WEIGHTS_ENV, "HF_HUB_OFFLINE"]}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}", HF_HUB_CACHE=str(tmp_path / "hub"))
    done = subprocess.run([sys.executable, "-m", "course_lib.gpt2", "--download"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    check_one_line(done.stderr, "cannot be reached")


def test_a_host_that_never_answers_is_one_attempt_with_a_timeout(offline, monkeypatch):
    """A dropped connection (a firewall that never answers): one attempt, bounded by the timeout."""
    timeouts = []

    def silent(address, timeout=None, *args, **kwargs):
        timeouts.append(timeout)
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    assert fetch.connection_problem(timeout=2.5) == f"127.0.0.1:{os.environ['HF_ENDPOINT'].rsplit(':', 1)[1]} did not answer within 2.5 s"
    assert timeouts == [2.5] and offline["hub"] == 0 and offline["sleep"] == 0
