"""After a resume the run's history is one curve: an earlier line of training is drawn as the
newest up to the step the next line resumed from; only the steps lost and then redone are pale."""

from __future__ import annotations

import itertools
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import numpy as np
import pytest

from ftgui.qt.plot.loss_plot import (
    CURRENT_COLOUR,
    EARLIER_COLOUR,
    LOST_LABEL,
    REDONE_LABEL,
    LossPlot,
)


@pytest.fixture
def plot(qtbot):
    widget = LossPlot()
    qtbot.addWidget(widget)
    return widget


def _steps(item) -> list[float]:
    x, _ = item.getData()
    return [] if x is None else np.asarray(x).tolist()


def _labels(plot) -> list[str]:
    return [label.text for _, label in plot.legend.items]


def _line(plot, attempt, steps):
    for step in steps:
        plot.add_step(attempt, step, 1.0 / step)


def test_a_resume_that_redid_nothing_is_one_unbroken_curve(plot):
    _line(plot, 0, range(1, 11))
    _line(plot, 1, range(11, 16))
    plot.redraw()
    earlier = plot.traces[0]
    assert _steps(earlier.kept.raw) == list(range(1, 11))
    assert _steps(earlier.raw) == []  # nothing pale
    assert earlier.kept.raw.opts["pen"].color().name() == CURRENT_COLOUR
    assert _labels(plot) == ["training loss"]


def test_only_the_steps_lost_then_redone_are_pale(plot):
    _line(plot, 0, range(1, 11))
    _line(plot, 1, range(7, 13))  # resumed from step 6: 7–10 redone
    plot.redraw()
    earlier = plot.traces[0]
    assert _steps(earlier.kept.raw) == list(range(1, 7))
    assert _steps(earlier.raw) == list(range(6, 11))  # joined to the last kept point
    assert earlier.raw.opts["pen"].color().name() == EARLIER_COLOUR
    assert _labels(plot) == ["training loss", LOST_LABEL]


def test_the_shaded_redone_steps_have_their_legend_entry(plot):
    """The crash demo's narration spoke of a band the legend did not name (a presenter's
    finding): the shaded range is named, its swatch the band's colour with the pale line of
    the loss before the restart across it (one entry: the line lies in the band); it goes
    with the step axis, and clicking the swatch hides the shading."""
    from ftgui.qt import theme

    _line(plot, 0, range(1, 11))
    _line(plot, 1, range(7, 13))
    plot.shade_redone(6, 10)
    plot.redraw()
    assert _labels(plot) == ["training loss", REDONE_LABEL]
    sample = plot.legend.items[-1][0]
    assert sample.item.opts["brush"].color().getRgb() == theme.REDONE_SHADE
    assert sample.lost is plot.traces[0].shown
    plot.set_presenting(True)
    assert _labels(plot)[-1] == REDONE_LABEL
    assert plot.legend.items[-1][0].item.opts["brush"].color().getRgb() \
        == theme.REDONE_SHADE_PRESENTING
    plot.legend.items[-1][0].mouseClickEvent(_left_click())
    assert not plot.regions[0].isVisible()
    plot.set_x_axis("time")
    plot.redraw()
    assert _labels(plot) == ["training loss", LOST_LABEL]  # no band there: the line alone


def _left_click():
    from PySide6.QtCore import Qt

    class Click:
        def button(self):
            return Qt.MouseButton.LeftButton

        def accept(self):
            pass

    return Click()


def test_smoothed_and_in_the_presentation_view_the_kept_part_looks_like_the_newest(plot):
    _line(plot, 0, range(1, 11))
    _line(plot, 1, range(9, 20))
    plot.set_smoothing(0.6)
    plot.set_presenting(True)
    plot.redraw()
    kept, newest = plot.traces[0].kept, plot.traces[1]
    assert kept.smooth.isVisible()
    assert _steps(kept.smooth) == list(range(1, 9))
    assert kept.smooth.opts["pen"].widthF() == newest.smooth.opts["pen"].widthF()
    assert kept.smooth.opts["pen"].color().name() == newest.smooth.opts["pen"].color().name()


def test_clearing_the_run_removes_the_kept_copies(plot):
    _line(plot, 0, range(1, 6))
    _line(plot, 1, range(6, 9))
    plot.redraw()
    kept = plot.traces[0].kept
    plot.clear_run()
    assert kept.raw not in plot.getPlotItem().items
    assert plot.traces == {}


