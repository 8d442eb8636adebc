"""The main window: configuration on the left, live loss plot in the middle, checkpoints and the
event log below, Start / Kill / Preempt / Resume on top, state in the status bar.

The window is shown before the plot exists: importing pyqtgraph takes most of a second here, so
the plot area shows a placeholder first and the `LossPlot` is created right after the window's
first paint (or at once when something asks for `window.plot`). The run's data lives in the
controller's `Timeline` meanwhile; the plot draws all of it when it arrives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence, QTextCursor
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ftgui.core import checkpoint_tools
from ftgui.core import config as configmod
from ftgui.core.config import ConfigError
from ftgui.core.supervisor import RunBusyError, StartError
from ftgui.qt import theme
from ftgui.qt.about import HelpMenu
from ftgui.qt.app import app_icon
from ftgui.qt.checkpoint_dialog import CheckpointDialog, CheckpointJob
from ftgui.qt.checkpoint_table import CheckpointTable
from ftgui.qt.commands import Commands
from ftgui.qt.config_panel import ConfigPanel
from ftgui.qt.controller import RunController
from ftgui.qt.incident_table import IncidentPanel
from ftgui.qt.plot_tools import PlotPane
from ftgui.qt.process_table import ProcessTable
from ftgui.qt.quit_guard import QuitGuard
from ftgui.qt.recent_runs import RecentRuns, RunDrop
from ftgui.qt.run_history import RunHistory

if TYPE_CHECKING:  # imported when the plot is created (it imports pyqtgraph)
    from ftgui.qt.loss_plot import LossPlot

LIVE_STATES = ("running", "recovering")
MAX_LOG_LINES = 5000


class MainWindow(QMainWindow):
    """The ftgui window. `open_run(path)` shows an existing run; Start begins the configured one.

    `plot` is the `LossPlot`; the window creates it right after its first paint and then emits
    `plotReady(plot)` (`plot_ready` tells whether it exists; asking for `plot` creates it)."""

    plotReady = Signal(object)  # the LossPlot, once it exists and holds what came before

    def __init__(self, settings: QSettings | None = None):
        super().__init__()
        self.setObjectName("mainWindow")
        self.setWindowTitle("ftgui — fault-tolerant training, made visible")
        self.setWindowIcon(app_icon())
        self.run_drop = RunDrop(self, self.open_run)  # a run folder dropped here opens it
        self.settings = settings or QSettings()
        self.quit_guard = QuitGuard(self, self.settings)  # "Stop training and quit?"
        self.panel = ConfigPanel()
        self._plot: LossPlot | None = None
        self.plot_pane = PlotPane(None, self.settings)  # the plot's tools over a placeholder
        self.plot_pane.placeholder.firstPainted.connect(self._create_plot)
        self.table = CheckpointTable()
        self.processes = ProcessTable()
        self.incident_panel = IncidentPanel()
        self.log = QPlainTextEdit()
        self.log.setObjectName("eventLog")
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(MAX_LOG_LINES)
        self.log.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.controller = RunController(None, self)  # the plot comes after the first paint
        self._build_layout()
        self._apply_theme()
        theme.signals.scaleChanged.connect(self._apply_theme)
        self._build_menu()
        self._connect()
        self._restore_settings()
        self.controller.open(self.panel.run_dir())
        self._on_state(*self.controller.state)

    # ------------------------------------------------------------ the plot, after the first paint
    def _log_line(self, line: str) -> None:
        self.log.appendPlainText(line)
        # The view follows the text cursor, left at the end of the new line: put it at the
        # line's start so that a long line does not scroll the log to the right.
        cursor = self.log.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.movePosition(QTextCursor.MoveOperation.StartOfBlock)
        self.log.setTextCursor(cursor)

    @property
    def plot(self) -> LossPlot:
        """The loss plot, created now if the window has not done it yet."""
        return self._plot if self._plot is not None else self._create_plot()

    @property
    def plot_ready(self) -> bool:
        """Whether the loss plot exists (until then the plot area shows "loading plot…")."""
        return self._plot is not None

    def run_dir(self) -> Path | None:
        """The directory of the run open in the window (absolute), or None before any."""
        supervisor = self.controller.supervisor
        return None if supervisor is None else supervisor.run_dir

    def _apply_theme(self, *_scale) -> None:
        """Colours and sizes of the window's own widgets, from the theme at its current scale."""
        theme.style(self.kill_button, self.resume_button, self.state_label)

    def _create_plot(self) -> LossPlot:
        """Import pyqtgraph, create the LossPlot in place of the placeholder and let it draw the
        controller's timeline from now on."""
        if self._plot is not None:
            return self._plot
        from ftgui.qt.loss_plot import LossPlot  # pyqtgraph: the slow import, deferred to here

        plot = LossPlot()
        self._plot = plot
        self.plot_pane.set_plot(plot)  # takes the view tools' smoothing, scale and x axis
        self.controller.plot = plot  # shows it the whole timeline so far
        plot.redraw()
        self.plotReady.emit(plot)
        return plot

    # ------------------------------------------------------------ layout
    def _build_layout(self) -> None:
        self.start_button = _button("startButton", "Start", "Start a new run in the run directory")
        self.kill_button = _button("killButton", "Kill", "Crash the chief: SIGKILL its processes")
        self.preempt_button = _button("preemptButton", "Preempt",
                                      "SIGTERM: save at the current step, then stop")
        self.resume_button = _button("resumeButton", "Resume",
                                     "Restart from the newest valid checkpoint")
        self.checkpoint_button = _button("checkpointNowButton", "Checkpoint now",
                                         "Save a checkpoint after the current step (SIGUSR1)")
        self.state_label = QLabel("idle")
        self.state_label.setObjectName("stateLabel")
        bar = QHBoxLayout()
        for button in (self.start_button, self.kill_button, self.preempt_button,
                       self.resume_button, self.checkpoint_button):
            bar.addWidget(button)
        bar.addSpacing(12)
        bar.addWidget(self.state_label, 1)

        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.panel)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMinimumWidth(self.panel.minimumSizeHint().width() + 24)

        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(_titled("Checkpoints", self.table))
        bottom.addWidget(self._process_tabs())
        bottom.addWidget(_titled("Event log", self.log))
        bottom.setSizes([430, 330, 440])
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.plot_pane)  # the plot under its view tools
        right.addWidget(bottom)
        right.setSizes([480, 260])
        main = QSplitter(Qt.Orientation.Horizontal)
        main.addWidget(scroll)
        main.addWidget(right)
        main.setStretchFactor(1, 1)
        main.setSizes([340, 1000])

        central = QWidget()
        layout = QVBoxLayout(central)
        layout.addLayout(bar)
        layout.addWidget(main, 1)
        self.setCentralWidget(central)
        self.status_label = QLabel("")
        self.status_label.setObjectName("statusLabel")
        self.statusBar().addWidget(self.status_label, 1)
        self.resize(1360, 820)

    def _process_tabs(self) -> QTabWidget:
        tabs = QTabWidget()
        tabs.setObjectName("processTabs")
        tabs.addTab(self.processes, "Processes")
        tabs.addTab(self.incident_panel, "Incidents")
        self.controller.incidentsChanged.connect(self._show_incidents)
        return tabs

    def _show_incidents(self, timeline) -> None:
        self.incident_panel.show_timeline(timeline)
        count = len(timeline.incidents)
        tabs = self.findChild(QTabWidget, "processTabs")
        tabs.setTabText(1, f"Incidents ({count})" if count else "Incidents")

    def _build_menu(self) -> None:
        menu = self.menuBar().addMenu("&Run")
        open_action = QAction("&Open run…", self)
        open_action.setShortcut(QKeySequence.StandardKey.Open)
        open_action.triggered.connect(self._choose_run)
        new_action = QAction("&New run", self)
        new_action.setShortcut(QKeySequence.StandardKey.New)
        new_action.triggered.connect(self.new_run)
        quit_action = QAction("&Quit", self)
        quit_action.setObjectName("quitAction")
        quit_action.setShortcut(QKeySequence("Ctrl+Q"))  # Cmd+Q on macOS; Windows has none
        quit_action.triggered.connect(self.close)
        self.recent_runs = RecentRuns(self.settings, self)
        self.recent_runs.openRequested.connect(self.open_run)
        menu.addAction(open_action)
        menu.addMenu(self.recent_runs.menu)
        for action in (new_action, self.quit_guard.forget_action, quit_action):
            menu.addAction(action)
        # Runs… (the Runs dock), Clear overlays, Export curves as CSV…, Export plot as PNG…
        self.run_history = RunHistory(self, menu, before=quit_action)
        faults = self.menuBar().addMenu("&Faults")
        # Start … Checkpoint now, the Faults items, Reset to defaults, Show TensorFlow output
        self.commands = Commands(self, menu, faults)
        self.help_menu = HelpMenu(self)  # Open documentation, About ftgui

    def _connect(self) -> None:
        self.start_button.clicked.connect(self.start_run)
        self.kill_button.clicked.connect(lambda: self.controller.kill("chief"))
        self.preempt_button.clicked.connect(lambda: self.controller.preempt("chief"))
        self.resume_button.clicked.connect(lambda: self.resume_run())
        self.checkpoint_button.clicked.connect(self.controller.checkpoint_now)
        self.table.resumeRequested.connect(lambda step: self.resume_run(step))
        self.table.inspectRequested.connect(self.inspect_checkpoint)
        self.table.exportRequested.connect(self._export_checkpoint)
        self.table.deleteRequested.connect(self._delete_checkpoint)
        self.controller.stateChanged.connect(self._on_state)
        self.controller.logLine.connect(self._log_line)
        self.controller.checkpointsChanged.connect(
            lambda: self.table.refresh(self.controller.supervisor.run_dir)
        )
        self.controller.statusChanged.connect(self.status_label.setText)
        self.controller.processesChanged.connect(self.processes.update_rows)
        self.processes.killRequested.connect(self.controller.kill)
        self.processes.preemptRequested.connect(self.controller.preempt)
        self.processes.freezeRequested.connect(self.controller.freeze)
        self.processes.thawRequested.connect(self.controller.thaw)
        self.panel.run_dir_edit.editingFinished.connect(self._run_dir_edited)

    # ------------------------------------------------------------ actions
    def start_run(self) -> bool:
        """Validate the panel and start a new run; False (with the reason shown) if refused."""
        try:
            config = self.panel.config()
            config.validate()
            run_dir = self.panel.run_dir()
            if self.controller.supervisor is None or self.controller.supervisor.run_dir != (
                run_dir.absolute()
            ):
                self.controller.open(run_dir)
            self.controller.start(config)
        except (ConfigError, StartError, RunBusyError, RuntimeError, OSError) as exc:
            self._refuse(exc)
            return False
        self._accepted(config)
        return True

    def resume_run(self, from_step: int | None = None) -> bool:
        """Resume the open run (from the newest valid checkpoint, or fork from `from_step`)."""
        try:
            config = self.panel.config()
            config.validate()
            self.controller.start(config, resume=True, from_step=from_step)
        except (ConfigError, StartError, RunBusyError, RuntimeError, OSError) as exc:
            self._refuse(exc)
            return False
        self._accepted(config)
        return True

    def open_run(self, run_dir: Path) -> None:
        """Show an existing run: its configuration, curves, markers, checkpoints and log."""
        try:
            self.controller.open(Path(run_dir))
            config = self.controller.supervisor.config
        except (ConfigError, RuntimeError, OSError) as exc:
            self._refuse(exc)
            return
        self.panel.run_dir_edit.setText(str(Path(run_dir).absolute()))
        if config is not None:
            self.panel.set_config(config)
        self.panel.show_error("")
        self.recent_runs.remember(Path(run_dir))
        self.setWindowTitle(f"ftgui — {Path(run_dir).name}")
        self.controller.tick()

    def inspect_checkpoint(self, step: int, export: Path | None = None) -> CheckpointJob:
        """Inspect (and evaluate, or export) checkpoint `step` in a helper process; the
        result opens in a dialog (or the status bar says where the model went)."""
        job = CheckpointJob(self.controller.supervisor.run_dir, step, evaluate=export is None,
                            export=export, parent=self)
        job.failed.connect(lambda reason: self._refuse(RuntimeError(reason)))
        if export is None:
            job.done.connect(lambda result: CheckpointDialog(result, self).show())
        else:
            job.done.connect(lambda result: self.statusBar().showMessage(
                f"checkpoint {step} exported to {result['exported']}", 10000))
        self.statusBar().showMessage(f"reading checkpoint {step} in a helper process…", 10000)
        job.start()
        self._jobs = [j for j in getattr(self, "_jobs", []) if j.process.state()] + [job]
        return job

    def _export_checkpoint(self, step: int) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Export model", str(Path.home() / f"ckpt-{step}.keras"), "Keras model (*.keras)"
        )
        if path:
            self.inspect_checkpoint(step, export=Path(path))

    def _delete_checkpoint(self, step: int) -> None:
        answer = QMessageBox.question(
            self, "Delete checkpoint",
            f"Delete checkpoint {step} of {self.controller.supervisor.run_dir.name}? "
            "Its files are removed from disk.",
        )
        if answer != QMessageBox.StandardButton.Yes:
            return
        try:
            names = checkpoint_tools.delete(self.controller.supervisor.run_dir, step)
        except (LookupError, OSError) as exc:
            self._refuse(exc)
            return
        self.statusBar().showMessage(f"deleted {', '.join(names)}", 10000)
        self.table.refresh(self.controller.supervisor.run_dir)

    def _refuse(self, exc: Exception) -> None:
        self.panel.show_error(str(exc))
        self.statusBar().showMessage(str(exc), 10000)

    def _accepted(self, config) -> None:
        self.panel.show_error("")
        self.recent_runs.remember(self.panel.run_dir())
        self.settings.setValue("last_config", json.dumps(config.to_dict()))

    def _choose_run(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open run", str(self.panel.run_dir().parent))
        if path:
            self.open_run(Path(path))

    def new_run(self) -> bool:
        """Show a fresh run directory, ready to Start (refused while a run is live)."""
        if self.controller.supervisor and self.controller.supervisor.live:
            self._refuse(RuntimeError("a run is live; kill or preempt it first"))
            return False
        from ftgui.qt.config_panel import new_run_dir

        self.panel.run_dir_edit.setText(str(new_run_dir()))
        self._run_dir_edited()
        return True

    def _run_dir_edited(self) -> None:
        run_dir = self.panel.run_dir()
        current = self.controller.supervisor
        if current is not None and (current.live or current.run_dir == run_dir.absolute()):
            return
        if (run_dir / configmod.CONFIG_FILE).is_file():
            self.open_run(run_dir)
        else:
            self.controller.open(run_dir)

    # ------------------------------------------------------------ state
    def _on_state(self, state: str, reason: str) -> None:
        supervisor = self.controller.supervisor
        live = state in LIVE_STATES
        alive = bool(supervisor) and any(p.alive for p in supervisor.processes)
        has_run = bool(supervisor) and supervisor.config is not None
        self.start_button.setEnabled(not live and state != "busy" and not has_run)
        self.kill_button.setEnabled(alive)
        self.preempt_button.setEnabled(alive)
        self.checkpoint_button.setEnabled(alive)
        self.resume_button.setEnabled(
            not live and has_run and state not in ("finished", "busy")
        )
        self.table.resume_enabled = not live and state != "busy" and has_run
        self.panel.set_editable(not live and state != "busy")
        theme.set_state(self.state_label, state)  # its colour
        self.state_label.setText(state + (f" — {reason}" if reason else ""))

    # ------------------------------------------------------------ settings and closing
    def _restore_settings(self) -> None:
        geometry = self.settings.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        text = self.settings.value("last_config")
        if text:
            try:
                self.panel.set_config(configmod.from_dict(json.loads(text)))
            except (ValueError, TypeError):
                self.settings.remove("last_config")

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if not self.quit_guard.may_close():  # a run trains: preempt, kill, or stay
            event.ignore()
            return
        self.settings.setValue("geometry", self.saveGeometry())
        self.controller.shutdown()
        super().closeEvent(event)


def _button(name: str, text: str, tip: str) -> QPushButton:
    button = QPushButton(text)
    button.setObjectName(name)
    button.setToolTip(tip)
    button.setMinimumWidth(90)
    return button


def _titled(title: str, widget: QWidget) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 4, 0, 0)
    label = QLabel(f"<b>{title}</b>")
    layout.addWidget(label)
    layout.addWidget(widget, 1)
    return box
