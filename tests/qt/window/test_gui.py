"""The window, driven offscreen the way a workshop teacher uses it: Start, watch, Kill, Resume."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import json
import math
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from conftest import PLOT_READY_MS
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QLabel, QPushButton, QTabWidget, QWidget

from ftgui.core.record.events import EventWriter
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import RunConfig
from ftgui.qt.panes.incident_table import COLUMNS
from ftgui.qt.plot.loss_plot import LossPlot
from ftgui.qt.window.main_window import MainWindow


@pytest.fixture
def window(ready_window):
    return ready_window


def use_run_dir(win: MainWindow, run_dir: Path) -> None:
    win.panel.run_dir_edit.setText(str(run_dir))
    win.panel.run_dir_edit.editingFinished.emit()


def test_contract_object_names_exist(window):
    for name in ("startButton", "killButton", "preemptButton", "resumeButton"):
        assert window.findChild(QPushButton, name) is not None, name
    for name in ("lossPlot", "checkpointTable", "strategyCombo", "eventLog"):
        assert window.findChild(object, name) is not None, name


def test_fresh_window_offers_start_only(window):
    assert window.start_button.isEnabled()
    assert not window.kill_button.isEnabled()
    assert not window.preempt_button.isEnabled()
    assert not window.resume_button.isEnabled()


def test_the_event_log_keeps_the_start_of_long_lines_in_view(qtbot, tmp_path):
    win = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    for k in range(30):  # as `ftgui open RUN` replays a run's log before the window shows
        win.controller.logLine.emit(f"{k:02d} " + "checkpoint saved " * 25)
    with qtbot.waitSignal(win.plotReady, timeout=PLOT_READY_MS):
        win.show()
    qtbot.wait(50)
    # the lines are wider than the column: they wrap, nothing runs off its right edge (a new
    # user's finding), and each line's start is in view
    assert win.log.horizontalScrollBar().maximum() == 0
    assert win.log.horizontalScrollBar().value() == 0
    win.controller.shutdown()


def test_bad_batch_size_is_refused_before_anything_is_written(window, tmp_path):
    run_dir = tmp_path / "run"
    use_run_dir(window, run_dir)
    window.panel.set_config(RunConfig(strategy="mirrored", replicas=2, global_batch_size=63))
    assert window.start_button.isEnabled()
    window.start_button.click()
    error = window.findChild(QLabel, "configError").text()
    assert error.startswith("global_batch_size: 63")
    assert "2 replicas" in error
    assert not run_dir.exists()
    assert window.controller.supervisor.processes == []


def test_start_in_a_folder_of_runs_is_refused_as_ftgui_train_refuses_it(window, finished_run):
    folder = finished_run.parent  # holds the run "finished"
    use_run_dir(window, folder)
    assert window.start_run() is False
    assert window.findChild(QLabel, "configError").text() == (
        f"run_dir: {folder} holds runs (finished); give a new folder for this one")
    assert not (folder / "config.toml").exists() and not (folder / "events.jsonl").exists()


def test_existing_run_directory_is_not_overwritten_by_start(window, tmp_path):
    run_dir = tmp_path / "run"
    configmod.save(run_dir, RunConfig(steps=5))
    EventWriter(run_dir, 0).emit("step", step=1, loss=2.0)
    before = (run_dir / "events.jsonl").read_bytes()
    use_run_dir(window, run_dir)
    assert not window.start_button.isEnabled()  # an existing run is resumed, not restarted
    assert window.start_run() is False
    assert "already holds a run" in window.findChild(QLabel, "configError").text()
    assert (run_dir / "events.jsonl").read_bytes() == before


def test_reopened_run_shows_curves_markers_and_config(window, tmp_path):
    run_dir = tmp_path / "run"
    configmod.save(run_dir, RunConfig(steps=8, seed=7, replicas=4))
    with EventWriter(run_dir, 0) as first:
        for step in range(1, 6):
            first.emit("step", step=step, loss=1.0 / step)
    with EventWriter(run_dir, 0) as supervisor_events:
        supervisor_events.emit("process_exited", role="chief", index=0, pid=1, last_step=5,
                               signal=9, signal_name="SIGKILL")
    with EventWriter(run_dir, 1) as second:
        second.emit("resumed", from_step=3, checkpoint="checkpoints/ckpt-3")
        for step in range(4, 9):
            second.emit("step", step=step, loss=1.0 / step)
    window.open_run(run_dir)
    plot = window.plot
    assert sorted(plot.series) == [0, 1]
    assert plot.series[0].x().tolist() == [1, 2, 3, 4, 5]
    assert plot.series[1].x().tolist() == [4, 5, 6, 7, 8]
    assert [(kind, step) for kind, step, _ in plot.markers] == [("crash", 5.0), ("resume", 3.0)]
    assert [tuple(region.getRegion()) for region in plot.regions] == [(3.0, 5.0)]
    log = window.log.toPlainText().splitlines()
    assert [line.split(" ", 1)[1] for line in log] == [
        "chief killed at step 5", "resumed from checkpoint 3"]  # after the time of day
    assert window.panel.config().seed == 7
    assert window.panel.config().replicas == 4
    assert window.resume_button.isEnabled()
    assert not window.start_button.isEnabled()


def test_nan_loss_is_a_gap_not_a_crash(qtbot):
    plot = LossPlot()
    qtbot.addWidget(plot)
    for step, loss in enumerate([2.0, 1.5, math.nan, None, 1.0, 0.8], start=1):
        plot.add_step(0, step, loss)
    assert plot.redraw() == 1
    curve = plot.curves[0]
    x, y = curve.getData()
    assert x.tolist() == [1, 2, 3, 4, 5, 6]
    assert np.isnan(y[2]) and np.isnan(y[3])
    assert y[[0, 1, 4, 5]].tolist() == [2.0, 1.5, 1.0, 0.8]
    assert curve.opts["connect"] == "finite"
    plot.resize(400, 300)
    assert not plot.grab().isNull()


def test_growing_buffer_keeps_every_point(qtbot):
    plot = LossPlot()
    qtbot.addWidget(plot)
    for step in range(1, 5001):
        plot.add_step(0, step, 1.0 / step)
    plot.redraw()
    x, y = plot.curves[0].getData()
    assert len(x) == 5000 and x[-1] == 5000 and y[-1] == pytest.approx(1 / 5000)


def test_pyside_does_not_leak_none_references(qapp):
    # PySide6 6.12.0 on Python 3.11 drops a reference to None per void call (6.11.2 is clean);
    # pyqtgraph then dies with "none_dealloc" after about 100 repaints.
    label = QLabel()
    before = sys.getrefcount(None)
    for _ in range(1000):
        label.setObjectName("probe")
    after = sys.getrefcount(None)
    assert after >= before - 10, f"None lost {before - after} references"


def test_window_paints_before_pyqtgraph_is_imported_and_never_imports_tensorflow(tmp_path):
    # A fresh process: the window is built, shown and painted without pyqtgraph; the plot
    # comes right after the first paint; TensorFlow is never imported.
    code = textwrap.dedent(f"""
        import json, os, sys
        os.environ['QT_QPA_PLATFORM'] = 'offscreen'
        from PySide6.QtCore import QEvent, QObject, QSettings, QTimer
        from ftgui.qt.window.app import make_app
        from ftgui.qt.window.main_window import MainWindow

        def loaded(*packages):
            return sorted(m for m in sys.modules if m.split('.')[0] in packages)

        seen = {{}}
        app = make_app()
        window = MainWindow(QSettings({str(tmp_path / 's.ini')!r}, QSettings.Format.IniFormat))
        seen['built'] = loaded('pyqtgraph')

        class FirstPaint(QObject):
            def eventFilter(self, obj, event):
                if event.type() == QEvent.Type.Paint and 'painted' not in seen:
                    seen['painted'] = loaded('pyqtgraph')
                    seen['painted_placeholder'] = (
                        window.findChild(QObject, 'lossPlotPlaceholder') is not None)
                return False

        probe = FirstPaint()
        app.installEventFilter(probe)

        def ready(plot):
            seen['ready'] = dict(name=plot.objectName(), is_plot=plot is window.plot,
                                 pyqtgraph=bool(loaded('pyqtgraph')))
            app.quit()

        window.plotReady.connect(ready)
        window.show()
        seen['shown'] = loaded('pyqtgraph')
        QTimer.singleShot({PLOT_READY_MS}, app.quit)
        app.exec()
        seen['tensorflow'] = loaded('tensorflow', 'keras')
        window.controller.shutdown()
        print(json.dumps(seen))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["built"] == [] and seen["shown"] == [] and seen["painted"] == []
    assert seen["painted_placeholder"] is True
    assert seen["ready"] == {"name": "lossPlot", "is_plot": True, "pyqtgraph": True}
    assert seen["tensorflow"] == []


