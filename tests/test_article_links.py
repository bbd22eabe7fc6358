"""A reader who meets a source article in a notebook can open its page: in every notebook (both
editions, the solutions too), the first markdown cell after the opening one that mentions an
article ("the interface article", "the article's numbers", 接口文章, interface 一文) links
docs/articles.md, and every link from a notebook to docs/articles.md reaches the file and one of
its headings (one per article). The opening cell (title, launch links) is the notebook's header."""
import json
import re
from pathlib import Path

import pytest

from test_readme import anchors   # GitHub's heading anchors of a Markdown page

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "articles.md"
NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
MENTION = re.compile(r"\barticle(?:s|'s)?\b|文章|一文", re.I)
LINK = re.compile(r"\]\(([^)\s]*articles\.md)(?:#([^)\s]*))?\)")


def markdown_cells(path: Path) -> list[tuple[int, str]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(i, "".join(c["source"])) for i, c in enumerate(cells) if c["cell_type"] == "markdown"]


def first_mention(path: Path) -> tuple[int, str] | None:
    return next(((i, text) for i, text in markdown_cells(path) if i > 0 and MENTION.search(text)), None)


def test_the_articles_page_has_one_heading_per_article():
    assert {"interface", "lab", "decoding", "gpt2"} <= anchors(PAGE)


def test_most_notebooks_mention_an_article_after_their_opening_cell():
    assert sum(first_mention(p) is not None for p in NOTEBOOKS) >= 16


def test_the_first_mention_of_an_article_links_its_page():
    unlinked = [f"{path.relative_to(ROOT)} cell {mention[0]}" for path in NOTEBOOKS
                if (mention := first_mention(path)) and not LINK.search(mention[1])]
    assert unlinked == [], ("the first mention of an article should link its section, e.g. "
                            "[interface article](../docs/articles.md#interface): " + "; ".join(unlinked))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_every_link_to_the_articles_page_reaches_a_heading(path):
    broken = []
    for index, text in markdown_cells(path):
        for target, anchor in LINK.findall(text):
            resolved = (path.parent / target).resolve()
            if resolved != PAGE:
                broken.append(f"cell {index}: {target} is not docs/articles.md from here")
            elif anchor not in anchors(PAGE):
                broken.append(f"cell {index}: #{anchor} is not an article's heading of docs/articles.md")
    assert broken == []
