"""Fonts for the plots: every character readable, and no warning when a font is missing.

matplotlib's default font (DejaVu Sans) has no Chinese characters, so 你 in a plot would be a
box. :func:`use_readable_fonts` (run when ``course_lib.ui.plots`` is imported) sets
``font.family`` to DejaVu Sans, then the course's own CJK font, then a CJK font installed on the
machine if there is one; matplotlib falls back glyph by glyph along that list.

The course's font ("Course CJK SC", ``data/fonts/``: the part of Noto Sans CJK SC the course
draws, Regular and Bold) travels with the course, so the Chinese edition's pictures are the same
on every machine, Colab, Kaggle and Binder included, with no font installed. An installed CJK
font (``apt-get install fonts-noto-cjk`` on Debian/Ubuntu) only serves characters of a learner's
own that the course's font lacks. A character no font has (an emoji) is drawn as a box, and the
"Glyph … missing from font(s)" warning is silenced so it never reaches a notebook's output; the
token displays name such characters by code point anyway (``token_display.code_points``).
"""
from __future__ import annotations

import glob
import os
import warnings

from ..data import data_path

BASE_FONT = "DejaVu Sans"
COURSE_CJK_FAMILY = "Course CJK SC"
# data/fonts/: made by .ci/cjk_subset.py, which data/fonts/README.md describes
COURSE_CJK_FILES = ["course-cjk-sc-regular.otf", "course-cjk-sc-bold.otf"]
# installed families tried in this order, for characters the course's font lacks
CJK_FAMILIES = ["Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans SC", "Source Han Sans SC",
                "WenQuanYi Zen Hei", "PingFang SC", "Microsoft YaHei", "SimHei"]
# where system CJK fonts live (Debian's fonts-noto-cjk, macOS, Windows), registered when
# matplotlib's font cache was built before they were installed
CJK_FILE_PATTERNS = ["/usr/share/fonts/**/NotoSansCJK-Regular.ttc", "/usr/share/fonts/**/NotoSansCJK-Bold.ttc",
                     "/usr/share/fonts/**/NotoSansSC-*.otf",
                     "/usr/share/fonts/**/wqy-zenhei.ttc", "/System/Library/Fonts/PingFang.ttc",
                     os.path.join(os.environ.get("WINDIR", "C:/Windows"), "Fonts", "msyh.ttc")]
MISSING_GLYPH = r"Glyph \d+ .*missing from (current )?font"


def silence_missing_glyph_warnings() -> None:
    """Drop matplotlib's "Glyph … missing from font(s)" warnings (a box is drawn instead)."""
    warnings.filterwarnings("ignore", message=MISSING_GLYPH, category=UserWarning)


def _add_fonts(paths) -> None:
    """Register font files with matplotlib; an unreadable one is skipped."""
    from matplotlib import font_manager
    for path in paths:
        try:
            font_manager.fontManager.addfont(str(path))
        except (OSError, RuntimeError, ValueError):
            continue


def course_cjk_family() -> str | None:
    """Register the course's CJK font (``data/fonts/``) with matplotlib once; its family name,
    or None when its files are not there (a copy of course_lib without its data/)."""
    from matplotlib import font_manager
    if not any(f.name == COURSE_CJK_FAMILY for f in font_manager.fontManager.ttflist):
        try:
            paths = [data_path("fonts", name) for name in COURSE_CJK_FILES]
        except FileNotFoundError:                     # no data/ at all: the other fonts still work
            return None
        _add_fonts(path for path in paths if path.is_file())
    names = {f.name for f in font_manager.fontManager.ttflist}
    return COURSE_CJK_FAMILY if COURSE_CJK_FAMILY in names else None


def cjk_family(patterns: list[str] | None = None) -> str | None:
    """The first installed CJK family of :data:`CJK_FAMILIES`, registering font files found at
    ``patterns`` that matplotlib's cache does not know yet; None when there is none."""
    from matplotlib import font_manager

    def known():
        names = {f.name for f in font_manager.fontManager.ttflist}
        return next((family for family in CJK_FAMILIES if family in names), None)

    if known() is None:
        for pattern in CJK_FILE_PATTERNS if patterns is None else patterns:
            _add_fonts(sorted(glob.glob(pattern, recursive=True)))
    return known()


def use_readable_fonts(patterns: list[str] | None = None) -> list[str]:
    """Set matplotlib's ``font.family`` to DejaVu Sans, the course's CJK font, then an installed
    CJK font when there is one, and silence missing-glyph warnings; returns the family list."""
    import matplotlib

    silence_missing_glyph_warnings()
    family = [BASE_FONT] + [f for f in (course_cjk_family(), cjk_family(patterns)) if f]
    matplotlib.rcParams["font.family"] = family
    return family
