"""Starting the Qt application: `ftgui` and `ftgui open RUN`."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from ftgui import __version__, icons
from ftgui.qt import theme
from ftgui.qt.window.app_icon import app_icon


def make_app(argv: list[str] | None = None) -> QApplication:
    """The QApplication, named so QSettings lands in the platform's ftgui config folder, with
    the theme's font (`ftgui.qt.theme`)."""
    QCoreApplication.setOrganizationName("ftgui")
    QCoreApplication.setApplicationName("ftgui")
    QCoreApplication.setApplicationVersion(__version__)
    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv[:1])
    theme.apply(app)  # the UI font at the theme's scale
    app.setWindowIcon(app_icon())
    QGuiApplication.setDesktopFileName(icons.ICON_NAME)  # Wayland: matches ftgui.desktop
    return app


def missing_display(environ=None) -> str:
    """A one-line reason when Qt has no screen to open a window on (Linux/BSD), else ''."""
    environ = os.environ if environ is None else environ
    if not sys.platform.startswith(("linux", "freebsd")) or environ.get("QT_QPA_PLATFORM"):
        return ""
    if environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"):
        return ""
    return ("no display: DISPLAY and WAYLAND_DISPLAY are not set. Run ftgui in a desktop "
            "session or under `xvfb-run ftgui`; to train without a window use "
            "`ftgui train RUN` (see docs/getting-started.md).")


def run_app(run_dir: Path | None = None, present: bool = False) -> int:
    """Open the window (on `run_dir` when given; in the presentation view with `present`) and
    run the event loop; returns its exit code.

    Ctrl+C in the terminal closes the window, which kills every training process; SIGTERM
    closes it after preempting the run (it saves its current step), without asking.
    """
    opened = open_window()
    if opened is None:
        return 2
    app, window = opened
    if run_dir is not None:
        if not Path(run_dir).is_dir():
            print(f"ftgui: run_dir: {run_dir} is not a directory", file=sys.stderr)
            return 2
        window.open_run(Path(run_dir))
    if present:
        window.set_presenting(True)
    window.show()
    from ftgui.qt.window.quit_guard import KILL, PREEMPT

    signal.signal(signal.SIGINT, lambda *_: window.quit_guard.quit_with(KILL))
    signal.signal(signal.SIGTERM, lambda *_: window.quit_guard.quit_with(PREEMPT))
    return run_loop(app, window)


def open_window():
    """The application and its main window, `(QApplication, MainWindow)`; None, with the
    reason printed on stderr, when Qt has no screen (`missing_display`)."""
    missing = missing_display()
    if missing:
        print(f"ftgui: {missing}", file=sys.stderr)
        return None
    app = make_app()
    from ftgui.qt.window.main_window import MainWindow

    window = MainWindow()
    window.set_spare(window.spare_wanted())  # Start then finds a trainer built (issue 28)
    return app, window


def run_loop(app: QApplication, window) -> int:
    """Run Qt's event loop until the window quits, then end the run's processes; returns the
    loop's exit code. A timer lets Python run its signal handlers while Qt's loop waits."""
    wake = QTimer()
    wake.start(200)
    wake.timeout.connect(lambda: None)
    code = app.exec()
    window.controller.shutdown()
    return code