def test_events_that_arrive_before_the_plot_exists_are_shown_once_it_does(qtbot, tmp_path):
    t0 = 1_700_000_000.0
    run_dir = tmp_path / "run"
    configmod.save(run_dir, RunConfig(steps=10))
    with EventWriter(run_dir, 0) as first:
        first.emit("run_started", time=t0)
        for step in range(1, 6):
            first.emit("step", time=t0 + step, step=step, loss=1.0 / step)
        first.emit("validation", time=t0 + 5.5, step=5, val_loss=0.3)
        first.emit("process_exited", role="chief", index=0, pid=1, last_step=5, signal=9,
                   signal_name="SIGKILL", decisive=True)
    with EventWriter(run_dir, 1) as second:
        second.emit("resumed", from_step=3, checkpoint="checkpoints/ckpt-3")
        for step in range(4, 7):
            second.emit("step", time=t0 + 10 + step, step=step, loss=1.0 / step)
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    win = MainWindow(settings=settings)
    qtbot.addWidget(win)
    win.open_run(run_dir)  # as `ftgui open RUN` does: before the window is shown
    with EventWriter(run_dir, 1) as live:  # and steps streaming in before the plot exists
        for step in (7, 8):
            live.emit("step", time=t0 + 10 + step, step=step, loss=1.0 / step)
    win.controller.tick()
    assert not win.plot_ready
    assert win.findChild(QWidget, "lossPlot") is None
    assert win.findChild(QWidget, "lossPlotPlaceholder") is not None

    with qtbot.waitSignal(win.plotReady, timeout=PLOT_READY_MS) as ready:
        win.show()
    plot = ready.args[0]
    assert isinstance(plot, LossPlot) and win.plot is plot and win.controller.plot is plot
    assert win.findChild(QWidget, "lossPlot") is plot
    qtbot.waitUntil(lambda: win.findChild(QWidget, "lossPlotPlaceholder") is None)
    assert plot.time_origin == t0
    assert sorted(plot.series) == [0, 1]
    assert plot.series[0].x().tolist() == [1, 2, 3, 4, 5]
    assert plot.series[1].x().tolist() == [4, 5, 6, 7, 8]
    # drawn, not only stored, from the restored step 3 on (its point on the line before: the
    # two lines join)
    assert plot.curves[1].getData()[0].tolist() == [3, 4, 5, 6, 7, 8]
    assert plot.curves[1].getData()[1][0] == 1.0 / 3
    assert plot.validation.x().tolist() == [5]
    assert [(kind, step) for kind, step, _ in plot.markers] == [("crash", 5.0), ("resume", 3.0)]
    assert [tuple(region.getRegion()) for region in plot.regions] == [(3.0, 5.0)]

    with EventWriter(run_dir, 1) as live:  # from now on events go to the plot itself
        live.emit("step", time=t0 + 19, step=9, loss=1.0 / 9)
    win.controller.tick()
    assert plot.curves[1].getData()[0].tolist() == [3, 4, 5, 6, 7, 8, 9]
    win.controller.shutdown()


