"""`ftgui replay RUN [--speed X] [--exit-when-done] [--present]`: the window, playing a run."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from PySide6.QtCore import QTimer

from ftgui.qt.window.app import make_app, missing_display

QUIT_DELAY_MS = 300  # with --exit-when-done: the last events are drawn before the window goes


def run_replay(run_dir: Path, speed: float, exit_when_done: bool = False,
               present: bool = False) -> int:
    """Open the window, replay `run_dir` at `speed` and run the event loop; returns its exit
    code (0 when `exit_when_done` ends it after the last event). `present` switches the
    window to its presentation view (the `presentAction`). The run and speed are checked
    before this is called (`ftgui.core.timeline.replay.check_run`, `check_speed`)."""
    missing = missing_display()
    if missing:
        print(f"ftgui: {missing}", file=sys.stderr)
        return 2
    app = make_app()
    from ftgui.qt.window.main_window import MainWindow

    window = MainWindow()
    if not window.replay_run(run_dir, speed):
        print(f"ftgui: {window.statusBar().currentMessage()}", file=sys.stderr)
        return 2
    window.show()
    if present:  # as F5 does (checking the action alone switched nothing)
        window.set_presenting(True)
    if exit_when_done:
        controller = window.controller

        def quit_when_done(*_state) -> None:
            if controller.replay is not None and controller.replay.done:
                QTimer.singleShot(QUIT_DELAY_MS, app.quit)

        controller.stateChanged.connect(quit_when_done)
        quit_when_done()
    signal.signal(signal.SIGINT, lambda *_: window.close())
    wake = QTimer()  # lets Python run its signal handlers while Qt's loop waits
    wake.start(200)
    wake.timeout.connect(lambda: None)
    code = app.exec()
    window.controller.shutdown()
    return code
