"""pyproject.toml's ranges, the one lock (.ci/constraints.txt), Binder's environment.yml and
postBuild, and the CI script agree and stay installable (issue 21: ranges proven by
`make test-matrix`, exact versions only in the lock)."""
import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / ".ci" / "constraints.txt"


def pins(requirements):
    """{'torch': '2.13.0', ...} from lines like 'torch==2.13.0' (names lower-case, _ as -)."""
    found = {}
    for line in requirements:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==([^\s;]+)", line.strip())
        if match:
            found[normal(match.group(1))] = match.group(2)
    return found


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def direct_requirements() -> list[Requirement]:
    """Every requirement of pyproject.toml: the runtime's and every extra's."""
    extras = project()["optional-dependencies"]
    return [Requirement(r) for r in project()["dependencies"] + [r for e in extras.values() for r in e]]


def locked() -> dict:
    return pins(line for line in LOCK.read_text(encoding="utf-8").splitlines() if not line.startswith("#"))


def test_dependencies_are_ranges_with_a_proven_floor_and_no_cap():
    for req in direct_requirements():
        [spec] = req.specifier            # one lower bound, nothing else: no pin, no upper cap
        assert spec.operator == ">=", (str(req), "a range's floor is the oldest version the matrix proved")
    floors = {normal(r.name): Version(next(iter(r.specifier)).version) for r in direct_requirements()}
    # notebook 07 draws with torch.multinomial, whose random stream changed in torch 2.7.0 (docs/install.md)
    assert floors["torch"] == Version("2.7.0")
    for needed in ["jupyterlab", "numpy", "torch", "matplotlib", "ipywidgets", "nbval", "tiktoken"]:
        assert needed in floors, needed
    assert project()["requires-python"] == ">=3.11"


def test_the_lock_holds_every_direct_dependency_exactly_and_inside_its_range():
    lock = locked()
    for req in direct_requirements():
        assert normal(req.name) in lock, f"{req.name} is not in .ci/constraints.txt"
        assert req.specifier.contains(lock[normal(req.name)]), (str(req), lock[normal(req.name)])
    assert "course-lib" not in lock
    assert lock["torch"] == "2.13.0"      # the version the stored outputs were made with
    # exact versions live in the lock only: pyproject.toml and environment.yml pin nothing
    for name in ["pyproject.toml", "environment.yml"]:
        text = "\n".join(line for line in (ROOT / name).read_text(encoding="utf-8").splitlines()
                         if not line.lstrip().startswith("#"))
        assert not re.search(r"[A-Za-z0-9]==\d", text), name


def test_environment_yml_installs_the_course_from_the_lock():
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    assert conda == ["python=3.11", "pip"]
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-c .ci/constraints.txt" in pip_section
    assert "-e .[check]" in pip_section          # pytest and nbval, not the test-only extras
    # notebook is in repo2docker's base environment: it moves with jupyterlab, to the lock's version
    assert "notebook" in pip_section and "notebook" in locked()
    # the CPU wheel index, so Binder does not pull torch's multi-GB CUDA build
    assert any(line.startswith("--extra-index-url") and line.rstrip("/").endswith("whl/cpu")
               for line in pip_section)
    assert set(pip_section) == {"--extra-index-url https://download.pytorch.org/whl/cpu",
                                "-c .ci/constraints.txt", "-e .[check]", "notebook"}


def test_the_learner_extras_are_the_check_tools_only():
    extras = project()["optional-dependencies"]
    check = {normal(Requirement(r).name) for r in extras["check"]}
    test = {normal(Requirement(r).name) for r in extras["test"]}
    assert check == {"pytest", "nbval"}
    assert check < test and {"transformers", "playwright"} <= test


def test_binder_post_build_installs_nothing_more():
    post_build = (ROOT / "postBuild").read_text(encoding="utf-8")
    assert "pip install" not in post_build          # environment.yml installed course_lib
    assert "import matplotlib.font_manager" in post_build
    assert (ROOT / "postBuild").stat().st_mode & 0o111


def test_readme_commands_are_the_ones_ci_and_binder_use():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make lab" in readme and "make test" in readme
    assert "urlpath=lab/tree/notebooks/01_tokenizer.ipynb" in readme
    assert re.search(r"^make test$", (ROOT / ".ci" / "run").read_text(encoding="utf-8"), re.M)
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    # make lab opens notebook 01 in the learner's copy of notebooks/ (tests/test_my_copy.py)
    assert "LAB_URL ?= /lab/tree/$(MY_COPY)/01_tokenizer.ipynb" in makefile and "MY_COPY ?= my-notebooks" in makefile
    assert "--nbval " in makefile
    assert "--nbval-lax" not in makefile


def test_top_level_layout():
    expected = {"notebooks", "course_lib", "data", "environment.yml", "README.md", "tests", "LICENSE",
                "pyproject.toml", ".ci", "Makefile", "postBuild", ".gitignore", "apt.txt",
                "README.zh-CN.md", "docs"}                # the Chinese README; docs/: the rest, beyond the front door
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
    runtime = {normal(Requirement(r).name) for r in project()["dependencies"]}
    assert runtime and not runtime & TEST_ONLY, runtime & TEST_ONLY
    assert TEST_ONLY <= {normal(Requirement(r).name) for r in project()["optional-dependencies"]["test"]}


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


def test_the_install_checks_are_targets_of_their_own(tmp_path):
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^test-matrix:\n\tnice -n 19 \.ci/matrix\.sh \$\(MATRIX_ENVS\)$", makefile, re.M)
    assert re.search(r"^test-wheel: .*\n\t.*-m install tests/test_wheel_install\.py", makefile, re.M)
    assert re.search(r"^test-binder: .*\n\t.*-m install tests/test_binder\.py", makefile, re.M)
    # make test neither runs the matrix nor the install tests (they download)
    commands = dry_run("test", tmp_path, stamps=[".installed-runtime", ".installed-test"])
    assert "matrix.sh" not in commands
    assert commands.count('-m "not install"') == 1 and '-m "not slow and not install"' in commands


def test_readme_install_instructions():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # Windows installs with the same constraints file as the Makefile
    windows = readme[readme.index("On Windows"):][:600]
    assert "-c .ci/constraints.txt" in windows, windows
    assert "make stop" in readme and "Ctrl-C" in readme and "make lab-zh" in readme
    assert 'LAB_ARGS="--port 8899 --no-browser"' in readme
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert notebook.stem in readme, notebook.stem


def test_the_chinese_readme_has_the_two_commands_and_opens_the_chinese_edition():
    zh = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    assert "urlpath=lab/tree/notebooks/zh/01_tokenizer.ipynb" in zh
    assert "make lab" in zh and "make test" in zh and "Python 3.11" in zh and "fonts-noto-cjk" in zh
    for notebook in sorted((ROOT / "notebooks" / "zh").glob("*.ipynb")):       # each chapter, linked
        assert f"]({notebook.relative_to(ROOT).as_posix()})" in zh, notebook
    assert "](notebooks/zh/solutions/)" in zh and "make lab-zh" in zh               # the solutions; the zh lab
    assert "](docs/instructors.md)" in zh                                          # its own instructor pointer
    assert "](README.zh-CN.md)" in (ROOT / "README.md").read_text(encoding="utf-8")[:800]


def test_binder_and_ci_install_the_cjk_and_emoji_fonts():
    packages = (ROOT / "apt.txt").read_text(encoding="utf-8").split()
    assert packages == ["fonts-noto-cjk", "fonts-noto-color-emoji"]
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "$(cat apt.txt)" in run and "apt-get install" in run
