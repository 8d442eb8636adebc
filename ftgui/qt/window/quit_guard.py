"""Closing the window while a run trains: ask once, "Stop training and quit?".

*Preempt and quit* sends the chief SIGTERM (it saves a checkpoint at its current step and exits
42, so the run is recorded as preempted and `--resume` loses no step) with automatic recovery
held, so that no restart begins only to be killed. It waits for the training processes to exit
with a progress dialog (at most `PREEMPT_TIMEOUT_S`; its button kills at once), then closes.
*Kill and quit* closes at once: the window's shutdown SIGKILLs every process and the run is
recorded as stopped. *Cancel* keeps the window. The answer can be remembered in QSettings.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QGuiApplication
from PySide6.QtWidgets import QCheckBox, QMainWindow, QMessageBox, QProgressDialog

from ftgui.core.record.run_state import PREEMPT_TIMEOUT_S

PREEMPT = "preempt"
KILL = "kill"
CANCEL = "cancel"
SETTINGS_KEY = "quit/when_training"  # a remembered PREEMPT or KILL
WAIT_POLL_MS = 100


class QuitGuard(QObject):
    """Decides whether `window` may close now. The window's `closeEvent` asks `may_close()`;
    `choose()` is the only method that shows a modal dialog (tests replace it)."""

    def __init__(self, window: QMainWindow, settings: QSettings):
        super().__init__(window)
        self.window = window
        self.settings = settings
        self.progress: QProgressDialog | None = None
        self.outcome = ""  # how the last close went: '', 'preempted', 'killed', 'timed out'
        self._approved = False
        self._given = ""  # an answer given without asking (quit_with)
        self._deadline = 0.0
        self._stopping: list = []  # the TrainingProcesses alive when the preemption was sent
        self._timer = QTimer(self)
        self._timer.setInterval(WAIT_POLL_MS)
        self._timer.timeout.connect(self._check_exit)
        self.forget_action = QAction("Ask again before stopping training on quit", window)
        self.forget_action.setObjectName("forgetQuitAnswerAction")
        self.forget_action.setToolTip("Forget the remembered answer to 'Stop training and quit?'")
        self.forget_action.triggered.connect(self.forget)
        self.forget_action.setVisible(bool(self.remembered()))  # shown only when it would act

    # ------------------------------------------------------------ what the window asks
    def training(self) -> bool:
        """True while a process of the open run is alive or a restart is pending."""
        supervisor = self.window.controller.supervisor
        return supervisor is not None and supervisor.live

    def may_close(self) -> bool:
        """True when the window may close now. While training, asks (or uses the remembered
        answer); *Preempt and quit* returns False now and closes the window itself once the
        trainer has exited. A close asked for while waiting is refused: the wait goes on."""
        if self._approved or not self.training():
            return True
        if self._timer.isActive():
            return False
        choice = self._given or self.remembered() or self._ask()
        self._given = ""
        if choice == KILL:
            self.outcome = "killed"
            return True
        if choice == PREEMPT:
            return self._preempt_then_close()
        return False

    def quit_with(self, choice: str) -> None:
        """Close the window answering `choice` (PREEMPT or KILL) without asking: for signals
        from outside (SIGTERM asks for a graceful stop; Ctrl+C in the terminal for a quick one).
        Raises ValueError for another choice."""
        if choice not in (PREEMPT, KILL):
            raise ValueError(f"choice: {choice!r} is not {PREEMPT!r} or {KILL!r}")
        if self._timer.isActive():  # already waiting for a preemption
            if choice == KILL:
                self._close_now("killed")
            return
        self._given = choice
        self.window.close()

    def remembered(self) -> str:
        """The remembered answer (PREEMPT or KILL), or '' when ftgui should ask."""
        value = self.settings.value(SETTINGS_KEY, "")
        return value if value in (PREEMPT, KILL) else ""

    def forget(self) -> None:
        """Ask again next time."""
        self.settings.remove(SETTINGS_KEY)
        self.forget_action.setVisible(False)

    def choose(self) -> tuple[str, bool]:
        """Show the question; returns (PREEMPT, KILL or CANCEL, remember the answer?).

        Without a screen (the offscreen platform: tests, CI, a headless session) nobody can
        answer a modal question, so the answer is KILL, as closing did before it asked."""
        if QGuiApplication.platformName() == "offscreen":
            return KILL, False
        box = QMessageBox(QMessageBox.Icon.Question, "Stop training and quit?",
                          "Stop training and quit?", parent=self.window)
        box.setObjectName("quitQuestion")
        box.setInformativeText(
            "Preempt saves a checkpoint at the current step first, so the run resumes "
            "without losing a step. Kill ends the training processes at once; the steps "
            "since the last checkpoint are lost.")
        preempt = box.addButton("&Preempt and quit", QMessageBox.ButtonRole.AcceptRole)
        kill = box.addButton("&Kill and quit", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(preempt)
        remember = QCheckBox("&Remember my answer")
        box.setCheckBox(remember)
        box.exec()
        clicked = box.clickedButton()
        choice = PREEMPT if clicked is preempt else KILL if clicked is kill else CANCEL
        return choice, remember.isChecked()

    def _ask(self) -> str:
        choice, remember = self.choose()
        if remember and choice in (PREEMPT, KILL):
            self.settings.setValue(SETTINGS_KEY, choice)
            self.forget_action.setVisible(True)
        return choice

    # ------------------------------------------------------------ preempt, wait, close
    def _preempt_then_close(self) -> bool:
        controller = self.window.controller
        self._stopping = [p for p in controller.supervisor.processes if p.alive]
        if not controller.preempt_and_stop():  # nothing alive (a restart was pending)
            self.outcome = "preempted"
            return True
        self._deadline = time.monotonic() + PREEMPT_TIMEOUT_S
        step = controller.supervisor.last_step
        self.progress = QProgressDialog(
            f"Saving step {step} and stopping training…", "&Kill now", 0,
            int(PREEMPT_TIMEOUT_S), self.window)
        self.progress.setObjectName("quitProgress")
        self.progress.setWindowTitle("Stopping training")
        self.progress.setWindowModality(Qt.WindowModality.WindowModal)  # input, not code
        self.progress.setMinimumDuration(0)
        self.progress.setAutoClose(False)
        self.progress.setAutoReset(False)
        self.progress.canceled.connect(lambda: self._close_now("killed"))
        self.progress.show()
        self._timer.start()
        return False

    def _check_exit(self) -> None:
        supervisor = self.window.controller.supervisor
        stopping = any(p.alive for p in self._stopping)
        left = self._deadline - time.monotonic()
        if not stopping:
            self._close_now("preempted")
        elif left <= 0:
            self._close_now("timed out")  # the shutdown that follows kills what is left
        elif self.progress is not None:
            self.progress.setValue(int(PREEMPT_TIMEOUT_S - left))
            self.progress.setLabelText(
                f"Saving step {supervisor.last_step} and stopping training… "
                f"(killed in {left:.0f} s if it does not stop)")

    def _close_now(self, outcome: str) -> None:
        self._timer.stop()
        if self.progress is not None:
            self.progress.canceled.disconnect()
            self.progress.close()
        self.outcome = outcome
        self._approved = True
        self.window.close()
