"""The main window: configuration on the left, live loss plot in the middle, checkpoints and the
event log below, Start / Kill / Preempt / Resume and the story line on top (`top_bar`), state in
the status bar; menus in `menus`, the presentation view and zoom in `view_modes`.

The window is shown before the plot exists: importing pyqtgraph takes most of a second here, so
the plot area shows a placeholder first and the `LossPlot` is created right after the window's
first paint (or at once when something asks for `window.plot`). The run's data lives in the
controller's `Timeline` meanwhile; the plot draws all of it when it arrives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings, Signal
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QMainWindow,
    QPlainTextEdit,
    QTabWidget,
)

from ftgui.core.record.runs import check_new_run_folder
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import ConfigError
from ftgui.core.supervision.supervisor import RunBusyError, StartError
from ftgui.qt import theme
from ftgui.qt.demos.menu import DemoMenu
from ftgui.qt.panes.checkpoint_actions import CheckpointActions
from ftgui.qt.panes.checkpoint_table import CheckpointTable
from ftgui.qt.panes.config_panel import ConfigPanel
from ftgui.qt.panes.incident_table import IncidentPanel
from ftgui.qt.panes.process_table import ProcessTable
from ftgui.qt.plot.tools import PlotPane
from ftgui.qt.window.app_icon import app_icon
from ftgui.qt.window.controller import RunController
from ftgui.qt.window.layout import build_layout
from ftgui.qt.window.menus import WindowMenus
from ftgui.qt.window.quit_guard import QuitGuard
from ftgui.qt.window.recent_runs import RunDrop
from ftgui.qt.window.view_modes import Presentation, Zoom

if TYPE_CHECKING:  # imported when the plot is created (it imports pyqtgraph)
    from ftgui.qt.panes.checkpoint_dialog import CheckpointJob
    from ftgui.qt.plot.loss_plot import LossPlot

LIVE_STATES = ("running", "recovering")
MAX_LOG_LINES = 5000
SPARE_KEY = "spare_trainer"  # QSettings: keep a spare trainer ready (Run menu), default on
PANEL_MIN_WIDTH = 260  # pixels at scale 1: the settings panel scrolls sideways below this


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
        self.log.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)  # a narrow column
        self.controller = RunController(None, self)  # the plot comes after the first paint
        self._state = ("idle", "")  # as last shown
        self.zoom = Zoom(self.settings)
        self.zoom.restore()
        build_layout(self)
        self._apply_theme()
        theme.follow_scale(self, self._apply_theme)
        self.menus = WindowMenus(self)
        self.recent_runs = self.menus.recent_runs
        self.run_history = self.menus.run_history
        self.help_menu = self.menus.help
        self.menu_actions = self.menus.menu_actions
        self.presentation = Presentation(
            lambda: [self.left, self.bottom, self.plot_pane.tools, self.statusBar(),
                     *(dock for dock in self.findChildren(QDockWidget)
                       if dock.objectName() != "demoDock")],  # a guided demo's text stays
            [self.main_splitter, self.right_splitter, self.left, self.bottom],
            [self._present_look])
        self._connect()
        self.demos = DemoMenu(self)  # the Demo menu and the guided demo's panel (a dock)
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
        return self.controller.run_dir

    def _apply_theme(self, *_scale) -> None:
        """Sizes of the window's own layout from the theme at its current scale (the top bar
        and the plot follow the scale themselves): the panel's width, the window's minimum."""
        factor = theme.scale()
        self.panel_scroll.setMinimumWidth(round(PANEL_MIN_WIDTH * factor))
        screen = self.screen().availableGeometry().width() if self.screen() else 10**5
        self.setMinimumWidth(min(round(theme.MIN_WINDOW_WIDTH * factor), screen))

    # ------------------------------------------------------------ View: presentation and zoom
    @property
    def presenting(self) -> bool:
        """Whether the presentation view is on."""
        return self.presentation.on

    def set_presenting(self, on: bool) -> None:
        """Enter (`True`) or leave the presentation view: the loss plot and the story line fill
        the window at large sizes; panel, tables, log, plot tools and status bar are hidden.
        Leaving restores the layout as it was."""
        self.presentation.set_on(on)
        self.menus.present_action.setChecked(self.presentation.on)

    def _present_look(self, on: bool) -> None:
        self.top_bar.set_presenting(on)
        if self._plot is not None:
            self._plot.set_presenting(on)

    def zoom_in(self) -> float:
        """Every font and line one step larger (View → Zoom in); returns the new scale."""
        return self.zoom.zoom_in()

    def zoom_out(self) -> float:
        """Every font and line one step smaller (View → Zoom out); returns the new scale."""
        return self.zoom.zoom_out()

    def zoom_reset(self) -> float:
        """Fonts and lines at their designed size (View → Reset zoom); returns 1.0."""
        return self.zoom.reset()

    def _create_plot(self) -> LossPlot:
        """Import pyqtgraph, create the LossPlot in place of the placeholder and let it draw the
        controller's timeline from now on."""
        if self._plot is not None:
            return self._plot
        from ftgui.qt.plot.loss_plot import LossPlot  # pyqtgraph: the slow import, deferred to here

        plot = LossPlot()
        plot.set_presenting(self.presentation.on)
        self._plot = plot
        self.plot_pane.set_plot(plot)  # takes the view tools' smoothing, scale and x axis
        self.controller.plot = plot  # shows it the whole timeline so far
        plot.redraw()
        self.plotReady.emit(plot)
        return plot

    def show_incidents(self, timeline) -> None:
        """The Incidents tab shows `timeline`'s incidents, its title their count."""
        self.incident_panel.show_timeline(timeline)
        count = len(timeline.incidents)
        tabs = self.findChild(QTabWidget, "processTabs")
        tabs.setTabText(1, f"Incidents ({count})" if count else "Incidents")

    def _connect(self) -> None:
        self.start_button.clicked.connect(self.start_run)
        self.kill_button.clicked.connect(lambda: self.controller.kill("chief"))
        self.preempt_button.clicked.connect(lambda: self.controller.preempt("chief"))
        self.resume_button.clicked.connect(lambda: self.resume_run())
        self.checkpoint_button.clicked.connect(self.controller.checkpoint_now)
        self.table.resumeRequested.connect(lambda step: self.resume_run(step))
        self.checkpoint_actions = CheckpointActions(self)  # inspect, export, delete
        self.controller.stateChanged.connect(self._on_state)
        self.controller.logLine.connect(self._log_line)
        self.controller.checkpointsChanged.connect(
            lambda: self.table.refresh(self.controller.run_dir)
        )
        self.controller.statusChanged.connect(self.status_label.setText)
        self.controller.timelineChanged.connect(self._show_story)
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
            check_new_run_folder(run_dir)
            if self.controller.run_dir != run_dir.absolute():
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
        error = self.controller.supervisor.config_error  # a config.toml that does not load
        self.panel.show_error(f"{error}; Resume uses the settings shown here" if error else "")
        if error:
            self.statusBar().showMessage(error, 10000)
        elif self.controller.supervisor.config_note:  # settings taken from the run's record
            self.statusBar().showMessage(self.controller.supervisor.config_note, 10000)
            self._log_line(self.controller.supervisor.config_note)
        self.recent_runs.remember(Path(run_dir))
        self.setWindowTitle(f"ftgui — {Path(run_dir).name}")
        self.controller.tick()

    def replay_run(self, run_dir: Path, speed: float = 1.0) -> bool:
        """Play a finished run's events into the window at `speed` (read-only); False with
        the reason shown if refused."""
        from ftgui.core.timeline.replay import ReplayClock

        try:
            self.controller.open(Path(run_dir), replay=ReplayClock.from_run(run_dir, speed))
            config = self.controller.config
        except (ConfigError, RuntimeError, OSError) as exc:
            self._refuse(exc)
            return False
        if config is not None:
            self.panel.set_config(config)
        self.panel.run_dir_edit.setText(str(Path(run_dir).absolute()))
        self.setWindowTitle(f"ftgui — {Path(run_dir).name} (replay)")
        self._on_state(*self.controller.state)
        return True

    def inspect_checkpoint(self, step: int, export: Path | None = None) -> CheckpointJob:
        """Inspect (and evaluate, or export) checkpoint `step` in a helper process; the
        result opens in a dialog (or the status bar says where the model went)."""
        return self.checkpoint_actions.inspect(step, export)

    def _refuse(self, exc: Exception) -> None:
        self.panel.show_error(str(exc))
        self.statusBar().showMessage(str(exc), 10000)

    def _accepted(self, config) -> None:
        self.panel.show_error("")
        self.panel.show_check(getattr(self.controller.supervisor, "user_check", None))
        self.recent_runs.remember(self.panel.run_dir())
        self.settings.setValue("last_config", json.dumps(config.to_dict()))

    def choose_run(self) -> None:
        """Run → Open run…: ask for a run directory and open it."""
        path = QFileDialog.getExistingDirectory(self, "Open run", str(self.panel.run_dir().parent))
        if path:
            self.open_run(Path(path))

    def new_run(self) -> bool:
        """Show a fresh run directory, ready to Start (refused while a run is live)."""
        if self.controller.supervisor and self.controller.supervisor.live:
            self._refuse(RuntimeError("a run is live; kill or preempt it first"))
            return False
        from ftgui.core.record.runs import new_run_dir

        self.panel.run_dir_edit.setText(str(new_run_dir()))
        self._run_dir_edited()
        return True

    def _run_dir_edited(self) -> None:
        run_dir = self.panel.run_dir()
        current = self.controller.supervisor
        if self.controller.run_dir == run_dir.absolute() or (current is not None and current.live):
            return
        if (run_dir / configmod.CONFIG_FILE).is_file():
            self.open_run(run_dir)
        else:
            self.controller.open(run_dir)

    # ------------------------------------------------------------ state
    def refresh_story(self) -> None:
        """Show the story line and the state label again (after `top_bar.story_owner` changed)."""
        self._show_story()

    def _show_story(self, *_timeline) -> None:
        """The story line and the state label, from the timeline and the last state shown."""
        config = self.controller.config
        self.top_bar.run_name = self.demos.story_name(self.run_dir())
        self.top_bar.show_run(self.controller.timeline, *self._state,
                              total_steps=config.steps if config else None,
                              watchdog_due_in=self.controller.watchdog_due_in())
        self.incident_panel.show_totals(self.controller.timeline)  # the banner's figures, now
        if self.kill_button.isEnabled() and self.controller.timeline.state == "finished":
            self._enable_buttons()  # its last processes end a few seconds after the chief

    def _on_state(self, state: str, reason: str) -> None:
        self._state = (state, reason)
        self._enable_buttons()
        self._show_story()

    def _enable_buttons(self) -> None:
        """The buttons for the state last shown: Kill, Preempt and Checkpoint now while a
        process of the run lives and the run has not reached its last step (a multi-worker
        run's other worker, a parameter-server cluster's servers, end seconds after the
        chief: Kill stayed red beside "finished — reached the last step", helper-36)."""
        state = self._state[0]
        supervisor = self.controller.supervisor
        live = state in LIVE_STATES
        over = self.controller.timeline.state == "finished"
        own = bool(supervisor) and any(p.alive for p in supervisor.processes) and not over
        alive = own or (bool(supervisor) and supervisor.reaches_job())  # a watched Slurm job
        has_run = self.controller.config is not None
        self.start_button.setEnabled(not live and state != "busy" and not has_run)
        self.kill_button.setEnabled(alive)
        self.preempt_button.setEnabled(alive)
        self.checkpoint_button.setEnabled(own)
        self.resume_button.setEnabled(
            not live and has_run and state not in ("finished", "busy")
        )
        self.table.resume_enabled = not live and state != "busy" and has_run
        self.panel.set_editable(not live and state != "busy")
        if self.controller.replay is not None:  # a replay is read-only
            for button in (self.start_button, self.kill_button, self.preempt_button,
                           self.resume_button, self.checkpoint_button):
                button.setEnabled(False)
            self.table.resume_enabled = False
            self.panel.set_editable(False)

    # ------------------------------------------------------------ the spare trainer
    def spare_wanted(self) -> bool:
        """Whether the user keeps a spare trainer (Run → Keep a spare trainer ready; on
        unless turned off)."""
        return str(self.settings.value(SPARE_KEY, "true")).lower() in ("true", "1")

    def set_spare(self, on: bool) -> None:
        """Keep a spare trainer for the settings shown (`RunController.keep_spare`), or end
        it and keep none; remembered for the next launch. The `ftgui` window calls it when it
        opens; a window made without it starts every run cold."""
        self.settings.setValue(SPARE_KEY, on)
        self.menu_actions.spare.setChecked(on)
        if on:
            self.controller.keep_spare(self._spare_settings)
        else:
            self.controller.stop_spare()

    def _spare_settings(self):
        try:
            config = self.panel.config()
            config.validate()
        except ConfigError:
            return None
        return config

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
