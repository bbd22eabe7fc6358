"""The closing Checks cell of every notebook: one summary line, every ✓ line one click away.

Taught in notebook 01 and used at the end of 01–07::

    with checks_summary():
        check_inline("interface.tok.hi_ni", ids=ids, ...)
        ...

Inside the block each ``check_figure`` / ``check_inline`` prints its ✓ lines as usual; they are
collected and shown as one line, ``✓ 67 values of 19 figures match the articles``, with the
full list under it in an HTML ``<details>`` (click to open). The text form of the same output
(``text/plain``, which a terminal, a static view and nbval read) keeps every ✓ line, so the
stored notebook still records, and nbval still compares, each value. A check that fails
raises its error after printing the lines collected so far.
"""
from __future__ import annotations

import html
import io
import re
import sys
from contextlib import contextmanager, redirect_stdout

from .language import text

CHECK = re.compile(r"^✓ (\S+) · ")


class ChecksSummary:
    """The collected output of a Checks cell."""

    def __init__(self, text: str):
        self.lines = [line for line in text.splitlines() if line.strip()]

    @property
    def checked(self) -> list[str]:
        return [line for line in self.lines if CHECK.match(line)]

    @property
    def others(self) -> list[str]:
        """Lines that are not ✓ lines (e.g. "· gpt2.top5 not checked on this machine …")."""
        return [line for line in self.lines if not CHECK.match(line)]

    def headline(self) -> str:
        figures = {CHECK.match(line).group(1) for line in self.checked}
        n, f = len(self.checked), len(figures)
        return text("checks.headline", n=n, f=f, s_n="s" * (n != 1), s_f="s" * (f != 1))

    def __repr__(self) -> str:
        return "\n".join([self.headline(), *self.others, "", *self.checked])

    def _repr_html_(self) -> str:
        others = "".join(f"<div>{html.escape(line)}</div>" for line in self.others)
        listing = html.escape("\n".join(self.checked))
        return (f"<div class='course-checks'><b>{html.escape(self.headline())}</b>{others}"
                f"<details><summary>{html.escape(text('checks.show_all', n=len(self.checked)))}</summary>"
                f"<pre>{listing}</pre></details></div>")


@contextmanager
def checks_summary():
    """Collect the ✓ lines printed inside the block and show them as a :class:`ChecksSummary`."""
    buffer = io.StringIO()
    try:
        with redirect_stdout(buffer):
            yield
    except BaseException:
        sys.stdout.write(buffer.getvalue())       # what did hold, then the failure itself
        raise
    summary = ChecksSummary(buffer.getvalue())
    try:
        from IPython.display import display
    except ImportError:
        print(repr(summary))
    else:
        display(summary)
