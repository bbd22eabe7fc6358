"""Fonts for the plots: every character readable, and no warning when a font is missing.

matplotlib's default font (DejaVu Sans) has no Chinese characters, so 你 in a plot would be a
box. :func:`use_readable_fonts` (run when ``course_lib.ui.plots`` is imported) puts a CJK font
behind it in ``font.family`` when one is installed (matplotlib then falls back glyph by glyph),
registering system fonts installed after matplotlib built its font cache. Without one, the
"Glyph … missing from font(s)" warnings are silenced so they never reach a notebook's output;
the token displays name such characters by code point anyway (``token_display.code_points``).

Install the fonts on Debian/Ubuntu with ``apt-get install fonts-noto-cjk fonts-noto-color-emoji``
(Binder does it from ``apt.txt``).
"""
from __future__ import annotations

import glob
import os
import warnings

BASE_FONT = "DejaVu Sans"
# families tried in this order; the first one installed is used for the characters DejaVu lacks
CJK_FAMILIES = ["Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans SC", "Source Han Sans SC",
                "WenQuanYi Zen Hei", "PingFang SC", "Microsoft YaHei", "SimHei"]
# where system CJK fonts live (Debian's fonts-noto-cjk, macOS, Windows); the bold face too, for
# bold Chinese labels (the map's stage names) without a "findfont: Failed to find font weight bold"
CJK_FILE_PATTERNS = ["/usr/share/fonts/**/NotoSansCJK-Regular.ttc", "/usr/share/fonts/**/NotoSansCJK-Bold.ttc",
                     "/usr/share/fonts/**/NotoSansSC-*.otf",
                     "/usr/share/fonts/**/wqy-zenhei.ttc", "/System/Library/Fonts/PingFang.ttc",
                     os.path.join(os.environ.get("WINDIR", "C:/Windows"), "Fonts", "msyh.ttc")]
MISSING_GLYPH = r"Glyph \d+ .*missing from (current )?font"


def silence_missing_glyph_warnings() -> None:
    """Drop matplotlib's "Glyph … missing from font(s)" warnings (a box is drawn instead)."""
    warnings.filterwarnings("ignore", message=MISSING_GLYPH, category=UserWarning)


def cjk_family(patterns: list[str] | None = None) -> str | None:
    """The first installed CJK family of :data:`CJK_FAMILIES`, registering font files found at
    ``patterns`` that matplotlib's cache does not know yet; None when there is none."""
    from matplotlib import font_manager

    def known():
        names = {f.name for f in font_manager.fontManager.ttflist}
        return next((family for family in CJK_FAMILIES if family in names), None)

    if known() is None:
        for pattern in CJK_FILE_PATTERNS if patterns is None else patterns:
            for path in sorted(glob.glob(pattern, recursive=True)):
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError):       # unreadable: try the next one
                    continue
    return known()


def use_readable_fonts(patterns: list[str] | None = None) -> list[str]:
    """Set matplotlib's ``font.family`` to DejaVu Sans followed by a CJK font when one is
    installed, and silence missing-glyph warnings; returns the family list."""
    import matplotlib

    silence_missing_glyph_warnings()
    family = [BASE_FONT]
    cjk = cjk_family(patterns)
    if cjk:
        family.append(cjk)
    matplotlib.rcParams["font.family"] = family
    return family