def test_an_empty_plot_has_no_legend_frame_and_no_tick_between_two_steps(plot):
    from PySide6.QtWidgets import QApplication

    plot.resize(600, 300)
    plot.show()
    QApplication.processEvents()
    assert not plot.legend.isVisible()
    bottom = plot.getPlotItem().getAxis("bottom")
    assert all(spacing >= 1 for spacing, _ in bottom.tickSpacing(0.0, 1.0, 500))
    plot.add_step(0, 1, 2.0)
    plot.redraw()
    assert plot.legend.isVisible()
    plot.set_x_axis("time")  # seconds: fractions are fine there
    assert min(spacing for spacing, _ in bottom.tickSpacing(0.0, 1.0, 500)) < 1


def _marked_inset(plot, markers):
    """Add `markers` ((kind, step, label) each) to `plot`, let it lay itself out, and return
    the redone inset's geometry (it must be shown)."""
    from PySide6.QtWidgets import QApplication

    for kind, step, label in markers:
        plot.add_marker(kind, step, label)
    for _ in range(3):
        plot.redraw()
        QApplication.processEvents()
    assert plot.inset.isVisible()
    return plot.inset.geometry()


def test_no_marker_label_shown_is_under_the_redone_inset(plot):
    """A legend at the top takes the labels' rows at its left: a label pushed below the strip
    lay under the inset while it said it was shown (the breaker's 'frozen @ 704')."""

    from ftgui.qt.plot.redone_inset import to_widget

    plot.resize(900, 420)
    plot.show()
    _line(plot, 0, range(1, 266))
    _line(plot, 1, range(201, 801))
    plot.add_validation(100, 0.02)
    plot.shade_redone(200, 265)
    under = _marked_inset(plot, [
        ("crash", 265, "killed @ 265"), ("resume", 200, "resume ← 200"),
        ("hang", 662, "worker 1 frozen @ 662"), ("hang", 560, "frozen @ 560"),
        ("crash", 760, "killed @ 760"), ("resume", 745, "resume ← 745")])
    for _kind, _step, line in plot.markers:
        if line.label.isVisible():
            assert not to_widget(plot, line.label.sceneBoundingRect()).toRect().intersects(
                under), line.label.toPlainText()


def _killed_and_resumed(plot, size, killed: int, resumed: int, last: int,
                        noise: float = 0.001):
    """`plot` at `size`, shown: a falling loss over steps 1..`killed` (attempt 0), steps
    `resumed`+1..`killed` shaded as redone, and steps `resumed`+1..`last` of attempt 1.
    Returns the loss of a step."""
    def loss(step):
        return 2.4 * np.exp(-step / 30) + 5 * noise + noise * (step % 7)

    plot.resize(*size)
    plot.show()
    for step in range(1, killed + 1):
        plot.add_step(0, step, loss(step))
    plot.shade_redone(resumed, killed)
    for step in range(resumed + 1, last + 1):
        plot.add_step(1, step, loss(step))
    return loss


def test_the_redone_inset_leaves_the_kill_and_resume_lines_it_magnifies_in_view(plot):
    """The custom-loop demo at 1280x720: killed at 153, resumed from 150; the inset sat over
    both lines (a presenter's finding). It goes beside them where it fits."""

    from ftgui.qt.plot.redone_inset import to_widget

    _killed_and_resumed(plot, (870, 490), killed=153, resumed=150, last=220, noise=0.01)
    plot.set_presenting(True)
    inset = _marked_inset(plot, [("crash", 153, "killed @ 153"), ("resume", 150, "resume ← 150")])
    for _kind, step, line in plot.markers:
        x = to_widget(plot, line.sceneBoundingRect()).center().x()
        assert not inset.left() <= x <= inset.right(), (step, x, inset)


def test_the_inset_moves_off_the_marker_lines_where_it_fits():
    from ftgui.qt.plot.redone_inset import LEFT_FRACTION, WIDTH_FRACTION, clear_of_markers

    wide = WIDTH_FRACTION
    assert clear_of_markers(0.4, [], 0.2) == (0.4, wide)
    assert clear_of_markers(0.4, [0.9], 0.2) == (0.4, wide)  # none under it
    left, width = clear_of_markers(0.3, [0.35], 0.2)  # right of the line, as wide
    assert (left, width) == (pytest.approx(0.36), wide)
    # near the right edge: right of the lines, narrowed (the resumed part has room above)
    left, width = clear_of_markers(0.45, [0.67, 0.68], 0.2)
    assert (left, width) == (pytest.approx(0.69), pytest.approx(0.98 - 0.69))
    # no room on the right: left of the lines, never left of LEFT_FRACTION (the curve)
    left, width = clear_of_markers(0.6, [0.85, 0.86], 0.2)
    assert left >= LEFT_FRACTION and left + width == pytest.approx(0.84)
    # room on neither side (a chaos run's lines everywhere): where it was
    assert clear_of_markers(0.4, [0.35, 0.45, 0.8], 0.2) == (0.4, wide)


