"""Binder's environment.yml, pyproject.toml and the CI script agree and stay installable."""
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def pins(requirements):
    """{'torch': '2.13.0', ...} from lines like 'torch==2.13.0'."""
    found = {}
    for line in requirements:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==([^\s;]+)", line.strip())
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


def project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_every_dependency_is_pinned_exactly():
    deps = project()["dependencies"] + project()["optional-dependencies"]["test"]
    assert len(pins(deps)) == len(deps), [d for d in deps if "==" not in d]
    assert pins(deps)["torch"] == "2.13.0"
    for needed in ["jupyterlab", "numpy", "torch", "matplotlib", "ipywidgets", "nbval", "tiktoken"]:
        assert needed in pins(deps), needed


def test_environment_yml_parses_and_pins_the_same_versions():
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    assert "python=3.11" in conda and "pip" in conda
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    runtime = pins(project()["dependencies"])
    test = pins(project()["optional-dependencies"]["test"])
    assert pins(pip_section) == {**runtime, **test}
    # the CPU wheel index, so Binder does not pull torch's multi-GB CUDA build
    assert any(line.startswith("--extra-index-url") and line.rstrip("/").endswith("whl/cpu")
               for line in pip_section)


def test_constraints_hold_the_same_direct_pins():
    lines = (ROOT / ".ci" / "constraints.txt").read_text(encoding="utf-8").splitlines()
    locked = pins(line for line in lines if not line.startswith("#"))
    direct = pins(project()["dependencies"] + project()["optional-dependencies"]["test"])
    assert {name: locked.get(name) for name in direct} == direct
    assert "course-lib" not in locked and "course_lib" not in locked


def test_binder_installs_course_lib_itself():
    # with an environment.yml repo2docker installs no package from the repository
    post_build = (ROOT / "postBuild").read_text(encoding="utf-8")
    assert re.search(r"pip install --no-deps -e \.", post_build)
    assert (ROOT / "postBuild").stat().st_mode & 0o111


def test_readme_commands_are_the_ones_ci_and_binder_use():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make lab" in readme and "make test" in readme
    assert "urlpath=lab/tree/notebooks/01_tokenizer.ipynb" in readme
    assert re.search(r"^make test$", (ROOT / ".ci" / "run").read_text(encoding="utf-8"), re.M)
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "notebooks/01_tokenizer.ipynb" in makefile and "--nbval " in makefile
    assert "--nbval-lax" not in makefile


def test_top_level_layout():
    expected = {"notebooks", "course_lib", "data", "environment.yml", "README.md", "tests", "LICENSE",
                "pyproject.toml", ".ci", "Makefile", "postBuild", ".gitignore"}
    present = {p.name for p in ROOT.iterdir()} - {".git", ".venv", ".pytest_cache", "artifacts", "build"}
    present = {p for p in present if not p.endswith(".egg-info")}
    assert present == expected, present ^ expected
