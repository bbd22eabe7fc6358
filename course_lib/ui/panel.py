"""The sampling panel: move temperature, top-k, top-p, min-p and u, see the kept set and the draw.

Taught in notebook 07 (sampling). Two layers:

* plain functions (no widgets): :class:`PanelSettings` → :func:`panel_view` (what the rule
  keeps for one row of logits, the renormalised bars, the interval that holds u) →
  :func:`describe` (a plain-text summary) and :func:`render_html` (bars and the [0, 1) strip);
* :class:`SamplingPanel`, an ipywidgets front end that calls them whenever a control moves,
  and whose "append" button adds the chosen id and runs the model one step further.

Any model and vocabulary plug in: ``model(ids (1, T)) -> logits (1, T, V)`` with a
``config.n_positions``, and ``piece(id) -> str`` (a ``PieceVocab``'s ``piece`` method, or
any function, e.g. one that decodes a GPT-2 id).
"""
from __future__ import annotations

import html
from dataclasses import dataclass

import torch

from ..decoding import SamplingRule, SamplingStep, interval_boundaries, pick_interval, ranked_ids
from ..tokens.vocab import show_piece
from .language import current_language, text
from .palette import PANEL_COLORS
from .widget_view import widget_bundle


@dataclass(frozen=True)
class PanelSettings:
    """The panel's controls. Off values: top_k = 0, top_p = 1.0, min_p = 0.0.

    ``order``: how the [0, 1) strip is laid out before u is located: ``"id"`` (id 0 first,
    the interface article's picture) or ``"ranked"`` (most likely first, the lab article's
    running sums).
    """

    temperature: float = 1.0
    greedy: bool = False
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    u: float = 0.5
    order: str = "id"

    def rule(self) -> SamplingRule:
        """The :class:`SamplingRule` these controls describe (validates every value)."""
        return SamplingRule(temperature=self.temperature, greedy=self.greedy,
                            top_k=self.top_k if self.top_k != 0 else None,
                            top_p=self.top_p if self.top_p < 1.0 else None,
                            min_p=self.min_p if self.min_p > 0.0 else None)

    def label(self) -> str:
        """One line naming every control, at fixed precision."""
        if self.greedy:
            head = text("panel.greedy")
        else:
            head = f"T={self.temperature:.2f}"
        off = text("panel.off")
        k = off if self.top_k == 0 else str(self.top_k)
        p = off if self.top_p >= 1.0 else f"{self.top_p:.2f}"
        m = off if self.min_p <= 0.0 else f"{self.min_p:.2f}"
        strip = text("panel.ranked_strip") if self.order == "ranked" else ""
        return text("panel.label", head=head, k=k, p=p, m=m, u=self.u, strip=strip)


@dataclass
class PanelView:
    """Everything the panel shows for one row of logits and one setting."""

    settings: PanelSettings
    step: SamplingStep            # probs after temperature, kept ids (ranked), final row
    layout: list[int]             # the ids in the order the strip lays them out
    boundaries: list[float]       # running sums of ``step.final`` in that order: the strip
    position: int                 # the place in ``layout`` whose interval holds u

    @property
    def chosen(self) -> int:
        """The id whose interval holds u."""
        return self.layout[self.position]

    @property
    def interval(self) -> tuple[float, float]:
        """[start, end) of the chosen id's interval."""
        end = self.boundaries[self.position]
        start = self.boundaries[self.position - 1] if self.position > 0 else 0.0
        return start, end


def panel_view(logits, settings: PanelSettings) -> PanelView:
    """Apply the settings' rule to one row of logits and draw with the settings' u."""
    if settings.order not in ("id", "ranked"):
        raise ValueError(f"order must be 'id' or 'ranked', got {settings.order!r}")
    step = settings.rule().apply(logits)
    layout = list(range(len(step.final))) if settings.order == "id" else ranked_ids(step.final)
    boundaries = interval_boundaries([step.final[i] for i in layout])
    return PanelView(settings=settings, step=step, layout=layout, boundaries=boundaries,
                     position=pick_interval(boundaries, settings.u))


def describe(view: PanelView, piece, max_rows: int = 12) -> str:
    """A fixed-precision plain-text summary: the setting, the kept set, the chosen token."""
    show = lambda i: show_piece(piece(i))                      # noqa: E731
    kept = view.step.kept
    lines = [view.settings.label(),
             text("panel.kept", n=len(kept), V=len(view.step.final))]
    for i in kept[:max_rows]:
        lines.append(f"  {show(i):<14} p={view.step.probs[i]:.3f}  p'={view.step.final[i]:.3f}")
    if len(kept) > max_rows:
        lines.append(text("panel.more", n=len(kept) - max_rows))
    start, end = view.interval
    lines.append(text("panel.lands", u=view.settings.u, start=start, end=end, token=show(view.chosen),
                      id=view.chosen))
    return "\n".join(lines)