def test_the_inset_keeps_still_while_the_resumed_run_streams_in(plot):
    """The inset follows the fitted part of the run, whose place on x changes with each new
    step: it wobbled 1-6 px back and forth from step to step (a presenter's grabs, steps
    900-980). Its left edge moves in steps of 1/40 of the view: a few times in 600 steps."""
    from PySide6.QtWidgets import QApplication

    loss = _killed_and_resumed(plot, (870, 420), killed=650, resumed=600, last=600)
    plot.set_presenting(True)
    lefts = []
    for step in range(601, 1201):
        plot.add_step(1, step, loss(step))
        if step % 4 == 0:  # a redraw per 4 steps, as the window's timer takes them
            plot.redraw()
            QApplication.processEvents()
            lefts.append(plot.inset.geometry().x() if plot.inset.isVisible() else None)
    moves = sum(a != b for a, b in itertools.pairwise(lefts))
    assert None not in lefts[10:] and moves <= 8, (moves, lefts)


def test_a_resumed_line_begins_at_the_restored_steps_point(qtbot):
    """Killed after step 45 and resumed from a snapshot of 45: the resumed line began at 46,
    and the curve had a gap from 45 to 46 (a presenter's end-to-end check), although "a
    resume that redid nothing leaves no seam". It begins at the restored step's point of the
    line before, on the step axis; on the wall-time axis, where the time between is lost, not
    (nor with a fork's, which the branch layer draws)."""
    from ftgui.qt.plot.loss_plot import LossPlot

    plot = LossPlot()
    qtbot.addWidget(plot)
    for step in range(1, 46):
        plot.add_step(0, step, 1.0 / step, time=float(step))
    for step in range(46, 61):
        plot.add_step(1, step, 1.0 / step, time=float(step) + 5)
    plot.redraw()
    x, y = plot.traces[1].raw.getData()
    assert x.tolist() == list(range(45, 61)) and y[0] == 1.0 / 45
    plot.set_smoothing(0.5)
    plot.redraw()
    smooth_x, smooth_y = plot.traces[1].smooth.getData()
    assert smooth_x[0] == 45 and smooth_y[0] == plot.traces[0].smoothed(0.5)[44]
    plot.set_x_axis("time")
    plot.redraw()
    assert plot.traces[1].raw.getData()[0][0] == 51.0 - plot.time_origin  # step 46's time


@pytest.mark.parametrize("height", [430, 720])
def test_in_the_normal_view_the_inset_keeps_off_the_legend(plot, height):
    """The checkpoint-interval demo's end in the normal view: the inset, moved right of the
    kill and resume lines, covered the legend's "steps redone" and "validation loss"
    (helper-36). The legend keeps the top right there: the inset goes under it where the
    plot is tall enough, else left of it."""
    from ftgui.qt.plot.redone_inset import to_widget

    loss = _killed_and_resumed(plot, (640, height), killed=395, resumed=300, last=395)
    for step in range(396, 601):
        plot.add_step(1, step, loss(step))
    for step in range(100, 601, 100):
        plot.add_validation(step, loss(step) + 0.05)
    inset = _marked_inset(plot, [("crash", 395, "killed @ 395"),
                                 ("resume", 300, "resume ← 300")])
    legend = to_widget(plot, plot.legend.sceneBoundingRect())
    assert plot.legend.isVisible() and len(plot.legend.items) == 3
    assert not legend.intersects(inset.toRectF()), (legend, inset)
    if height == 720:  # room under the legend: beside the lines it magnifies there
        assert inset.top() >= legend.bottom()
        for _kind, _step, line in plot.markers:
            x = to_widget(plot, line.sceneBoundingRect()).center().x()
            assert not inset.left() <= x <= inset.right()


def test_a_narrow_inset_drops_magnified_from_its_title_rather_than_cut_it(plot):
    """Crash and recover at stage 5: the inset, narrowed to 161 px beside the marker lines,
    read "600–650 ma" and its curve stopped at step 630 (its layout was wider than it)."""
    from PySide6.QtCore import QRectF

    _killed_and_resumed(plot, (870, 490), killed=650, resumed=600, last=650)
    plot.set_presenting(True)
    _marked_inset(plot, [("crash", 650, "killed @ 650"), ("resume", 600, "resume ← 600")])
    inset = plot.inset
    view = QRectF(0, 0, 800, 430)
    inset.place(view, 40, 0.7, 161 / 800)
    assert inset.getPlotItem().titleLabel.text == "600–650"
    inset.place(view, 40, 0.5, 0.36)
    assert inset.getPlotItem().titleLabel.text == "600–650 magnified"
