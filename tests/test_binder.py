"""Binder's build, replayed without Docker on repo2docker's own locked base environment.

repo2docker (the builder behind mybinder.org) starts every image from a conda environment it
locks per Python version; the lock files ship inside the ``jupyter-repo2docker`` package on
PyPI (``repo2docker/buildpacks/conda/environment.py-3.11-linux-64.lock``). For a repository with
an ``environment.yml`` whose Python matches, it then runs ``mamba env update`` on that same
environment, and mamba hands the yml's pip section to the environment's own pip, from the
repository's folder: ``python -m pip install -U -r <the lines> --no-input --quiet``. Then it runs
``postBuild``.

This test does the same with pip and a venv:

1. downloads ``jupyter-repo2docker`` (the version the lock, .ci/constraints.txt, names) and
   reads its lock file for the Python that environment.yml asks for;
2. installs every Python package of that conda lock at its locked version, without
   dependencies, as conda laid them down (conda-only packages — the interpreter, C libraries,
   nodejs — aside; the venv's interpreter is this machine's Python 3.11);
3. runs environment.yml's pip section exactly as mamba does, in a clone of the committed HEAD —
   one line aside: ``--extra-index-url https://download.pytorch.org/whl/cpu`` is not reachable
   from here, and this machine's pip configuration serves the same CPU wheel of torch
   (torch 2.13.0+cpu) from a local folder;
4. runs postBuild; then ``pip check`` must be clean, the learner's image must hold pytest and
   nbval but neither Playwright nor transformers, every package of the lock must be at its
   locked version, and JupyterLab, from that environment, must open notebook 01 of both
   editions in Chromium and run all its cells without an error.

Minutes, and downloads from PyPI: not part of `make test`; `make test-binder` runs it.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
import zipfile
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from _browser import (free_port, need_browser, open_and_run_all, open_lab, start_sessions, wait_until,
                      write_lab_settings)

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / ".ci" / "constraints.txt"
UNREACHABLE_HERE = "--extra-index-url https://download.pytorch.org/whl/cpu"

# conda-forge names whose PyPI name differs (the rest are the same, up to - and _)
PYPI_NAME = {"brotli-python": "brotli", "python-fastjsonschema": "fastjsonschema",
             "jupyterhub-base": "jupyterhub", "nbconvert-core": "nbconvert", "cached_property": "cached-property"}
# conda packages of the lock that are not Python distributions on PyPI (meta-packages, tools)
CONDA_ONLY = {"python", "python_abi", "jupyterhub-singleuser", "nodejs", "conda", "mamba", "libmambapy",
              "typing-extensions", "nbconvert"}


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked() -> dict:
    found = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", line.strip())
        if match:
            found[normal(match.group(1))] = match.group(2)
    return found


def conda_python_packages(lock_text: str) -> dict:
    """{pypi name: version} for every Python package of an explicit conda lock file: those
    built for Python (build string py…, e.g. pyhd8ed1ab_0, py311h…; pip itself included)."""
    found = {}
    for url in re.findall(r"^https://\S+", lock_text, re.M):
        file = url.split("#")[0].rsplit("/", 1)[1]
        stem = re.sub(r"\.(conda|tar\.bz2)$", "", file)
        name, version, build = stem.rsplit("-", 2)
        if not build.startswith("py") or name in CONDA_ONLY:
            continue
        found[PYPI_NAME.get(name, name)] = version
    return found


def environment_yml() -> tuple[str, list[str]]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    pip_lines = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    return python.removeprefix("python="), pip_lines


def run(cmd, **kwargs):
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def binder(tmp_path_factory):
    """The replayed image: (its python, the repository folder inside it, the build log)."""
    tmp = tmp_path_factory.mktemp("binder")
    version = locked()["jupyter-repo2docker"]
    python_version, pip_lines = environment_yml()
    # the venv that becomes the base environment below; made first, its own pip (from the
    # standard library's ensurepip) downloads repo2docker: this test's venv may hold no pip (uv)
    assert f"{sys.version_info.major}.{sys.version_info.minor}" == python_version
    venv = tmp / "srv" / "conda" / "envs" / "notebook"
    run([sys.executable, "-m", "venv", str(venv)], timeout=300)
    python = venv / "bin" / "python"
    run([str(python), "-m", "pip", "download", "--no-deps", "-q", "-d", str(tmp / "r2d"),
         f"jupyter-repo2docker=={version}"], timeout=600)
    wheel, = (tmp / "r2d").glob("jupyter_repo2docker-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        lock_text = whl.read(f"repo2docker/buildpacks/conda/environment.py-{python_version}-linux-64.lock").decode()
    base = conda_python_packages(lock_text)
    assert {"jupyterlab", "notebook", "ipykernel", "pip"} <= set(base), sorted(base)

    # 2. the base environment: that venv (this Python, environment.yml's minor version), the
    #    conda lock's Python packages at their versions, no dependency resolution (as conda did)
    (tmp / "base-env.txt").write_text("".join(f"{n}=={v}\n" for n, v in sorted(base.items())))
    run([str(python), "-m", "pip", "install", "--no-deps", "-q", "-r", str(tmp / "base-env.txt")], timeout=1800)

    # 3. the repository (the committed HEAD), and environment.yml's pip section as mamba runs it
    repo = tmp / "repo"
    run(["git", "clone", "-q", str(ROOT), str(repo)], timeout=300)
    requirements = repo / "mambaf-environment-yml"            # mamba writes it into the yml's folder
    requirements.write_text("".join(line + "\n" for line in pip_lines if line != UNREACHABLE_HERE))
    env = dict(os.environ, PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    env.pop("PYTHONPATH", None)
    build = run([str(python), "-m", "pip", "install", "-U", "-r", str(requirements), "--no-input", "--quiet"],
                cwd=repo, env=env, timeout=3600)
    requirements.unlink()
    # 4. postBuild, from the repository's folder, with the environment's python first on PATH
    run(["bash", "./postBuild"], cwd=repo, env=env, timeout=600)
    return python, repo, env, base, build.stdout + build.stderr


# Runs in the replayed image: every distribution course_lib[check,lab] and notebook need, recursively
# (markers evaluated, extras followed), with its installed version.
CLOSURE = r"""
import json, re
from importlib import metadata
from packaging.requirements import Requirement
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()
todo, seen = [("course_lib", {"check", "lab"}), ("notebook", set())], {}
while todo:
    name, extras = todo.pop()
    if norm(name) in seen and extras <= seen[norm(name)]:
        continue
    seen[norm(name)] = seen.get(norm(name), set()) | extras
    for line in metadata.distribution(name).requires or []:
        req = Requirement(line)
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in (extras or {""})):
            continue
        todo.append((req.name, set(req.extras)))
