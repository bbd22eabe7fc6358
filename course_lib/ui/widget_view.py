"""A live widget as a notebook output, the same with ipywidgets 7 and 8.

Used (not taught) by the token playground of notebook 01 and the sampling panel of notebook 07:
each is a small object that shows an ipywidgets box, with its own text and HTML for places where
widgets do not run. ipywidgets 8 gives a widget's output as ``_repr_mimebundle_``; ipywidgets 7
(Colab's and Kaggle's) has no such method: a widget displays itself (``_ipython_display_``),
sending its text and a view of its model. :func:`widget_bundle` returns that same bundle with
either version, so a course object can add its text and HTML to it.
"""
from __future__ import annotations

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def widget_bundle(widget, **kwargs) -> dict:
    """``{mimetype: data}`` that shows ``widget`` live: ipywidgets 8's own bundle, or, on
    ipywidgets 7, the one its ``_ipython_display_`` would send (its text, a view of its model)."""
    own = getattr(widget, "_repr_mimebundle_", None)
    if own is not None:
        return own(**kwargs)
    # ipywidgets 7.x: Widget._ipython_display_ sends exactly this (widget protocol 2.0)
    plain = repr(widget)
    return {"text/plain": plain[:110] + "…" if len(plain) > 110 else plain,
            WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}}