def test_asking_for_the_plot_before_the_first_paint_creates_it(qtbot, tmp_path):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    win = MainWindow(settings=settings)
    qtbot.addWidget(win)
    assert not win.plot_ready
    with qtbot.waitSignal(win.plotReady, timeout=PLOT_READY_MS):
        plot = win.plot  # e.g. overlaying runs, or exporting the plot, right away
    assert win.plot_ready and win.plot is plot and plot.objectName() == "lossPlot"
    win.show()
    qtbot.wait(50)  # the window's first paint does not create a second plot
    assert win.plot is plot and len(win.findChildren(LossPlot)) == 1
    win.controller.shutdown()


def wait_for(qtbot, condition, timeout_s: float = 120.0) -> None:
    qtbot.waitUntil(condition, timeout=int(timeout_s * 1000))


@pytest.mark.tf
def test_start_kill_resume_in_the_window(window, qtbot, tmp_path):
    run_dir = tmp_path / "run"
    use_run_dir(window, run_dir)
    # recovery from disk checkpoints (a kill during a save may leave the in-memory snapshot
    # newer than any checkpoint: that path is tested in test_snapshots.py)
    window.panel.set_config(RunConfig(steps=3000, checkpoint_every=10, snapshot_every=0))
    window.start_button.click()
    controller = window.controller
    assert controller.supervisor.state == "running"
    assert window.kill_button.isEnabled() and not window.start_button.isEnabled()

    wait_for(qtbot, lambda: controller.timeline.last_step >= 25)
    first_pids = [p.pid for p in controller.supervisor.processes]
    window.kill_button.click()
    wait_for(qtbot, lambda: controller.supervisor.state == "killed")
    killed_at = controller.supervisor.processes[0].last_step
    assert [kind for kind, _, _ in window.plot.markers] == ["crash"]
    assert window.plot.markers[0][1] == killed_at
    assert all(not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
               for pid in first_pids)
    assert window.resume_button.isEnabled() and not window.kill_button.isEnabled()
    wait_for(qtbot, lambda: window.table.model().rowCount() >= 1)
    newest = window.table.model_.newest_valid_step
    assert newest is not None and newest % 10 == 0 and newest <= killed_at
    assert f"chief killed at step {killed_at}" in window.log.toPlainText()

    window.resume_button.click()
    wait_for(qtbot, lambda: any(k == "resume" for k, _, _ in window.plot.markers))
    assert window.plot.markers[-1][1] == newest
    wait_for(qtbot, lambda: controller.timeline.attempt == 1
             and controller.timeline.last_step > newest + 5)
    resumed_steps = window.plot.series[1].x()
    assert resumed_steps[0] == newest + 1
    assert controller.supervisor.state == "running"
    window.grab().save(str(tmp_path / "window.png"))

    window.settings.setValue("quit/when_training", "kill")  # "Stop training and quit?": Kill
    window.close()
    pids = [p.pid for p in controller.supervisor.processes]
    deadline = time.time() + 10
    while time.time() < deadline and any(psutil.pid_exists(pid) for pid in pids):
        time.sleep(0.05)
    assert not any(psutil.pid_exists(pid) for pid in pids)


