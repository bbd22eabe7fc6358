"""The worked solutions, one notebook per chapter in each edition
(notebooks/[zh/]solutions/03_attention_solutions.ipynb, …): each opens at its own chapter, and
each exercise of a chapter's notebook links to its own solution there (``#cell-id=<exercise>``,
the id of the solution's heading cell), so a click reaches it (tests/test_browser_layout.py
clicks them in JupyterLab)."""
import json
import re

import pytest

from course_lib.exercises import EXERCISES

from test_exercises import ALL_SOLUTIONS, NOTEBOOKS, chapter_notebook, solutions_of


def test_one_solutions_notebook_per_chapter_in_each_edition():
    chapters = sorted({chapter for chapter, _ in EXERCISES.values()})
    for folder in (NOTEBOOKS / "solutions", NOTEBOOKS / "zh" / "solutions"):
        stems = sorted(p.stem for p in folder.glob("*.ipynb"))
        assert stems == [f"{chapter_notebook(chapter).stem}_solutions" for chapter in chapters], (folder, stems)


@pytest.mark.parametrize("solutions", ALL_SOLUTIONS, ids=lambda p: p.relative_to(NOTEBOOKS).as_posix())
def test_a_solutions_notebook_opens_at_its_own_chapter(solutions):
    """Its top names its chapter and links back to the chapter's notebook; each solution is a
    markdown cell whose cell id is the exercise's name (the target of the exercise's link),
    followed by the solution and its check."""
    cells = json.loads(solutions.read_text(encoding="utf-8"))["cells"]
    chapter, edition = solutions.name[:2], "zh/" if "/zh/" in solutions.as_posix() else ""
    title = "".join(cells[0]["source"]).splitlines()[0]
    assert cells[0]["cell_type"] == "markdown" and title.startswith(f"# {chapter} · "), title
    assert f"(../{chapter_notebook(chapter).name})" in "".join(cells[0]["source"])
    names = [name for name, (c, _) in EXERCISES.items() if c == chapter]
    headed = [c["id"] for c in cells if c["cell_type"] == "markdown" and c["id"] in names]
    assert headed == names
    for name in names:
        at = next(i for i, c in enumerate(cells) if c["id"] == name)
        heading = "".join(cells[at]["source"])
        assert heading.startswith(f"### {name} · "), heading
        assert "".join(cells[at + 1]["source"]).startswith(f"def {name}(") and cells[at + 1]["metadata"]["tags"] == ["exercise"]
        assert "".join(cells[at + 2]["source"]) == f"check_{name}({name})"


# an exercise's link to its worked solution: the chapter's solutions notebook, at the solution's cell
SOLUTION_LINK = re.compile(r"\]\((solutions/(\d\d)_\w+_solutions\.ipynb)#cell-id=(\w+)\)")


@pytest.mark.parametrize("edition_chapter", [f"{e}{c}" for e in ("", "zh/") for c in sorted({c for c, _ in EXERCISES.values()})])
def test_each_exercise_links_to_its_own_worked_solution(edition_chapter):
    edition, chapter = edition_chapter[:-2], edition_chapter[-2:]
    path = chapter_notebook(chapter, edition)
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    names = [name for name, (c, _) in EXERCISES.items() if c == chapter]
    stubs = [i for i, c in enumerate(cells) if "exercise" in c.get("metadata", {}).get("tags", [])]
    for i, name in zip(stubs, names):
        statement = "".join(cells[i - 1]["source"])
        links = SOLUTION_LINK.findall(statement)
        assert links == [(f"solutions/{solutions_of(chapter).name}", chapter, name)], (path.name, name, links)
        target = path.parent / links[0][0]
        assert target == solutions_of(chapter, edition) and target.is_file()
        ids = [c["id"] for c in json.loads(target.read_text(encoding="utf-8"))["cells"]]
        assert name in ids, f"{target.name} has no cell with id {name!r}"
    markdown = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert "exercise_solutions" not in markdown and "click the link again" not in markdown and "再点一次" not in markdown
