"""The four pictures of ``course_lib.ui.diagrams`` read back from what matplotlib drew: the boxes
(their places and colours), the texts written, titles and legends, in both languages, with no
warning; and every bad input refused with an error naming the argument."""
from __future__ import annotations

import copy
import re
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from course_lib.model.attention import causal_mask  # noqa: E402
from course_lib.tokens.bpe import bytes_to_chars, teaching_tokenizer  # noqa: E402
from course_lib.ui import diagrams  # noqa: E402
from course_lib.ui.language import set_language  # noqa: E402

CJK = re.compile(r"[\u4e00-\u9fff]")
MEANING = [["Ġ", "m", "e", "a", "n", "i", "n", "g"], ["Ġ", "m", "e", "a", "n", "in", "g"],
           ["Ġ", "m", "e", "an", "in", "g"], ["Ġ", "m", "e", "an", "ing"], ["Ġm", "e", "an", "ing"],
           ["Ġme", "an", "ing"], ["Ġmean", "ing"], ["Ġmeaning"]]       # notebook 01's printed steps


@pytest.fixture(autouse=True)
def close_figures_and_speak_english():
    yield
    plt.close("all")
    set_language("en")


def boxes(ax) -> list[Rectangle]:
    return [p for p in ax.patches if isinstance(p, Rectangle)]


def texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def at(ax, x, y):
    """The texts written at the centre (x, y), rounded to 0.01."""
    return [t.get_text() for t in ax.texts if tuple(round(v, 2) for v in t.get_position()) == (round(x, 2), round(y, 2))]


def all_four():
    return [diagrams.merge_loop_diagram(MEANING), diagrams.causal_mask_diagram(causal_mask(4), list("abab")),
            diagrams.head_split_diagram(3, 6, 3), diagrams.kv_cache_diagram(list("abaab"), 3)]


# ---------------------------------------------------------------------------- the merge loop (01)

def test_merge_loop_draws_every_step_and_marks_the_merged_pieces():
    fig = diagrams.merge_loop_diagram(MEANING)
    ax = fig.axes[0]
    drawn = boxes(ax)
    assert len(drawn) == sum(len(step) for step in MEANING)
    # box by box, row by row: the piece written in it; coloured where this step merged
    index = 0
    merged_here = [set(), {5}, {3}, {4}, {0}, {0}, {0}, {0}]    # e.g. step 1 makes "in" at place 5
    for n, step in enumerate(MEANING):
        for k, piece in enumerate(step):
            box = drawn[index]
            assert box.get_y() == -n
            assert at(ax, box.get_x() + box.get_width() / 2, -n + 0.2) == [piece]
            coloured = to_hex(box.get_facecolor()) == to_hex(diagrams.MERGE_COLOR)
            assert coloured == (k in merged_here[n]), (n, k, piece)
            index += 1
    notes = texts(fig)
    assert "merge i + n → in" in notes and "start: one symbol per byte" in notes
    assert "merge Ġmean + ing → Ġmeaning\nno pair left to merge: 1 piece(s)" in notes
    assert [f"step {n}" for n in range(8)] == [t for t in notes if t.startswith("step")]
    assert ax.get_title() == "the merge loop of Ġmeaning"


def test_merge_loop_marks_every_place_a_pair_is_merged_and_writes_ranks():
    tok = teaching_tokenizer()
    steps = tok.merge_steps(bytes_to_chars(" banana".encode("utf-8")))
    kept = copy.deepcopy(steps)
    fig = diagrams.merge_loop_diagram(steps, tok.merge_ranks)
    assert steps == kept                                             # the input is not changed
    notes = [t for t in texts(fig) if t.startswith("merge")]
    assert len(notes) == len(steps) - 1
    for note, before, after in zip(notes, steps, steps[1:]):
        a, b = re.match(r"merge (\S+) \+ (\S+) →", note).groups()
        assert f"(rank {tok.merge_ranks[(a, b)]} in vocab.bpe)" in note
        coloured = [box for box in boxes(fig.axes[0]) if box.get_y() == -steps.index(after)
                    and to_hex(box.get_facecolor()) == to_hex(diagrams.MERGE_COLOR)]
        assert len(coloured) == after.count(a + b) == len(before) - len(after)


@pytest.mark.parametrize("steps, message", [
    ("meaning", r"steps must be a non-empty list"),
    ([], r"steps must be a non-empty list"),
    ([["a", "b"], ["ab", "c"]], r"steps\[1\] spells 'abc'"),
    ([["a", "b", "c"], ["a", "bc"], ["abc", ""]], r"steps\[2\] must hold at least one piece and no empty"),
    ([["a", "b", "a", "b"], ["ab", "a", "b"]], r"steps\[1\] is not steps\[0\] with the pair \('a', 'b'\) merged everywhere"),
    ([["a", "b", "c"], ["a", "b", "c"]], r"steps\[1\] is not steps\[0\] with one adjacent pair merged"),
    ([["a", 1]], r"steps\[0\]\[1\] is 1"),
])
def test_merge_loop_refuses_steps_that_are_not_a_merge_loop(steps, message):
    with pytest.raises((ValueError, TypeError), match=message):
        diagrams.merge_loop_diagram(steps)


