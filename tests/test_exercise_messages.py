"""The exercise checkers speak the notebook's language: every ✗ hint, ✓ line and case a
checker can write goes through ``course_lib.exercises.messages.say`` and has a Chinese line with the
same placeholders, so a wrong answer in notebooks/zh gets its hint in Chinese. And a hint points at
the idea, never at the answer's code: no hint holds an expression of the worked solution."""
import ast
import json
import re
import string
import unicodedata
from pathlib import Path

import pytest

from course_lib.exercises import EXERCISES
from course_lib.exercises.messages import say
from course_lib.exercises.messages_zh import ZH
from course_lib.ui.language import set_language

from test_exercises import MISTAKES, SOLUTIONS, SOLVED, check

EXERCISE_DIR = Path(__file__).resolve().parent.parent / "course_lib" / "exercises"
CHECKERS = sorted(EXERCISE_DIR.glob("ch0*.py")) + [EXERCISE_DIR / "core.py"]
CJK = re.compile(r"[\u4e00-\u9fff]")
SENTENCE = re.compile(r"[A-Za-z]{2,}[^\w{}\s]*\s+[^\w{}]*[A-Za-z]{2,}")      # two English words in a row
DATA = {"The meaning of life is"}                                              # texts the checks encode, not messages


def columns(line: str) -> int:
    """Columns a line takes in a notebook cell: a wide (CJK) character takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


@pytest.fixture(autouse=True)
def english_afterwards():
    yield
    set_language("en")


def say_calls(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return tree, [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "say"]


def templates(path) -> list[str]:
    return [call.args[0].value for call in say_calls(path)[1]]


def fields(template: str) -> list[tuple]:
    return sorted((name, spec, conv) for _, name, spec, conv in string.Formatter().parse(template) if name is not None)


def unwrapped_sentences(path) -> list[str]:
    """English string literals of a checker that do not go through say() (docstrings, the
    texts of exceptions a checker matches, and the encoded texts aside)."""
    tree, _ = say_calls(path)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.JoinedStr) or (isinstance(parent, ast.Call) and getattr(parent.func, "id", None) == "say"):
            continue
        if isinstance(parent, ast.Expr) and isinstance(parents.get(parent), (ast.Module, ast.FunctionDef, ast.ClassDef)):
            continue                                                   # a docstring
        if isinstance(parent, ast.Tuple) and parent.elts[0] is node and isinstance(parents.get(parent), ast.List):
            continue                                                   # (text in an exception's message, hint)
        text = node.value if isinstance(node, ast.Constant) else "".join(
            v.value if isinstance(v, ast.Constant) else " {} " for v in node.values)
        if SENTENCE.search(re.sub(r"\{[^}]*\}", " ", text)) and text not in DATA:
            found.append(f"line {node.lineno}: {text!r}")
    return found


@pytest.mark.parametrize("path", CHECKERS, ids=lambda p: p.name)
def test_every_message_of_a_checker_goes_through_say(path):
    assert not unwrapped_sentences(path), "wrap these in say(...) and add their Chinese line to messages_zh.ZH"


@pytest.mark.parametrize("path", CHECKERS, ids=lambda p: p.name)
def test_every_message_has_a_chinese_line_with_the_same_placeholders(path):
    tree, calls = say_calls(path)
    assert calls
    for call in calls:
        assert isinstance(call.args[0], ast.Constant), f"line {call.lineno}: say() needs the English text itself"
        english = call.args[0].value
        assert english in ZH, f"no Chinese line for {english!r} in course_lib/exercises/messages_zh.py"
        assert fields(ZH[english]) == fields(english), english
        assert CJK.search(ZH[english]) or english in ("GPT-2 small, tied={flag}",), english
        assert sorted(k.arg for k in call.keywords) == sorted({f[0] for f in fields(english)}), f"line {call.lineno}"


@pytest.mark.parametrize("path", CHECKERS, ids=lambda p: p.name)
def test_no_message_is_said_when_the_module_is_imported(path):
    """A say() outside a function would be frozen in the language of the import (English)."""
    tree, calls = say_calls(path)
    inside = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.Lambda)) for n in ast.walk(f)}
    assert not [c.lineno for c in calls if id(c) not in inside]


def test_the_chinese_table_holds_no_line_that_nothing_says():
    said = {t for path in CHECKERS for t in templates(path)}
    assert set(ZH) <= said, set(ZH) - said


def test_say_speaks_the_chosen_language():
    english = "on {case} expected shape {shape}, got {got}"
    assert say(english, case="T = 3", shape=(3, 3), got=(2, 2)) == "on T = 3 expected shape (3, 3), got (2, 2)"
    set_language("zh")
    assert say(english, case="T = 3", shape=(3, 3), got=(2, 2)) == "在 T = 3 上，形状应为 (3, 3)，实际是 (2, 2)"
    assert say("an English line no table knows") == "an English line no table knows"


@pytest.mark.parametrize("name, mistake, fn, hint", MISTAKES, ids=[f"{m[0]}: {m[1]}" for m in MISTAKES])
def test_a_wrong_answer_under_zh_gets_its_hint_in_chinese(name, mistake, fn, hint):
    english = check(name, fn)
    set_language("zh")
    chinese = check(name, fn)
    assert not chinese.passed and chinese.attempted
    assert CJK.search(chinese.hint), chinese.hint
    assert hint not in chinese.hint and chinese.hint != english.hint
    assert chinese.message.startswith(f"✗ {name}: ")
    assert all(columns(line) <= 88 for line in chinese.message.splitlines()), chinese.message


@pytest.mark.parametrize("name", list(EXERCISES))
def test_a_right_answer_under_zh_gets_its_tick_lines_in_chinese(name):
    set_language("zh")
    result = check(name, SOLVED[name])
    assert result.passed and result.message.startswith(f"✓ {name}\n")
    assert result.details and any(CJK.search(line) for line in result.details)
    assert all(CJK.search(line) or not SENTENCE.search(line) for line in result.details), result.details
    assert all(columns(line) <= 88 for line in result.message.splitlines()), result.message


# ---------------------------------------------------------------------------- hints point at the idea

CODE_IN_ISSUE = ["text[..., :-1]", "text[..., 1:]", "log_probs[torch.arange(N), targets]", "num_classes=E.shape[0]",
                 "transpose(1, 2)", "k.transpose(-2, -1)", "model.zero_grad()", "keepdim=True"]


def hint_templates(path) -> list[str]:
    """The templates a checker can show as a hint: every say() except the ✓ lines (c.proved)."""
    tree, calls = say_calls(path)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    proved = {id(c) for c in calls if getattr(getattr(parents.get(c), "func", None), "attr", None) == "proved"}
    return [c.args[0].value for c in calls if id(c) not in proved]


def solution_expressions() -> set[str]:
    """Every call, subscript and arithmetic expression of the worked solutions, at least 8
    characters long, spaces removed."""
    cells = [cell for path in SOLUTIONS for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]]
    found = set()
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] != "code" or not source.startswith("def "):
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.Call, ast.Subscript, ast.BinOp)):
                text = ast.unparse(node).replace(" ", "")
                if len(text) >= 8:
                    found.add(text)
    return found


def test_the_solution_expressions_are_found():
    expressions = solution_expressions()
    assert len(expressions) > 50
    assert any("transpose" in e for e in expressions) and any("[...,:-1]" in e for e in expressions)


@pytest.mark.parametrize("path", CHECKERS, ids=lambda p: p.name)
def test_no_hint_gives_away_the_solution_code(path):
    code = solution_expressions() | {c.replace(" ", "") for c in CODE_IN_ISSUE}
    for template in hint_templates(path):
        for language_line in (template, ZH.get(template, template)):
            squeezed = language_line.replace(" ", "")
            assert not [c for c in code if c in squeezed], f"{template!r} holds solution code"
