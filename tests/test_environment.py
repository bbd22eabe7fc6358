"""pyproject.toml's ranges, the one lock (.ci/constraints.txt), Binder's environment.yml and
postBuild, and the CI script agree and stay installable (ranges proven by `make test-matrix`,
exact versions only in the lock)."""
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from _copies import writable_copy

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
    """Every requirement of pyproject.toml: the runtime's and every extra's (an extra that names
    another, as test names course_lib[lab], adds that one's requirements, already listed)."""
    extras = project()["optional-dependencies"]
    every = [Requirement(r) for r in project()["dependencies"] + [r for e in extras.values() for r in e]]
    return [r for r in every if normal(r.name) != normal(project()["name"])]


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


def oldest_python() -> Version:
    """The oldest Python pyproject.toml declares: '>=3.11' is 3.11.0."""
    floor = re.fullmatch(r">=(\d+\.\d+(?:\.\d+)?)", project()["requires-python"])
    assert floor, project()["requires-python"]
    return Version(floor.group(1))


def requires_python() -> dict:
    """{'soupsieve': ('2.10', '>=3.10'), ...} from .ci/requires-python.txt (.ci/lock_python.py)."""
    found = {}
    for line in (ROOT / ".ci" / "requires-python.txt").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            pin, _, spec = line.partition(" ")
            name, version = pin.split("==")
            found[normal(name)] = (version, spec.strip())
    return found


def test_every_locked_package_installs_on_the_oldest_python_declared():
    """Debian 12's own python3 is 3.11.2: a locked version wanting 3.11.5 (soupsieve 3 and 4 do)
    would make `make setup` fail there with ResolutionImpossible."""
    lock, table = locked(), requires_python()
    assert {name: version for name, (version, _) in table.items()} == lock, (
        ".ci/requires-python.txt is not the lock's: run python .ci/lock_python.py")
    oldest = oldest_python()
    assert oldest == Version("3.11.0")
    too_new = {name: spec for name, (_, spec) in table.items()
               if not SpecifierSet(spec).contains(oldest, prereleases=True)}
    assert not too_new, f"these locked versions refuse Python {oldest}: {too_new}"


def test_the_requires_python_table_is_what_the_installed_packages_say():
    """The table is the packages' own word: every installed package at its locked version
    declares the same Requires-Python. In the lock's own environment that is every locked
    package installed here (make installs neither notebook nor jupyter-repo2docker, and some
    come only on some Pythons: overrides below 3.12)."""
    lock, table = locked(), requires_python()
    checked = set()
    for dist in importlib.metadata.distributions():
        name = normal(dist.metadata["Name"])
        if name in lock and Version(dist.version).public == Version(lock[name]).public:
            declared = dist.metadata.get("Requires-Python") or ""
            assert SpecifierSet(declared) == SpecifierSet(table[name][1]), (name, declared, table[name])
            checked.add(name)
    if importlib.metadata.version("torch").split("+")[0] == lock["torch"] and \
            importlib.metadata.version("numpy") == lock["numpy"]:            # the lock's environment
        assert len(checked) > len(lock) // 2, sorted(checked)
        for name in set(lock) - checked:                    # not installed at all, or at another version
            with pytest.raises(importlib.metadata.PackageNotFoundError):
                importlib.metadata.version(name)