# ---------------------------------------------------------------------------- the causal mask (03)

def test_causal_mask_marks_the_future_half_and_counts_what_each_row_reads():
    T = 4
    fig = diagrams.causal_mask_diagram(causal_mask(T), list("abab"))
    ax = fig.axes[0]
    cells = boxes(ax)
    assert len(cells) == T * T
    for cell in cells:
        i, j = int(cell.get_y()), int(cell.get_x())
        if j > i:
            assert cell.get_hatch() == "//" and to_hex(cell.get_facecolor()) == to_hex(diagrams.MASKED_GREY)
            assert at(ax, j + 0.5, i + 0.5) == ["−∞"]
        else:
            assert not cell.get_hatch() and to_hex(cell.get_facecolor()) == to_hex(diagrams.SEE_COLOR)
            assert at(ax, j + 0.5, i + 0.5) == ["✓"]
    assert [t for t in texts(fig) if t.startswith("reads")] == ["reads 1", "reads 2", "reads 3", "reads 4"]
    names = ["0 a", "1 b", "2 a", "3 b"]
    assert [t.get_text() for t in ax.get_xticklabels()] == names == [t.get_text() for t in ax.get_yticklabels()]
    assert ax.get_xlabel() == "key position (read)" and ax.get_ylabel() == "query position (reading)"
    assert ax.get_title() == "the causal mask: which keys each query may read"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["✓ may read (key ≤ query)", "−∞ masked (a future key)"]


def test_causal_mask_draws_the_mask_it_is_given():
    """A learner's wrong mask (the past masked instead of the future) is drawn as it is."""
    wrong = causal_mask(3).T.clone()
    fig = diagrams.causal_mask_diagram(wrong)
    hatched = sorted((int(c.get_y()), int(c.get_x())) for c in boxes(fig.axes[0]) if c.get_hatch())
    assert hatched == [(1, 0), (2, 0), (2, 1)]
    assert torch.equal(wrong, causal_mask(3).T)                       # unchanged
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["0", "1", "2"]


@pytest.mark.parametrize("mask, labels, message", [
    (torch.zeros(2, 3, dtype=torch.bool), None, r"mask must be a square \(T, T\).*got shape \(2, 3\)"),
    (torch.zeros(3), None, r"mask must be a square"),
    (torch.triu(torch.ones(3, 3), 1), None, r"mask must hold booleans.*float"),
    (causal_mask(3), ["a", "b"], r"labels has 2 entries, expected 3"),
    (causal_mask(3), "aba", r"labels must be a list of strings"),
    (causal_mask(17), None, r"T \(the mask's size\) must be between 1 and 16"),
])
def test_causal_mask_refuses_bad_inputs(mask, labels, message):
    with pytest.raises((ValueError, TypeError), match=message):
        diagrams.causal_mask_diagram(mask, labels)


# ---------------------------------------------------------------------------- heads (03)

