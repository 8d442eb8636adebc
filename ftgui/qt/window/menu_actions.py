"""The window's menu actions with keyboard shortcuts, for a presenter at the keyboard.

Start, Resume and Checkpoint now (Run menu), Kill and Preempt (Faults menu) act exactly as their
buttons do — an action clicks its button and is enabled when the button is — and each button's
tooltip names its shortcut. The Faults menu also has Kill all, Freeze and Thaw the chief (Thaw
only while a process is frozen) and Inject NaN now; the Run menu has Reset to defaults and Show
TensorFlow output. The panel's New button does what Run → New run does.

Shortcuts avoid the window's others: Ctrl+O open, Ctrl+N new run, Ctrl+Q quit, Ctrl+R runs,
F1 help, F5 presentation, Ctrl++ / Ctrl+- / Ctrl+0 zoom, Page Up / Page Down (a guided demo).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QPushButton

from ftgui.core.settings.config import RunConfig
from ftgui.qt.panes.process_table import process_rows

SHORTCUTS = {
    "start": "Ctrl+Return", "resume": "Ctrl+Shift+R", "checkpoint": "Ctrl+S",
    "kill": "Ctrl+K", "preempt": "Ctrl+P", "kill_all": "Ctrl+Shift+K",
    "freeze": "Ctrl+Shift+F", "thaw": "Ctrl+Shift+T", "nan": "Ctrl+Shift+N",
}
SPARE_TIP = ("While no run trains, keep trainers with TensorFlow imported and the settings "
             "shown built, one for the run and one per standby it keeps, so that Start trains "
             "at once (0.7-0.9 GB of memory each)")
TF_OUTPUT_TIP = ("Show the training processes' raw output (TensorFlow, gRPC, tracebacks) in the "
                 "event log; it is always kept in RUN/logs/")


def shortcut_text(name: str) -> str:
    """The shortcut of command `name` as this platform writes it ("Ctrl+K")."""
    return QKeySequence(SHORTCUTS[name]).toString(QKeySequence.SequenceFormat.NativeText)


class _FollowEnabled(QObject):
    """Keeps `action` enabled exactly when `button` is."""

    def __init__(self, button: QPushButton, action: QAction):
        super().__init__(button)
        self.action = action
        action.setEnabled(button.isEnabled())
        button.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.EnabledChange:
            self.action.setEnabled(watched.isEnabled())
        return False


class MenuActions:
    """Builds the actions (objectNames `startAction`, `resumeAction`, `checkpointNowAction`,
    `killAction`, `preemptAction`, `killAllAction`, `freezeAction`, `thawAction`,
    `injectNanAction`, `resetDefaultsAction`, `showTfOutputAction`) into the window's Run menu
    `run_menu` and `faults_menu`. `window` is the `MainWindow` (buttons, controller, panel,
    settings, `new_run`)."""

    def __init__(self, window, run_menu: QMenu, faults_menu: QMenu):
        self.window = window
        controller = window.controller
        first = run_menu.actions()[0] if run_menu.actions() else None
        for name, button, text in (("start", window.start_button, "&Start"),
                                   ("resume", window.resume_button, "&Resume"),
                                   ("checkpoint", window.checkpoint_button, "&Checkpoint now")):
            run_menu.insertAction(first, self._button_action(name, button, text))
        run_menu.insertSeparator(first)
        for name, button, text in (("kill", window.kill_button, "&Kill the chief (SIGKILL)"),
                                   ("preempt", window.preempt_button,
                                    "&Preempt the chief (SIGTERM)")):
            faults_menu.addAction(self._button_action(name, button, text))
        faults_menu.addSeparator()
        self.kill_all = self._action("kill_all", "Kill &all processes (SIGKILL)",
                                     lambda: controller.kill("all"))
        self.freeze = self._action("freeze", "&Freeze the chief (SIGSTOP: a hang)",
                                   lambda: controller.freeze("chief"))
        self.thaw = self._action("thaw", "&Thaw the chief (SIGCONT)",
                                 lambda: controller.thaw("chief"))
        self.nan = self._action("nan", "Inject &NaN now", self.inject_nan,
                                "Poison the loss of the chief's next step: it rolls back to "
                                "its newest checkpoint (custom training loop)")
        self.nan.setObjectName("injectNanAction")
        for action in (self.kill_all, self.freeze, self.thaw, self.nan):
            faults_menu.addAction(action)
        _FollowEnabled(window.kill_button, self.kill_all)  # enabled while something is alive
        _FollowEnabled(window.kill_button, self.freeze)
        _FollowEnabled(window.kill_button, self.nan)
        self.thaw.setEnabled(False)
        controller.processesChanged.connect(self._update_thaw)

        self.reset = self._action("", "Reset to &defaults", self.reset_to_defaults,
                                  "Every setting back to its default, in a fresh run directory")
        self.reset.setObjectName("resetDefaultsAction")
        self.tf_output = self._action("", "Show &TensorFlow output", self._show_tf_output,
                                      TF_OUTPUT_TIP)
        self.tf_output.setObjectName("showTfOutputAction")
        self.tf_output.setCheckable(True)
        self.spare = self._action("", "Keep a s&pare trainer ready",
                                  lambda: window.set_spare(self.spare.isChecked()), SPARE_TIP)
        self.spare.setObjectName("spareTrainerAction")
        self.spare.setCheckable(True)
        after_new = _after(run_menu, "&New run")
        run_menu.insertAction(after_new, self.reset)
        run_menu.insertAction(after_new, self.tf_output)
        run_menu.insertAction(after_new, self.spare)
        new_button = window.panel.findChild(QPushButton, "newRunButton")
        new_button.clicked.disconnect()  # it only changed the path: now what Run → New run does
        new_button.clicked.connect(window.new_run)

    # ------------------------------------------------------------ building
    def _action(self, name: str, text: str, slot, tip: str = "") -> QAction:
        action = QAction(text, self.window)
        if name:
            action.setObjectName(f"{_camel(name)}Action")
            action.setShortcut(QKeySequence(SHORTCUTS[name]))
            tip = f"{tip or text.replace('&', '')} ({shortcut_text(name)})"
        action.setToolTip(tip)
        action.setStatusTip(tip)
        action.triggered.connect(lambda _checked=False: slot())
        return action

    def _button_action(self, name: str, button: QPushButton, text: str) -> QAction:
        """An action that clicks `button` (nothing when it is disabled), enabled as it is."""
        action = self._action(name, text, button.click, button.toolTip())
        if name == "checkpoint":
            action.setObjectName("checkpointNowAction")
        button.setToolTip(action.toolTip())
        _FollowEnabled(button, action)
        return action

    # ------------------------------------------------------------ what they do
    def _update_thaw(self, processes) -> None:
        self.thaw.setEnabled(any(row["state"] == "frozen" for row in process_rows(processes)))

    def inject_nan(self) -> bool:
        done = self.window.controller.inject_nan_now()
        if not done:
            self.window.statusBar().showMessage(
                "no NaN injected: the chief must be training with the custom loop", 10000)
        return done

    def reset_to_defaults(self) -> bool:
        """The panel back to `RunConfig()` in a fresh run directory; refused while a run is
        live. The remembered configuration is forgotten, so the next launch starts clean."""
        if not self.window.new_run():
            return False
        self.window.panel.set_config(RunConfig())
        self.window.settings.remove("last_config")
        return True

    def _show_tf_output(self) -> None:
        self.window.controller.show_tf_output = self.tf_output.isChecked()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _after(menu: QMenu, text: str) -> QAction | None:
    """The action after the one titled `text` in `menu` (None: at the end)."""
    actions = menu.actions()
    for index, action in enumerate(actions):
        if action.text() == text:
            return actions[index + 1] if index + 1 < len(actions) else None
    return None
