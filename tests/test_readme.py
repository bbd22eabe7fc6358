"""The READMEs are a learner's front door and docs/ holds the rest: both READMEs stay short, their
notebook tables list the figures each notebook reproduces as data/figures.json says, the article
titles are the registry's, the pipeline picture is drawn from the notebooks' map as it is, and
every relative link of the READMEs and docs/ leads to a file (and heading) that exists."""
from __future__ import annotations

import importlib.util
import json
import re
import unicodedata
from pathlib import Path

import pytest

from course_lib.figures.registry import ARTICLES
from course_lib.ui.strings import STRINGS

ROOT = Path(__file__).resolve().parent.parent
READMES = {"en": ROOT / "README.md", "zh": ROOT / "README.zh-CN.md"}
PAGES = [*READMES.values(), *sorted((ROOT / "docs").glob("*.md"))]


def load_picture_script():
    spec = importlib.util.spec_from_file_location("pipeline_picture", ROOT / ".ci" / "pipeline_picture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("language", READMES)
def test_the_readme_is_a_short_front_door(language):
    lines = READMES[language].read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"{READMES[language].name} has {len(lines)} lines: move detail to docs/"
    text = "\n".join(lines)
    for page in ["docs/install.md", "docs/instructors.md", "docs/testing.md", "docs/benchmarks.md"]:
        assert f"]({page}" in text, page
    for needed in ["make lab", "make test", "make refresh-copy", "my-notebooks/", "course_lib.gpt2 --download",
                   "colab", "binder", "on windows" if language == "en" else "windows"]:
        assert needed in text.lower(), needed


def figure_rows(language: str) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """The notebook table (the table whose rows link the notebooks; its last column lists the ids
    each notebook's check_inline / check_figure calls check, in order, "¹" where GPT-2's trained
    weights are needed): notebook stem -> (link, the ids, each with "¹" where marked)."""
    text = READMES[language].read_text(encoding="utf-8")
    tables = [block.strip().splitlines() for block in text.split("\n\n")
              if block.strip().startswith("|") and re.search(r"\]\(notebooks/(?:zh/)?01_tokenizer\.ipynb\)", block)]
    assert len(tables) == 1, f"{READMES[language].name}: expected one table of the notebooks, found {len(tables)}"
    table = tables[0][2:]
    rows = {}
    for row in table:
        cells = [c.strip() for c in row.strip("|").split("|")]
        link = re.search(r"\]\(([^)]+)\)", cells[0]).group(1)
        rows[Path(link).stem] = (link, re.findall(r"`([^`]+)`(¹?)", cells[-1]))
    return rows


def checked_figures(notebook: Path) -> list[str]:
    """The figure ids a notebook's code checks (check_inline / check_figure), in order, once each."""
    ids = []
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "code":
            for fid in re.findall(r'check_(?:inline|figure)\(\s*"([^"]+)"', "".join(cell["source"])):
                ids += [fid] if fid not in ids else []
    return ids


@pytest.mark.parametrize("language", READMES)
def test_the_notebook_table_lists_the_figures_each_notebook_reproduces(language):
    registry = json.loads((ROOT / "data" / "figures.json").read_text(encoding="utf-8"))
    rows = figure_rows(language)
    folder = "notebooks/zh" if language == "zh" else "notebooks"
    assert sorted(rows) == sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    for stem, (link, listed) in rows.items():
        assert link == f"{folder}/{stem}.ipynb", link
        expected = [(fid, "¹" if registry[fid]["needs_pretrained_weights"] else "")
                    for fid in checked_figures(ROOT / link)]
        assert expected, f"{link} checks no figure"
        assert listed == expected, f"{READMES[language].name}, {stem}: {listed} != {expected} (the notebook's checks)"


@pytest.mark.parametrize("language", READMES)
def test_the_articles_are_named_by_their_titles(language):
    text = READMES[language].read_text(encoding="utf-8")
    for article, (_, title) in ARTICLES.items():
        assert f"`{article}` — *{title}*" in " ".join(text.split()), article


def test_the_pipeline_pictures_are_drawn_from_the_map_as_it_is():
    picture = load_picture_script()
    for language, path in picture.FILES.items():
        drawn = path.read_text(encoding="utf-8")
        assert drawn == picture.svg(language), (
            f"{path.relative_to(ROOT)} is out of date: run .venv/bin/python .ci/pipeline_picture.py")
        for name in picture.NAMES:                  # every stage's name, in that language (maybe on two lines)
            assert all(f">{part}<" in drawn or f">{part} " in drawn or f" {part}<" in drawn
                       for part in STRINGS[language][f"map.{name}"].split()), (path.name, name)
    assert "](docs/pipeline.svg)" in READMES["en"].read_text(encoding="utf-8")
    assert "](docs/pipeline.zh-CN.svg)" in READMES["zh"].read_text(encoding="utf-8")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation and markup (`, *) dropped (letters,
    digits, marks, _ and - kept, in any script), spaces to hyphens."""
    kept = "".join(ch for ch in heading.strip().lower() if ch in " -_" or unicodedata.category(ch)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found, seen, fenced = set(), {}, False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#{1,6} (.+)", line)):
            base = slug(heading.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)   # not in code blocks
    return re.findall(r"\]\(([^)\s]+)\)", text)


def broken_links(page: Path) -> list[str]:
    broken = []
    for link in links(page):
        if re.match(r"[a-z]+:", link):                              # https:, mailto:: not checked here
            continue
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(f"{link}: no file {path}")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{link}: {path.name} has no heading #{anchor} (it has {sorted(anchors(path))})")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page):
    broken = broken_links(page)
    assert not broken, f"{page.relative_to(ROOT)}:\n" + "\n".join(broken)


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## GPT-2's weights\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("[ok](other.md#gpt-2s-weights) [gone](missing.md) [no heading](other.md#nowhere) "
                    "[web](https://example.org/x) [here](#a-heading)\n\n## A heading\n", encoding="utf-8")
    assert anchors(tmp_path / "other.md") == {"other-page", "gpt-2s-weights"}
    assert slug("获取权重（可选）") == "获取权重可选" and slug("`course_lib.bench.sampling`") == "course_libbenchsampling"
    broken = broken_links(page)
    assert len(broken) == 2 and broken[0].startswith("missing.md: no file") and "has no heading #nowhere" in broken[1]


def test_each_readme_quotes_the_missing_course_message_its_notebooks_print():
    """The troubleshooting line quotes, word for word, what the first cell of that edition raises
    when course_lib is missing (its f-string with the module's name filled in)."""
    import json
    for readme, notebook in (("README.md", "notebooks/01_tokenizer.ipynb"),
                             ("README.zh-CN.md", "notebooks/zh/01_tokenizer.ipynb")):
        first = next(c for c in json.loads((ROOT / notebook).read_text(encoding="utf-8"))["cells"]
                     if c["cell_type"] == "code")
        source = "".join(first["source"])
        message = re.search(r'raise ModuleNotFoundError\(f"([^:：]+)', source).group(1).replace("{missing.name}", "course_lib")
        quoted = re.search(r"\*\*`ModuleNotFoundError: ([^`]+)`\*\*", (ROOT / readme).read_text(encoding="utf-8")).group(1)
        assert quoted == message, (readme, quoted, message)
