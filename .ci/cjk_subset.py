"""Regenerate data/fonts/: the part of Noto Sans CJK SC that the course draws (for maintainers).

    .venv/bin/python .ci/cjk_subset.py [--source /usr/share/fonts/opentype/noto]

matplotlib's own font (DejaVu Sans) has no Chinese, and Colab, Kaggle, Binder and a fresh Debian
have no CJK font, so the course carries one: every character it can draw that DejaVu Sans lacks,
cut out of Noto Sans CJK SC (SIL Open Font License 1.1, Debian's fonts-noto-cjk) with fontTools,
Regular and Bold (the map's stage names are bold). ``course_lib.ui.fonts`` registers both.

The characters are those of every string literal in course_lib/ and in the code cells of every
notebook (both editions, the solutions too), and of data/figures.json: what a plot, a diagram or
a notebook's own chart can label. Emoji (U+1F000 and above) are left out: no CJK font has them and
matplotlib cannot draw colour emoji (the token displays name them by code point).
tests/test_fonts.py fails when a character of that list is not in the subset: run this script
after adding Chinese text, then commit data/fonts/.

The subset is renamed "Course CJK SC" (OFL: a modified font does not keep the original's primary
name; it also never shadows an installed Noto Sans CJK SC); its copyright notice stays in the
font, and data/fonts/OFL.txt carries the license.
"""
from __future__ import annotations

import argparse
import ast
import json
import unicodedata
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FONTS = ROOT / "data" / "fonts"
FAMILY = "Course CJK SC"
SOURCE_FAMILY = "Noto Sans CJK SC"
FACES = {"Regular": "course-cjk-sc-regular.otf", "Bold": "course-cjk-sc-bold.otf"}
EMOJI_START = 0x1F000


def string_literals(source: str) -> str:
    """Every string constant of a piece of Python source (f-strings' text parts too), joined;
    the source itself when it does not parse (a notebook cell with a shell command)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    return "".join(node.value for node in ast.walk(tree)
                   if isinstance(node, ast.Constant) and isinstance(node.value, str))


def json_strings(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "".join(json_strings(k) + json_strings(v) for k, v in value.items())
    if isinstance(value, list):
        return "".join(json_strings(v) for v in value)
    return ""


def course_text(root: Path = ROOT) -> str:
    """The text the course can draw: string literals of course_lib/ and of every notebook's code
    cells, and the strings of data/figures.json."""
    parts = [string_literals(path.read_text(encoding="utf-8"))
             for path in sorted((root / "course_lib").rglob("*.py"))]
    for path in sorted((root / "notebooks").rglob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                parts.append(string_literals("".join(cell["source"])))
    parts.append(json_strings(json.loads((root / "data" / "figures.json").read_text(encoding="utf-8"))))
    return "".join(parts)


def dejavu_cmap() -> set[int]:
    """The code points of DejaVu Sans, the font matplotlib ships and draws with first."""
    import matplotlib
    from fontTools.ttLib import TTFont
    return set(TTFont(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf").getBestCmap())


def needed_characters(root: Path = ROOT) -> set[str]:
    """Every character the course can draw that DejaVu Sans lacks: whitespace, emoji and the
    characters no font draws (control, format and surrogate code points, such as the grader's
    table of characters it escapes) aside."""
    dejavu = dejavu_cmap()
    return {c for c in course_text(root)
            if not c.isspace() and ord(c) not in dejavu and ord(c) < EMOJI_START
            and not unicodedata.category(c).startswith("C")}


def source_font(folder: Path, face: str):
    """Noto Sans CJK SC's ``face`` out of Debian's collection file (NotoSansCJK-Regular.ttc)."""
    from fontTools.ttLib import TTCollection
    path = folder / f"NotoSansCJK-{face}.ttc"
    if not path.is_file():
        sys.exit(f"{path} is missing: install Debian's fonts-noto-cjk (apt-get install fonts-noto-cjk) "
                 f"or pass --source with the folder that holds NotoSansCJK-{face}.ttc")
    for font in TTCollection(str(path)).fonts:
        if font["name"].getDebugName(1) == SOURCE_FAMILY:
            return font
    sys.exit(f"{path} holds no {SOURCE_FAMILY}")


def rename(font, face: str) -> None:
    """Give the subset its own family name in the name table and in its CFF table."""
    postscript = FAMILY.replace(" ", "") + "-" + face
    names = {1: FAMILY, 3: f"{postscript};subset of {SOURCE_FAMILY}", 4: f"{FAMILY} {face}",
             6: postscript, 16: FAMILY, 17: face}
    table = font["name"]
    for record in list(table.names):
        if record.nameID in names:
            table.setName(names[record.nameID], record.nameID, record.platformID,
                          record.platEncID, record.langID)
    cff = font["CFF "].cff
    cff.fontNames = [postscript]
    top = cff.topDictIndex[0]
    for key, value in (("FamilyName", FAMILY), ("FullName", f"{FAMILY} {face}")):
        if hasattr(top, key):
            setattr(top, key, value)


def make_subset(folder: Path, face: str, characters: set[str], out: Path) -> int:
    from fontTools import subset
    font = source_font(folder, face)
    absent = sorted(c for c in characters if ord(c) not in font.getBestCmap())
    if absent:
        sys.exit(f"{SOURCE_FAMILY} {face} has no glyph for {' '.join(absent)}: "
                 f"use other characters or another font")
    options = subset.Options()
    options.name_IDs = ["*"]           # keep every name record (the copyright notice among them)
    options.name_languages = ["*"]
    options.layout_features = []       # plain glyphs: no vertical forms or locale variants needed
    options.hinting = False            # matplotlib draws with FreeType's auto-hinter anyway
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(ord(c) for c in characters))
    subsetter.subset(font)
    rename(font, face)
    font.recalcTimestamp = False       # the source's date: the same characters give the same bytes
    font.save(str(out))
    return out.stat().st_size


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=Path("/usr/share/fonts/opentype/noto"),
                        help="the folder of NotoSansCJK-Regular.ttc and NotoSansCJK-Bold.ttc")
    args = parser.parse_args(argv)
    characters = needed_characters()
    FONTS.mkdir(parents=True, exist_ok=True)
    for face, name in FACES.items():
        size = make_subset(args.source, face, characters, FONTS / name)
        print(f"data/fonts/{name}: {len(characters)} characters, {size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
