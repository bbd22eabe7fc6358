"""The interval strip's labels are clear of its u lines: notebook 07 draws the lab's kept six
(T = 0.7, top-p 0.9) with u = 0.5 and u = 0.8, and u = 0.8 falls inside ␣sofa's interval.
Measured on the drawn figure: each label's extent on the canvas against each line's path."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from course_lib.ui import plots

# the lab's kept six at T = 0.7, top-p 0.9, in ranked order (notebook 07, lab.t07_top_p)
LAB_SIX = [0.626, 0.144, 0.074, 0.071, 0.044, 0.040]
LABELS = ["␣roof", "␣wall", "␣sofa", "␣floor", "␣cat", "␣dog"]


def struck_labels(probs, labels, us) -> list[str]:
    fig, ax = plt.subplots(figsize=(7.5, 1.9))
    try:
        plots.interval_strip(probs, labels, us=us, ax=ax)
        renderer = FigureCanvasAgg(fig).get_renderer()
        fig.draw(renderer)
        lines = [line.get_transform().transform_path(line.get_path()) for line in ax.lines]
        assert len(lines) == len(us)
        return [label.get_text() for label in ax.texts if label.get_text() in labels
                for path in lines if path.intersects_bbox(label.get_window_extent(renderer), filled=False)]
    finally:
        plt.close(fig)


@pytest.mark.parametrize("us", [(0.5, 0.8), (0.3, 0.6, 0.72, 0.8, 0.9)])
def test_no_u_line_strikes_through_an_interval_label(us):
    assert struck_labels(LAB_SIX, LABELS, us) == []


def test_a_u_line_inside_a_labelled_interval_still_sits_in_that_interval():
    """u = 0.8 lies in ␣sofa's interval [0.770, 0.844): its line is drawn there, on the strip."""
    fig, ax = plt.subplots(figsize=(7.5, 1.9))
    try:
        plots.interval_strip(LAB_SIX, LABELS, us=[0.8], ax=ax)
        (x0, x1), (y0, y1) = ax.lines[0].get_data()
        sofa = [c for c in ax.containers if c.get_label().startswith("␣sofa")]
        bar = sofa[0].patches[0]
        assert x0 == x1 == 0.8 and bar.get_x() <= 0.8 < bar.get_x() + bar.get_width()
        assert y0 < bar.get_y() < y1                     # the line starts below the strip and enters it
    finally:
        plt.close(fig)
