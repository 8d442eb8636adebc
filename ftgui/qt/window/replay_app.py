"""`ftgui replay RUN [--speed X] [--exit-when-done] [--present]`: the window, playing a run."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from PySide6.QtCore import QTimer

from ftgui.qt.window.app import open_window, run_loop

QUIT_DELAY_MS = 300  # with --exit-when-done: the last events are drawn before the window goes


def run_replay(run_dir: Path, speed: float, exit_when_done: bool = False,
               present: bool = False) -> int:
    """Open the window, replay `run_dir` at `speed` and run the event loop; returns its exit
    code (0 when `exit_when_done` ends it after the last event). `present` switches the
    window to its presentation view (the `presentAction`). The run and speed are checked
    before this is called (`ftgui.core.timeline.replay.check_run`, `check_speed`)."""
    opened = open_window()
    if opened is None:
        return 2
    app, window = opened
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
    return run_loop(app, window)
