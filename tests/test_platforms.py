"""The course installs into Colab's and Kaggle's package sets without changing any of theirs.

Their published lists are copied in .ci/platforms/ (README.md there: source and date). Offline:
every runtime dependency's range admits the version each platform has, so pip keeps theirs; the
matrix's colab and kaggle rows then prove it with pip itself (.ci/platforms/platform_set.py
reads pip's --dry-run --report), and the tests here check that reading.
"""
import importlib.util
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
PLATFORMS = ROOT / ".ci" / "platforms"
LISTS = {"colab": PLATFORMS / "colab-2026-08-19-pip-freeze.txt",
         "kaggle": PLATFORMS / "colab-2026-05-08-pip-freeze.txt"}

spec = importlib.util.spec_from_file_location("platform_set", PLATFORMS / "platform_set.py")
platform_set = importlib.util.module_from_spec(spec)
spec.loader.exec_module(platform_set)


def runtime() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [Requirement(r) for r in project["dependencies"]]


@pytest.mark.parametrize("platform", LISTS)
def test_every_runtime_range_admits_the_platform_version(platform):
    theirs = platform_set.releases(LISTS[platform])
    for req in runtime():
        name = platform_set.normal(req.name)
        assert name in theirs, f"{platform} has no {req.name}: the course would add it"
        assert req.specifier.contains(theirs[name]), f"{req} would replace {platform}'s {req.name} {theirs[name]}"


def test_the_lists_are_read_as_published():
    colab, kaggle = (platform_set.releases(LISTS[p]) for p in ("colab", "kaggle"))
    # the published versions; torch's `torch @ …2.11.0%2Bcpu….whl` is PyPI's release 2.11.0
    assert {n: colab[n] for n in ("torch", "numpy", "matplotlib", "ipywidgets", "ipykernel", "jupyter-client")} == {
        "torch": "2.11.0", "numpy": "2.1.3", "matplotlib": "3.10.0", "ipywidgets": "7.7.1",
        "ipykernel": "6.17.1", "jupyter-client": "7.4.9"}
    assert (kaggle["torch"], kaggle["numpy"], kaggle["ipywidgets"], kaggle["ipykernel"]) == (
        "2.10.0", "2.0.2", "7.7.1", "6.17.1")
    # a wheel URL names its release; a git or file URL names none and is left out
    assert colab["en-core-web-sm"] == "3.8.0"
    assert "google-colab" not in colab and "jupyter-kernel-gateway" not in colab
    readme = (PLATFORMS / "README.md").read_text(encoding="utf-8")
    for path in LISTS.values():
        assert path.name in readme and path.read_text(encoding="utf-8").startswith("# Do not modify this file")
    assert "googlecolab/backend-info" in readme and "2026-08-19" in readme and "Kaggle/docker-python" in readme


def test_the_constraints_leave_out_the_cuda_libraries_only(capsys):
    assert platform_set.main(["constraints", str(LISTS["colab"])]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "torch==2.11.0" in lines and "ipywidgets==7.7.1" in lines
    assert "nvidia-nccl-cu13==2.31.2" not in lines          # in Colab's list, pinned otherwise by PyPI's torch
    assert len(lines) == len(platform_set.releases(LISTS["colab"])) - 1


def report(*installs: tuple[str, str]) -> dict:
    """pip's --report, as much of it as platform_set reads."""
    return {"install": [{"metadata": {"name": n, "version": v}} for n, v in installs]}


def test_the_dry_run_reading_flags_a_changed_package_and_names_an_added_one():
    listed = {"numpy": "2.1.3", "ipywidgets": "7.7.1", "torch": "2.11.0"}
    assert platform_set.changes(listed, report(("course_lib", "0.1.0"))) == ([], [])
    # the same release as a local build (2.11.0+cpu) is not a change
    assert platform_set.changes(listed, report(("torch", "2.11.0+cpu"))) == ([], [])
    changed, added = platform_set.changes(listed, report(("course_lib", "0.1.0"), ("ipywidgets", "8.1.9"),
                                                         ("Numpy", "2.0.2"), ("jupyterlab", "4.6.6")))
    assert changed == ["ipywidgets 7.7.1 -> 8.1.9", "numpy 2.1.3 -> 2.0.2"]
    assert added == ["jupyterlab 4.6.6"]


def test_the_command_line_fails_on_a_change(tmp_path, capsys):
    (tmp_path / "list.txt").write_text("numpy==2.1.3\nipywidgets==7.7.1\n", encoding="utf-8")
    (tmp_path / "r.json").write_text('{"install": [{"metadata": {"name": "ipywidgets", "version": "8.1.9"}}]}',
                                     encoding="utf-8")
    assert platform_set.main(["unchanged", str(tmp_path / "list.txt"), str(tmp_path / "r.json")]) == 1
    assert "1 CHANGED: ipywidgets 7.7.1 -> 8.1.9" in capsys.readouterr().out
    (tmp_path / "r.json").write_text('{"install": [{"metadata": {"name": "course_lib", "version": "0.1.0"}}]}',
                                     encoding="utf-8")
    assert platform_set.main(["unchanged", str(tmp_path / "list.txt"), str(tmp_path / "r.json")]) == 0
    assert "of the 2 packages of list.txt: none changed" in capsys.readouterr().out
