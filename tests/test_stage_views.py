"""The stage's views at a projector's 1280×720: the y axis after the presentation view, a
constant or huge loss in the window, `replay --present`, the story line in two lines and marker
labels that leave the data visible (issue 24, issue 25 case 8)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import numpy as np
import pytest
from conftest import PLOT_READY_MS
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication
from test_presentation import T0, write_recovered_run

from ftgui.core import config as configmod
from ftgui.core.config import RunConfig
from ftgui.core.events import EventWriter
from ftgui.qt import replay_app, theme
from ftgui.qt.main_window import MainWindow


@pytest.fixture
def window(qtbot, tmp_path):
    """The window at 1280×720 and scale 1, shown, its plot created."""
    theme.set_scale(1.0)
    win = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.resize(1280, 720)
    with qtbot.waitSignal(win.plotReady, timeout=PLOT_READY_MS):
        win.show()
    yield win
    win.controller.shutdown()
    theme.set_scale(1.0)


def tick_labels(plot, side: str = "left") -> list[str]:
    """The tick labels the axis draws now, as pyqtgraph makes them (its scale included)."""
    axis = plot.getPlotItem().getAxis(side)
    low, high = axis.range
    levels = axis.tickValues(low, high, axis.geometry().height() or 400)
    return [text for spacing, values in levels
            for text in axis.tickStrings(values, axis.autoSIPrefixScale * axis.scale, spacing)]


def settle(qtbot, window) -> None:
    qtbot.wait(50)
    window.plot.redraw()
    QApplication.processEvents()


def test_after_f5_twice_the_y_ticks_lie_within_the_losses(window, qtbot, tmp_path):
    run_dir = tmp_path / "run"
    write_recovered_run(run_dir)  # loss 2/step: 2.0 at step 1 down to 0.0077 at step 260
    window.open_run(run_dir)
    settle(qtbot, window)
    for _ in range(2):
        window.menus.present_action.trigger()
        settle(qtbot, window)
    assert not window.presenting
    values = [float(text) for text in tick_labels(window.plot)]
    assert values and max(values) >= 1.0  # 0–2.0 on the axis, not 0–2000
    assert all(-0.2 <= value <= 2.2 for value in values), values
    axis = window.plot.getPlotItem().getAxis("left")
    assert axis.autoSIPrefixScale == 1.0 and axis.labelUnitPrefix == ""


def test_replay_present_opens_the_presentation_view(monkeypatch, tmp_path, qtbot):
    run_dir = tmp_path / "run"
    write_recovered_run(run_dir)
    seen = []

    class App:
        def exec(self):
            windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)
                       and w.isVisible()]
            seen.extend((w.presenting, w.menus.present_action.isChecked()) for w in windows)
            for w in windows:
                w.controller.shutdown()
                w.hide()
            return 0

        def quit(self):
            pass

    monkeypatch.setattr(replay_app, "make_app", App)
    assert replay_app.run_replay(run_dir, 1.0, present=True) == 0
    assert seen == [(True, True)]


def write_constant_run(run_dir, loss: float, steps: int = 40) -> None:
    """A regression run whose loss is `loss` on every step, validated every 10 steps."""
    configmod.save(run_dir, RunConfig(steps=steps, checkpoint_every=10))
    with EventWriter(run_dir, 0) as w:
        w.emit("run_started", time=T0)
        for step in range(1, steps + 1):
            w.emit("step", time=T0 + step, step=step, loss=loss)
            if step % 10 == 0:
                w.emit("validation", time=T0 + step, step=step, val_loss=loss)


@pytest.mark.parametrize(("loss", "low", "high"), [(1e30, 0.9e30, 1.1e30),
                                                    (1e-30, 0.9e-30, 1.1e-30),
                                                    (2.5, 2.25, 2.75)])
def test_a_constant_loss_gets_distinct_ticks_in_every_view(window, qtbot, tmp_path, loss, low,
                                                           high):
    run_dir = tmp_path / "run"
    write_constant_run(run_dir, loss)
    window.open_run(run_dir)
    settle(qtbot, window)
    for presenting in (False, True):
        window.set_presenting(presenting)
        settle(qtbot, window)
        view_low, view_high = window.plot.getPlotItem().getViewBox().viewRange()[1]
        assert view_low == pytest.approx(low, rel=1e-9)
        assert view_high == pytest.approx(high, rel=1e-9)
        labels = tick_labels(window.plot)
        assert len(labels) >= 3 and len(set(labels)) == len(labels), labels
        values = [float(text) for text in labels]
        assert all(low <= value <= high for value in values)
    window.set_presenting(False)
    window.plot.set_log_y(True)
    settle(qtbot, window)
    view_low, view_high = window.plot.getPlotItem().getViewBox().viewRange()[1]
    exponent = np.log10(loss)
    pad = max(abs(exponent), 0) * 0.1 or 1.0
    assert (view_low, view_high) == pytest.approx((exponent - pad, exponent + pad))


def test_a_single_step_is_in_view(window, qtbot, tmp_path):
    run_dir = tmp_path / "run"
    write_constant_run(run_dir, 0.75, steps=1)
    window.open_run(run_dir)
    settle(qtbot, window)
    view_low, view_high = window.plot.getPlotItem().getViewBox().viewRange()[1]
    assert (view_low, view_high) == pytest.approx((0.675, 0.825))
