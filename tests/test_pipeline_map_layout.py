"""The pipeline map's words are clear of its lines: no arrow or dashed loop line runs through a
label ("▲ you are here", a stage's name or what it computes, the loop's caption), for every
notebook's map in both languages. Measured on the drawn figure: each text's extent on the canvas
against the path each line and arrow takes there."""
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.path import Path

from course_lib.ui.language import set_language
from course_lib.ui.pipeline_map import NOTEBOOK_STAGES, pipeline_map
from course_lib.ui.strings import STRINGS


def crossings(notebook: str, language: str) -> list[str]:
    """'<text> × <line>' for each label of the map that a line or an arrow runs through."""
    set_language(language)
    try:
        fig = pipeline_map(notebook).figure()
        renderer = FigureCanvasAgg(fig).get_renderer()
        fig.draw(renderer)                        # lays out texts and arrows in canvas pixels
        ax = fig.axes[0]
        paths = [(f"line {i}", line.get_transform().transform_path(line.get_path()))
                 for i, line in enumerate(ax.lines)]
        paths += [(f"arrow {i}", a.arrow_patch.get_transform().transform_path(a.arrow_patch.get_path())) for i, a in enumerate(ax.texts)
                  if getattr(a, "arrow_patch", None) is not None]
        found = []
        for label in ax.texts:
            if not label.get_text():
                continue                          # an annotation that is only an arrow
            box = label.get_window_extent(renderer)
            for name, path in paths:
                for segment in path.to_polygons(closed_only=False):
                    if Path(segment).intersects_bbox(box, filled=False):
                        found.append(f"{label.get_text()!r} × {name}")
                        break
        return found
    finally:
        set_language("en")


@pytest.mark.parametrize("language", sorted(STRINGS))
@pytest.mark.parametrize("notebook", sorted(NOTEBOOK_STAGES))
def test_no_line_runs_through_a_label_of_the_map(notebook, language):
    assert crossings(notebook, language) == [], f"notebook {notebook}'s map ({language})"


def test_the_measure_sees_a_line_through_a_label():
    """The measure itself: a label placed on the loop line is found."""
    fig = Figure(figsize=(4, 2), dpi=90)
    ax = fig.add_axes([0, 0, 1, 1])
    ax.plot([0, 1], [0.5, 0.5], linestyle="--")
    ax.text(0.5, 0.5, "▲ you are here", ha="center", va="center")
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    line, label = ax.lines[0], ax.texts[0]
    path = line.get_transform().transform_path(line.get_path())
    assert path.intersects_bbox(label.get_window_extent(renderer), filled=False)