COLORS = PANEL_COLORS

# the width of the controls' labels (ipywidgets' description_width), per language: the Chinese
# labels mix full-width characters and brackets and need more room than the English ones
DESCRIPTION_WIDTH = {"en": "90px", "zh": "120px"}


STRIP_PX, STRIP_CHAR_PX = 560, 7.2


def render_html(view: PanelView, piece, max_rows: int = 12) -> str:
    """Bars (p after temperature in grey, renormalised p' in colour) and the interval strip."""
    esc = lambda i: html.escape(show_piece(piece(i)))          # noqa: E731
    step, kept = view.step, set(view.step.kept)
    order = sorted(range(len(step.probs)), key=step.probs.__getitem__, reverse=True)[:max_rows]
    rows = []
    cell = "style='font-family:monospace;padding:1px 10px 1px 0'"
    for i in order:
        color = COLORS[i % len(COLORS)] if i in kept else "#cccccc"
        mark = text("panel.chosen") if i == view.chosen else ""
        rows.append(
            f"<tr><td {cell}>{esc(i)}</td><td {cell}>{step.probs[i]:.3f}</td>"
            f"<td {cell}>{step.final[i]:.3f}</td>"
            f"<td style='width:300px;padding-right:10px'><div style='background:#d5d5d5;height:6px;"
            f"width:{100 * step.probs[i]:.1f}%'></div><div style='background:{color};height:10px;"
            f"width:{100 * step.final[i]:.1f}%'></div></td><td><b>{mark}</b></td></tr>")
    head = "style='text-align:left;padding-right:10px'"
    table = (f"<table style='border-collapse:collapse'><tr><th {head}>{text('panel.token')}</th><th {head}>p</th>"
             f"<th {head}>p′</th><th {head}>{html.escape(text('panel.bars_legend'))}</th><th></th></tr>"
             + "".join(rows) + "</table>")
    # The strip: 560 px wide; each interval's name in its upper 18 px where the whole name fits
    # (bold 12 px monospace: about 7.2 px a character), the red u line in its lower part, so the
    # line never crosses a name; an interval too narrow for its name is named by its tooltip.
    segments, start = [], 0.0
    for i, end in zip(view.layout, view.boundaries):
        width = end - start
        if width > 0:
            name = show_piece(piece(i))
            label = esc(i) if len(name) * STRIP_CHAR_PX + 2 <= width * STRIP_PX else ""
            outline = "box-shadow:inset 0 0 0 3px black;" if i == view.chosen else ""
            segments.append(
                f"<div title='{esc(i)} [{start:.3f}, {end:.3f})' style='position:absolute;"
                f"left:{100 * start:.2f}%;width:{100 * width:.2f}%;top:0;bottom:0;"
                f"background:{COLORS[i % len(COLORS)]};{outline}color:white;font:bold 12px monospace;"
                f"line-height:18px;text-align:center;overflow:hidden;white-space:nowrap;"
                f"border-right:1px solid white'><span class='sampling-strip-label'>{label}</span></div>")
        start = end
    marker = (f"<div class='sampling-strip-u' style='position:absolute;left:{100 * view.settings.u:.2f}%;"
              f"top:18px;bottom:-6px;border-left:3px solid red;z-index:2'></div>")
    strip = (f"<div style='margin:14px 0 4px 0'>{html.escape(text('panel.strip'))}</div>"
             f"<div class='sampling-strip' style='position:relative;height:30px;width:{STRIP_PX}px;"
             "border:1px solid #555'>" + "".join(segments) + marker + "</div>")
    summary = html.escape(describe(view, piece, max_rows))
    return (table + strip + "<pre class='sampling-panel-summary' style='font-size:12px;margin-top:12px'>"
            + summary + "</pre>")


