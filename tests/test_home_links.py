"""One place names the course's home: pyproject.toml's [project.urls] Repository (branch main).
Every address made from it is checked against it here: the Binder badges, each notebook's "Open
in Colab" link, its first cell's install line, the READMEs' and docs' install lines, and the Colab
link beside each exercise's link to its worked solution.

Where the relative solution link leads from Colab: a notebook opened in Colab from GitHub lives at
colab.research.google.com/github/ORG/REPO/blob/main/notebooks/<name>; a relative href resolves
against that address (urljoin below, as a browser does) to the solutions notebook's Colab address
with JupyterLab's fragment (#cell-id=…), which Colab does not read (it scrolls with #scrollTo=<the
cell's metadata id>), and Colab is reported to rewrite some relative links in markdown and not
others (googlecolab/colabtools#281). So each exercise carries an absolute Colab link beside the
relative one, ending in #scrollTo=<exercise>, and the solution's heading cell has that metadata id.
"""
import json
import re
import tomllib
from pathlib import Path
from urllib.parse import urljoin

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").rglob("*.ipynb"))
HOME = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]["Repository"]
BRANCH = "main"
GITHUB = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+)", HOME)
# every address of the course's own, anywhere in what a learner reads
OWN_ADDRESS = re.compile(r"(?:https://github\.com/|colab\.research\.google\.com/github/|mybinder\.org/v2/gh/)"
                         r"([\w.-]+/[\w.-]+?)(?:\.git)?(?=[/@\"'\s)?#]|$)")


def colab(path: str) -> str:
    """The Colab address of a file of the repository (``notebooks/01_tokenizer.ipynb``)."""
    return f"https://colab.research.google.com/github/{GITHUB.group(1)}/blob/{BRANCH}/{path}"


def binder(path: str) -> str:
    return f"https://mybinder.org/v2/gh/{GITHUB.group(1)}/{BRANCH}?urlpath=lab/tree/{path}"


INSTALL = f"course_lib @ git+{HOME}@{BRANCH}"


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def text(cell: dict) -> str:
    return "".join(cell["source"])


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_home_is_a_github_repository():
    assert GITHUB, HOME
    assert len(NOTEBOOKS) == 28


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_every_notebook_opens_in_colab_from_its_title_cell(path):
    title = text(cells(path)[0])
    assert title.startswith("# ")
    label = "在 Colab 中打开" if "/zh/" in rel(path) else "Open in Colab"
    assert f"[{label}]({colab(rel(path))})" in title.split("\n\n")[1], title[:300]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_the_first_cell_installs_the_course_from_its_home(path):
    first = text(next(c for c in cells(path) if c["cell_type"] == "code"))
    assert f'"{INSTALL}"' in first


def guard(path: Path) -> str:
    """The first code cell up to its start(...) line: the import, and the install or the advice."""
    return text(next(c for c in cells(path) if c["cell_type"] == "code")).split("\nstart(")[0]


def test_the_first_cells_lines_are_the_same_in_every_notebook_of_an_edition():
    for zh in (False, True):
        guards = {guard(p) for p in NOTEBOOKS if ("/zh/" in rel(p)) == zh}
        assert len(guards) == 1, guards
    en, zh = guard(ROOT / "notebooks/01_tokenizer.ipynb"), guard(ROOT / "notebooks/zh/01_tokenizer.ipynb")
    # the same code: only the comment and the messages are translated
    code = lambda g: [re.sub(r"#.*|f?\"[^\"]*\"", "", line) for line in g.splitlines()]
    assert code(en) == code(zh)
    assert len(en.splitlines()) == 11         # with start(...) and a few imports: within 15 lines


SOLUTION_LINK = re.compile(r"\]\((solutions/(\w+_solutions\.ipynb))#cell-id=(\w+)\)"
                           r"(?: \(\[in Colab\]|（\[在 Colab 中打开\])\(([^)]+)\)")


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if "/solutions/" not in rel(p)], ids=rel)
def test_each_solution_is_one_click_away_in_colab_too(path):
    links = [m for c in cells(path) if c["cell_type"] == "markdown" for m in SOLUTION_LINK.finditer(text(c))]
    mentioned = sum(text(c).count("_solutions.ipynb#cell-id=") for c in cells(path) if c["cell_type"] == "markdown")
    assert links and len(links) == mentioned, "every solution link has its Colab link beside it"
    for m in links:
        relative, name, exercise, colab_link = m.groups()
        # where the relative link resolves from the notebook's Colab address: Colab's address of the
        # solutions notebook, with JupyterLab's fragment
        resolved = urljoin(colab(rel(path)), f"{relative}#cell-id={exercise}")
        assert resolved == colab(rel(path.parent / relative)) + f"#cell-id={exercise}"
        assert colab_link == colab(rel(path.parent / relative)) + f"#scrollTo={exercise}"
        # the cell #scrollTo names: the solution's heading, whose metadata id is Colab's cell id
        [target] = [c for c in cells(path.parent / relative) if c.get("id") == exercise]
        assert target["metadata"].get("id") == exercise and text(target).startswith("### ")


def test_the_readmes_and_docs_derive_every_address_from_the_home():
    readme, readme_zh = ((ROOT / n).read_text(encoding="utf-8") for n in ("README.md", "README.zh-CN.md"))
    assert f"]({binder('notebooks/01_tokenizer.ipynb')})" in readme.splitlines()[2]
    assert f"]({binder('notebooks/zh/01_tokenizer.ipynb')})" in readme_zh.splitlines()[2]
    for page in (readme, readme_zh, (ROOT / "docs" / "install.md").read_text(encoding="utf-8")):
        assert f'pip install -q "{INSTALL}"' in page
        assert f"({colab('notebooks/01_tokenizer.ipynb')})" in page or f"({colab('notebooks/zh/01_tokenizer.ipynb')})" in page


def test_no_other_home_is_named_anywhere():
    """Every github.com/…, Colab and Binder address in what a learner reads names the home's ORG/REPO."""
    pages = [ROOT / "README.md", ROOT / "README.zh-CN.md", ROOT / "environment.yml",
             *sorted((ROOT / "docs").glob("*.md")), *NOTEBOOKS]
    found = 0
    for page in pages:
        for m in OWN_ADDRESS.finditer(page.read_text(encoding="utf-8")):
            assert m.group(1) == GITHUB.group(1), (page.name, m.group(0))
            found += 1
    assert found >= 28 + 2
