"""docs/articles.md, the one page on each source article, lists exactly the figure ids that
data/figures.json gives that article, and names the notebooks that reproduce them."""
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "articles.md"


def registry_by_article():
    figures = json.loads((ROOT / "data" / "figures.json").read_text(encoding="utf-8"))
    ids, notebooks = {}, {}
    for figure_id, entry in figures.items():
        ids.setdefault(entry["article"], set()).add(figure_id)
        notebooks.setdefault(entry["article"], set()).update(n[:2] for n in entry["notebooks"])
    return ids, notebooks


def page_sections():
    """{article: section text}, one per '## name' heading of the page."""
    text = PAGE.read_text(encoding="utf-8")
    parts = re.split(r"^## (\w+)\s*$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_every_article_of_the_registry_has_a_section_and_no_other():
    ids, _ = registry_by_article()
    assert sorted(page_sections()) == sorted(ids)


def test_each_section_lists_exactly_its_articles_figure_ids():
    ids, _ = registry_by_article()
    for article, section in page_sections().items():
        marker = f"<!-- figure-ids: {article} -->"
        assert marker in section, f"docs/articles.md, section {article}: no '{marker}' line"
        listed = re.findall(r"`([a-z0-9_.]+)`", section.split(marker, 1)[1])
        assert len(listed) == len(set(listed)), f"{article}: an id is listed twice"
        assert set(listed) == ids[article], (
            f"docs/articles.md, section {article}: missing {sorted(ids[article] - set(listed))}, "
            f"not in the registry under {article}: {sorted(set(listed) - ids[article])}")


def test_each_section_names_the_notebooks_that_reproduce_its_figures():
    _, notebooks = registry_by_article()
    for article, section in page_sections().items():
        line = re.search(r"^Notebooks? (.+?)\. Figures:", section, flags=re.M)
        assert line, f"docs/articles.md, section {article}: no 'Notebooks … Figures:' line"
        named = set(re.findall(r"\d\d", line.group(1)))
        if "–" in line.group(1):   # a range such as 01–07
            first, last = (int(n) for n in re.findall(r"(\d\d)–(\d\d)", line.group(1))[0])
            named |= {f"{n:02d}" for n in range(first, last + 1)}
        assert named == notebooks[article], (
            f"docs/articles.md, section {article}: names notebooks {sorted(named)}, "
            f"the registry {sorted(notebooks[article])}")
