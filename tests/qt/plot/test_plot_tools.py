"""The plot's view tools: smooth, log scale, wall time, zoom, and overlaid curves of other runs
(the Runs dock that overlays them is tested in test_run_history.py)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import math

import numpy as np
import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QPushButton,
    QSlider,
    QWidget,
)

from ftgui.core.timeline import smoothing
from ftgui.qt.plot.loss_plot import LossPlot
from ftgui.qt.plot.tools import PlotPane

T0 = 1_700_000_000.0


def temp_settings(tmp_path) -> QSettings:
    return QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def pane(qtbot, tmp_path):
    plot = LossPlot()
    widget = PlotPane(plot, temp_settings(tmp_path))
    qtbot.addWidget(widget)
    widget.resize(800, 500)
    widget.show()
    return widget


# ------------------------------------------------------------------------------ plot tools
def test_the_toolbar_widgets_have_their_names(pane):
    assert pane.findChild(QSlider, "smoothingSlider").maximum() == 99
    assert pane.findChild(QCheckBox, "logScaleCheck") is not None
    combo = pane.findChild(QComboBox, "xAxisCombo")
    assert [combo.itemText(i) for i in range(combo.count())] == ["step", "wall time (s)"]
    assert pane.findChild(QPushButton, "resetZoomButton") is not None


def test_smoothing_draws_the_raw_curve_faint_and_the_smoothed_one_solid(pane):
    plot = pane.plot
    losses = [2.0, 1.0, math.nan, 0.5, 0.25]
    for step, loss in enumerate(losses, start=1):
        plot.add_step(0, step, loss)
    plot.redraw()
    trace = plot.traces[0]
    assert not trace.smooth.isVisible()
    assert trace.raw.opts["pen"].color().alpha() == 255

    pane.findChild(QSlider, "smoothingSlider").setValue(60)
    assert plot.smoothing == 0.6
    assert trace.smooth.isVisible()
    assert trace.raw.opts["pen"].color().alpha() < 255
    x, y = trace.smooth.getData()
    assert x.tolist() == [1, 2, 3, 4, 5]
    np.testing.assert_array_equal(y, smoothing.ema(losses, 0.6))  # NaN stays a gap
    assert trace.smooth.opts["connect"] == "finite"
    assert pane.findChild(object, "smoothingValue").text() == "0.60"

    plot.add_step(0, 6, 0.125)  # a live curve is smoothed on, point by point
    plot.redraw()
    np.testing.assert_array_equal(trace.smooth.getData()[1],
                                  smoothing.ema(losses + [0.125], 0.6))

    pane.findChild(QSlider, "smoothingSlider").setValue(0)
    assert not trace.smooth.isVisible()
    assert trace.raw.opts["pen"].color().alpha() == 255


def test_log_scale_draws_the_loss_in_powers_of_ten(pane):
    plot = pane.plot
    for step, loss in enumerate([1.0, 0.1, 0.01], start=1):
        plot.add_step(0, step, loss)
    plot.redraw()
    pane.findChild(QCheckBox, "logScaleCheck").setChecked(True)
    assert plot.traces[0].raw.opts["logMode"] == [False, True]
    assert plot.validation_item.opts["logMode"] == [False, True]
    assert plot.getPlotItem().getAxis("left").labelText == "loss (log scale)"
    plot.getPlotItem().ctrl.logYCheck.setChecked(False)  # the plot's own menu, same switch
    assert not pane.findChild(QCheckBox, "logScaleCheck").isChecked()
    assert plot.traces[0].raw.opts["logMode"] == [False, False]


def test_wall_time_puts_each_step_at_seconds_since_the_run_began(pane):
    plot = pane.plot
    plot.set_time_origin(T0)
    for step in (1, 2, 3):
        plot.add_step(0, step, 1.0 / step, time=T0 + 4.0 + step)
    plot.add_marker("crash", 3, "killed @ 3")
    plot.redraw()
    pane.findChild(QComboBox, "xAxisCombo").setCurrentIndex(1)
    assert plot.x_axis == "time"
    assert plot.traces[0].raw.getData()[0].tolist() == [5.0, 6.0, 7.0]
    assert not plot.markers[0][2].isVisible()  # markers are step positions
    assert "wall time" in plot.getPlotItem().getAxis("bottom").labelText
    pane.findChild(QComboBox, "xAxisCombo").setCurrentIndex(0)
    assert plot.traces[0].raw.getData()[0].tolist() == [1.0, 2.0, 3.0]
    assert plot.markers[0][2].isVisible()


def test_steps_added_without_a_time_still_plot_by_step_and_say_why_not_by_time(pane):
    plot = pane.plot
    plot.add_step(0, 1, 0.5)  # the call existing callers make
    plot.set_x_axis("time")
    assert plot.traces[0].raw.getData()[0] is None or len(plot.traces[0].raw.getData()[0]) == 0
    assert "without times" in plot.notice.toPlainText()
    plot.set_x_axis("step")
    assert plot.notice.toPlainText() == ""
    assert plot.traces[0].raw.getData()[0].tolist() == [1.0]


def test_reset_zoom_shows_all_the_data_again(pane, qtbot):
    plot = pane.plot
    for step in range(1, 101):
        plot.add_step(0, step, 1.0 / step)
    plot.redraw()
    view = plot.getPlotItem().getViewBox()
    view.setXRange(10, 20, padding=0)  # what a mouse zoom does
    assert view.autoRangeEnabled() == [False, True]
    pane.findChild(QPushButton, "resetZoomButton").click()
    assert view.autoRangeEnabled() == [True, True]
    qtbot.waitUntil(lambda: view.viewRange()[0][0] <= 1 and view.viewRange()[0][1] >= 100)


def test_the_tool_settings_are_remembered(qtbot, tmp_path):
    settings = temp_settings(tmp_path)
    first = PlotPane(LossPlot(), settings)
    qtbot.addWidget(first)
    first.tools.smoothing_slider.setValue(85)
    first.tools.log_check.setChecked(True)
    first.tools.x_axis_combo.setCurrentIndex(1)
    again = PlotPane(LossPlot(), settings)
    qtbot.addWidget(again)
    assert (again.plot.smoothing, again.plot.log_y, again.plot.x_axis) == (0.85, True, "time")
    assert again.tools.smoothing_slider.value() == 85


def test_choices_made_before_the_plot_exists_are_applied_to_it(qtbot, tmp_path):
    pane = PlotPane(None, temp_settings(tmp_path))  # as the window builds it: a placeholder
    qtbot.addWidget(pane)
    assert pane.plot is None and pane.findChild(QWidget, "lossPlotPlaceholder") is not None
    pane.tools.smoothing_slider.setValue(50)
    pane.tools.log_check.setChecked(True)
    pane.tools.x_axis_combo.setCurrentIndex(1)
    pane.tools.reset_button.click()  # nothing to reset yet
    plot = LossPlot()
    pane.set_plot(plot)
    assert (plot.smoothing, plot.log_y, plot.x_axis) == (0.5, True, "time")
    assert pane.findChild(QWidget, "lossPlot") is plot
    plot.getPlotItem().ctrl.logYCheck.setChecked(False)  # and they stay in step from now on
    assert not pane.tools.log_check.isChecked() and not plot.log_y
    pane.tools.smoothing_slider.setValue(0)
    assert plot.smoothing == 0.0


# ------------------------------------------------------------------------------ overlays
def test_overlays_have_their_own_colour_and_legend_entry(pane):
    plot = pane.plot
    plot.add_step(0, 1, 1.0)
    plot.add_overlay("a", "run-a", [1, 2], [2.0, 1.0], [T0 + 1, T0 + 2], T0)
    plot.add_overlay("b", "run-b", [1, 2], [3.0, 2.0])
    plot.redraw()
    colours = {plot.overlays[key].raw.opts["pen"].color().name() for key in ("a", "b")}
    assert len(colours) == 2 and QColor("#1f77b4").name() not in colours
    labels = [label.text for _, label in plot.legend.items]
    assert labels == ["training loss", "run-a", "run-b"]
    plot.add_overlay("a", "run-a", [1, 2, 3], [2.0, 1.0, 0.5])  # again: replaced, same colour
    assert len(plot.overlays) == 2 and plot.overlays["a"].series.size == 3
    plot.clear_run()  # opening another run keeps the overlays
    assert sorted(plot.overlays) == ["a", "b"]
    plot.clear_overlays()
    assert plot.overlays == {}
    assert [label.text for _, label in plot.legend.items] == []


def shown_plot(qtbot, width: int, height: int, steps: int = 100) -> LossPlot:
    """A shown LossPlot of `width` × `height` px with the losses 1/step of steps 1..`steps`."""
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(width, height)
    plot.show()
    for step in range(1, steps + 1):
        plot.add_step(0, step, 1.0 / step)
    return plot


def settle(plot) -> None:
    plot.redraw()
    for _ in range(3):
        QApplication.processEvents()


def _pixels_near(image, colour: str, tolerance: int = 40) -> int:
    want = QColor(colour)
    count = 0
    for y in range(image.height()):
        for x in range(image.width()):
            got = image.pixelColor(x, y)
            if (abs(got.red() - want.red()) + abs(got.green() - want.green())
                    + abs(got.blue() - want.blue())) < tolerance:
                count += 1
    return count


@pytest.mark.parametrize("presenting", [False, True])
def test_a_crash_and_a_resume_at_the_same_step_both_show(qtbot, presenting):
    """A preemption at step 50 resumes at 50: the red and the green dashes alternate."""
    from ftgui.qt import theme

    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(300, 240)
    plot.set_presenting(presenting)
    for step in range(1, 101):
        plot.add_step(0, step, 1.0 / step)
    plot.add_marker("crash", 50, "")
    plot.add_marker("resume", 50, "")
    plot.redraw()
    image = plot.grab().toImage()
    crash = _pixels_near(image, theme.MARKER_COLOURS["crash"])
    resume = _pixels_near(image, theme.MARKER_COLOURS["resume"])
    assert crash > 30 and resume > 30
    assert abs(crash - resume) < 0.5 * max(crash, resume)  # about as much of each


def test_a_marker_label_at_the_plots_right_edge_goes_left_of_its_line(qtbot):
    plot = shown_plot(qtbot, 500, 300)
    plot.add_marker("crash", 5, "killed @ 5")  # prefers the left: no room, goes right
    plot.add_marker("resume", 99, "resume ← 99")  # prefers the right: no room, goes left
    settle(plot)
    box = plot.getPlotItem().getViewBox().sceneBoundingRect()
    for _kind, step, line in plot.markers:
        label = line.label.sceneBoundingRect()
        assert line.label.isVisible()
        assert box.left() <= label.left() and label.right() <= box.right(), (step, label, box)
    [crash, resume] = [line for _, _, line in plot.markers]
    assert crash.label.anchors[0] == (0, 0.5) and resume.label.anchors[0] == (1, 0.5)


def test_labels_of_a_crash_and_a_resume_at_one_step_share_a_row_and_off_view_ones_hide(qtbot):
    plot = shown_plot(qtbot, 600, 300)
    plot.getPlotItem().setXRange(1, 100, padding=0)
    plot.add_marker("crash", 50, "killed @ 50")  # left of the line
    plot.add_marker("resume", 50, "resume ← 50")  # right of it: the same row
    plot.add_marker("crash", 500, "killed @ 500")  # beyond the view
    settle(plot)
    crash, resume, beyond = (line.label for _, _, line in plot.markers)
    assert crash.isVisible() and resume.isVisible() and not beyond.isVisible()
    assert crash.orthoPos == resume.orthoPos  # the top row, both
    assert crash.sceneBoundingRect().right() <= resume.sceneBoundingRect().left() + 1


def test_a_label_that_fits_on_neither_side_of_its_line_is_hidden(qtbot):
    plot = shown_plot(qtbot, 120, 200)
    plot.add_marker("crash", 50, "killed by the operator at step 50")
    settle(plot)
    [(_, _, line)] = plot.markers
    assert not line.label.isVisible()


# ------------------------------------------------------------ marker labels a room can read
def _x_px(plot, step: float) -> float:
    from PySide6.QtCore import QPointF

    return plot.getPlotItem().getViewBox().mapViewToScene(QPointF(step, 0)).x()


@pytest.mark.parametrize("presenting", [False, True])
def test_a_marker_label_hides_what_is_behind_it_in_the_plots_background(qtbot, presenting):
    """No curve or validation point shows through a label: it is filled with the plot's
    background, opaque, a little beyond its text."""
    from ftgui.qt import theme

    plot = shown_plot(qtbot, 600, 300)
    plot.set_presenting(presenting)
    line = plot.add_marker("crash", 50, "worker 1 killed @ 50")
    settle(plot)
    fill = line.label.fill
    assert fill.style() == Qt.BrushStyle.SolidPattern
    assert fill.color() == plot.backgroundBrush().color()  # opaque: alpha 255 as the plot's
    assert fill.color().getRgb() == QColor(theme.PLOT_BACKGROUND).getRgb()
    padding = theme.presenting_px("marker_label_padding") if presenting \
        else theme.MARKER_LABEL_PADDING_PX
    assert line.label.textItem.document().documentMargin() == padding


def test_no_marker_line_is_drawn_across_another_markers_label(qtbot):
    """A worker killed at 62, resumed from 50: the crash's label, left of its line, reaches
    over step 50; the resume line, added later, passes under it, not through its text."""
    from ftgui.qt import theme

    plot = shown_plot(qtbot, 600, 300)
    plot.getPlotItem().setXRange(1, 100, padding=0)
    crash = plot.add_marker("crash", 62, "worker 1 killed @ 62")
    plot.add_marker("resume", 50, "resume ← 50")
    settle(plot)
    label = crash.label.sceneBoundingRect()
    x = round(_x_px(plot, 50))
    assert label.left() < x - 2 and x + 2 < label.right()  # the label does reach over it
    image = plot.grab().toImage()
    green = QColor(theme.MARKER_COLOURS["resume"])
    for y in range(int(label.top()) + 1, int(label.bottom()) - 1):
        for dx in (-1, 0, 1):
            got = image.pixelColor(x + dx, y)
            assert (abs(got.red() - green.red()) + abs(got.green() - green.green())
                    + abs(got.blue() - green.blue())) > 60, (x + dx, y)


def test_markers_of_one_dash_family_at_one_step_take_turns_along_the_line(qtbot):
    """A crash, a preemption and a hang at step 50 (all dashed): each draws one dash in three,
    shifted by a dash from the one before, so that all three colours show."""
    plot = shown_plot(qtbot, 300, 240)
    lines = [plot.add_marker(kind, 50, "") for kind in ("crash", "preemption", "hang")]
    lone = plot.add_marker("crash", 80, "")
    settle(plot)
    assert [line.pen.dashPattern() for line in lines] == [[4.0, 8.0]] * 3
    assert [line.pen.dashOffset() for line in lines] == [0.0, 4.0, 8.0]
    assert [line.stroke.pen.dashOffset() for line in lines] == [0.0, 4.0, 8.0]
    assert lone.pen.dashPattern() == [4.0, 4.0] and lone.pen.dashOffset() == 0.0


def test_two_workers_lost_at_one_step_stay_dotted_and_their_labels_are_stacked(qtbot):
    plot = shown_plot(qtbot, 600, 300)
    plot.getPlotItem().setXRange(1, 100, padding=0)
    first = plot.add_marker("worker_lost", 50, "worker 1 killed @ 50")
    second = plot.add_marker("worker_lost", 50, "worker 2 killed @ 50")
    settle(plot)
    assert first.pen.dashPattern() == second.pen.dashPattern() == [1.0, 1.0]
    assert first.pen.dashOffset() == second.pen.dashOffset() == 0.0
    assert first.label.isVisible() and second.label.isVisible()
    assert first.label.orthoPos != second.label.orthoPos
    top, below = first.label.sceneBoundingRect(), second.label.sceneBoundingRect()
    assert not top.intersects(below) and top.bottom() <= below.top()
    assert top.left() == pytest.approx(below.left())  # one above the other, left of the line
