"""The presentation view's legend goes to the corner where it hides the least of the curves."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import numpy as np
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QApplication

from ftgui.qt.plot import legend_place
from ftgui.qt.plot.loss_plot import LossPlot


def test_hidden_counts_the_points_in_the_area_the_newest_weighing_most():
    x = np.arange(1.0, 11.0)
    y = np.full(10, 0.5)
    assert legend_place.hidden([(x, y)], (2.0, 4.0, 0.0, 1.0), recent_from=100.0) == 3.0
    assert legend_place.hidden([(x, y)], (2.0, 4.0, 0.6, 1.0), recent_from=100.0) == 0.0
    # steps 9 and 10 are the newest: 5 each
    assert legend_place.hidden([(x, y)], (8.0, 10.0, 0.0, 1.0), recent_from=9.0) == 11.0


def test_the_legend_moves_only_to_a_corner_that_hides_clearly_less():
    scores = {"bottom left": 10.0, "bottom right": 6.0, "top left": 8.0}
    assert legend_place.best_corner(scores, "bottom left") == "bottom left"  # not half
    scores["bottom right"] = 4.0
    assert legend_place.best_corner(scores, "bottom left") == "bottom right"
    assert legend_place.best_corner({"bottom left": 0.0, "top left": 0.0},
                                    "bottom left") == "bottom left"
    # the current corner left out (the inset is drawn there): the legend leaves it
    assert legend_place.best_corner({"bottom left": 9.0, "top left": 8.0},
                                    "top right") == "top left"
    assert legend_place.best_corner({}, "top right") == "top right"  # nowhere else to go


def test_presenting_a_loss_flat_from_the_start_the_legend_leaves_the_bottom_left(qtbot):
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(1000, 500)
    plot.show()
    for step in range(1, 401):  # low and flat, then far higher at the end: the bottom left
        plot.add_step(0, step, 0.05 if step <= 300 else 1.0)  # is full, the right empty
    plot.set_presenting(True)
    plot.redraw()
    QApplication.processEvents()
    plot._legend_looked = -np.inf
    plot.redraw()
    assert plot.legend_corner != "bottom left"
    box = plot.getPlotItem().getViewBox()
    rect = box.mapSceneToView(plot.legend.sceneBoundingRect()).boundingRect()
    x, y = plot.series[0].x(), plot.series[0].y()
    under = (x >= rect.left()) & (x <= rect.right()) & (y >= rect.top()) & (y <= rect.bottom())
    assert not under.any()  # the legend hides no point of the curve


def test_a_top_corner_is_under_the_labels_strip_and_never_under_the_inset(qtbot):
    from PySide6.QtCore import QRectF

    box = QRectF(0, 0, 1000, 500)
    assert legend_place.corner_rect("top right", box, 200, 80, 60.0) == QRectF(790, 70, 200, 80)
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(1000, 500)
    plot.show()
    for step in range(1, 266):
        plot.add_step(0, step, 1.0 / step)
    for step in range(201, 801):
        plot.add_step(1, step, 1.0 / step)
    plot.shade_redone(200, 265)
    plot.add_marker("crash", 265, "killed @ 265")
    plot.add_marker("resume", 200, "resume ← 200")
    plot.set_presenting(True)
    _look_again(plot, 3)
    assert plot.inset.isVisible()
    inset = plot.mapToScene(plot.inset.geometry()).boundingRect()
    assert not plot.legend.sceneBoundingRect().intersects(inset)


def test_a_legend_the_inset_came_over_moves_away(qtbot):
    """A demo's stage showed the checkpoint table under the plot: the plot grew shorter, the
    inset came over the legend in the top right, and the legend stayed there, its names cut
    (a presenter's screenshots): a corner under the inset is left, even when it hid least."""
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(870, 420)  # the plot beside the demo panel, over the checkpoint table
    plot.show()
    def loss(step):
        return 2.4 * np.exp(-step / 30) + 0.01 + 0.001 * (step % 7)

    for step in range(1, 651):
        plot.add_step(0, step, loss(step))
    for step in range(601, 1201):
        plot.add_step(1, step, loss(step))
    for step in range(100, 1201, 100):
        plot.add_validation(step, 0.09)
    plot.shade_redone(600, 650)
    plot.add_marker("crash", 650, "killed @ 650")
    plot.add_marker("resume", 600, "resume ← 600")
    plot.set_presenting(True)
    plot.legend_corner = "top right"
    plot._anchor_legend()
    _look_again(plot, 4)
    assert plot.inset.isVisible()
    inset = plot.mapToScene(plot.inset.geometry()).boundingRect()
    assert not plot.legend.sceneBoundingRect().intersects(inset), plot.legend_corner



def test_beside_the_inset_the_legend_slides_off_the_first_validation_point(qtbot):
    """The end of the Crash-and-recover demo beside its panel: the inset took the top right,
    and the legend in the top left covered the validation point of step 100 (stage-end.png).
    It slides along the top instead, clear of every validation point and of the inset."""
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(870, 560)
    plot.show()
    rng = np.random.default_rng(3)

    def loss(step):  # a noisy fall, as the demo's MLP: spikes up to 0.25 until step 350
        return 2.4 * np.exp(-step / 15) + 0.02 + 0.2 * np.exp(-step / 250) * rng.random()

    for step in range(1, 651):
        plot.add_step(0, step, loss(step))
    for step in range(601, 1201):
        plot.add_step(1, step, loss(step))
    for step, value in zip(range(100, 1201, 100), (0.142, 0.108, 0.1, 0.089, 0.088, 0.089, 0.092,
                                                     0.092, 0.095, 0.096, 0.097, 0.1),
                           strict=True):
        plot.add_validation(step, value)
    plot.shade_redone(600, 650)
    plot.add_marker("crash", 650, "killed @ 650")
    plot.add_marker("resume", 600, "resume ← 600")
    plot.set_presenting(True)
    _look_again(plot, 4)
    assert plot.inset.isVisible()
    legend = plot.legend.sceneBoundingRect()
    assert not legend.intersects(plot.mapToScene(plot.inset.geometry()).boundingRect())
    radius = plot.validation_item.opts["symbolSize"] / 2
    assert _validation_under(plot, legend.adjusted(-radius, -radius, radius, radius)) == [], (
        plot.legend_corner, plot.legend_slide)


def test_the_legend_leaves_at_once_where_the_inset_appears(qtbot):
    """The checkpoint-interval demo just after its kill: the legend had looked (the resume's
    marker), then the redone range came and its inset was drawn over the legend, a stray grey
    edge under the inset all the room saw of it (a presenter's picture). The inset appearing
    (or moving) makes the legend look again at the next redraw, not a second later, also when
    the y range stays (a short plot, its headroom at the cap)."""
    import time

    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(870, 420)
    plot.show()
    plot.set_presenting(True)
    for step in range(1, 396):
        plot.add_step(0, step, 0.6 * np.exp(-step / 40) + 0.02 + 0.01 * (step % 5))
    for step in range(100, 391, 10):
        plot.add_validation(step, 0.09)
    plot.add_marker("crash", 395, "killed @ 395")
    plot.add_marker("resume", 390, "resume ← 390")
    plot.shade_redone(390, 395)
    for step in range(391, 411):
        plot.add_step(1, step, 0.6 * np.exp(-step / 40) + 0.02 + 0.01 * (step % 5))
    _look_again(plot, 3)
    assert plot.inset.isVisible()
    inset = plot.mapToScene(plot.inset.geometry()).boundingRect()
    under = next(place for place in plot._legend_places()
                 if plot._legend_rect(place).intersects(inset))
    # as it was just before the inset came: the legend there, having looked at this y range
    # and these markers a moment ago
    plot.legend_corner, plot.legend_slide = under
    plot._anchor_legend()
    low, high = plot.getPlotItem().getViewBox().viewRange()[1]
    plot._legend_scene = (low, high, [395, 390], None)
    plot._legend_looked = time.monotonic()
    plot.redraw()
    QApplication.processEvents()
    assert not plot.legend.sceneBoundingRect().intersects(inset), (
        plot.legend_corner, plot.legend_slide)

def test_the_legend_keeps_off_the_kill_a_room_has_just_seen(qtbot):
    """Just after the kill at 650 the legend sat in the top right, over the kill's line and
    the validation points of 500 and 600 (a presenter's picture): a corner across the
    newest markers' lines is taken only where every corner is."""
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(870, 340)  # beside the demo panel, over the checkpoint table
    plot.show()
    for step in range(1, 651):
        plot.add_step(0, step, 2.4 * np.exp(-step / 30) + 0.01 + 0.005 * (step % 3)
                      * np.exp(-step / 300))
    for step in range(100, 651, 100):
        plot.add_validation(step, 0.09 + 0.05 * np.exp(-step / 200))
    plot.add_marker("crash", 650, "killed @ 650")
    plot.set_presenting(True)
    for corner in ("bottom left", "top right"):  # top right: where the held stage left it
        plot.legend_corner = corner
        plot._anchor_legend()
        _look_again(plot, 4)
        box = plot.getPlotItem().getViewBox()
        rect = box.mapSceneToView(plot.legend.sceneBoundingRect()).boundingRect()
        assert not rect.left() <= 650 <= rect.right(), plot.legend_corner
    # nor over a validation point: the newest ones peeped out under its box (the remade
    # kill picture), one of six dots is worth more to a room than a stretch of a noisy curve
        x, y = plot.validation.x(), plot.validation.y()
        under = (x >= rect.left()) & (x <= rect.right()) & (y >= rect.top()) & (
            y <= rect.bottom())
        assert not under.any(), (corner, plot.legend_corner, x[under])


def test_the_legend_looks_again_at_once_after_a_kill(qtbot):
    """The legend looks for a corner once a second; the kill's picture, grabbed just after
    it, still had the corner chosen for the view before the kill, over the newest validation
    points. A new marker (or a refit of the y range) makes it look at the next redraw."""
    import time

    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(870, 340)
    plot.show()
    for step in range(1, 651):
        plot.add_step(0, step, 2.4 * np.exp(-step / 30) + 0.01)
    plot.set_presenting(True)
    _look_again(plot, 2)
    plot.legend_corner = "top right"  # where the view before the kill left it
    plot._anchor_legend()
    plot._legend_looked = time.monotonic()  # it has just looked
    plot.add_marker("crash", 650, "killed @ 650")
    plot.redraw()
    QApplication.processEvents()
    box = plot.getPlotItem().getViewBox()
    rect = box.mapSceneToView(plot.legend.sceneBoundingRect()).boundingRect()
    assert not rect.left() <= 650 <= rect.right(), plot.legend_corner
    looked = plot._legend_looked
    plot.redraw()  # nothing new: it waits its second
    assert plot._legend_looked == looked


def _look_again(plot, times: int) -> None:
    """Redraw `plot` `times` times, its legend looking for a corner at each."""
    for _ in range(times):
        plot._legend_looked = -np.inf
        plot.redraw()
        QApplication.processEvents()


def test_the_inset_covers_no_validation_point_and_comes_back_when_there_is_room(qtbot):
    """A demo's stage showed the checkpoint table under the plot: the plot got short and the
    inset, reaching below the room left above the losses, hid the validation points of
    400-600 (a presenter's picture). An inset that does not fit in that room is not shown;
    it comes back when the plot grows again (the stage hid the table)."""
    plot = _resumed_after_650(qtbot)
    for height, shown in ((560, True), (360, False), (420, True), (560, True)):
        plot.resize(870, height)
        _look_again(plot, 3)
        assert plot.inset.isVisible() == shown, height
        if shown:
            # its major ticks only are labelled, at a size a room reads (their minor ones'
            # labels touched each other)
            axis = plot.inset.getPlotItem().getAxis("left")
            assert axis.style["maxTextLevel"] == 0
            assert axis.style["tickFont"].pixelSize() >= 16
            inset = plot.mapToScene(plot.inset.geometry()).boundingRect()
            assert _validation_under(plot, inset) == [], height


def test_in_a_short_plot_the_legends_names_go_side_by_side(qtbot):
    """A demo's stage with the checkpoint table under the plot: stacked, the legend took 40 %
    of the plot's height and hid the validation points of 400 and 500 wherever it went
    (helper-22). In a short plot its names go side by side, and it hides none."""
    plot = _resumed_after_650(qtbot)
    radius = plot.validation_item.opts["symbolSize"] / 2
    for height, columns in ((340, 3), (545, 1), (340, 3)):  # 545: the demo's plot grown again
        plot.resize(870, height)
        _look_again(plot, 3)
        assert plot.legend.columnCount == columns, height
        legend = plot.legend.sceneBoundingRect().adjusted(-radius, -radius, radius, radius)
        assert _validation_under(plot, legend) == [], height


def _resumed_after_650(qtbot) -> LossPlot:
    """The presentation view's plot of the Crash-and-recover demo once resumed: killed at 650,
    resumed from 600, on to 770, a validation point of 0.09 every 100 steps."""
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.show()
    plot.set_presenting(True)
    for step in range(1, 651):
        plot.add_step(0, step, 2.4 * np.exp(-step / 15) + 0.005 + 0.001 * (step % 7))
    for step in range(601, 771):
        plot.add_step(1, step, 2.4 * np.exp(-step / 15) + 0.005 + 0.001 * (step % 7))
    for step in range(100, 701, 100):
        plot.add_validation(step, 0.09)
    plot.shade_redone(600, 650)
    plot.add_marker("crash", 650, "killed @ 650")
    plot.add_marker("resume", 600, "resume ← 600")
    return plot


def _validation_under(plot, rect) -> list[float]:
    """The steps of `plot`'s validation points whose centres lie in the scene rectangle
    `rect`."""
    box = plot.getPlotItem().getViewBox()
    return [float(x) for x, y in zip(plot.validation.x(), plot.validation.y(), strict=True)
            if rect.contains(box.mapViewToScene(QPointF(x, y)))]
