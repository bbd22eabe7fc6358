"""Every course notebook says what it is in its metadata, the same way in both editions:
``metadata["course"] = {"chapter": "03", "language": "en" | "zh", "kind": "exercises" | "solutions"}``.

A grader reads it to know which chapter a renamed copy holds; here it must agree with the
notebook's own path (notebooks/[zh/][solutions/]03_attention[_solutions].ipynb)."""
import json
from pathlib import Path

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(p for p in NOTEBOOK_DIR.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def expected_course(path: Path, root: Path = NOTEBOOK_DIR) -> dict:
    """What a notebook's path (under ``root``) says: its chapter, edition and kind."""
    parts = path.relative_to(root).parts
    return {"chapter": path.name[:2], "language": "zh" if parts[0] == "zh" else "en",
            "kind": "solutions" if "solutions" in parts[:-1] else "exercises"}


def problems(path: Path, root: Path = NOTEBOOK_DIR) -> list[str]:
    course = json.loads(path.read_text(encoding="utf-8"))["metadata"].get("course")
    if course is None:
        return [f"{path.name}: no metadata['course']"]
    if course != expected_course(path, root):
        return [f"{path.relative_to(root)}: metadata['course'] is {course}, its path says {expected_course(path, root)}"]
    return []


def test_every_chapter_is_there_in_both_editions_with_its_solutions():
    kinds = sorted((c["language"], c["kind"], c["chapter"]) for c in map(expected_course, NOTEBOOKS))
    assert kinds == sorted((language, kind, f"0{n}") for language in ("en", "zh")
                           for kind in ("exercises", "solutions") for n in range(1, 8))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(NOTEBOOK_DIR).as_posix())
def test_the_course_metadata_agrees_with_the_path(path):
    assert not problems(path)


def test_a_wrong_or_missing_entry_is_named(tmp_path):
    source = json.loads((NOTEBOOK_DIR / "zh" / "solutions" / "03_attention_solutions.ipynb").read_text(encoding="utf-8"))
    folder = tmp_path / "notebooks" / "zh" / "solutions"
    folder.mkdir(parents=True)
    copy = folder / "03_attention_solutions.ipynb"
    source["metadata"]["course"]["language"] = "en"
    copy.write_text(json.dumps(source), encoding="utf-8")
    root = tmp_path / "notebooks"
    assert "its path says {'chapter': '03', 'language': 'zh', 'kind': 'solutions'}" in problems(copy, root)[0]
    del source["metadata"]["course"]
    copy.write_text(json.dumps(source), encoding="utf-8")
    assert problems(copy, root) == ["03_attention_solutions.ipynb: no metadata['course']"]
