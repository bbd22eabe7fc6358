"""A clear word instead of a bare NameError when a cell runs before the cells it needs.

Every notebook's first code cell calls :func:`explain_name_errors`. After a kernel restart, a
learner who runs a cell in the middle (or the closing checks) gets the usual traceback plus
one line saying what to do: run the notebook from the top.
"""
from __future__ import annotations

from .language import text


def hint_for(error: NameError) -> str:
    """The line shown under a NameError raised in a notebook cell."""
    name = getattr(error, "name", None) or str(error).split("'")[1 if "'" in str(error) else 0]
    return text("hints.name_error", name=name)


def explain_name_errors(shell=None) -> None:
    """In an IPython kernel, show :func:`hint_for` under every NameError; elsewhere do nothing.

    The traceback itself is kept, so nothing is hidden. Returns nothing (a notebook cell that
    ends with this call shows no output).
    """
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return
        shell = get_ipython()
    if shell is None:
        return

    def show(self, etype, value, tb, tb_offset=None):
        self.showtraceback((etype, value, tb), tb_offset=tb_offset)
        print(hint_for(value))

    shell.set_custom_exc((NameError,), show)
