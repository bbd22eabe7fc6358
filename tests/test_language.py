"""course_lib speaks English or Chinese from one table (course_lib.ui.strings).

Both languages have every key with the same placeholders; English stays as it was (the English
notebooks' stored outputs, compared by nbval, hold every English string byte for byte);
set_language("zh") turns the labels of plots, panel, playground, checks, hints and exercise
frames Chinese while the numbers stay the same.
"""
import re
import string

import pytest
import torch

from course_lib.ui import language
from course_lib.ui.language import current_language, set_language, text
from course_lib.ui.strings import STRINGS

# English-only grammar: the plural "s" of the Checks headline (Chinese has no plural)
ENGLISH_ONLY_FIELDS = {"s_n", "s_f"}
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def zh():
    set_language("zh")
    try:
        yield
    finally:
        set_language("en")


def fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def test_both_languages_have_every_key_with_the_same_placeholders():
    assert set(STRINGS) == {"en", "zh"}
    assert set(STRINGS["en"]) == set(STRINGS["zh"]), set(STRINGS["en"]) ^ set(STRINGS["zh"])
    for key, english in STRINGS["en"].items():
        assert fields(STRINGS["zh"][key]) == fields(english) - ENGLISH_ONLY_FIELDS, key


def test_every_chinese_string_that_has_words_is_written_in_chinese():
    for key, chinese in STRINGS["zh"].items():
        words = re.sub(r"\{[^}]*\}|[A-Za-z]+[-_ ]?[a-z]*|[\d\W]", "", STRINGS["en"][key])
        if words and key not in {"map.logits", "map.what.embeddings", "panel.label"}:
            assert CJK.search(chinese), f"{key}: {chinese!r} has no Chinese"


def test_english_is_the_default_and_an_unknown_code_is_refused_with_the_known_ones():
    assert current_language() == "en" and language.DEFAULT == "en"
    with pytest.raises(ValueError, match=r"unknown language 'fr'.*'en', 'zh'"):
        set_language("fr")
    assert current_language() == "en"


def test_set_language_switches_and_back(zh):
    assert current_language() == "zh" and text("plot.probability") == "概率"
    set_language("en")
    assert text("plot.probability") == "probability"


def test_a_check_line_keeps_its_english_bytes_and_speaks_chinese_in_zh(capsys, zh):
    from course_lib.figures.registry import check_figure, load_registry

    # a figure whose ✓ line carries a note: the printed value differs from the article's digits
    fid, name, spec = next((f, n, s) for f, e in load_registry().items() for n, s in e["values"].items()
                           if s.get("tol") and s.get("decimals") is not None and not isinstance(s["expected"], list)
                           and s.get("source") != "course" and not s.get("truncated"))
    value = spec["expected"] + 0.6 * 10 ** -spec["decimals"]
    check_figure(fid, **{name: value})
    chinese = capsys.readouterr().out
    set_language("en")
    check_figure(fid, **{name: value})
    english = capsys.readouterr().out
    assert english.startswith(f"✓ {fid} · {name} = ") and "(article: " in english and "reason in the registry" in english
    assert chinese.split("   ")[0] == english.split("   ")[0]            # the value part is the same
    assert "（文章：" in chinese and "理由见注册表" in chinese


def test_the_checks_headline_hint_and_exercise_frame_in_both_languages(zh):
    from course_lib.exercises import check_make_causal_mask
    from course_lib.ui.checks import ChecksSummary
    from course_lib.ui.hints import hint_for

    lines = "✓ a.b · x = 1\n✓ a.b · y = 2\n✓ c.d · z = 3\n"
    assert ChecksSummary(lines).headline() == "✓ 3 个数值（2 个图表）与文章一致"
    assert "显示全部 3 个已检查的数值" in ChecksSummary(lines)._repr_html_()
    assert hint_for(NameError("name 'ids' is not defined", name="ids")).startswith("`ids` 由本笔记本前面的单元格定义")

    def stub(T):
        raise NotImplementedError
    assert check_make_causal_mask(stub).message == "· make_causal_mask: 尚未作答：先写好上面的函数，再运行这两个单元格"
    assert check_make_causal_mask(42).message.startswith("✗ make_causal_mask: 请传入函数本身")
    set_language("en")
    assert ChecksSummary(lines).headline() == "✓ 3 values of 2 figures match the articles"
    assert check_make_causal_mask(stub).message == (
        "· make_causal_mask: not attempted yet: write the function above, then run both cells")


def test_the_panel_and_the_playground_speak_chinese_with_the_same_numbers(zh):
    from course_lib.tokens.bpe import gpt2_encoding
    from course_lib.ui.panel import PanelSettings, describe, panel_view, render_html
    from course_lib.ui.token_display import playground_text, playground_view

    logits, piece = [2.0, 1.0, 0.5, -1.0], "abcd".__getitem__
    view = panel_view(logits, PanelSettings(temperature=0.7, top_k=3, u=0.9))
    chinese, html = describe(view, piece), render_html(view, piece)
    set_language("en")
    english = describe(view, piece)
    assert "top-k 3 · top-p 关 · min-p 关 · u=0.900" in chinese and "top-k 3 · top-p off" in english
    assert "保留 3 个（共 4 个）：" in chinese and "kept 3 of 4:" in english
    assert re.findall(r"\d\.\d{3}", chinese) == re.findall(r"\d\.\d{3}", english)
    assert "区间条 [0, 1)，红线 = u" in html and "◀ 选中" in html
    set_language("zh")
    enc = gpt2_encoding()
    assert playground_text("Hi 你!", enc).startswith("词元演示框（在 JupyterLab 中可交互）：'Hi 你!'\n")
    assert "个词元：" in playground_view("Hi 你!", enc)


def test_plots_and_the_map_are_labelled_in_chinese(zh):
    import matplotlib
    matplotlib.use("Agg")
    from course_lib.ui import plots
    from course_lib.ui.pipeline_map import pipeline_map

    ax = plots.attention_heatmap(torch.eye(3), ["a", "b", "a"])
    assert ax.get_title() == "注意力权重（每行一个查询）" and ax.get_xlabel() == "被读取的位置（键）"
    ax = plots.draw_histogram([3, 1], [0.75, 0.25], ["a", "b"])
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["实际频率（4 次抽取）", "目标概率"]
    assert "你在这里：注意力（笔记本 03）" in repr(pipeline_map("03"))
    texts = [t.get_text() for t in pipeline_map("03").figure().axes[0].texts]
    assert "▲ 你在这里" in texts and "嵌入" in texts
    set_language("en")
    assert plots.attention_heatmap(torch.eye(3), ["a", "b", "a"]).get_title() == "attention weights (rows: queries)"
    assert "you are here: attention (notebook 03)" in repr(pipeline_map("03"))
