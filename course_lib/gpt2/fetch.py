"""Getting GPT-2's weights from inside a notebook: ``course_lib.gpt2.download()`` in a cell.

Taught in notebooks 05 and 07, whose GPT-2 cells print :func:`download_hint` when the weights
are absent. The download itself is ``loader.download_weights`` (pinned revision, SHA-256
checked); in JupyterLab huggingface_hub shows its progress bar under the cell.

Offline, :func:`download_or_explain` says so in one line within seconds (what to do instead:
copy the file from a machine that has it, set COURSE_GPT2_WEIGHTS), before huggingface_hub
would retry for some 20 s and end in a long traceback (``python -m course_lib.gpt2 --download``
uses it too).
"""
from __future__ import annotations

import os
import socket
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from .loader import WEIGHTS_ENV, download_weights, gpt2_or_message, no_weights_line

DOWNLOAD_CALL = "import course_lib.gpt2; course_lib.gpt2.download()"
DEFAULT_ENDPOINT = "https://huggingface.co"      # huggingface_hub's, unless HF_ENDPOINT says otherwise
CONNECT_TIMEOUT_S = 5.0                          # one attempt to open a connection, no retry


class NoConnectionError(ConnectionError):
    """The Hugging Face Hub cannot be reached from here; the message is one line saying what to do."""


def no_connection_line(why: str) -> str:
    """The one line shown when the weights cannot be downloaded: why, and what to do instead."""
    return (f"No connection to the Hugging Face Hub ({why}), so GPT-2's weights cannot be downloaded here: "
            f"copy model.safetensors from a machine that has it and set {WEIGHTS_ENV}=/path/to/model.safetensors "
            f"(README, \"Getting the weights\").")


def hub_address(endpoint: str | None = None) -> tuple[str, int, str]:
    """(host, port, what) of the first hop to the Hub: the proxy for its scheme when one is
    configured (and the Hub's host is not exempted), else the Hub itself (``HF_ENDPOINT``)."""
    url = urlsplit(endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT)
    host, scheme = url.hostname or "", url.scheme or "https"
    proxy = urllib.request.getproxies().get(scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        via = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        return via.hostname or "", via.port or 80, f"the proxy {via.hostname}:{via.port or 80}"
    port = url.port or (443 if scheme == "https" else 80)
    return host, port, f"{host}:{port}"


def connection_problem(endpoint: str | None = None, timeout: float = CONNECT_TIMEOUT_S) -> str | None:
    """None when the Hub (or the proxy in front of it) accepts a connection, else why not, in a
    few words. One name lookup and one connection attempt per address (no retry): an answer within
    ``timeout`` seconds per address."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        return "HF_HUB_OFFLINE is set"
    host, port, what = hub_address(endpoint)
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return f"the name {host} cannot be resolved"
    try:
        with socket.create_connection((host, port), timeout=timeout):   # each address once (IPv6, IPv4)
            pass
    except TimeoutError:
        return f"{what} did not answer within {timeout:g} s"
    except OSError as err:
        return f"{what} cannot be reached: {err.strerror or type(err).__name__}"
    return None


def download_or_explain(cache_dir=None) -> Path:
    """:func:`loader.download_weights` when the Hub can be reached; otherwise (or when the
    connection fails during the download) a :class:`NoConnectionError` holding one line."""
    why = connection_problem()
    if why:
        raise NoConnectionError(no_connection_line(why))
    try:
        from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled
    except ImportError:
        return download_weights(cache_dir)          # its own message says to install huggingface_hub
    try:
        return download_weights(cache_dir)
    except (LocalEntryNotFoundError, OfflineModeIsEnabled) as err:
        # the Hub stopped answering after the first check (huggingface_hub retried, then gave up)
        raise NoConnectionError(no_connection_line("the connection failed during the download")) from err


def download(cache_dir=None) -> Path | None:
    """Download GPT-2 small's ``model.safetensors`` (548 MB, once) into the Hugging Face cache,
    check its SHA-256 and return its path; then run the notebook again from the top. Without a
    connection: one line saying what to do instead, and None."""
    try:
        file = download_or_explain(cache_dir)
    except NoConnectionError as err:
        print(err)
        return None
    print("Done. Run the notebook again from the top (Kernel → Restart Kernel and Run All Cells…): "
          "its GPT-2 cells now compute the real predictions.")
    return file


def download_hint(what: str) -> str:
    """The line a GPT-2 cell prints when the weights are simply not on this machine."""
    import textwrap

    from ..ui.language import text as in_language

    text = in_language("gpt2.download_hint", what=what, call=DOWNLOAD_CALL, env=WEIGHTS_ENV)
    return "\n".join(textwrap.fill(line, 88, subsequent_indent="  ") if len(line) > 88 else line
                     for line in text.splitlines())


def gpt2_or_hint(what: str):
    """``(GPT-2, None)``, or ``(None, one line)``: :func:`download_hint` when the weights are
    absent, the loader's own message when a file or setting is wrong (``gpt2_or_message``)."""
    model, problem = gpt2_or_message(what)
    if model is None and problem == no_weights_line(what):
        problem = download_hint(what)
    return model, problem
