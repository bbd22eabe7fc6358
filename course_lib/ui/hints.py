"""A clear word instead of a bare NameError when a cell runs before the cells it needs.

Every notebook's first code cell calls :func:`explain_name_errors` (through ``ui.start.start``),
and so does the first import of course_lib in a notebook kernel (``course_lib/__init__.py``):
after a kernel restart, a learner who runs a cell in the middle gets the usual traceback plus
one line saying what to do (run the notebook from the top) as soon as course_lib has been
imported again — by the first cell, or by the cell itself (every exercise's check cell imports
its checker). Before the first cell has chosen the notebook's language, the line is shown in
English and in Chinese.
A cell that needs no course_lib, run first after a restart, shows Python's plain traceback
(the notebooks say so).
"""
from __future__ import annotations

from .language import language_chosen, text
from .strings import STRINGS


def hint_for(error: NameError) -> str:
    """The line shown under a NameError raised in a notebook cell (every language's line while
    no notebook has chosen one)."""
    name = getattr(error, "name", None) or str(error).split("'")[1 if "'" in str(error) else 0]
    if language_chosen():
        return text("hints.name_error", name=name)
    return "\n".join(table["hints.name_error"].format(name=name) for table in STRINGS.values())


def explain_name_errors_in_a_notebook() -> None:
    """:func:`explain_name_errors` if this process is a notebook kernel (IPython already imported,
    a ZMQ shell); nothing in a script, a test or a terminal. Called by ``import course_lib``."""
    import sys
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None and type(shell).__name__ == "ZMQInteractiveShell":
        explain_name_errors(shell)


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
