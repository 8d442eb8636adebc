"""The Demo menu (`demoMenu`): the guided demos of `ftgui.core.demos.definitions`, and what runs one
in the window — each run in a fresh folder, the explanation panel following the run's events and
Page Down / Page Up, K for the presenter's fault, the comparison view for demos of several runs,
and the settings panel given back what it showed before when the demo ends or stops.

Files that are refused are listed as disabled entries saying why (one line: file and field).
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence

from ftgui.core.demos import definitions, results
from ftgui.core.demos.definitions import Demo
from ftgui.core.demos.session import READING_SECONDS, DemoSession
from ftgui.core.record import runs
from ftgui.core.record.run_notes import RunNotes
from ftgui.core.record.run_notes import save as save_notes
from ftgui.core.settings.config import ConfigError
from ftgui.qt.demos.panel import DemoPanel, make_dock, show_stage_pane

POLL_MS = 100
PRESENTER_KEY = "demo/presenter"  # QSettings: faults with `wait` wait for K
AFTER_THE_END = "The run has ended: K fires nothing now."
BETWEEN_RUNS_SECONDS = 3.0  # a finished run stays on screen (its ending read) before the next


class DemoMenu(QObject):
    """Builds the Demo menu of `window` (a `MainWindow`) and runs its demos.

    `demos` and `refused` are what `ftgui.core.demos.definitions.discover` found (`folders`
    overrides its folders, for tests); `session` is the demo on (None when none), `start(demo,
    presenter)` starts one; `panel`/`dock` show it. Actions: `presenter_action`
    (`demoPresenterAction`), `next_action` (Page Down), `previous_action` (Page Up), `fire_action`
    (K), `stop_action`."""

    def __init__(self, window, folders=None):
        super().__init__(window)
        self.window, self.folders = window, folders
        self.session: DemoSession | None = None
        self.runs_root = runs.runs_root()
        self.reading_seconds = READING_SECONDS  # the least time each stage stays on screen
        self._saved: tuple | None = None  # the panel's config and run folder before the demo
        self._names: dict[Path, str] = {}  # run folder -> name, of the last demo of several runs
        self._run_on = False
        self._over_at: float | None = None  # monotonic time the run shown ended, the next due
        self._late_key = ""  # what the panel says to a K pressed after the demo's end
        self._hint: tuple[str, float] | None = None  # a Page Down ahead of the run: (text, until)
        self.panel = DemoPanel()
        self.dock = make_dock(self.panel, window)
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.dock)
        window.presentation.looks.append(self.panel.set_presenting)
        window.presentation.looks.append(lambda _on: self._show_pane())
        self.menu = window.menuBar().addMenu("De&mo")
        self.menu.setObjectName("demoMenu")
        window.menuBar().insertMenu(window.menus.help_menu.menuAction(), self.menu)
        self._build_actions()
        self.panel.next_button.clicked.connect(self.next_stage)
        self.panel.previous_button.clicked.connect(self.previous_stage)
        self.panel.stop_button.clicked.connect(self.stop)
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.tick)
        self.reload()

    def _build_actions(self) -> None:
        window = self.window
        self.presenter_action = self._action(
            "demoPresenterAction", "Faults wait for me (press K)", None,
            "On: a demo's presenter faults wait until you press K. Off: they fire on their "
            "schedule, for a rehearsal")
        self.presenter_action.setCheckable(True)
        self.presenter_action.setChecked(
            str(window.settings.value(PRESENTER_KEY, "true")).lower() == "true")
        self.presenter_action.toggled.connect(
            lambda on: window.settings.setValue(PRESENTER_KEY, "true" if on else "false"))
        self.next_action = self._action("demoNextAction", "Next stage", "PgDown",
                                        "The next stage's explanation", self.next_stage)
        self.previous_action = self._action("demoPreviousAction", "Previous stage", "PgUp",
                                            "The previous stage's explanation",
                                            self.previous_stage)
        self.fire_action = self._action("demoFireAction", "Fire the fault now", "K",
                                        "The fault the demo waits for", self.fire)
        self.stop_action = self._action("demoStopAction", "Stop demo", None,
                                        "Stop the demo's run; the settings come back",
                                        self.stop)
        self.folder_action = self._action("demoFolderAction", "Open my demos folder", None,
                                          str(definitions.user_dir()), self.open_user_folder)
        self.reload_action = self._action("demoReloadAction", "Reload demos", None,
                                          "Read the demo files again", self.reload)
        for action in (self.next_action, self.previous_action, self.fire_action,
                       self.stop_action):
            window.addAction(action)  # the keys work with the menu closed, also presenting
        self._update_actions()

    def _action(self, name, text, shortcut, tip, slot=None) -> QAction:
        action = QAction(text, self.window)
        action.setObjectName(name)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            tip = f"{tip} ({shortcut})"
        action.setToolTip(tip)
        action.setStatusTip(tip)
        if slot is not None:
            action.triggered.connect(lambda _checked=False: slot())
        return action

    # ------------------------------------------------------------ the menu's contents
    def reload(self) -> None:
        """Read the demo files again and rebuild the menu."""
        self.demos, self.refused = definitions.discover(self.folders)
        self.menu.clear()
        for demo in self.demos:
            action = self.menu.addAction(demo.title)
            action.setObjectName(f"demo:{demo.key}")
            action.setToolTip(demo.summary or demo.title)
            action.setStatusTip(demo.summary)
            action.triggered.connect(lambda _checked=False, d=demo: self.start(d))
        for line in self.refused:
            action = self.menu.addAction(f"refused: {line}")
            action.setObjectName("demoRefused")
            action.setEnabled(False)
        self.menu.setToolTipsVisible(True)
        self.menu.addSeparator()
        for action in (self.presenter_action, self.next_action, self.previous_action,
                       self.fire_action, self.stop_action):
            self.menu.addAction(action)
        self.menu.addSeparator()
        self.menu.addAction(self.folder_action)
        self.menu.addAction(self.reload_action)

    def open_user_folder(self) -> None:
        folder = definitions.user_dir()
        folder.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))

    # ------------------------------------------------------------ running a demo
    def start(self, demo: Demo, presenter: bool | None = None) -> bool:
        """Start `demo` in the window (its first run in a fresh folder); False with the reason
        shown when refused (a run is live). `presenter` (default: the menu's toggle): faults
        with `wait` wait for K."""
        window = self.window
        supervisor = window.controller.supervisor
        if window.controller.replay is not None or (supervisor is not None and supervisor.live):
            window.panel.show_error("a run is live; kill or preempt it before starting a demo")
            return False
        if self.session is not None:
            self._end(restore=True)
        if presenter is None:
            presenter = self.presenter_action.isChecked()
        try:
            saved_config = window.panel.config()
        except ConfigError:
            saved_config = None
        self._saved = (saved_config, window.panel.run_dir_edit.text())
        self._names = {}
        self.session = DemoSession(demo, self.runs_root, presenter,
                                   reading_seconds=self.reading_seconds)
        self._late_key = ""
        self.panel.show_result("")
        self.dock.show()
        self.window.resizeDocks([self.dock], [max(self.window.width() * 3 // 10, 300)],
                                Qt.Orientation.Horizontal)  # the plot keeps most of the width
        self.dock.raise_()
        self.timer.start()
        return self._start_next_run()

    def story_name(self, run_dir: Path | None) -> str | None:
        """The name of `run_dir` when the last demo ran it as one of several runs ("every
        100", "uninterrupted"), which the story line then starts with: a room read the chaos
        demo's reference run as the chaos run (a presenter's finding); else None."""
        return None if run_dir is None else self._names.get(Path(run_dir).absolute())

    def _start_next_run(self) -> bool:
        session, window = self.session, self.window
        planned = session.next_run()
        if planned is None:
            self._finish()
            return True
        run_dir, config = planned
        try:
            supervisor = window.controller.open(run_dir)
            for step, why in session.holds_of(session.run).items():
                supervisor.plan_hold(step, why)
            window.controller.start(config)
        except (ConfigError, RuntimeError, OSError) as exc:
            window.panel.show_error(f"demo {session.demo.key}: {exc}")
            self._end(restore=True)
            return False
        name = session.demo.runs[session.run - 1].name
        save_notes(run_dir, RunNotes(name if len(session.demo.runs) > 1 else
                                     session.demo.title, f"guided demo: {session.demo.title}"))
        if len(session.demo.runs) > 1:
            self._names[Path(run_dir).absolute()] = name
        window.panel.set_config(config)  # shown while it runs; given back at the end
        window.panel.run_dir_edit.setText(str(run_dir))
        window.recent_runs.remember(run_dir)
        window.setWindowTitle(f"ftgui — demo: {session.demo.title}")
        self._run_on = True
        self._show()
        return True

    def tick(self) -> None:
        """Follow the current run's events; fire the fault the presenter asked for once the
        run holds at its step; start the next run, or finish, when it is over. After the
        end, the stages still due come on screen, each after its reading time."""
        session = self.session
        if session is None:
            return
        if session.ended:
            if session.machine.tick():
                self._show()
            if session.machine.caught_up:
                self.timer.stop()
            return
        if session.poll() | session.machine.tick():
            self._show()
        supervisor = self.window.controller.supervisor
        self._fire_pressed(supervisor)
        self.panel.show_prompt(self._prompt())  # the hold comes, the standby gets ready
        if self._run_on and supervisor is not None and not supervisor.live:
            session.poll()
            self._run_on = False
            self._over_at = time.monotonic()
        if self._over_at is not None and self._next_run_due(session):
            self._over_at = None
            self._start_next_run()
        self._update_actions()

    def _next_run_due(self, session) -> bool:
        """The run shown ended: the next starts once the room has read its ending (the
        least of `BETWEEN_RUNS_SECONDS` and the stages' reading time), the demo's end at once."""
        if session.run >= len(session.run_dirs):
            return True
        pause = min(BETWEEN_RUNS_SECONDS, self.reading_seconds)
        return time.monotonic() - self._over_at >= pause

    def _finish(self) -> None:
        session = self.session
        session.finish()
        claims = results.check(session.demo, session.run_dirs)
        self.panel.show_result(results.summary(claims))
        self._end(restore=True, stopped=False)
        if len(session.run_dirs) > 1:
            self.window.run_history.compare([runs.summarize(d) for d in session.run_dirs])
        self._show()

    def stop(self) -> None:
        """Stop the demo: its live run is ended, the panel gets its settings back."""
        session = self.session
        if session is None:
            return
        supervisor = self.window.controller.supervisor
        if supervisor is not None and supervisor.live:
            supervisor.shutdown()
        if not session.ended:
            session.ended = True
            self.panel.show_result("stopped")
        self._end(restore=True)

    def _end(self, restore: bool, stopped: bool = True) -> None:
        """The demo is over: give the panel back what it showed before (no setting leaks).
        Not `stopped` (it ended by itself): the timer goes on until the last stages had
        their reading time."""
        if stopped or self.session is None or self.session.machine.caught_up:
            self.timer.stop()
        self._run_on, self._over_at = False, None
        if self.session is not None:
            self.session.ended = True
        if restore and self._saved is not None:
            config, run_dir_text = self._saved
            if config is not None:
                self.window.panel.set_config(config)
            self.window.panel.run_dir_edit.setText(run_dir_text)
            self._saved = None
        self._update_actions()

    # ------------------------------------------------------------ the presenter's keys
    def next_stage(self) -> None:
        """Page Down: at a waiting stage, what K does (a clicker has no K): the fault fires
        at once where training holds at its step, else once it gets there. Otherwise the next
        stage the run has reached, shown now; where there is none yet the panel says what the
        next one waits for (a stage ahead of the run would tell of what has not happened)."""
        session = self.session
        if session is None:
            return
        if session.pending_wait() is not None:
            self.fire()
        elif session.machine.next():
            self._show()
        elif not session.ended and (waits := session.machine.waiting_for()):
            self._hint = (f"The next stage comes once {waits}.",
                          time.monotonic() + self.reading_seconds)
            self.panel.show_prompt(self._prompt())

    def previous_stage(self) -> None:
        if self.session is not None and self.session.machine.previous():
            self._show()

    def fire(self) -> bool:
        """K: ask for the fault the demo waits for; it fires at once when training holds at
        its step (and the warm standby is ready), else as soon as it does. False when none
        waits."""
        session = self.session
        if session is not None and session.ended:  # a late K: nothing left to fault, say so
            self._late_key = AFTER_THE_END
            self.panel.show_prompt(self._prompt())
            return False
        fault = session.press() if session is not None else None
        if fault is None:
            return False
        self._fire_pressed(self.window.controller.supervisor)
        self._show()
        return True

    def _fire_pressed(self, supervisor) -> None:
        session = self.session
        if session is None or supervisor is None:
            return
        held = supervisor.held[0] if supervisor.held is not None else None
        fault = session.to_fire(held, supervisor.standby_ready())
        if fault is None:
            return
        controller = self.window.controller
        fire = {"kill": controller.kill, "preempt": controller.preempt,
                "hang": controller.freeze}[fault.kind]
        if fire(fault.target):
            session.mark_fired(fault)
            self._show()

    def _show(self) -> None:
        session = self.session
        if session is None:
            return
        machine = session.machine
        stage = machine.stage
        self._hint = None  # said of the stage shown before
        self.panel.show_stage(session.demo.title, machine.current, len(machine.stages),
                              stage.text if stage else "")
        self._show_pane()
        self.panel.show_prompt(self._prompt())
        self._update_actions()

    def _show_pane(self) -> None:
        """Presenting, the pane the current stage points at (`Stage.show`) is shown under the
        plot at the presentation's text size, and hidden again after its stage."""
        session, window = self.session, self.window
        stage = session.machine.stage if session is not None and not session.ended else None
        pane = stage.show if stage is not None else ""
        show_stage_pane(window, pane, window.presenting)

    def _prompt(self) -> str:
        session = self.session
        if session.ended:
            return self._late_key
        fault = session.pending_wait()
        if fault is None:
            hint, until = self._hint or ("", 0.0)
            return hint if time.monotonic() < until else ""
        supervisor = self.window.controller.supervisor
        held = supervisor is not None and supervisor.held is not None
        if session.pressed != fault:
            where = "training holds here" if held else f"training will hold at step {fault.step}"
            return f"Press K when ready: {fault.describe()} ({where})."
        if not held:
            return f"K pressed: {fault.describe()} at step {fault.step}, once training is there."
        return (f"K pressed: {fault.describe()} once the warm standby has imported TensorFlow."
                if not supervisor.standby_ready() else "")

    def _update_actions(self) -> None:
        session = self.session
        # after the end K stays on, to say that it does nothing (the status bar is hidden
        # while presenting, and a silent key looks broken to a presenter)
        self.fire_action.setEnabled(session is not None and (
            session.ended or session.pending_wait() is not None))
        has = session is not None
        self.next_action.setEnabled(has)
        self.previous_action.setEnabled(has)
        self.stop_action.setEnabled(has and not session.ended)
        self.panel.stop_button.setEnabled(self.stop_action.isEnabled())  # nothing left to stop