print(json.dumps({name: metadata.version(name) for name in seen}))
"""


def installed(python) -> dict:
    out = run([str(python), "-m", "pip", "list", "--format=json"], timeout=300).stdout
    return {normal(d["name"]): d["version"] for d in json.loads(out)}


def test_pip_check_is_clean(binder):
    python, _, env, _, _ = binder
    done = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and "No broken requirements found" in done.stdout, done.stdout + done.stderr


def test_the_image_holds_the_course_from_the_lock_and_no_test_only_tools(binder):
    python, repo, _, base, _ = binder
    have = installed(python)
    lock = locked()
    assert {"pytest", "nbval", "course-lib"} <= set(have)
    assert not {"playwright", "transformers"} & set(have)
    # every package the course's install resolved (course_lib[check,lab], notebook and all they
    # need) is at the lock's version (torch as the CPU build, 2.13.0+cpu); what only the base
    # environment needs (jupyterhub and its own dependencies) keeps the base's versions
    done = run([str(python), "-c", CLOSURE], cwd="/", timeout=300)
    resolved = json.loads(done.stdout)
    assert {"torch", "numpy", "jupyterlab", "notebook", "nbval", "ipykernel"} <= set(resolved)
    off = {n: (v, lock.get(n)) for n, v in resolved.items() if n != "course-lib" and v.split("+")[0] != lock.get(n)}
    assert not off, off
    # jupyterlab and notebook moved together, from the base environment's versions to the lock's
    assert base["jupyterlab"] != lock["jupyterlab"] and have["jupyterlab"] == lock["jupyterlab"]
    assert have["notebook"] == lock["notebook"]
    # course_lib is the repository's, editable: it reads the repository's data/
    done = run([str(python), "-c", "import course_lib.data as d; print(d.data_dir())"], cwd="/", timeout=300)
    assert done.stdout.strip() == str(repo / "data")


ALL_RAN_JS = r"""() => {
  const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
    .map(e => e.innerText.trim());
  const idle = !!document.querySelector(".jp-Notebook-ExecutionIndicator[data-status='idle']");
  return idle && prompts.length > 0 && prompts.every(t => /\[\d+\]/.test(t));
}"""


@contextmanager
def lab_of(python: Path, env: dict, root: Path, home: Path, kernels_for: list[str]):
    """JupyterLab of the replayed image (its python, its jupyterlab, its kernel) on a free port,
    as tests/_browser.py's serve_lab starts the test environment's."""
    write_lab_settings(home)
    env = dict(env, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(home / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(home / "ws"),
               JUPYTER_PATH="", MPLBACKEND="Agg")
    port = free_port()
    log_path = home / "jupyter.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [str(python), "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--port={port}",
             "--IdentityProvider.token=", "--ServerApp.password=", f"--ServerApp.root_dir={root}",
             "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
             "--LabApp.expose_app_in_browser=True", "--allow-root"],
            cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.time() + 120
            while True:
                try:
                    urllib.request.urlopen(url + "/api/status", timeout=2)
                    break
                except OSError:
                    if server.poll() is not None or time.time() > deadline:
                        raise RuntimeError("JupyterLab did not start:\n" + log_path.read_text())
                    time.sleep(0.3)
            start_sessions(url, kernels_for)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()


@pytest.mark.parametrize("notebook", ["notebooks/01_tokenizer.ipynb", "notebooks/zh/01_tokenizer.ipynb"])
def test_jupyterlab_opens_notebook_01_and_runs_all_cells(binder, notebook, tmp_path):
    need_browser()
    from playwright.sync_api import sync_playwright

    from _browser import CHROMIUM, CHROMIUM_ARGS
    python, repo, env, _, _ = binder
    with lab_of(python, env, repo, tmp_path / "home", [notebook]) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = open_lab(browser, url)
            open_and_run_all(page, notebook)
            wait_until(page, ALL_RAN_JS, f"every cell of {notebook} to run", timeout_s=600)
            text = page.evaluate("() => document.querySelector('.jp-Notebook').innerText")
            assert "✓" in text                      # the closing cell's figure checks printed
        finally:
            browser.close()
