"""The Chinese edition (notebooks/zh/) runs the same code as the English one.

Each English notebook (notebooks/0*.ipynb and notebooks/solutions/0*_solutions.ipynb) is
paired with its twin at the same path under notebooks/zh/. The pair must have the same code
cells in the same order, with

* the same code once comments and string literals are removed (Python's tokenize; the
  expressions, conversions and format specs inside f-strings are kept and compared: only an
  f-string's literal text may be translated),
* the same figure checks: in each cell the same figure-id literals and the same check calls
  (``check_figure``, ``check_inline``, ``check_<exercise>``) with the same arguments' names,
* the same cell tags,

and the first code cell chooses the edition's language (``start(..., language="en")`` /
``start(..., language="zh")``). A change made to one edition's code alone fails here, naming the
notebook and the cell. nbval then runs both editions strictly (``make test``, stage 2).
"""
import ast
import copy
import io
import json
import re
import tokenize
from pathlib import Path

import pytest

from course_lib.figures.registry import load_registry

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
ZH = NOTEBOOKS / "zh"
ENGLISH = sorted(p.relative_to(NOTEBOOKS).as_posix() for p in NOTEBOOKS.glob("0*.ipynb")) + sorted(
    p.relative_to(NOTEBOOKS).as_posix() for p in (NOTEBOOKS / "solutions").glob("0*.ipynb"))
# The English notebooks whose Chinese twin is in notebooks/zh/. Every English notebook is in
# exactly one of the two lists; a twin that is not translated yet is named in NOT_TRANSLATED
# (and reported by test_untranslated_notebooks_are_named), never silently left out.
TRANSLATED = [
    "01_tokenizer.ipynb", "02_embeddings.ipynb", "03_attention.ipynb", "04_block.ipynb",
    "05_lm_head.ipynb", "06_loss.ipynb", "07_sampling.ipynb",
] + [f"solutions/{chapter}_solutions.ipynb" for chapter in (
    "01_tokenizer", "02_embeddings", "03_attention", "04_block", "05_lm_head", "06_loss", "07_sampling")]
NOT_TRANSLATED = []
FSTRING_PARTS = {getattr(tokenize, name) for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
                 if hasattr(tokenize, name)}                  # Python ≥ 3.12 splits f-strings up
SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(nb: dict) -> list[tuple[int, dict]]:
    """(index in the notebook, cell) of every code cell."""
    return [(i, c) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def is_fstring(literal: str) -> bool:
    return "f" in literal[:literal.index(literal[-1])].lower()


class _BlankStrings(ast.NodeTransformer):
    """Replace every string constant of an expression by "" (display strings may be translated,
    e.g. ``f"{'same' if ok else 'DIFFERENT'}"``)."""

    def visit_Constant(self, node):
        return ast.Constant("") if isinstance(node.value, str) else node


def fstring_code(literal: str) -> str:
    """What an f-string computes, without its literal text: ``{expr!conv:spec}`` per field, the
    expression's own string constants blanked, the format spec kept as written."""
    parts = []
    for node in ast.parse(literal, mode="eval").body.values:
        if isinstance(node, ast.FormattedValue):
            spec = ast.unparse(node.format_spec) if node.format_spec is not None else ""
            value = ast.unparse(_BlankStrings().visit(node.value))
            parts.append(f"{{{value}!{node.conversion}:{spec}}}")
    return "f" + "".join(parts)


def code_tokens(text: str) -> list[tuple[int, str, int]]:
    """(token type, token text, line) of a cell's code, comments and string literals removed
    (f-strings keep :func:`fstring_code`). IPython magics are compared as text."""
    lines = [("#%" + line) if line.lstrip().startswith(("%", "!")) else line for line in text.splitlines(True)]
    out, pending = [], []
    for tok in tokenize.generate_tokens(io.StringIO("".join(lines)).readline):
        if tok.type in FSTRING_PARTS or pending:                 # gather one f-string's tokens
            pending.append(tok)
            if tok.type == getattr(tokenize, "FSTRING_END", None) and sum(
                    t.type == tokenize.FSTRING_START for t in pending) == sum(
                    t.type == tokenize.FSTRING_END for t in pending):
                literal = tokenize.untokenize([(t.type, t.string) for t in pending]).strip()
                out.append((tokenize.STRING, fstring_code(literal), pending[0].start[0]))
                pending = []
            continue
        if tok.type in SKIPPED:
            continue
        if tok.type == tokenize.STRING:
            if is_fstring(tok.string):
                out.append((tok.type, fstring_code(tok.string), tok.start[0]))
            continue                                             # a plain string: may be translated
        out.append((tok.type, tok.string, tok.start[0]))
    return out


def figure_checks(text: str) -> list:
    """The cell's figure-id literals and its check calls (name, positional literals, keywords)."""
    ids = load_registry()
    tree = ast.parse("\n".join(l for l in text.splitlines() if not l.lstrip().startswith(("%", "!"))))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ids:
            found.append(("figure id", node.value))
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name.startswith("check"):
                found.append(("call", name, [ast.unparse(a) for a in node.args],
                              [k.arg for k in node.keywords]))
    return sorted(found, key=repr)


def language_chosen(text: str) -> str | None:
    """The ``language=`` of the cell's ``start(...)`` call (course_lib.ui.start), if it has one."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "start":
            for keyword in node.keywords:
                if keyword.arg == "language" and isinstance(keyword.value, ast.Constant):
                    return keyword.value.value
    return None


def pairing_problems(english: dict, chinese: dict, name: str) -> list[str]:
    """Every way the Chinese twin's code differs from the English notebook's, each naming the
    notebook and the code cell (its index among code cells and in the notebook)."""
    en, zh = code_cells(english), code_cells(chinese)
    if len(en) != len(zh):
        return [f"{name}: {len(en)} code cells in English, {len(zh)} in notebooks/zh/{name}"]
    problems = []
    for k, ((i, a), (j, b)) in enumerate(zip(en, zh)):
        where = f"{name} code cell {k} (English cell {i}, Chinese cell {j})"
        ta, tb = code_tokens(source(a)), code_tokens(source(b))
        if [t[:2] for t in ta] != [t[:2] for t in tb]:
            n = next((n for n, (x, y) in enumerate(zip(ta, tb)) if x[:2] != y[:2]), min(len(ta), len(tb)))
            show = lambda ts: (f"{ts[n][1]!r} (line {ts[n][2]})" if n < len(ts) else "the end of the cell")  # noqa: E731
            problems.append(f"{where}: code differs: English has {show(ta)}, Chinese has {show(tb)}")
        if figure_checks(source(a)) != figure_checks(source(b)):
            problems.append(f"{where}: figure checks differ: English {figure_checks(source(a))}, "
                            f"Chinese {figure_checks(source(b))}")
        tags = [c.get("metadata", {}).get("tags", []) for c in (a, b)]
        if tags[0] != tags[1]:
            problems.append(f"{where}: tags differ: English {tags[0]}, Chinese {tags[1]}")
    if en and language_chosen(source(en[0][1])) != "en":
        problems.append(f"{name} code cell 0: the English notebook does not call start(..., language=\"en\") first")
    if zh and language_chosen(source(zh[0][1])) != "zh":
        problems.append(f"{name} code cell 0: notebooks/zh/{name} does not call start(..., language=\"zh\") first")
    return problems


def test_every_english_notebook_is_listed_once():
    assert sorted(TRANSLATED + NOT_TRANSLATED) == sorted(ENGLISH), "list each notebook as translated or not"
    assert not set(TRANSLATED) & set(NOT_TRANSLATED)


@pytest.mark.parametrize("name", TRANSLATED)
def test_the_twin_runs_the_same_code(name):
    assert (ZH / name).is_file(), f"notebooks/zh/{name} is missing (listed in TRANSLATED)"
    problems = pairing_problems(load(NOTEBOOKS / name), load(ZH / name), name)
    assert not problems, "\n".join(problems)


def test_no_twin_without_an_english_notebook():
    twins = sorted(p.relative_to(ZH).as_posix() for p in ZH.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    assert set(twins) <= set(TRANSLATED), f"twins not paired with an English notebook: {set(twins) - set(TRANSLATED)}"


@pytest.mark.parametrize("name", NOT_TRANSLATED or ["(none)"])
def test_untranslated_notebooks_are_named(name):
    """A notebook without a Chinese twin yet is reported (as a skip with its name), and must not
    have a twin lying around unpaired."""
    if name == "(none)":
        assert not NOT_TRANSLATED
        return
    assert not (ZH / name).exists(), f"notebooks/zh/{name} exists: move it to TRANSLATED"
    pytest.skip(f"notebooks/zh/{name}: no Chinese twin yet, its code is not paired")


# --------------------------------------------------------------------------- the test can fail

def _first_pair():
    name = TRANSLATED[0]
    return name, load(NOTEBOOKS / name), load(ZH / name)


def _change_code(nb: dict, change) -> int:
    """Apply ``change`` to the first code cell (after the first) with a number; its notebook index."""
    for i, cell in code_cells(nb)[1:]:
        text = source(cell)
        if any(t[0] == tokenize.NUMBER for t in code_tokens(text)):
            cell["source"] = change(text)
            return i
    raise AssertionError("no code cell with a number")


def _bump_number(text: str) -> str:
    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    number = next(t for t in toks if t.type == tokenize.NUMBER)
    row, col = number.start
    lines = text.splitlines(True)
    lines[row - 1] = lines[row - 1][:col] + number.string + "1" + lines[row - 1][number.end[1]:]
    return "".join(lines)


@pytest.mark.parametrize("change, what", [
    (_bump_number, "code differs"),
    (lambda text: text + "\nprint(len([]))", "code differs"),
    (lambda text: text + "\ncheck_figure('interface.toy.softmax', probs=None)", "figure checks differ"),
])
def test_an_english_change_alone_fails_naming_the_notebook_and_cell(change, what):
    name, english, chinese = _first_pair()
    assert not pairing_problems(english, chinese, name)
    changed = copy.deepcopy(english)
    index = _change_code(changed, change)
    problems = pairing_problems(changed, chinese, name)
    assert problems and any(what in p for p in problems), problems
    assert problems[0].startswith(f"{name} code cell ") and f"English cell {index}," in problems[0]


def test_a_translated_comment_string_or_fstring_text_passes_but_not_its_format_spec():
    en = 'x = 1  # one\nprint(f"mean {x:.4f} of {len(y)!r}", "label")\n"""doc"""\n'
    zh = 'x = 1  # 一\nprint(f"平均 {x:.4f}，共 {len(y)!r}", "标签")\n"""文档"""\n'
    assert code_tokens(en) == code_tokens(zh)
    assert code_tokens(en) != code_tokens(zh.replace(":.4f", ":.3f"))
    assert code_tokens(en) != code_tokens(zh.replace("len(y)", "len(z)"))
    assert code_tokens("f\"{'same' if ok else 'DIFFERENT'}\"") == code_tokens("f\"{'相同' if ok else '不同'}\"")
    assert code_tokens("f\"{'same' if ok else 'DIFFERENT'}\"") != code_tokens("f\"{'same' if not ok else 'DIFFERENT'}\"")


def test_a_first_cell_in_the_other_language_fails():
    name, english, chinese = _first_pair()
    swapped = copy.deepcopy(chinese)
    first = code_cells(swapped)[0][1]
    first["source"] = source(first).replace('language="zh"', 'language="en"')
    assert pairing_problems(english, swapped, name) == [
        f'{name} code cell 0: notebooks/zh/{name} does not call start(..., language="zh") first']


def test_a_dropped_cell_or_changed_tag_fails():
    name, english, chinese = _first_pair()
    fewer = copy.deepcopy(chinese)
    fewer["cells"].remove(code_cells(fewer)[-1][1])
    assert "code cells in English" in pairing_problems(english, fewer, name)[0]
    tagged = copy.deepcopy(chinese)
    code_cells(tagged)[1][1].setdefault("metadata", {})["tags"] = ["exercise"]
    assert any("tags differ" in p for p in pairing_problems(english, tagged, name))


# --------------------------------------------------------------------------- links in both editions

# a relative link to a notebook (an absolute one, as the Colab links, is tests/test_home_links.py's)
LINK = re.compile(r"\]\((?!https?://)([^)#\s]+\.ipynb)(?:#((?:[^()\s]|\([^()\s]*\))*))?\)")


def anchors(path: Path) -> set[str]:
    """A notebook's link targets: its headings as JupyterLab makes their ids (spaces → '-'),
    explicit ``<a id="…">`` anchors, and ``cell-id=<id>`` for each cell's id."""
    found = set()
    for cell in load(path)["cells"]:
        if cell.get("id"):
            found.add(f"cell-id={cell['id']}")
        if cell["cell_type"] == "markdown":
            text = source(cell)
            found |= {h.strip().replace(" ", "-") for h in re.findall(r"^#+ (.*)$", text, re.M)}
            found |= set(re.findall(r"""(?:id|name)=["']([^"']+)["']""", text))
    return found


@pytest.mark.parametrize("name", ENGLISH + [f"zh/{n}" for n in TRANSLATED])
def test_links_to_other_notebooks_find_the_file_and_the_heading(name):
    """From notebooks/zh/ a link such as 02_embeddings.ipynb reaches the Chinese twin; a link
    with #anchor must name a heading (translated, in the Chinese edition) of the target."""
    path = NOTEBOOKS / name
    broken = []
    for cell in load(path)["cells"]:
        if cell["cell_type"] == "markdown":
            for file, anchor in LINK.findall(source(cell)):
                target = (path.parent / file).resolve()
                if not target.is_file():
                    broken.append(f"{file}: no such notebook")
                elif anchor and anchor not in anchors(target):
                    broken.append(f"{file}#{anchor}: no such heading")
    assert not broken, f"{name}: " + "; ".join(broken)
