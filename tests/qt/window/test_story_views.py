"""What a presenter sees of a run's story, offscreen: forks drawn as branches, a readable event
log, keyboard shortcuts, slide-quality export, Reset to defaults and the New button."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import numpy as np
from PySide6.QtCore import Qt

from ftgui.core.timeline.model import Timeline
from ftgui.qt.plot.branches import ABANDONED_LABEL, branch_colour


def fork_timeline() -> Timeline:
    """Steps 1-100 (attempt 0), then a fork from the checkpoint of step 50 (attempt 1)."""
    def steps(first, last, attempt):
        return [{"event": "step", "attempt": attempt, "step": s, "loss": 1.0 / s,
                 "time": 1000.0 + attempt * 200 + s} for s in range(first, last + 1)]

    timeline = Timeline()
    timeline.feed([
        *steps(1, 100, 0),
        {"event": "forked", "attempt": 1, "time": 1150.0, "from_step": 50,
         "archived_steps": [60, 80, 100], "archive": "history/fork-1/checkpoints"},
        {"event": "resumed", "attempt": 1, "time": 1151.0, "from_step": 50},
        *steps(51, 120, 1),
    ])
    return timeline


def test_a_fork_is_drawn_as_a_branch(qtbot):
    from ftgui.qt.plot.loss_plot import LossPlot

    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.show_timeline(fork_timeline())
    plot.redraw()
    old, new = plot.traces[0], plot.traces[1]
    assert old.raw.opts["pen"].style() == Qt.PenStyle.DashLine  # the abandoned branch
    assert new.raw.opts["pen"].style() == Qt.PenStyle.SolidLine
    assert new.colour == branch_colour(1) != old.colour
    solid = plot.branches.solid[0]  # steps 1-50, the history both branches share
    x, _ = solid.getData()
    assert (x[0], x[-1], len(x)) == (1.0, 50.0, 50)
    assert solid.opts["pen"].style() == Qt.PenStyle.SolidLine
    assert plot.regions == []  # no red "redone" shading: a fork is no recovery
    labels = [label.text for _, label in plot.legend.items]
    assert ABANDONED_LABEL in labels and "fork ← 50" in labels
    plot.set_smoothing(0.6)  # restyling by the plot keeps the branch look
    plot.redraw()
    assert old.smooth.opts["pen"].style() == Qt.PenStyle.DashLine
    assert np.array_equal(plot.traces[0].series.x()[-1:], [100.0])


def test_a_fork_s_archived_checkpoints_stay_listed_greyed_under_the_fork(qtbot, tmp_path):
    from conftest import fake_checkpoint

    from ftgui.qt import theme
    from ftgui.qt.panes.checkpoint_table import CheckpointTable

    run_dir = tmp_path / "run"
    for step in (10, 20, 30, 40, 50, 60, 70):
        fake_checkpoint(run_dir, step)
    for step in (60, 80, 100):  # what the fork of attempt 1 (from step 50) moved aside
        fake_checkpoint(run_dir / "history" / "fork-1", step)
    table = CheckpointTable()
    qtbot.addWidget(table)
    table.refresh(run_dir)
    model = table.model_
    steps = [model.data(model.index(row, 0)) for row in range(model.rowCount())]
    assert steps == ["10", "20", "30", "40", "50", "↳ 60 (fork 1)", "↳ 80 (fork 1)",
                     "↳ 100 (fork 1)", "60", "★ 70"]
    grey = model.data(model.index(6, 2), Qt.ItemDataRole.ForegroundRole)
    assert grey.color().name() == theme.MUTED
    assert model.data(model.index(6, 0), Qt.ItemDataRole.ToolTipRole).endswith(
        "history/fork-1/checkpoints/ckpt-80")
    table.selectRow(6)
    assert table.selected_step() is None  # shown, never restored from here
    table.selectRow(9)
    assert table.selected_step() == 70


# ------------------------------------------------------------------------------ processes
def test_thaw_only_for_a_frozen_process_and_kill_without_the_right_click(qtbot):
    import signal
    import subprocess
    import sys
    import time
    from types import SimpleNamespace

    from ftgui.qt.panes.process_table import COLUMNS, KILL_TEXT, ProcessTable

    sleepers = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
                for _ in range(2)]
    try:
        sleepers[1].send_signal(signal.SIGSTOP)
        processes = [SimpleNamespace(name=f"worker:{i}", label=f"worker {i}", pid=p.pid,
                                     alive=True, returncode=None, ended_by_supervisor=False,
                                     last_step=5, last_heartbeat=time.time(), restarts=0)
                     for i, p in enumerate(sleepers)]
        table = ProcessTable()
        qtbot.addWidget(table)
        qtbot.waitUntil(lambda: (table.update_rows(processes), table.model_.rows)[1][1][
            "state"] == "frozen")
        def enabled(row):
            return {a.text().split(" (")[0]: a.isEnabled() for a in table.row_menu(row).actions()}

        assert enabled(0) == {"Kill": True, "Preempt": True, "Freeze": True, "Thaw": False}
        assert enabled(1) == {"Kill": True, "Preempt": False, "Freeze": False, "Thaw": True}
        kill = COLUMNS.index("kill")
        assert table.model_.data(table.model_.index(0, kill)) == KILL_TEXT
        table.show()
        with qtbot.waitSignal(table.killRequested) as clicked:
            qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton,
                             pos=table.visualRect(table.model_.index(0, kill)).center())
        assert clicked.args == ["worker:0"]
        table.selectRow(1)
        table.setFocus()
        with qtbot.waitSignal(table.killRequested) as deleted:
            qtbot.keyClick(table, Qt.Key.Key_Delete)
        assert deleted.args == ["worker:1"]
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()


# ------------------------------------------------------------------------------ the window
import stat  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402

import pytest  # noqa: E402
from PySide6.QtGui import QAction, QKeySequence  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402

from ftgui.core.settings.config import RunConfig  # noqa: E402

TF_NOISE = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1764528000.123456   12345 cpu_feature_guard.cc:210] This TensorFlow binary "
    "is optimized to use available CPU instructions",
    "W0000 00:00:1764528000.223456   12345 gpu_device.cc:2344] Cannot dlopen some GPU libraries",
    "E0000 00:00:1764528000.323456   12345 cuda_executor.cc:1228] failed call to cuInit: "
    "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)",
    '{created_time:"2026-11-30T20:00:00.1+00:00", grpc_status:14, '
    'grpc_message:"Socket closed"}',
    "Additional GRPC error information from remote target /job:worker/replica:0/task:1",
]
FAKE_TRAINER = textwrap.dedent(
    """
    # Stands in for `python -m ftgui.training RUN ...`: TensorFlow's noise, then a crash.
    import os, sys
    from ftgui.core.record.events import EventWriter

    run_dir = sys.argv[sys.argv.index("ftgui.training") + 1]
    attempt = int(sys.argv[sys.argv.index("--attempt") + 1])
    events = EventWriter(run_dir, attempt)
    events.emit("training_started", role="chief", index=0, start_step=0, strategy="default",
                replicas=1)
    for line in NOISE:
        print(line, file=sys.stderr, flush=True)
    if os.environ.get("FAKE_RECORDS_ERROR"):
        events.emit("training_error", role="chief", index=0, error="RuntimeError: recorded")
    raise __import__("tensorflow_stand_in").UnavailableError("worker 1 is gone")
    """
)
STAND_IN = "class UnavailableError(RuntimeError):\n    pass\n"


@pytest.fixture
def window(ready_window):
    return ready_window


@pytest.fixture
def fake_python(tmp_path):
    """An executable run in place of Python: prints TensorFlow-like output and crashes."""
    (tmp_path / "tensorflow_stand_in.py").write_text(STAND_IN)
    script = tmp_path / "fake_trainer.py"
    script.write_text(f"NOISE = {TF_NOISE!r}\n{FAKE_TRAINER}")
    launcher = tmp_path / "fake-python"
    launcher.write_text(f'#!/bin/sh\nPYTHONPATH="{tmp_path}:$PYTHONPATH" exec '
                        f'"{sys.executable}" "{script}" "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    return str(launcher)


def crash_once(qtbot, win, run_dir, fake_python) -> list[str]:
    """Start a run whose trainer prints TensorFlow's noise and crashes; the log's lines."""
    win.panel.run_dir_edit.setText(str(run_dir))
    win.panel.run_dir_edit.editingFinished.emit()
    win.panel.set_config(RunConfig(steps=10, auto_recover=False, warm_standby=False))
    win.controller.supervisor.python = fake_python
    assert win.start_run()
    qtbot.waitUntil(lambda: win.controller.supervisor.state == "failed", timeout=30_000)
    qtbot.waitUntil(lambda: "chief failed" in win.log.toPlainText()
                    or "chief error" in win.log.toPlainText(), timeout=30_000)
    win.controller.tick()
    return win.log.toPlainText().splitlines()


def test_the_event_log_hides_tensorflow_output_unless_asked(qtbot, window, tmp_path,
                                                             fake_python):
    lines = crash_once(qtbot, window, tmp_path / "quiet", fake_python)
    text = "\n".join(lines)
    for noise in ("I0000", "W0000", "E0000", "cuInit", "WARNING: All log messages",
                  "grpc_status", "GRPC", "Traceback", 'File "'):
        assert noise not in text, noise
    # the crash, recorded by no event, surfaces as one sentence: its traceback's last line
    assert [line.split(" ", 1)[1] for line in lines if "failed:" in line] == [
        "chief failed: UnavailableError: worker 1 is gone"]
    logs = "".join(p.read_text() for p in (tmp_path / "quiet" / "logs").glob("*.log"))
    assert all(noise in logs for noise in TF_NOISE)  # always kept in RUN/logs/

    action = window.findChild(QAction, "showTfOutputAction")
    assert action.isCheckable() and not action.isChecked()
    action.trigger()
    window.log.clear()
    text = "\n".join(crash_once(qtbot, window, tmp_path / "loud", fake_python))
    assert all(noise in text for noise in TF_NOISE)
    assert "chief:0 | Traceback (most recent call last):" in text


def test_an_error_the_trainer_recorded_is_said_once(qtbot, window, tmp_path, fake_python,
                                                    monkeypatch):
    monkeypatch.setenv("FAKE_RECORDS_ERROR", "1")
    lines = crash_once(qtbot, window, tmp_path / "run", fake_python)
    assert [line.split(" ", 1)[1] for line in lines if "error" in line or "failed" in line] \
        == ["chief error: RuntimeError: recorded",
            "chief failed at step 0: exited with status 1 (error): RuntimeError: recorded"]
    assert "UnavailableError" not in "\n".join(lines)  # its traceback stays in the log file


def test_every_command_has_a_shortcut_shown_in_its_menu_and_tooltip(window):
    from ftgui.qt.window.menu_actions import SHORTCUTS

    names = {"startAction": "start", "resumeAction": "resume",
             "checkpointNowAction": "checkpoint", "killAction": "kill",
             "preemptAction": "preempt", "killAllAction": "kill_all",
             "freezeAction": "freeze", "thawAction": "thaw", "injectNanAction": "nan"}
    taken = {}
    for action in window.findChildren(QAction):
        if not action.shortcut().isEmpty():
            key = action.shortcut().toString()
            assert key not in taken, f"{key}: {taken.get(key)} and {action.objectName()}"
            taken[key] = action.objectName()
    for name, command in names.items():
        action = window.findChild(QAction, name)
        assert action.shortcut() == QKeySequence(SHORTCUTS[command]), name
        assert action.shortcut().toString() in action.toolTip(), name
    for key in ("Ctrl+Q", "Ctrl+O", "Ctrl+N", "Ctrl+R", "F1"):  # the window's own, kept
        assert key in taken, key
    assert "Ctrl+Return" in window.start_button.toolTip()
    assert "Ctrl+K" in window.kill_button.toolTip()
    # an action is enabled exactly when its button is
    assert window.findChild(QAction, "startAction").isEnabled()
    assert not window.findChild(QAction, "killAction").isEnabled()
    assert not window.findChild(QAction, "thawAction").isEnabled()  # nothing is frozen


def test_every_setting_has_a_tooltip(window):
    from ftgui.core.settings.schema import SETTINGS

    for name in SETTINGS:
        assert window.panel.widgets[name].toolTip().strip(), name


def test_the_new_button_shows_a_fresh_run_ready_to_start(qtbot, window, finished_run):
    window.open_run(finished_run)
    assert not window.start_button.isEnabled()  # a finished run is on screen
    window.panel.findChild(QPushButton, "newRunButton").click()
    qtbot.waitUntil(window.start_button.isEnabled)
    assert window.run_dir() != finished_run.absolute()
    assert window.run_dir() == window.panel.run_dir().absolute()
    assert window.table.model().rowCount() == 0  # the old run's checkpoints are gone
    assert window.plot.timeline.last_step == 0


def test_reset_to_defaults_brings_back_every_default_in_a_fresh_run(qtbot, window,
                                                                     finished_run):
    window.open_run(finished_run)  # steps 60, checkpoint every 10
    window.settings.setValue("last_config", "{}")
    window.findChild(QAction, "resetDefaultsAction").trigger()
    assert window.panel.config() == RunConfig().with_cluster_counts()
    assert window.run_dir() != finished_run.absolute()
    assert window.start_button.isEnabled()
    assert window.settings.value("last_config") is None


@pytest.mark.tf
def test_inject_nan_now_rolls_the_running_chief_back(qtbot, window, tmp_path):
    window.panel.run_dir_edit.setText(str(tmp_path / "run"))
    window.panel.run_dir_edit.editingFinished.emit()
    window.panel.set_config(RunConfig(steps=5000, checkpoint_every=10, warm_standby=False))
    assert window.start_run()
    controller = window.controller
    action = window.findChild(QAction, "injectNanAction")
    qtbot.waitUntil(lambda: controller.timeline.last_step >= 25, timeout=120_000)
    assert action.isEnabled()
    action.trigger()
    qtbot.waitUntil(lambda: any(m.kind == "nan_rollback" for m in controller.timeline.markers),
                    timeout=60_000)
    [incident] = controller.timeline.incidents
    assert (incident.kind, incident.source, incident.target) == ("nan", "user", "chief")
    nan_step = next(m.step for m in controller.timeline.markers if m.kind == "nan_rollback")
    # the step before the poisoned one (snapshots every step, the default): from the snapshot,
    # or from the checkpoint of that step when one was saved there (a NaN at step 41 rolls back
    # to checkpoint 40, as new as the snapshot: the disk is preferred then)
    assert (incident.step, incident.resumed_step) == (nan_step, nan_step - 1)
    assert incident.restore_source == "memory" or (
        incident.restore_source == "disk" and (nan_step - 1) % 10 == 0)
    assert controller.supervisor.state == "running"  # the process rolled back on its own
    window.kill_button.click()


# ------------------------------------------------------------------------------ export
def test_the_plot_exports_as_a_slide_png_and_as_svg(qtbot, tmp_path):
    import xml.etree.ElementTree as ElementTree

    from PySide6.QtGui import QImage

    from ftgui.qt.plot.export import ImageSize, export_png, export_svg
    from ftgui.qt.plot.loss_plot import LossPlot

    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(800, 300)
    plot.show_timeline(fork_timeline())
    plot.redraw()
    on_screen = plot.getPlotItem().geometry()
    assert export_png(plot, tmp_path / "slide.png", ImageSize(1920, 1080, 192))
    image = QImage(str(tmp_path / "slide.png"))
    assert (image.width(), image.height()) == (1920, 1080)
    assert round(image.dotsPerMeterX() * 0.0254) == 192
    assert export_png(plot, tmp_path / "small.png", ImageSize(1280, 720, 96))
    assert QImage(str(tmp_path / "small.png")).size().toTuple() == (1280, 720)
    # the window's plot is as it was: same geometry, its legend over the data again
    assert plot.getPlotItem().geometry() == on_screen and plot.legend.isVisible()

    assert export_svg(plot, tmp_path / "plot.svg")
    root = ElementTree.parse(tmp_path / "plot.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    paths = [e for e in root.iter() if e.tag.endswith("}path") or e.tag.endswith("}polyline")]
    # the loss curve: a path of at least its 100 + 70 points (one command per point)
    longest = max(len((e.get("d") or e.get("points") or "").split()) for e in paths)
    assert longest >= 100
    texts = "".join(e.text or "" for e in root.iter() if e.tag.endswith("}text"))
    assert "abandoned branch" in texts and "global step" in texts


def test_the_run_menu_exports_png_at_a_size_and_svg(window, tmp_path, finished_run):
    from PySide6.QtGui import QImage

    from ftgui.qt.plot.export import ImageSize

    window.open_run(finished_run)
    assert window.findChild(QAction, "exportSvgAction") is not None
    assert window.run_history.export_png(tmp_path / "a.png", ImageSize(1600, 900, 144))
    assert QImage(str(tmp_path / "a.png")).size().toTuple() == (1600, 900)
    assert "(1600 × 900 px, 144 dpi)" in window.statusBar().currentMessage()
    assert window.run_history.export_svg(tmp_path / "a.svg")
    assert (tmp_path / "a.svg").read_text().lstrip().startswith("<?xml")


# steps 1-30 a second apart, then the chief killed by the user (its exit at 31.0)
KILLED_AT_30 = [
    *({"event": "step", "attempt": 0, "step": s, "loss": 1.0, "time": float(s)}
      for s in range(1, 31)),
    {"event": "fault_injected", "attempt": 0, "time": 30.5, "kind": "kill",
     "target": "chief", "step": 30, "source": "user"},
    {"event": "process_exited", "attempt": 0, "time": 31.0, "role": "chief", "index": 0,
     "chief": True, "signal": 9, "decisive": True},
]


def test_an_incident_ended_by_a_fork_reads_as_unrecovered_not_pending(qtbot):
    from ftgui.qt.panes.incident_table import COLUMNS, IncidentPanel

    timeline = Timeline()
    timeline.feed([
        *KILLED_AT_30,
        {"event": "forked", "attempt": 1, "time": 40.0, "from_step": 10,
         "archived_steps": [20, 30]},
        {"event": "resumed", "attempt": 1, "time": 41.0, "from_step": 10},
    ])
    panel = IncidentPanel()
    qtbot.addWidget(panel)
    panel.show_timeline(timeline)
    model = panel.model_
    row = {column: model.data(model.index(0, i)) for i, column in enumerate(COLUMNS)}
    assert (row["fault"], row["at step"], row["recovery"], row["steps lost"],
            row["time lost"]) == ("kill", "30", "none (fork)", "—", "—")
    assert "<b>0</b> steps redone" in panel.totals.text()


def test_an_incident_whose_restart_crashed_shows_its_time_and_hands_on_the_redo(qtbot):
    """Killed at 30; its restart dies before any step; the next resumes from 20. The first
    row charges the 4 s up to that death, the second the rest and the 10 redone steps; the
    story line tells the first so, the totals add both."""
    from ftgui.core.timeline.story import incident_line
    from ftgui.qt.panes.incident_table import COLUMNS, IncidentPanel

    timeline = Timeline()
    timeline.feed([
        *KILLED_AT_30,
        {"event": "process_exited", "attempt": 1, "time": 34.5, "role": "chief", "index": 0,
         "chief": True, "signal": 9, "decisive": True},
        {"event": "resumed", "attempt": 2, "time": 40.0, "from_step": 20},
        *({"event": "step", "attempt": 2, "step": s, "loss": 1.0, "time": 20.0 + s}
          for s in range(21, 41)),
    ])
    panel = IncidentPanel()
    qtbot.addWidget(panel)
    panel.show_timeline(timeline)
    model = panel.model_
    rows = [{column: model.data(model.index(r, i)) for i, column in enumerate(COLUMNS)}
            for r in (0, 1)]
    assert [(row["fault"], row["recovery"], row["steps lost"], row["time lost"])
            for row in rows] == [("kill", "none (restart crashed)", "—", "4.0 s"),
                                 ("crash", "6.50 s", "10", "16.5 s")]  # 41 - 34.5 + 10 × 1
    assert "<b>10</b> steps redone · <b>20.5 s</b> lost" in panel.totals.text()
    assert incident_line(timeline.incidents[0]) == (
        "killed at step 30 → its restart crashed before the first new step: 4.0 s lost "
        "until then")


def _killed_and_resumed(job_started: list[dict]) -> list[dict]:
    return [*({"event": "step", "attempt": 0, "step": s, "loss": 1.0, "time": s / 10}
              for s in range(1, 71)),
            {"event": "fault_injected", "attempt": 0, "time": 7.0, "kind": "kill",
             "target": "worker:1", "source": "schedule", "step": 70},
            {"event": "process_exited", "attempt": 0, "time": 7.1, "role": "worker",
             "index": 1, "signal": 9, "decisive": True},
            *job_started,
            {"event": "resumed", "attempt": 1, "time": 20.0, "from_step": 70,
             "source": "just_in_time"},
            *({"event": "step", "attempt": 1, "step": s, "loss": 1.0, "time": 21 + s / 10}
              for s in range(71, 81))]


def test_the_incidents_tab_shows_the_slurm_wait_as_the_incident_line_does(qtbot):
    from ftgui.core.timeline.story import incident_line
    from ftgui.qt.panes.incident_table import COLUMNS, SLURM_COLUMN, IncidentPanel

    panel = IncidentPanel()
    qtbot.addWidget(panel)
    local = Timeline()
    local.feed(_killed_and_resumed([]))
    panel.show_timeline(local)
    assert panel.table.isColumnHidden(SLURM_COLUMN)  # a local run: no such phase
    assert panel.model_.data(panel.model_.index(0, SLURM_COLUMN)) == "—"
    slurm = Timeline()
    slurm.feed(_killed_and_resumed([
        {"event": "job_started", "attempt": 0, "time": 0.0, "job": "5", "pending_seconds": 0.4},
        {"event": "job_started", "attempt": 1, "time": 11.2, "job": "6",
         "pending_seconds": 3.1}]))
    panel.show_timeline(slurm)
    assert not panel.table.isColumnHidden(SLURM_COLUMN)
    model = panel.model_
    row = {column: model.data(model.index(0, i)) for i, column in enumerate(COLUMNS)}
    assert row["waiting for Slurm"] == "3.1 s"
    assert "waiting for Slurm: 3.1 s →" in incident_line(slurm.incidents[0])
