"""The build backend of course_lib: setuptools, plus the checkout's data/ copied into the wheel.

course_lib reads files at run time (GPT-2's tokenizer files, the toy models' weights,
figures.json). In git they live once, in data/ at the top of the checkout; a wheel (``pip
install .``, ``pip install git+https://…``, ``python -m build``) must carry them, because an
installed package has no checkout above it. So the wheel's ``build_py`` step copies data/ to
``course_lib/_data/`` inside the build folder (never into the source tree), and
``course_lib.data.data_dir`` finds it there with ``importlib.resources``.

An editable install (``pip install -e .``, what ``make`` does) copies nothing: course_lib then
reads the checkout's data/ directly.

Both install the course's prebuilt JupyterLab extension (pyproject.toml's
``[tool.setuptools.data-files]``) into ``share/jupyter/labextensions/`` of the environment;
setuptools' editable wheel skips data files, so ``build_py`` installs them there itself.

pyproject.toml names this module as the build backend (``backend-path = [".ci"]``) and its
``BuildPyWithData`` as setuptools' ``build_py`` command; everything else is
``setuptools.build_meta`` unchanged.
"""
import shutil
from pathlib import Path

from setuptools.build_meta import *  # noqa: F401,F403 - the PEP 517 hooks, unchanged
from setuptools.command.build_py import build_py

CHECKOUT_DATA = Path(__file__).resolve().parent.parent / "data"
PACKAGED_DATA = Path("course_lib") / "_data"     # inside the wheel: course_lib/_data/figures.json, ...


class BuildPyWithData(build_py):
    """setuptools' build_py, then data/ copied to course_lib/_data/ in the build folder."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            # setuptools' editable wheel never installs [tool.setuptools] data-files (it asks the
            # distribution for `has_data`, which does not exist): put them in that wheel here, as a
            # wheel install would (run once: a setuptools that does it itself finds it done)
            self.run_command("install_data")
            return                                  # editable: the checkout's data/ is read in place
        if not (CHECKOUT_DATA / "figures.json").is_file():
            raise FileNotFoundError(f"{CHECKOUT_DATA / 'figures.json'} is missing: build the wheel "
                                    f"from a complete checkout of the course (data/ is part of it)")
        target = Path(self.build_lib) / PACKAGED_DATA
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(CHECKOUT_DATA, target)
