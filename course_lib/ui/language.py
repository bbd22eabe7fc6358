"""The language the notebooks' labels speak: English (``"en"``, the default) or Chinese (``"zh"``).

Every notebook's first code cell chooses it through ``course_lib.ui.start`` (the notebooks in
notebooks/zh/ say ``"zh"``)::

    start("03", language="zh")      # calls set_language("zh"), among the rest of the set-up

From then on the plots' titles, axis labels and legends, the sampling panel, the token
playground, the ✓ check lines' notes, the Checks cell's summary line, the exercise checks'
frame lines and the NameError hint come from :data:`course_lib.ui.strings.STRINGS` in that
language; the exercise checks' hints and ✓ lines from ``course_lib.exercises.messages``. The numbers, figure ids and token texts never change with the language.

:func:`text` is how course_lib asks for a string: ``text("plot.probability")``, or with the
string's ``{placeholders}`` filled in: ``text("checks.show_all", n=18)``.
"""
from __future__ import annotations

from .strings import STRINGS

LANGUAGES = tuple(STRINGS)            # ("en", "zh")
DEFAULT = "en"
_current = DEFAULT
_chosen = False                       # has set_language been called in this process?


def set_language(code: str) -> None:
    """Choose the language of course_lib's labels and messages: ``"en"`` or ``"zh"``."""
    global _current, _chosen
    if code not in STRINGS:
        raise ValueError(f"unknown language {code!r}: course_lib speaks "
                         + ", ".join(repr(c) for c in LANGUAGES))
    _current, _chosen = code, True


def current_language() -> str:
    """The code chosen by :func:`set_language` (``"en"`` until one is chosen)."""
    return _current


def language_chosen() -> bool:
    """Whether a notebook (or anything) has called :func:`set_language` in this process. After a
    kernel restart it is False until the notebook's first cell runs again."""
    return _chosen


def text(key: str, **values) -> str:
    """The string ``key`` in the current language, its ``{placeholders}`` filled from ``values``."""
    table = STRINGS[_current]
    if key not in table:
        raise KeyError(f"no string {key!r} in course_lib.ui.strings ({_current!r})")
    return table[key].format(**values) if values else table[key]
