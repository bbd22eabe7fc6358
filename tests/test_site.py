"""The website's build, in parts that need no Sphinx (docs/site/; the site itself is read in
Chromium by tests/test_browser_site.py): where the course's home comes from, the landing page
made from each README, and the search index of both editions."""
import re
import sys
from pathlib import Path

import pytest

from _browser import ROOT

sys.path.insert(0, str(ROOT / "docs" / "site"))
import build_site as site_build  # noqa: E402
from course_site import EDITIONS, repository  # noqa: E402


def test_the_repository_comes_from_pyproject():
    repo = repository()
    assert (repo.owner, repo.name, repo.branch) == ("gpt2-course", "next-token", "main")
    assert repo.file_url("docs/install.md") == "https://github.com/gpt2-course/next-token/blob/main/docs/install.md"
    assert repo.file_url("notebooks/zh/") == "https://github.com/gpt2-course/next-token/tree/main/notebooks/zh"


@pytest.mark.parametrize("urls, says", [
    ("", "has no Repository"),
    ('[project.urls]\nHomepage = "https://example.org"\n', "has no Repository"),
    ('[project.urls]\nRepository = "https://gitlab.com/a/b"\n', "is not a GitHub repository's address"),
])
def test_a_missing_or_foreign_repository_stops_the_build_with_a_message(tmp_path, urls, says):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n' + urls, encoding="utf-8")
    with pytest.raises(SystemExit, match=re.escape(says)) as stopped:
        repository(pyproject)
    assert str(pyproject) in str(stopped.value)


def test_a_fork_gets_links_to_itself(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project.urls]\nRepository = "https://github.com/someone/fork.git"\n', encoding="utf-8")
    repo = repository(pyproject)
    page = site_build.landing_page("en", repo, ["01_tokenizer"])
    assert "https://mybinder.org/v2/gh/someone/fork/main?urlpath=lab/tree/notebooks/01_tokenizer.ipynb" in page
    made = [link for link in re.findall(r"\]\((https://[^)\s]+)\)", page) if "github.com" in link or "mybinder" in link]
    assert made and all("/someone/fork/" in link for link in made), made


@pytest.mark.parametrize("edition", list(EDITIONS))
def test_the_landing_page_links_pages_the_repository_and_the_other_edition(edition):
    settings = EDITIONS[edition]
    names = site_build.chapters(ROOT / settings["notebooks"])
    page = site_build.landing_page(edition, repository(), names)
    links = re.findall(r"\]\(([^)\s]+)\)", page)
    assert "badge_logo.svg" not in page, "an image from another host"
    for name in names:
        assert f"{name}.ipynb" in links, f"no link to chapter {name}"
    assert "solutions/index.md" in links
    assert f'href="../{settings["other"]}/index.html"' in page
    local = [link for link in links if not link.startswith(("http", "#"))]
    assert set(local) <= {f"{n}.ipynb" for n in names} | {"solutions/index.md", Path(settings["picture"]).name}, local
    assert "\n".join(names) in page, "the chapters' table of contents"


def test_each_search_index_takes_in_the_other_editions_pages():
    own = {"docnames": ["index", "01"], "filenames": ["index.md", "01.ipynb"], "titles": ["Home", "One"],
           "terms": {"token": [0, 1], "home": 0}, "titleterms": {"one": 1}, "alltitles": {"One": [[1, None]]}}
    other = {"docnames": ["index"], "filenames": ["index.md"], "titles": ["首页"],
             "terms": {"token": 0, "词元": 0}, "titleterms": {}, "alltitles": {"首页": [[0, None]]}}
    merged = site_build.merged_index(own, other, "zh")
    assert merged["docnames"] == ["index", "01", "../zh/index"]
    assert merged["titles"][2] == "首页 · 中文"
    assert merged["terms"]["token"] == [0, 1, 2] and merged["terms"]["词元"] == [2] and merged["terms"]["home"] == 0
    assert merged["alltitles"]["首页"] == [[2, None]]
    assert own["docnames"] == ["index", "01"], "the index given is unchanged"
