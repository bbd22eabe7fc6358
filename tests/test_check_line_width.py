"""A check's ✓ and ✗ lines fit a notebook's output: every line of a message, in both languages, is
at most core.WIDTH columns wide (a CJK character or full-width mark counts 2), and a Chinese line
breaks where Chinese text may break: no line starts with a closing mark (），。：) or ends with an
opening one (（「). Checked on every message a checker can say (messages_zh's English keys and
their Chinese lines, placeholders filled in) and on every ✓/✗ output stored in the notebooks."""
import json
import string
from pathlib import Path

import pytest

from course_lib.exercises.core import WIDTH, _columns, _lines
from course_lib.exercises.messages_zh import ZH

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
CLOSING, OPENING = set("）」』】〕》〉，。、；：！？"), set("（「『【〔《〈")   # a line may not start / end with these
SAMPLE = {"p": 0.95, "k": 3, "case": "the toy's row, p = 0.95"}     # what a checker fills in, typically


def filled(template: str) -> str:
    values = {}
    for _, field, spec, _ in string.Formatter().parse(template):
        if field is not None and field not in values:
            values[field] = SAMPLE.get(field, 0.125 if spec else "[0.2203, 0.6903, 0.0292]")
    return template.format(**values)


def bad_lines(message: str) -> list[str]:
    return [line for line in message.splitlines()
            if _columns(line) > WIDTH or line.lstrip()[:1] in CLOSING or line[-1:] in OPENING]


def test_the_measure_counts_wide_characters_twice_and_sees_a_bad_break():
    assert _columns("和 p") == 4
    assert bad_lines("  · 平坦的一行保留 5 个（interface.top_p_shape\n    ）") == ["    ）"]
    assert bad_lines("x" * (WIDTH + 1)) and not bad_lines("x" * WIDTH)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_message_wraps_within_the_width_at_a_sensible_point(language):
    found = []
    for english, chinese in ZH.items():
        message = filled(english if language == "en" else chinese)
        for shown in (_lines(f"✗ top_p_filter: {message}", []), _lines("✓ top_p_filter", [message])):
            found += bad_lines(shown)
    assert found == []


def test_the_top_p_lines_fit_on_one_line():
    line = ZH["a sum equal to p stops; a 96 % leader keeps 1, a flat row 5 (interface.top_p_shape)"]
    assert _lines("✓ top_p_filter", [line]).count("\n") == 1
    assert _lines("✓ top_p_filter", ["a sum equal to p stops; a 96 % leader keeps 1, a flat row 5 "
                                       "(interface.top_p_shape)"]).count("\n") == 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_every_stored_check_line_fits(path):
    found = []
    for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", ""))
            if text.startswith(("✓", "✗")):
                found += [f"cell {index}: {line!r}" for line in bad_lines(text)]
    assert found == []
