"""Every character readable: the plots' font fallback, no missing-glyph warnings, code points
next to non-ASCII characters in the token displays."""
import glob
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_lib.tokens.bpe import gpt2_encoding  # noqa: E402
from course_lib.ui import fonts  # noqa: E402
from course_lib.ui.token_display import (code_points, format_token_table, playground_text,  # noqa: E402
                                         token_spans_html)

HI_NI = [17250, 220, 19526, 254, 0]          # "Hi 你!"


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


def test_without_a_cjk_font_no_glyph_warning_reaches_the_output(restore_family, monkeypatch):
    monkeypatch.setattr(fonts, "CJK_FAMILIES", ["No Such Font CJK"])
    assert fonts.use_readable_fonts(patterns=[]) == ["DejaVu Sans"]
    assert draw("Hi 你! 👍") == []
    # the filter is what silences them: without it matplotlib does warn
    fig, ax = plt.subplots()
    ax.set_title("你")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.canvas.draw()
    plt.close(fig)
    assert any("missing from font" in str(w.message) for w in caught)


def test_an_installed_cjk_font_is_put_behind_dejavu(restore_family):
    installed = [p for pattern in fonts.CJK_FILE_PATTERNS for p in glob.glob(pattern, recursive=True)]
    family = fonts.use_readable_fonts()
    assert family[0] == "DejaVu Sans"
    if installed:                  # CI installs fonts-noto-cjk (.ci/run): 你 then has a glyph
        assert family[1] in fonts.CJK_FAMILIES, family
        from matplotlib import font_manager
        font = font_manager.FontProperties(family=family[1])
        path = font_manager.findfont(font, fallback_to_default=False)
        from matplotlib.ft2font import FT2Font
        assert FT2Font(path).get_char_index(ord("你")) != 0
    else:
        assert family == ["DejaVu Sans"]


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
