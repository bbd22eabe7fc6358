"""The Chinese edition speaks Chinese: no English sentence in an output of a notebook under
notebooks/zh/, in a Chinese hint or ✓ line of the exercise checkers
(course_lib/exercises/messages_zh.py), or in a Chinese string of course_lib.ui.strings.

Code and names stay as they are: identifiers (``top_k``, ``check_embed``), figure ids
(``lab.temp_210``), numbers, tensors, shapes, file names, quoted data (``'The meaning of life
is'``, a prompt the model reads) and backticked code. What is not allowed is prose: a run of
three or more English words, each separated from the next by one space (:func:`english_runs`).
The names of JupyterLab's menu items a hint tells the learner to click are names too (:data:`NAMES`).
"""
import html
import json
import re
from pathlib import Path

import pytest
import torch

from course_lib.exercises import EXERCISES
from course_lib.exercises.messages_zh import ZH as HINTS
from course_lib.ui.language import set_language
from course_lib.ui.strings import ZH as STRINGS

ZH_DIR = Path(__file__).resolve().parent.parent / "notebooks" / "zh"
ZH_NOTEBOOKS = sorted(p for p in ZH_DIR.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)

# data and code, whatever their words: quoted or backticked text, HTML tags
QUOTED = re.compile(r"`[^`\n]*`|'[^'\n]*'|\"[^\"\n]*\"|“[^”\n]*”|‘[^’\n]*’|<[^>\n]*>")
# three or more English words in a row, one space apart; a word glued to code (top_k, lab.x6,
# f(x), GPT-2, --download) is not prose
WORD = r"[A-Za-z]+(?:'[a-z]+)?"
PROSE = re.compile(rf"(?<![\w.\-/'’]){WORD}(?: {WORD}){{2,}}(?![\w\-/(’'])")
NAMES = {"Restart Kernel and Run All Cells"}   # JupyterLab's menu item (Kernel → Restart Kernel and Run All Cells…)


def english_runs(text: str) -> list[str]:
    """The runs of English prose in ``text`` (quoted data, code and :data:`NAMES` aside)."""
    text = QUOTED.sub(" ", html.unescape(text))
    return [m.group(0) for m in PROSE.finditer(text) if m.group(0) not in NAMES]


def output_texts(path: Path):
    """(cell index, text) of every output of a notebook: streams, text/plain, text/html."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    for index, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            for text in (output.get("text", ""), data.get("text/plain", ""), data.get("text/html", "")):
                text = "".join(text)
                if text:
                    yield index, text


# --------------------------------------------------------------------------- the detector


@pytest.mark.parametrize("text, runs", [
    ("[GPT-2 weights not found: this cell would load GPT-2 small", ["weights not found", "this cell would load"]),
    ("你的函数调用了 torch's softmax, which is ruled out here", ["which is ruled out here"]),
    ("τ = 0 -> temperature must be finite and > 0", ["temperature must be finite and"]),
    ("    id  bytes (hex)    as text    shown    held back  code point", []),     # words, not prose
    ("    id  十六进制字节 按文本解码 显示 暂扣 码位", []),
])
def test_the_detector_finds_prose(text, runs):
    assert english_runs(text) == runs


@pytest.mark.parametrize("text", [
    "✓ lab.detok · text = 'the cat climbed the roof.'",                 # quoted data
    "在 'The meaning of life is' 之后，GPT-2 最可能的五个下一个词元：",
    "tensor([[False,  True,  True],\n        [False, False,  True]])",     # a tensor
    "请运行 `python -m course_lib.gpt2 --download`，或者设置 COURSE_GPT2_WEIGHTS",
    "✓ interface.temperature · zero_temperature_rejected = True",
    "check_top_k_filter(top_k_filter) · top-k（0=关）· min-p · argmax · GPT-2 small",
    "请重新运行（Kernel → Restart Kernel and Run All Cells…）",
    "<b>与文章一致</b> <span class=\"token\">the roof</span>",
])
def test_the_detector_lets_code_data_and_names_pass(text):
    assert english_runs(text) == []


# --------------------------------------------------------------------------- the Chinese edition


def test_every_chinese_notebook_is_checked():
    assert len(ZH_NOTEBOOKS) == 14


@pytest.mark.parametrize("path", ZH_NOTEBOOKS, ids=lambda p: p.relative_to(ZH_DIR).as_posix())
def test_no_english_sentence_in_a_chinese_notebooks_outputs(path):
    found = [f"cell {index}: {run!r}" for index, text in output_texts(path) for run in english_runs(text)]
    assert not found, f"zh/{path.relative_to(ZH_DIR)}: English prose in its outputs: " + "; ".join(found)


@pytest.mark.parametrize("table, strings", [("messages_zh", HINTS), ("strings", STRINGS)])
def test_no_english_sentence_in_a_chinese_hint_or_string(table, strings):
    found = [f"{key!r}: {run!r}" for key, value in strings.items() for run in english_runs(value)]
    assert not found, f"{table}: " + "; ".join(found)


@pytest.fixture
def chinese():
    set_language("zh")
    yield
    set_language("en")


def test_a_ruled_out_torch_call_is_named_in_chinese(chinese):
    check = EXERCISES["stable_softmax"][1]
    result = check(lambda z: torch.softmax(z, -1))
    assert not result.passed and "torch 的 softmax" in result.hint and "torch's" not in result.hint, result.hint
    assert not english_runs(result.hint), result.hint


def test_a_ruled_out_course_function_is_named_in_chinese(chinese):
    import course_lib.model.attention as attention

    result = EXERCISES["make_causal_mask"][1](lambda T: attention.causal_mask(T))
    assert not result.passed and "course_lib 的 causal_mask" in result.hint and "'s " not in result.hint, result.hint


@pytest.mark.parametrize("returned, said", [([1, 2, 3], "含 3 项的 list"), ((1, 2), "含 2 项的 tuple"),
                                            (float("nan"), "浮点数 nan"), ("text", "一个 str")])
def test_what_came_back_is_described_in_chinese(chinese, returned, said):
    result = EXERCISES["make_causal_mask"][1](lambda T: returned)
    assert not result.passed and said in result.hint and not english_runs(result.hint), result.hint


def test_a_tensor_that_came_back_is_described_in_chinese(chinese):
    from course_lib.exercises.core import describe

    said = describe(torch.zeros(2, 3, dtype=torch.int64))
    assert said == "形状为 (2, 3)、dtype 为 torch.int64 的张量" and not english_runs(said)
    set_language("en")
    assert describe(torch.zeros(2, 3, dtype=torch.int64)) == "a tensor of shape (2, 3) and dtype torch.int64"


def test_a_tokens_tooltip_is_worded_in_the_notebooks_language():
    """01's coloured tokens: hovering one shows its id and bytes, in the notebook's language."""
    import re

    from course_lib.ui.language import current_language, set_language
    from course_lib.ui.token_display import token_spans_html
    before = current_language()
    try:
        titles = {}
        for code in ("en", "zh"):
            set_language(code)
            titles[code] = re.findall(r'title="([^"]*)"', token_spans_html([17250, 220]))
    finally:
        set_language(before)
    assert titles["en"] == ["id 17250 · bytes 48 69", "id 220 · bytes 20"]
    assert titles["zh"] == ["id 17250 · 字节 48 69", "id 220 · 字节 20"]
