"""The set-up of every notebook, in one call: its first code cell ends with ``start("03", language="en")``.

Used (not taught) at the top of every notebook, 01–07, in both editions, and in the worked
solutions. ``start(notebook, language=...)``

1. chooses the language of course_lib's labels and messages (:func:`.language.set_language`);
2. checks that every package the notebooks import can be found, and if one cannot, says in one
   line which one and how to install it (rather than a long traceback from a later cell);
3. turns on the hint under a NameError, "run the notebook from the top"
   (:func:`.hints.explain_name_errors`);
4. returns the course's map with this notebook's stage highlighted (:func:`.pipeline_map.pipeline_map`),
   which the cell shows as its last expression. With no notebook (the worked solutions) there is
   no map: it returns None and the cell shows nothing.

The cell keeps a ``try``/``except`` of its own around ``from course_lib.ui.start import start``:
when the kernel's Python has no course_lib at all, no code of course_lib can run. On Colab
(``google.colab`` loaded) or Kaggle (``$KAGGLE_KERNEL_RUN_TYPE`` set) the cell then says so in one
line and pip-installs the course from its home (pyproject.toml's ``[project.urls]``), so Run All
works on a fresh runtime; elsewhere it raises :data:`.strings.STRINGS`'s ``"start.missing"`` with
``name="course_lib"``, written out in the cell (tests/test_install_guidance.py keeps the two the
same; tests/test_home_links.py checks the install line).
"""
from __future__ import annotations

import importlib.util
import sys

from .hints import explain_name_errors
from .language import LANGUAGES, set_language, text
from .pipeline_map import NOTEBOOK_STAGES, PipelineMap, pipeline_map

# What the notebooks import besides course_lib: pyproject.toml's dependencies, by import name,
# without huggingface_hub (only fetching pretrained GPT-2 imports it, when a learner asks for the
# weights: a notebook run without them must not stop at its first cell). tests/test_start.py compares.
NEEDED = ("torch", "numpy", "matplotlib", "ipywidgets", "tiktoken", "regex", "safetensors")
OPTIONAL = ("huggingface_hub",)


def missing_packages() -> list[str]:
    """The packages of :data:`NEEDED` this Python cannot find (none are imported to find out)."""
    return [name for name in NEEDED if name not in sys.modules and importlib.util.find_spec(name) is None]


def start(notebook: str | None = None, *, language: str) -> PipelineMap | None:
    """Set up a notebook: its ``language`` (``"en"`` or ``"zh"``), a check that the packages it
    needs are installed, the NameError hint; return the map for ``notebook`` (``"01"`` … ``"07"``),
    or None when ``notebook`` is None.

    Raises ValueError for an unknown notebook or language (before changing anything), and
    ModuleNotFoundError, one line in ``language``, when a needed package is missing.
    """
    if notebook is not None and (not isinstance(notebook, str) or notebook not in NOTEBOOK_STAGES):
        raise ValueError(f"start(notebook={notebook!r}): the notebooks with a map are "
                         + ", ".join(repr(n) for n in NOTEBOOK_STAGES) + "; None draws no map")
    if language not in LANGUAGES:
        raise ValueError(f"start(language={language!r}): course_lib speaks "
                         + ", ".join(repr(code) for code in LANGUAGES))
    set_language(language)
    missing = missing_packages()
    if missing:
        raise ModuleNotFoundError(text("start.missing", name=missing[0]), name=missing[0])
    explain_name_errors()
    return None if notebook is None else pipeline_map(notebook)
