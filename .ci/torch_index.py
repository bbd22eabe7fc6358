"""Which index `make setup` installs torch from (Makefile, TORCH_INDEX; docs/install.md).

    python .ci/torch_index.py URL      prints URL if it answers within a few seconds, else nothing

On Linux the Makefile asks for PyTorch's CPU-only index (a ~200 MB torch instead of PyPI's CUDA
build and its multi-GB nvidia-* libraries). Where that index cannot be reached (a proxy, a
firewall, a mirror-only network), pip would retry for many minutes: this asks once, with a
short timeout, and says in one line that torch comes from PyPI instead. URL empty or "pypi":
prints nothing, asks nothing (torch from the same index as everything else).
Only the standard library: it runs before anything is installed.
"""
import os
import ssl
import sys
import threading
import urllib.error
import urllib.request

TIMEOUT = float(os.environ.get("TORCH_INDEX_TIMEOUT", "5"))   # seconds, for the whole question


def answers(url: str, timeout: float = TIMEOUT) -> str:
    """'' if ``url``'s torch page answers, else why not (one short phrase)."""
    page = url.rstrip("/") + "/torch/"
    cafile = os.environ.get("PIP_CERT") or None              # the certificates pip is told to trust
    context = ssl.create_default_context(cafile=cafile) if page.startswith("https:") else None
    outcome = ["no answer within %g s" % timeout]

    def ask():   # in a thread: a name lookup is not bound by the socket's timeout, the join is
        try:
            request = urllib.request.Request(page, method="HEAD")
            with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
                outcome[0] = "" if response.status < 400 else f"HTTP {response.status}"
        except urllib.error.HTTPError as err:                 # 405: it answers, HEAD aside
            outcome[0] = "" if err.code == 405 else f"HTTP {err.code}"
        except (OSError, ValueError) as err:                 # URLError, refused, timeout, bad URL
            outcome[0] = str(getattr(err, "reason", err)) or type(err).__name__

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    thread.join(timeout)
    return outcome[0]


def main(argv: list[str]) -> int:
    url = argv[1].strip() if len(argv) > 1 else ""
    if url in ("", "pypi"):
        return 0
    problem = answers(url)
    if problem:
        print(f"torch: {url} cannot be reached ({problem}); torch comes from PyPI instead "
              "(on Linux that is the CUDA build, a larger download). TORCH_INDEX=<url> chooses another index.",
              file=sys.stderr)
    else:
        print(url)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
