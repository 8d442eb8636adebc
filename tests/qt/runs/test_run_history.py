"""The run history in the window: the Runs dock lists the runs of a folder, opens one and
overlays others on the plot; the Run menu exports the open run's curves and the plot."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QTableView

from ftgui.core.record import runs
from ftgui.core.record.events import EventWriter
from ftgui.core.reports import csv_export
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import RunConfig
from ftgui.qt import theme
from ftgui.qt.panes import config_panel
from ftgui.qt.runs.runs_dock import RunsDock
from ftgui.qt.window.main_window import MainWindow

T0 = 1_700_000_000.0


def temp_settings(tmp_path) -> QSettings:
    return QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)


def write_run(root: Path, name: str, losses, at: float = 0.0, kill_at: int | None = None):
    """A run directory with config.toml and events: run_started at T0 + at, then one step
    every 0.5 s from 2 s later (killed after step `kill_at` when given)."""
    run_dir = root / name
    configmod.save(run_dir, RunConfig(steps=len(losses)))
    with EventWriter(run_dir, 0) as writer:
        writer.emit("run_started", time=T0 + at)
        for step, loss in enumerate(losses, start=1):
            writer.emit("step", time=T0 + at + 2.0 + 0.5 * (step - 1), step=step, loss=loss)
            if step == kill_at:
                writer.emit("process_exited", time=T0 + at + 60, role="chief", index=0, pid=1,
                            decisive=True, signal=9, signal_name="SIGKILL")
                return run_dir
        writer.emit("run_finished", time=T0 + at + 60, step=len(losses), loss=losses[-1])
    return run_dir


# ------------------------------------------------------------------------------ the window
def test_the_run_menu_offers_runs_overlays_and_exports_before_quit(window):
    menu = window.menuBar().actions()[0].menu()
    texts = [action.text() for action in menu.actions() if not action.isSeparator()]
    assert texts[-1] == "&Quit"
    for text in ("&Runs…", "C&lear overlays", "Export curves as &CSV…", "Export plot as &PNG…"):
        assert text in texts
    runs_action = window.findChild(object, "runsAction")
    assert runs_action.shortcut().toString() == "Ctrl+R"


def test_the_runs_dock_lists_opens_and_overlays_runs(qtbot, tmp_path):
    root = tmp_path / "runs"
    write_run(root, "alpha", [2.0, 1.0, 0.5], at=0.0, kill_at=2)
    write_run(root, "beta", [3.0, 2.0, 1.0, 0.5], at=100.0)
    settings = temp_settings(tmp_path)
    settings.setValue("runs_root", str(root))  # the folder chosen last time
    window = MainWindow(settings=settings)
    qtbot.addWidget(window)
    window.show()
    history = window.run_history
    window.findChild(object, "runsAction").trigger()
    dock = history.dock
    assert dock.isVisible()
    table = window.findChild(QTableView, "runsTable")
    model = table.model()
    shown = [[model.index(row, col).data() for col in range(4)] for row in range(model.rowCount())]
    assert shown == [["beta", "finished", "mirrored", "4 / 4"],
                     ["alpha", "killed", "mirrored", "2 / 3"]]

    dock.select_paths({root.absolute() / "alpha", root.absolute() / "beta"})
    assert not dock.open_button.isEnabled()  # open one run at a time
    dock.overlay_button.click()
    plot = window.plot
    assert sorted(trace.name for trace in plot.overlays.values()) == ["alpha", "beta"]
    alpha = plot.overlays[str(root.absolute() / "alpha")]
    assert alpha.series.y().tolist() == [2.0, 1.0]
    assert (alpha.series.t() - alpha.origin).tolist() == [2.0, 2.5]
    dock.clear_button.click()
    assert plot.overlays == {}

    dock.select_paths({root.absolute() / "beta"})
    dock.open_button.click()
    assert window.controller.supervisor.run_dir == (root / "beta").absolute()
    assert plot.series[0].y().tolist() == [3.0, 2.0, 1.0, 0.5]
    beta_row = [r for r in range(model.rowCount()) if model.index(r, 0).data() == "beta"][0]
    assert model.index(beta_row, 0).data(Qt.ItemDataRole.FontRole).bold()  # the open run
    window.controller.shutdown()


def test_the_runs_dock_lists_the_open_runs_folder_when_its_own_holds_none(qtbot, tmp_path):
    """`ftgui open runs/demo2`, then Run → Runs…: the dock showed its default folder, empty
    ("this folder does not exist yet"), not the runs beside the open one (a new user)."""
    root = tmp_path / "runs"
    write_run(root, "alpha", [2.0, 1.0, 0.5])
    write_run(root, "beta", [3.0, 2.0])
    settings = temp_settings(tmp_path)
    settings.setValue("runs_root", str(tmp_path / "never-made"))
    assert runs.holds_runs(root) and not runs.holds_runs(tmp_path / "never-made")
    window = MainWindow(settings=settings)
    qtbot.addWidget(window)
    window.show()
    window.open_run(root / "beta")
    window.findChild(object, "runsAction").trigger()
    dock = window.run_history.dock
    assert dock.root() == (root / "beta").absolute().parent
    model = window.findChild(QTableView, "runsTable").model()
    assert sorted(model.index(row, 0).data() for row in range(model.rowCount())) == [
        "alpha", "beta"]
    dock.set_root(tmp_path / "elsewhere")  # the user's own choice, holding runs: kept
    dock.hide()
    (tmp_path / "elsewhere").mkdir()
    write_run(tmp_path / "elsewhere", "gamma", [1.0])
    window.findChild(object, "runsAction").trigger()
    assert dock.root() == tmp_path / "elsewhere"
    window.controller.shutdown()


def test_the_runs_dock_writes_each_status_in_its_theme_colour(qtbot, tmp_path):
    root = tmp_path / "runs"
    write_run(root, "alpha", [2.0, 1.0], kill_at=1)
    write_run(root, "beta", [2.0, 1.0])
    dock = RunsDock(temp_settings(tmp_path))
    qtbot.addWidget(dock)
    dock.set_root(root)
    model = dock.table.model()
    status = {model.index(row, 0).data(): model.index(row, 1) for row in range(model.rowCount())}
    assert status["alpha"].data() == "killed" and status["beta"].data() == "finished"
    colour = {name: index.data(Qt.ItemDataRole.ForegroundRole).color().name()
              for name, index in status.items()}
    assert colour == {"alpha": theme.ERROR, "beta": theme.SUCCESS}


def test_the_runs_folder_is_remembered_in_the_window_settings(window, tmp_path):
    other = tmp_path / "elsewhere"
    write_run(other, "gamma", [1.0])
    window.run_history.dock.set_root(other)
    assert window.settings.value("runs_root") == str(other)
    assert window.run_history.dock.model_.rows[0].name == "gamma"


def test_the_default_runs_folder_is_the_platform_one(window):
    assert config_panel.runs_root is runs.runs_root  # the panel uses core's
    assert window.run_history.dock.root() == runs.runs_root()


def test_curves_and_plot_export_from_the_run_menu(window, tmp_path):
    run_dir = write_run(tmp_path, "shown", [2.0, 1.0, 0.5])
    window.open_run(run_dir)
    csv_path = tmp_path / "out.csv"
    assert window.run_history.export_csv(csv_path)
    expected = tmp_path / "expected.csv"
    csv_export.write_curves_csv(run_dir, expected)
    assert csv_path.read_text() == expected.read_text()
    assert csv_path.read_text().splitlines()[1] == "train,0,1,2.000,2.0"
    png_path = tmp_path / "plot.png"
    assert window.run_history.export_png(png_path)
    image = QImage(str(png_path))
    assert not image.isNull() and image.width() > 100


def test_exporting_a_run_without_events_says_so(window, tmp_path):
    empty = tmp_path / "fresh"
    window.controller.open(empty)
    assert not window.run_history.export_csv(tmp_path / "out.csv")
    assert "no events" in window.statusBar().currentMessage()


def test_the_status_line_of_a_finished_run_names_its_restarts_not_a_rate(window, tmp_path):
    from recorded import crash_and_recovery

    run_dir = crash_and_recovery(tmp_path / "recovered")
    window.open_run(run_dir)
    text = window.controller.status_text()
    assert text.startswith("finished · step 20/20 · restarts 1"), text
    assert "steps/s" not in text and "attempt" not in text and "fork" not in text


def test_the_status_line_names_the_restarts_that_were_forks(window, tmp_path):
    """After a crash and a fork the status bar said "restarts 2", as if both were faults (a
    new user's finding): the fork, the user's own resume from an older checkpoint, is named."""
    from recorded import crash_then_fork

    window.open_run(crash_then_fork(tmp_path / "forked"))
    text = window.controller.status_text()
    assert " · restarts 2 (1 of them a fork)" in text, text
