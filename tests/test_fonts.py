"""Every character readable: the plots' font fallback, no missing-glyph warnings, code points
next to non-ASCII characters in the token displays."""
import glob
import importlib.util
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_lib.tokens.bpe import gpt2_encoding  # noqa: E402
from course_lib.ui import fonts  # noqa: E402
from course_lib.ui.token_display import (code_points, format_token_table, playground_text,  # noqa: E402
                                         token_spans_html)

HI_NI = [17250, 220, 19526, 254, 0]          # "Hi 你!"
ROOT = Path(__file__).resolve().parent.parent


def draw(text: str) -> list[str]:
    """Render ``text`` in a plot; the warnings that came out."""
    fig, ax = plt.subplots()
    ax.set_title(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fonts.silence_missing_glyph_warnings()
        fig.canvas.draw()
    plt.close(fig)
    return [str(w.message) for w in caught]


@pytest.fixture
def restore_family():
    before = list(matplotlib.rcParams["font.family"])
    yield
    matplotlib.rcParams["font.family"] = before


def test_a_character_no_font_has_gives_no_warning_in_the_output(restore_family):
    fonts.use_readable_fonts()
    assert draw("Hi 你! 👍") == []
    # the filter is what silences them: without it matplotlib does warn (no font has 👍)
    fig, ax = plt.subplots()
    ax.set_title("👍")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.canvas.draw()
    plt.close(fig)
    assert any("missing from font" in str(w.message) for w in caught)


def course_subset_tool():
    """.ci/cjk_subset.py, the maintainers' script that makes data/fonts/ (and says what it must hold)."""
    spec = importlib.util.spec_from_file_location("cjk_subset", ROOT / ".ci" / "cjk_subset.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_course_font_has_every_character_the_course_draws():
    from fontTools.ttLib import TTFont
    tool = course_subset_tool()
    needed = tool.needed_characters()
    assert "你" in needed and "词" in needed and "A" not in needed     # what DejaVu Sans lacks
    assert sorted(tool.FACES.values()) == sorted(fonts.COURSE_CJK_FILES)   # the files the script writes
    for name in fonts.COURSE_CJK_FILES:
        cmap = TTFont(ROOT / "data" / "fonts" / name).getBestCmap()
        missing = "".join(sorted(c for c in needed if ord(c) not in cmap))
        assert not missing, (f"data/fonts/{name} lacks {missing}: run .venv/bin/python .ci/cjk_subset.py "
                             f"(data/fonts/README.md)")


def test_the_course_font_is_small_and_carries_its_license():
    for name in fonts.COURSE_CJK_FILES:
        assert (ROOT / "data" / "fonts" / name).stat().st_size < 200 * 1024, name
    license_text = (ROOT / "data" / "fonts" / "OFL.txt").read_text(encoding="utf-8")
    assert "SIL OPEN FONT LICENSE Version 1.1" in license_text and "Adobe" in license_text


def glyph_pixels(text: str, weight: str = "normal"):
    """The dark pixels of ``text`` drawn alone, large, as a boolean image."""
    import numpy as np
    fig = plt.figure(figsize=(1.2, 0.6), dpi=100)
    fig.text(0.5, 0.5, text, ha="center", va="center", fontsize=28, fontweight=weight)
    fig.canvas.draw()
    image = np.asarray(fig.canvas.buffer_rgba())[..., :3].mean(axis=-1) < 128
    plt.close(fig)
    return image


@pytest.mark.parametrize("weight", ["normal", "bold"])
def test_without_an_installed_cjk_font_chinese_is_drawn_from_the_course_font(restore_family, monkeypatch, weight):
    """No CJK font on the machine (Colab, Kaggle, a fresh Debian): the course's own draws 你,
    not the empty box DejaVu Sans draws for a character it lacks."""
    from matplotlib import font_manager
    monkeypatch.setattr(fonts, "CJK_FAMILIES", ["No Such Font CJK"])
    assert fonts.use_readable_fonts(patterns=[]) == ["DejaVu Sans", fonts.COURSE_CJK_FAMILY]
    path = font_manager.findfont(font_manager.FontProperties(family=fonts.COURSE_CJK_FAMILY, weight=weight),
                                 fallback_to_default=False)
    assert path.endswith(fonts.COURSE_CJK_FILES[weight == "bold"]), path
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # a missing glyph would fail here
        ni, ci = glyph_pixels("你", weight), glyph_pixels("词", weight)
    box = glyph_pixels("\u9f98", weight)                   # 龘: in no font of this list: the box
    assert ni.sum() > 0 and (ni != box).sum() > 0.3 * box.sum() and (ni != ci).any()


def test_an_installed_cjk_font_is_put_behind_the_course_font(restore_family):
    installed = [p for pattern in fonts.CJK_FILE_PATTERNS for p in glob.glob(pattern, recursive=True)]
    family = fonts.use_readable_fonts()
    assert family[:2] == ["DejaVu Sans", fonts.COURSE_CJK_FAMILY]
    if installed:                  # CI installs fonts-noto-cjk (.ci/run): 龘 then has a glyph
        assert family[2] in fonts.CJK_FAMILIES, family
        from matplotlib import font_manager
        font = font_manager.FontProperties(family=family[2])
        path = font_manager.findfont(font, fallback_to_default=False)
        from matplotlib.ft2font import FT2Font
        assert FT2Font(path).get_char_index(0x9F98) != 0
    else:
        assert len(family) == 2


def test_code_points_name_every_non_ascii_character():
    assert code_points("Hi 你!") == "你 U+4F60"
    assert code_points("ã👍") == "ã U+00E3 👍 U+1F44D"
    assert code_points("plain") == ""


def test_token_displays_show_code_points():
    table = format_token_table(HI_NI)
    row = next(line for line in table.splitlines() if line.lstrip().startswith("254"))
    assert row.endswith("你 U+4F60"), row
    assert "U+4F60</sub>" in token_spans_html(HI_NI)
    text = playground_text("Hi 你!", gpt2_encoding())
    assert "你 U+4F60" in text and "[17250, 220, 19526, 254, 0]" in text
    assert "part of a character" in text
