"""Loaded first by every stage of ``make test`` (``-p tests._quick_start``, before pytest's
plugins): keeps jsonschema from importing ``rfc3987_syntax``.

nbval imports nbformat, which imports jsonschema, which imports ``rfc3987_syntax`` if it is
installed (jupyter_events, a JupyterLab dependency, brings it in); that module builds about
forty Earley parsers of the RFC 3987 grammar the moment it is imported — 1–2 s of CPU in every
pytest process (the controller and each xdist worker). jsonschema uses it only for its "iri"
and "iri-reference" format checks, which nbformat never asks for (it validates notebooks
without a format checker): without it, the notebooks are read and validated exactly the same.
Only this pytest process is affected; the notebook kernels it starts import nothing of it.
"""
import sys

sys.modules.setdefault("rfc3987_syntax", None)      # None in sys.modules: `import` raises ImportError
