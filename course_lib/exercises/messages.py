"""The exercise checkers' messages in the notebook's language: every ✗ hint, every ✓ line and
every case a hint names.

A checker writes its message in English, the English text being the key, and fills in its
``{placeholders}`` through :func:`say`::

    raise Fail(say("on {case} expected shape {shape}, got {got}", case=case, shape=..., got=...))

In English (the default) that is ``str.format``; after ``set_language("zh")`` (the first cell of
every notebook in notebooks/zh/) the Chinese line of :data:`~.messages_zh.ZH` is filled in
instead. tests/test_exercise_messages.py proves that every message a checker can say has a
Chinese line with the same placeholders, so a missing entry fails a test, not a learner's check.
The frame of a check ("not attempted yet", "pass your function") lives in
``course_lib.ui.strings`` with the other interface strings.
"""
from __future__ import annotations

from ..ui.language import current_language
from .messages_zh import ZH

TABLES = {"zh": ZH}


def say(english: str, **values) -> str:
    """``english`` (a message template) in the current language, its placeholders filled in.

    A template with no entry in the language's table is shown in English (the tests keep the
    table complete; a learner's check never fails for want of a translation)."""
    template = TABLES.get(current_language(), {}).get(english, english)
    return template.format(**values)