def test_a_reopened_run_lists_its_incidents_with_their_cost(window, tmp_path):
    run_dir = tmp_path / "run"
    configmod.save(run_dir, RunConfig(steps=10))
    with EventWriter(run_dir, 0) as first:
        first.emit("run_started")
        for step in range(1, 8):
            first.emit("step", step=step, loss=1.0 / step)
        first.emit("fault_injected", kind="kill", target="chief", step=7, source="user")
        first.emit("process_exited", role="chief", index=0, pid=1, last_step=7, signal=9,
                   signal_name="SIGKILL", decisive=True)
    with EventWriter(run_dir, 1) as second:
        second.emit("resumed", from_step=5, checkpoint="checkpoints/ckpt-5")
        for step in range(6, 11):
            second.emit("step", step=step, loss=1.0 / step)
    window.open_run(run_dir)
    model = window.incident_panel.model_
    assert model.rowCount() == 1
    cells = [model.data(model.index(0, column)) for column in range(model.columnCount())]
    assert cells[:4] == ["1", "kill", "chief", "7"]
    assert cells[COLUMNS.index("fired by")] == "user"
    assert cells[4] == "2"  # steps 6 and 7 were computed twice
    assert "1</b> incident · <b>2</b> steps redone" in window.incident_panel.totals.text()
    assert window.findChild(QTabWidget, "processTabs").tabText(1) == "Incidents (1)"


def test_kill_is_off_once_the_run_reached_its_last_step(window):
    """A multi-worker run's other worker ended 4 s after the chief: Kill stayed red beside
    "finished — reached the last step" (helper-36)."""
    from types import SimpleNamespace

    controller = window.controller
    controller.supervisor.processes = [SimpleNamespace(alive=True)]  # a worker still ending
    window._on_state("running", "")
    assert window.kill_button.isEnabled() and window.checkpoint_button.isEnabled()
    controller.timeline.feed([{"event": "run_finished", "time": 1.0, "attempt": 0,
                               "step": 20, "loss": 0.1}])
    window.refresh_story()
    assert not window.kill_button.isEnabled() and not window.preempt_button.isEnabled()
    assert not window.checkpoint_button.isEnabled()
    controller.supervisor.processes = []