def test_environment_yml_installs_the_course_from_the_lock():
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    assert conda == ["python=3.11", "pip"]
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-c .ci/constraints.txt" in pip_section
    assert "-e .[check,lab]" in pip_section      # pytest, nbval and JupyterLab, not the test-only extras
    # notebook is in repo2docker's base environment: it moves with jupyterlab, to the lock's version
    assert "notebook" in pip_section and "notebook" in locked()
    # the CPU wheel index, so Binder does not pull torch's multi-GB CUDA build
    assert any(line.startswith("--extra-index-url") and line.rstrip("/").endswith("whl/cpu")
               for line in pip_section)
    assert set(pip_section) == {"--extra-index-url https://download.pytorch.org/whl/cpu",
                                "-c .ci/constraints.txt", "-e .[check,lab]", "notebook"}


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
    assert "make lab" in readme and "make test" in readme and "make test-all" in readme
    assert "urlpath=lab/tree/notebooks/01_tokenizer.ipynb" in readme
    assert re.search(r"^make test-all$", (ROOT / ".ci" / "run").read_text(encoding="utf-8"), re.M)
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    # make lab opens notebook 01 in the learner's copy of notebooks/ (tests/test_my_copy.py)
    assert "LAB_URL ?= /lab/tree/$(MY_COPY)/01_tokenizer.ipynb" in makefile and "MY_COPY ?= my-notebooks" in makefile
    stages = (ROOT / ".ci" / "test_stages.py").read_text(encoding="utf-8")     # make test's stages
    assert '"--nbval"' in stages and "--nbval-lax" not in stages


def test_top_level_layout():
    expected = {"notebooks", "course_lib", "data", "environment.yml", "README.md", "tests", "LICENSE",
                "pyproject.toml", ".ci", "Makefile", "postBuild", ".gitignore", "apt.txt",
                "README.zh-CN.md", "docs"}                # the Chinese README; docs/: the rest, beyond the front door
    present = {p.name for p in ROOT.iterdir()} - {".git", ".venv", ".pytest_cache", "artifacts", "build"}
    # not the project's: pip's build files, and the learner's copy that `make lab` makes (git ignores it)
    present = {p for p in present if not p.endswith(".egg-info") and p.split(".")[0] != "my-notebooks"}
    assert present == expected, present ^ expected


# ------------------------------------------------------------------ the light install

TEST_ONLY = {"pytest", "nbval", "transformers", "playwright", "pytest-xdist", "pyyaml"}