class SamplingPanel:
    """The interactive panel (ipywidgets). Display it as a cell's last expression.

    ``SamplingPanel(model, piece, prompt_ids, end_id=None, settings=PanelSettings())``.
    Moving a control re-applies the rule to the same logits; "append" adds the chosen id and
    runs the model once more on the longer sequence; "reset" goes back to the prompt.
    """

    def __init__(self, model, piece, prompt_ids, end_id: int | None = None,
                 settings: PanelSettings = PanelSettings(), max_rows: int = 12, title: str = ""):
        import ipywidgets as w

        self.model, self.piece, self.end_id, self.max_rows = model, piece, end_id, max_rows
        self.prompt_ids = [int(i) for i in prompt_ids]
        self.title = title
        self.ids = list(self.prompt_ids)
        self.stopped = ""
        vocab_size = model.config.vocab_size
        # the labels' column: wide enough for the longest label in each language (the browser
        # test checks that no label is cut off)
        label_width = DESCRIPTION_WIDTH[current_language()]
        style = {"description_width": label_width}
        layout = w.Layout(width=f"{330 + int(label_width[:-2])}px")
        self.temperature = w.FloatSlider(value=settings.temperature, min=0.05, max=3.0, step=0.05,
                                         description=text("panel.temperature"), style=style, layout=layout)
        self.greedy = w.Checkbox(value=settings.greedy, description=text("panel.greedy_box"))
        self.top_k = w.IntSlider(value=settings.top_k, min=0, max=min(vocab_size, 50),
                                 description=text("panel.top_k"), style=style, layout=layout)
        self.top_p = w.FloatSlider(value=settings.top_p, min=0.05, max=1.0, step=0.01,
                                   description=text("panel.top_p"), style=style, layout=layout)
        self.min_p = w.FloatSlider(value=settings.min_p, min=0.0, max=1.0, step=0.01,
                                   description=text("panel.min_p"), style=style, layout=layout)
        self.u = w.FloatSlider(value=settings.u, min=0.0, max=0.999, step=0.001, readout_format=".3f",
                               description="u", style=style, layout=layout)
        # (label shown, value): the value stays "id" / "ranked" in every language
        self.order = w.ToggleButtons(options=[(text("panel.order_id"), "id"), (text("panel.order_ranked"), "ranked")],
                                     value=settings.order, description=text("panel.order"),
                                     style={"description_width": label_width, "button_width": "90px"})
        self.append_button = w.Button(description=text("panel.append"), button_style="primary",
                                      layout=w.Layout(width="200px"))
        self.reset_button = w.Button(description=text("panel.reset"), layout=w.Layout(width="100px"))
        self.context = w.HTML()
        self.view_html = w.HTML()
        controls = [self.temperature, self.greedy, self.top_k, self.top_p, self.min_p, self.u, self.order]
        for control in controls:
            control.observe(lambda change: self.refresh(), names="value")
        self.append_button.on_click(lambda button: self.append())
        self.reset_button.on_click(lambda button: self.reset())
        self.widget = w.VBox([self.context, *controls,
                              w.HBox([self.append_button, self.reset_button]), self.view_html])
        self.widget.add_class("sampling-panel")
        self._run_model()

    # -- state -----------------------------------------------------------------------------

    def settings(self) -> PanelSettings:
        return PanelSettings(temperature=self.temperature.value, greedy=self.greedy.value,
                             top_k=self.top_k.value, top_p=self.top_p.value,
                             min_p=self.min_p.value, u=self.u.value, order=self.order.value)

    def _run_model(self):
        with torch.no_grad():
            self.logits = self.model(torch.tensor([self.ids]))[0, -1].tolist()   # (V,)
        self.refresh()

    def refresh(self):
        """Re-apply the rule to the current logits and redraw (called by every control)."""
        self.view = panel_view(self.logits, self.settings())
        self.context.value = "<pre style='font-size:13px'>" + html.escape(self.context_text()) + "</pre>"
        self.view_html.value = render_html(self.view, self.piece, self.max_rows)
        self.temperature.disabled = self.greedy.value
        self.append_button.disabled = bool(self.stopped)

    def context_text(self) -> str:
        spelled = "".join(self.piece(i) for i in self.ids if i != self.end_id)
        line = (text("panel.titled", title=self.title) if self.title else "") + text(
            "panel.context", text=spelled, ids=self.ids)
        return line + (f"\n{self.stopped}" if self.stopped else "")

    def append(self):
        """Append the chosen id; stop at the end id or a full position table, else run again."""
        if self.stopped:
            return
        chosen = self.view.chosen
        self.ids.append(chosen)
        if chosen == self.end_id:
            self.stopped = text("panel.stopped_end", id=chosen)
            self.refresh()
        elif len(self.ids) >= self.model.config.n_positions:
            self.stopped = text("panel.stopped_full", n=self.model.config.n_positions)
            self.refresh()
        else:
            self._run_model()

    def reset(self):
        self.ids, self.stopped = list(self.prompt_ids), ""
        self._run_model()

    def set(self, **values):
        """Set controls by name (``panel.set(temperature=0.7, top_p=0.9)``), as a learner would."""
        for name, value in values.items():
            getattr(self, name).value = value
        return self

    # -- display ---------------------------------------------------------------------------

    def summary(self) -> str:
        """The panel's state as plain text (also its text/plain representation)."""
        return self.context_text() + "\n" + describe(self.view, self.piece, self.max_rows)

    def _repr_mimebundle_(self, **kwargs):
        data = widget_bundle(self.widget, **kwargs)
        data["text/plain"] = self.summary()
        return data
