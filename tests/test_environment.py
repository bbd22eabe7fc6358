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
                "pyproject.toml", ".ci", "Makefile", "postBuild", ".gitignore", "apt.txt",
                "README.zh-CN.md"}                       # the Chinese README (issue 15)
    present = {p.name for p in ROOT.iterdir()} - {".git", ".venv", ".pytest_cache", "artifacts", "build"}
    present = {p for p in present if not p.endswith(".egg-info")}
    assert present == expected, present ^ expected


# ------------------------------------------------------------------ the light install (issue 14)

TEST_ONLY = {"pytest", "nbval", "transformers", "playwright", "pytest-xdist", "pyyaml"}


def dry_run(target: str, tmp_path: Path, stamps=(), variables=()) -> str:
    """``make -n target`` in a copy of the Makefile and what it depends on, with the given
    stamp files present (newer than pyproject.toml): the commands make would run."""
    import os
    import shutil
    import subprocess
    import time

    for name in ["Makefile", "pyproject.toml", ".ci/constraints.txt"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    later = time.time() + 10
    for i, stamp in enumerate(stamps):
        (tmp_path / ".venv").mkdir(exist_ok=True)
        (tmp_path / ".venv" / stamp).touch()
        os.utime(tmp_path / ".venv" / stamp, (later + i, later + i))
    return subprocess.run(["make", "-n", target, *variables], cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout


def test_runtime_dependencies_hold_no_test_package():
    runtime = set(pins(project()["dependencies"]))
    assert runtime and not runtime & TEST_ONLY, runtime & TEST_ONLY
    assert TEST_ONLY <= set(pins(project()["optional-dependencies"]["test"]))


def test_make_lab_installs_the_runtime_only(tmp_path):
    commands = dry_run("lab", tmp_path)
    installs = [line for line in commands.splitlines() if "pip install" in line]
    assert len(installs) == 1, commands
    assert "-c .ci/constraints.txt" in installs[0] and installs[0].rstrip().endswith("-e ."), installs
    assert "[test]" not in commands
    assert "jupyter lab" in commands


def test_make_test_after_make_lab_adds_the_test_extras(tmp_path):
    commands = dry_run("test", tmp_path, stamps=[".installed-runtime"])
    installs = [line for line in commands.splitlines() if "pip install" in line]
    assert len(installs) == 1 and '-e ".[test]"' in installs[0], installs
    assert "-c .ci/constraints.txt" in installs[0]
    assert "-m venv" not in commands                        # the learner's .venv is kept
    # once both are installed, neither target installs anything
    again = dry_run("test", tmp_path, stamps=[".installed-runtime", ".installed-test"])
    assert "pip install" not in again
    assert "pip install" not in dry_run("lab", tmp_path, stamps=[".installed-runtime"])


def test_make_lab_passes_server_options(tmp_path):
    commands = dry_run("lab", tmp_path, stamps=[".installed-runtime"],
                       variables=['LAB_ARGS=--port 8899 --no-browser'])
    lab = commands.replace("\\\n", " ")
    assert re.search(r"jupyter lab .*--port 8899 --no-browser", lab), lab


def test_readme_install_instructions():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # Windows installs with the same constraints file as the Makefile
    windows = readme[readme.index("On Windows"):][:600]
    assert "-c .ci/constraints.txt" in windows, windows
    assert "jupyter lab stop" in readme and "Ctrl-C" in readme
    assert 'LAB_ARGS="--port 8899 --no-browser"' in readme
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert notebook.stem in readme, notebook.stem


def test_the_chinese_readme_has_the_two_commands_and_opens_the_chinese_edition():
    zh = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    assert "urlpath=lab/tree/notebooks/zh/01_tokenizer.ipynb" in zh
    assert "make lab" in zh and "make test" in zh and "Python 3.11" in zh and "fonts-noto-cjk" in zh
    for notebook in sorted((ROOT / "notebooks" / "zh").rglob("*.ipynb")):
        assert notebook.relative_to(ROOT).as_posix() in zh, notebook
    assert "](README.zh-CN.md)" in (ROOT / "README.md").read_text(encoding="utf-8")[:800]


def test_binder_and_ci_install_the_cjk_and_emoji_fonts():
    packages = (ROOT / "apt.txt").read_text(encoding="utf-8").split()
    assert packages == ["fonts-noto-cjk", "fonts-noto-color-emoji"]
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "$(cat apt.txt)" in run and "apt-get install" in run