def dry_run(target: str, tmp_path: Path, stamps=(), variables=()) -> str:
    """``make -n target`` in a copy of the Makefile and what it depends on, with the given
    stamp files present (newer than pyproject.toml): the commands make would run."""
    import os
    import time

    for name in ["Makefile", "pyproject.toml", ".ci/constraints.txt", "docs/site/package.json",
                 "docs/site/package-lock.json"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        writable_copy(ROOT / name, tmp_path / name)             # a read-only checkout's files are read-only
    later = time.time() + 10
    for i, stamp in enumerate(stamps):
        (tmp_path / ".venv").mkdir(exist_ok=True)
        (tmp_path / ".venv" / stamp).touch()
        os.utime(tmp_path / ".venv" / stamp, (later + i, later + i))
    return subprocess.run(["make", "--no-print-directory", "-n", target, *variables], cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout


def test_runtime_dependencies_hold_no_test_package():
    runtime = {normal(Requirement(r).name) for r in project()["dependencies"]}
    assert runtime and not runtime & TEST_ONLY, runtime & TEST_ONLY
    assert TEST_ONLY <= {normal(Requirement(r).name) for r in project()["optional-dependencies"]["test"]}


def test_make_lab_installs_the_runtime_and_jupyterlab_only(tmp_path):
    commands = dry_run("lab", tmp_path)
    installs = [line for line in commands.splitlines() if "pip install" in line]
    assert len(installs) == 2, commands                     # torch on its own, then the course
    assert all("-c .ci/constraints.txt" in line for line in installs), installs
    assert installs[0].rstrip().endswith("torch || exit 1; fi") and installs[1].rstrip().endswith('-e ".[lab]"'), installs
    assert "[test]" not in commands
    assert "jupyter lab" in commands


def test_make_test_after_make_lab_adds_the_test_extras(tmp_path):
    commands = dry_run("test", tmp_path, stamps=[".installed-runtime"])
    installs = [line for line in commands.splitlines() if "pip install" in line]
    assert len(installs) == 1 and '-e ".[test]"' in installs[0], installs
    assert "-c .ci/constraints.txt" in installs[0]
    assert "-m venv" not in commands                        # the learner's .venv is kept
    # once both are installed, neither target installs anything
    assert "torch_index" not in commands                   # torch is there already
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
    # make test and make test-all run neither the matrix nor the install tests (they download)
    for target in ("test", "test-all"):
        commands = dry_run(target, tmp_path, stamps=[".installed-runtime", ".installed-test", ".installed-site"])
        assert "matrix.sh" not in commands and f".ci/test_stages.py --workers 2 {target}" in commands, commands
    stages = subprocess.run([sys.executable, ".ci/test_stages.py", "test-all", "--dry-run"], cwd=ROOT,
                            capture_output=True, text=True, check=True, timeout=60).stdout.splitlines()
    assert len(stages) == 5 and all(
        "--nbval" in stage or re.search(r" -m '(not [^']*not install|browser or sandbox or planted)' ", stage)
        for stage in stages), stages


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


# ------------------------------------------------------------------ where torch comes from

def torch_step(tmp_path, variables=()) -> list[str]:
    """The lines of `make setup` (dry run) from the torch index question to the course's install."""
    lines = dry_run("setup", tmp_path, variables=variables).replace("\\\n", " ").splitlines()
    start = next(i for i, line in enumerate(lines) if "torch_index.py" in line)
    return lines[start:]


def test_linux_takes_torch_alone_from_the_cpu_index(tmp_path):
    import platform
    steps = torch_step(tmp_path)
    expected = "https://download.pytorch.org/whl/cpu" if platform.system() == "Linux" else ""
    assert f'.ci/torch_index.py "{expected}"' in steps[0], steps
    # torch by itself, without its dependencies, from the index that answered; the rest from PyPI
    assert re.search(r'pip install -c \.ci/constraints\.txt --no-deps --index-url "\$index" torch \|\| exit 1', steps[0])
    assert steps[1].endswith('pip install -c .ci/constraints.txt -e ".[lab]"'), steps
    assert "extra-index-url" not in "\n".join(steps)


@pytest.mark.parametrize("setting, asked", [("TORCH_INDEX=", ""), ("TORCH_INDEX=pypi", "pypi"),
                                            ("TORCH_INDEX=https://mirror.example/whl/cpu", "https://mirror.example/whl/cpu")])
def test_torch_index_still_chooses(tmp_path, setting, asked):
    assert f'.ci/torch_index.py "{asked}"' in torch_step(tmp_path, [setting])[0]


def test_make_checks_the_python_before_the_venv_and_pip(tmp_path):
    lines = dry_run("setup", tmp_path).splitlines()
    assert "sys.version_info >= (3, 11)" in lines[0] and "-m venv" in lines[1], lines[:2]
    assert oldest_python() == Version("3.11.0")          # the (3, 11) above is pyproject.toml's floor
    # an old Python gets the message, not a traceback: run the check itself with this Python,
    # told it is 3.10
    check = re.search(r"-c '(.*)'$", lines[0]).group(1).replace("sys.version_info >= (3, 11)", "(3, 10) >= (3, 11)")
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.startswith("the course needs Python 3.11 or newer; python3 is ")
    assert "make setup PYTHON=/path/to/python3.11" in done.stderr


def test_the_matrix_knows_every_row_and_tables_each():
    """`make test-matrix MATRIX_ENVS=...` accepts each row name, and summary.md lists every row."""
    script = (ROOT / ".ci" / "matrix.sh").read_text(encoding="utf-8")
    rows = re.search(r'^ALL_ENVS="([^"]+)"$', script, re.M).group(1).split()
    assert rows == ["lock", "oldest", "newest", "py312", "py313", "py314", "debian12", "uv", "existing",
                    "colab", "kaggle", "nonroot-readonly", "nocjk"]
    dispatch = script[script.index("for env in $ENVS; do"):]
    for row in rows:
        assert re.search(rf"(^|[ ;]){re.escape(row)}\) ", dispatch, re.M), row
    assert 'for env in $ALL_ENVS; do [ -f "$OUT/$env.row" ] && cat "$OUT/$env.row"; done' in script
    # the row's date and the commit it cloned
    assert 'print(f"| {env} | {vers} | {day} ({commit}) |' in script
