"""The theme: one place for the views' colours, widths and fonts, and one scale factor that
enlarges every font and line (View → Zoom and the presentation view set it)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtGui import QFontMetrics, QPalette
from PySide6.QtWidgets import QApplication

from ftgui.qt import theme
from ftgui.qt.panes.checkpoint_table import CheckpointTable
from ftgui.qt.panes.process_table import ProcessTable
from ftgui.qt.plot.loss_plot import LossPlot
from ftgui.qt.runs.runs_dock import RunsDock
from ftgui.qt.window.main_window import MainWindow


@pytest.fixture
def scale_one(qapp):
    """Every test starts and ends at scale 1."""
    theme.set_scale(1.0)
    yield
    theme.set_scale(1.0)


@pytest.fixture
def window(qtbot, tmp_path, scale_one):
    win = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.show()
    yield win
    win.controller.shutdown()


def test_set_scale_enlarges_the_application_font(scale_one):
    base = theme.base_font_pt()
    assert QApplication.font().pointSizeF() == pytest.approx(base)
    theme.set_scale(1.5)
    assert theme.scale() == 1.5
    assert QApplication.font().pointSizeF() == pytest.approx(1.5 * base)
    theme.set_scale(1.0)
    assert QApplication.font().pointSizeF() == pytest.approx(base)


def test_a_marker_drawn_after_set_scale_has_the_scaled_width(qtbot, scale_one):
    plot = LossPlot()
    qtbot.addWidget(plot)
    assert plot.add_marker("crash", 10, "killed @ 10").pen.widthF() == 1.0
    theme.set_scale(1.5)
    line = plot.add_marker("resume", 8, "resume ← 8")
    assert line.pen.widthF() == 1.5
    assert line.pen.color().name() == theme.MARKER_COLOURS["resume"]
    assert theme.pen_width("smoothed") == 3.0


def test_the_state_label_is_coloured_and_sized_by_the_theme(window):
    label = window.state_label
    window.controller.stateChanged.emit("killed", "ended by SIGKILL")
    label.ensurePolished()
    assert label.palette().color(QPalette.ColorRole.WindowText).name() == theme.ERROR
    assert label.font().pixelSize() == theme.STATE_LABEL_PX
    window.controller.stateChanged.emit("finished", "")
    label.ensurePolished()
    assert label.palette().color(QPalette.ColorRole.WindowText).name() == theme.SUCCESS
    theme.set_scale(1.5)  # the window restyles itself: 14 px -> 21 px
    label.ensurePolished()
    assert label.font().pixelSize() == 21


def test_table_rows_follow_the_font_when_the_scale_changes(qtbot, tmp_path, scale_one):
    table = CheckpointTable()
    dock = RunsDock(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(table)
    qtbot.addWidget(dock)
    rows, runs_rows = table.verticalHeader(), dock.table.verticalHeader()
    base, runs_base = rows.defaultSectionSize(), runs_rows.defaultSectionSize()
    theme.set_scale(3.0)
    text = QFontMetrics(theme.font()).height()
    assert text > base  # rows of the old height would clip the text
    assert rows.defaultSectionSize() == text + 4
    assert runs_rows.defaultSectionSize() == text + 8
    later = ProcessTable()  # made while zoomed: the same height
    qtbot.addWidget(later)
    assert later.verticalHeader().defaultSectionSize() == rows.defaultSectionSize()
    theme.set_scale(1.0)
    assert (rows.defaultSectionSize(), runs_rows.defaultSectionSize()) == (base, runs_base)


def test_a_scale_outside_the_range_is_refused_in_one_line(scale_one):
    with pytest.raises(ValueError, match=r"^scale: 10.0 is outside 0.5–4.0$"):
        theme.set_scale(10)
    assert theme.scale() == 1.0


def test_every_state_and_marker_kind_has_a_colour():
    assert set(theme.STATE_COLOURS) == {
        "running", "recovering", "finished", "killed", "preempted", "failed", "stopped",
        "interrupted", "busy", "idle"}
    assert {"crash", "preemption", "hang", "nan_rollback", "fork", "resume", "setting_changed",
            "worker_lost", "worker_back"} <= set(theme.MARKER_COLOURS)
    assert theme.state_colour("no such state") == theme.DEFAULT_STATE_COLOUR
    with pytest.raises(ValueError, match="marker kind: smoke is not one of crash"):
        theme.MarkerPens(kill="smoke")


def test_markers_at_one_step_share_the_line_by_dash_family_and_kind():
    # a crash and a resume: the crash's dashes first, the resume's in their gaps (as before)
    assert theme.dash_slots(["resume", "crash"]) == [(1, 2), (0, 2)]
    # dashed and dotted markers take turns within their own family only
    assert theme.dash_slots(["crash", "worker_lost", "preemption", "worker_back"]) == [
        (0, 2), (0, 2), (1, 2), (1, 2)]
    # two markers of one kind (one colour) share a turn: two workers lost stay dotted
    assert theme.dash_slots(["worker_lost", "worker_lost"]) == [(0, 1), (0, 1)]
    alone, shared = theme.marker_pen("resume"), theme.marker_pen("hang", slot=2, sharing=3)
    assert (alone.dashPattern(), alone.dashOffset()) == ([4.0, 4.0], 4.0)
    assert (shared.dashPattern(), shared.dashOffset()) == ([4.0, 8.0], 8.0)
