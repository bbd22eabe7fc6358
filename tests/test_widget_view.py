"""The live widgets of notebooks 01 (token playground) and 07 (sampling panel) show the same way
with ipywidgets 7 (Colab's and Kaggle's 7.7.1) and 8 (the lock's): their output carries the
widget view ipywidgets itself sends, beside the course's own text and HTML.

`make test` runs these with ipywidgets 8; the matrix's colab and kaggle rows with 7.7.1.
"""
import ipywidgets
import ipywidgets.widgets.widget as widget_module

from course_lib.toys.five_token import FIVE_TOKEN, INPUT_IDS
from course_lib.tokens.vocab import FIVE_TOKEN_VOCAB
from course_lib.ui.panel import SamplingPanel
from course_lib.ui.token_display import playground_text, playground_view, token_playground
from course_lib.ui.widget_view import WIDGET_VIEW, widget_bundle

MAJOR = int(ipywidgets.__version__.split(".")[0])


def shown_by_ipywidgets(widget, monkeypatch) -> dict:
    """What ipywidgets itself shows for ``widget``: 8's ``_repr_mimebundle_``; on 7, what its
    ``_ipython_display_`` sends to the notebook (caught on its way out)."""
    if MAJOR >= 8:
        return widget._repr_mimebundle_()
    sent = []
    monkeypatch.setattr(widget_module, "display", lambda data, raw: sent.append((data, raw)))
    widget._ipython_display_()
    [(data, raw)] = sent
    assert raw is True
    return data


def test_the_bundle_is_the_one_ipywidgets_sends(monkeypatch):
    assert MAJOR in (7, 8), ipywidgets.__version__
    assert hasattr(ipywidgets.VBox, "_repr_mimebundle_") == (MAJOR >= 8)   # the difference handled
    box = ipywidgets.VBox([ipywidgets.Text(value="Hi"), ipywidgets.HTML()])
    bundle = widget_bundle(box)
    assert bundle == shown_by_ipywidgets(box, monkeypatch)
    assert bundle[WIDGET_VIEW]["model_id"] == box.model_id and bundle[WIDGET_VIEW]["version_major"] == 2


def test_the_token_playground_shows_its_widget_and_its_text():
    playground = token_playground("Hi 你!")
    bundle = playground._repr_mimebundle_()
    assert bundle[WIDGET_VIEW]["model_id"] == playground.widget.model_id
    assert bundle["text/html"] == playground_view("Hi 你!", playground.enc)
    assert bundle["text/plain"] == playground_text("Hi 你!", playground.enc)
    playground.box.value = "Hello"                  # typing updates the view, on 7 as on 8
    assert playground.view.value == playground_view("Hello", playground.enc)


def test_the_sampling_panel_shows_its_widget_and_its_summary():
    panel = SamplingPanel(FIVE_TOKEN.load(), FIVE_TOKEN_VOCAB.piece, INPUT_IDS)
    bundle = panel._repr_mimebundle_()
    assert bundle[WIDGET_VIEW]["model_id"] == panel.widget.model_id
    assert bundle["text/plain"] == panel.summary()
    before = panel.view_html.value
    panel.set(temperature=2.0)                      # a control moves: the panel redraws
    assert panel.view_html.value != before and panel._repr_mimebundle_()["text/plain"] == panel.summary()
