"""The README's picture of the pipeline, docs/pipeline.svg (and docs/pipeline.zh-CN.svg for
README.zh-CN.md): the stages of one forward pass and the notebook that teaches each, drawn from
the same table as the map at the top of every notebook (``course_lib.ui.pipeline_map.STAGES``
and its labels in ``course_lib.ui.strings``).

Plain SVG written as text, so the file is the same whatever matplotlib or fonts are installed;
the reader's browser draws the letters. After a change to the stages or their labels:

    .venv/bin/python .ci/pipeline_picture.py           # writes both files
    .venv/bin/python .ci/pipeline_picture.py --check   # exit status 1 if a file is out of date

(tests/test_readme.py checks that both files are current.)
"""
from __future__ import annotations

import sys
from html import escape
from pathlib import Path

from course_lib.ui.pipeline_map import NAMES, STAGES
from course_lib.ui.strings import STRINGS

ROOT = Path(__file__).resolve().parent.parent
FILES = {"en": ROOT / "docs" / "pipeline.svg", "zh": ROOT / "docs" / "pipeline.zh-CN.svg"}

BOX_W, BOX_H, STEP = 126, 92, 140          # px: a stage's box, and the distance between two columns
ROW_Y = 70                                  # the top of the main row's boxes
TITLE, SMALL = 15, 13                       # font sizes (px): at GitHub's ~880 px README width, ≥ 10 px
FONT = "DejaVu Sans, Noto Sans CJK SC, Noto Sans SC, Microsoft YaHei, PingFang SC, sans-serif"


def places() -> dict[str, tuple[int, int]]:
    """Each stage's box, top left: the first six in a row, loss above sampling, then next id."""
    spot = {name: (10 + i * STEP, ROW_Y) for i, name in enumerate(NAMES[:6])}
    spot.update({"loss": (10 + 6 * STEP, ROW_Y - 58), "sampling": (10 + 6 * STEP, ROW_Y + 58),
                 "next id": (10 + 7 * STEP, ROW_Y + 58)})
    return spot


def text_width(words: str, size: int, bold: bool = False) -> float:
    """A generous estimate of the drawn width: a CJK character is one em, anything else 0.62 em
    (0.7 in bold)."""
    return sum(size if ord(ch) > 0x2E80 else (0.7 if bold else 0.62) * size for ch in words)


def wrap(words: str, size: int, bold: bool = False) -> list[str]:
    """The label's own lines where it has them; else one line, or two when one would not fit the box: split at a space or after CJK
    punctuation where both lines fit, else between two CJK characters; of those, where the
    longer line is shortest."""
    fits = lambda line: text_width(line, size, bold) <= BOX_W - 10          # noqa: E731
    if "\n" in words:                      # the label's own line break (the notebooks' map keeps it too)
        return words.split("\n")
    if fits(words):
        return [words]
    cuts = [(words[:i], words[i + 1:]) for i, ch in enumerate(words) if ch == " "]
    cuts += [(words[:i], words[i:]) for i in range(1, len(words))
             if ord(words[i - 1]) > 0x2E80 and words[i] != " " and (ord(words[i]) > 0x2E80 or words[i - 1] in "、：，")]
    if not cuts:
        return [words]
    at_a_pause = lambda cut: cut[0][-1:] in "、：，" or len(cut[0]) + len(cut[1]) < len(words)   # noqa: E731
    return list(min(cuts, key=lambda cut: (not (fits(cut[0]) and fits(cut[1])), not at_a_pause(cut),
                                           max(text_width(line, size, bold) for line in cut))))


def arrow(x0: float, y0: float, x1: float, y1: float, dashed: bool = False) -> str:
    style = ' stroke-dasharray="5 4"' if dashed else ""
    return (f'<line x1="{x0:g}" y1="{y0:g}" x2="{x1:g}" y2="{y1:g}" stroke="#555" stroke-width="1.5"'
            f'{style} marker-end="url(#head)"/>')


def label_line(x: float, y: float, words: str, size: int, weight: str, colour: str) -> str:
    return (f'<text x="{x:g}" y="{y:g}" text-anchor="middle" font-size="{size}" font-weight="{weight}" '
            f'fill="{colour}">{escape(words)}</text>')


def svg(language: str) -> str:
    """The picture in ``language`` ("en" or "zh"), as the text of an SVG file."""
    label = STRINGS[language]
    spot = places()
    width = spot["next id"][0] + BOX_W + 10
    low = spot["sampling"][1] + BOX_H + 24                  # the loop's line, under everything
    height = low + 12
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="{FONT}">',
             '<defs><marker id="head" markerWidth="9" markerHeight="9" refX="8" refY="4.5" orient="auto">'
             '<path d="M0,0 L9,4.5 L0,9 z" fill="#555"/></marker></defs>',
             f'<rect width="{width}" height="{height}" fill="#ffffff"/>']
    for name, _, notebook in STAGES:
        x, y = spot[name]
        middle = x + BOX_W / 2
        parts.append(f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="9" fill="#e8eef7" '
                     f'stroke="#7f8fa6" stroke-width="1.2"/>')
        lines = ([(words, TITLE, "bold", "#111") for words in wrap(label[f"map.{name}"], TITLE, bold=True)]
                 + [(words, SMALL, "normal", "#333") for words in wrap(label[f"map.what.{name}"], SMALL)]
                 + [(label["map.notebook"].format(nb=notebook), SMALL, "normal", "#b35c00")])
        # each line's baseline: the lines' heights (1.2 em), centred in the box
        top = y + (BOX_H - sum(1.2 * size for _, size, _, _ in lines)) / 2
        for words, size, weight, colour in lines:
            parts.append(label_line(middle, top + size, words, size, weight, colour))
            top += 1.2 * size
    centre = lambda name: spot[name][1] + BOX_H / 2                          # noqa: E731
    for left, right in zip(NAMES[:5], NAMES[1:6]):
        parts.append(arrow(spot[left][0] + BOX_W, centre(left), spot[right][0] - 2, centre(right)))
    for target in ("loss", "sampling"):
        parts.append(arrow(spot["logits"][0] + BOX_W, centre("logits"), spot[target][0] - 2, centre(target)))
    parts.append(arrow(spot["sampling"][0] + BOX_W, centre("sampling"), spot["next id"][0] - 2, centre("next id")))
    # the loop: the next id is appended and the model runs again from the ids
    back, end = spot["ids"][0] + BOX_W / 2, spot["next id"][0] + BOX_W / 2
    parts.append(f'<polyline points="{end:g},{spot["next id"][1] + BOX_H} {end:g},{low} {back:g},{low}" '
                 f'fill="none" stroke="#999" stroke-width="1.3" stroke-dasharray="5 4"/>')
    parts.append(arrow(back, low, back, ROW_Y + BOX_H + 2, dashed=True))
    parts.append(label_line((back + spot["sampling"][0]) / 2, low - 8, label["map.loop"], SMALL, "normal", "#666"))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main(argv: list[str]) -> int:
    stale = [path for language, path in FILES.items()
             if not path.exists() or path.read_text(encoding="utf-8") != svg(language)]
    if "--check" in argv:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run .venv/bin/python .ci/pipeline_picture.py")
        return 1 if stale else 0
    for language, path in FILES.items():
        path.parent.mkdir(exist_ok=True)
        path.write_text(svg(language), encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
