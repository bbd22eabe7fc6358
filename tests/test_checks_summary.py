"""The closing Checks cell: one summary line, every ✓ line one click away and in text/plain
(what nbval compares), and a failing check still stops with its error."""
import pytest

from course_lib.figures import FigureMismatch, check_figure
from course_lib.ui.checks import ChecksSummary, checks_summary
from course_lib.ui.pipeline_map import NAMES, NOTEBOOK_STAGES, pipeline_map

LINES = """✓ decoding.softmax_ln · exponentials = [1.000000, 2.000000, 3.000000]
✓ decoding.softmax_ln · probs = [0.166667, 0.333333, 0.500000]
✓ decoding.gap_01 · ratio = 1.105
· gpt2.top5 not checked on this machine: it needs GPT-2's weights (see the README)
"""


def test_headline_counts_values_and_figures():
    summary = ChecksSummary(LINES)
    assert summary.headline() == "✓ 3 values of 2 figures match the articles"
    assert ChecksSummary("✓ a.b · x = 1\n").headline() == "✓ 1 value of 1 figure match the articles"


def test_text_plain_keeps_every_line_and_html_hides_them_one_click_away():
    summary = ChecksSummary(LINES)
    text = repr(summary)
    assert text.splitlines()[0] == summary.headline()
    for line in LINES.splitlines():
        assert line in text.splitlines()
    html = summary._repr_html_()
    assert "<details>" in html and "show all 3 checked values" in html
    assert html.index("gpt2.top5 not checked") < html.index("<details>")      # visible, not folded
    for line in LINES.splitlines()[:3]:
        assert line.replace("'", "&#x27;") in html


def test_checks_summary_collects_the_printed_lines(capsys):
    with checks_summary():
        check_figure("decoding.softmax_ln", exponentials=[1.0, 2.0, 3.0], probs=[1 / 6, 2 / 6, 3 / 6])
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "✓ 2 values of 1 figure match the articles"
    assert "✓ decoding.softmax_ln · probs = [0.166667, 0.333333, 0.500000]" in out


def test_a_failing_check_still_raises_after_the_lines_that_held(capsys):
    with pytest.raises(FigureMismatch):
        with checks_summary():
            check_figure("decoding.softmax_ln", exponentials=[1.0, 2.0, 3.0])
            check_figure("decoding.softmax_ln", probs=[0.2, 0.3, 0.5])
    out = capsys.readouterr().out
    assert "✓ decoding.softmax_ln · exponentials" in out and "match the articles" not in out


def test_pipeline_map_marks_the_notebooks_stage():
    for number, stages in NOTEBOOK_STAGES.items():
        text = repr(pipeline_map(number))
        assert f"(notebook {number})" in text
        for name in stages:
            assert f"[{name}]" in text
        assert text.count("[") == len(stages)
    first = " ".join(repr(pipeline_map("01")).split("\n")[:2])
    assert " ".join(first.split()) == ("the pipeline: [ids] → embeddings → attention → block → lm_head → "
                                       "logits → loss / sampling → next id")
    assert all(name in first for name in NAMES)
    assert pipeline_map("attention")._repr_png_().startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="unknown stage"):
        pipeline_map("softmax")