def test_head_split_cuts_d_columns_into_blocks_and_shows_each_head():
    T, D, H = 3, 6, 3
    fig = diagrams.head_split_diagram(T, D, H, ["x", "y", "z"])
    cells = boxes(fig.axes[0])
    assert len(cells) == 2 * T * D                    # the [T, D] matrix, then the same numbers per head
    left, right = cells[:T * D], cells[T * D:]
    colour = [to_hex(diagrams.SAMPLING_COLORS[h]) for h in range(H)]
    for cell in left:                                 # column f belongs to head f // (D / H)
        assert to_hex(cell.get_facecolor()) == colour[int(cell.get_x()) // 2]
    for h in range(H):                                # head h: a T × head_dim block of its colour
        block = right[h * T * 2:(h + 1) * T * 2]
        assert {to_hex(c.get_facecolor()) for c in block} == {colour[h]}
        assert len({c.get_x() for c in block}) == 2 and len({c.get_y() for c in block}) == T
    written = texts(fig)
    assert ["head 1", "head 2", "head 3"] == [t for t in written if t.startswith("head")]
    assert "x: [T, D] = [3, 6]" in written and "[n_head, T, head_dim] = [3, 3, 2]" in written
    assert written.count("f5") == 2 and ["x", "y", "z"] == written[:3]
    assert fig.axes[0].get_title() == "splitting D = 6 features into 3 heads of head_dim = 2"


@pytest.mark.parametrize("args, message", [
    ((3, 6, 4), r"D = 6 does not split into n_head = 4"),
    ((3, 4, 8), r"n_head must be between 1 and 4"),
    ((0, 4, 2), r"T must be between 1 and 16"),
    ((3, 4.0, 2), r"D must be a whole number, got 4.0"),
    ((3, 4, True), r"n_head must be a whole number, got True"),
])
def test_head_split_refuses_shapes_that_do_not_split(args, message):
    with pytest.raises((ValueError, TypeError), match=message):
        diagrams.head_split_diagram(*args)


# ---------------------------------------------------------------------------- the KV cache (07)

def test_kv_cache_reuses_rows_with_the_cache_and_recomputes_them_without():
    tokens, prompt = list("abaab"), 3
    fig = diagrams.kv_cache_diagram(tokens, prompt)
    with_cache, without = fig.axes
    assert diagrams.kv_steps(5, 3) == [(0, 2), (3, 3), (4, 4)]
    new, grey = to_hex(diagrams.NEW_COLOR), to_hex(diagrams.CACHED_GREY)
    for ax, expected in [(with_cache, [[new] * 3, [grey] * 3 + [new], [grey] * 4 + [new]]),
                         (without, [[new] * 3, [new] * 4, [new] * 5])]:
        rows = {}
        for box in boxes(ax):
            rows.setdefault(round(-box.get_y() / 1.6), []).append(to_hex(box.get_facecolor()))
        assert [rows[s] for s in range(3)] == expected
        # the newest query reads every key up to itself: one line per box
        assert len(ax.lines) == 3 + 4 + 5
        assert [t.get_text() for t in ax.texts if t.get_text().startswith("q")] == ["q2", "q3", "q4"]
    assert [t for t in texts(fig) if t.endswith("computed")] == ["3 computed", "1 computed", "1 computed",
                                                                 "3 computed", "4 computed", "5 computed"]
    assert with_cache.get_title().endswith("K/V rows computed in all: 5")
    assert without.get_title().endswith("K/V rows computed in all: 12")
    assert [t for t in texts(fig) if t.startswith("step")] == ["step 0 (prompt)", "step 1", "step 2"] * 2
    assert fig.texts[0].get_text() == "generating with a KV cache: 7 fewer K/V rows computed"
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["K/V row computed at this step",
                                                                 "K/V row read back from the cache"]


@pytest.mark.parametrize("tokens, prompt_len, message", [
    (list("ab"), 3, r"prompt_len must be between 1 and 2"),
    (list("ab"), 0, r"prompt_len must be between 1 and 2"),
    ([], 1, r"the number of tokens must be between 1 and 16"),
    (["a", 2], 1, r"tokens\[1\] is 2"),
    ("abc", 1, r"tokens must be a list of strings"),
])
def test_kv_cache_refuses_bad_inputs(tokens, prompt_len, message):
    with pytest.raises((ValueError, TypeError), match=message):
        diagrams.kv_cache_diagram(tokens, prompt_len)


# ---------------------------------------------------------------------------- both languages

@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_diagram_draws_without_a_warning_and_returns_its_figure(language):
    set_language(language)
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # a missing glyph or a layout warning fails
        figures = all_four()
        for fig in figures:
            assert isinstance(fig, matplotlib.figure.Figure)
            fig.canvas.draw()


def test_the_chinese_diagrams_speak_chinese_with_the_same_numbers():
    english = [sorted(re.findall(r"\d+", " ".join(texts(fig)))) for fig in all_four()]
    set_language("zh")
    figures = all_four()
    chinese = [sorted(re.findall(r"\d+", " ".join(texts(fig)))) for fig in figures]
    assert chinese == english
    titles = [figures[0].axes[0].get_title(), figures[1].axes[0].get_title(),
              figures[2].axes[0].get_title(), figures[3].texts[0].get_text()]
    assert all(CJK.search(title) for title in titles), titles
    assert titles[1] == "因果遮盖：每个查询能读取哪些键"
    assert "第 0 步" in texts(figures[0]) and "读取 1 个" in texts(figures[1])
    assert "头 1" in texts(figures[2]) and "计算 1 行" in texts(figures[3])


def test_no_chinese_diagram_writes_an_english_word():
    """A word of three or more Latin letters in a Chinese diagram comes with Chinese text beside it
    (重塑（view）) or is code: a shape or a name with [ ] _ = ( ) (x：[T, D], head_dim = 4). The merge
    loop is left out: its pieces (Ġmean, ing) are data."""
    set_language("zh")
    alone = [line for fig in all_four()[1:] for text in texts(fig) for line in text.splitlines()
             if re.search(r"[A-Za-z]{3,}", line) and not CJK.search(line) and not re.search(r"[\[\]_=()]", line)]
    assert alone == []
