"""Open a window, note when it has been painted for the first time and when its plot has, then quit.

    python benchmarks/gui_launcher.py ftgui   # the real `ftgui` start-up path (ftgui.cli.main)
    python benchmarks/gui_launcher.py bare    # import PySide6.QtWidgets + an empty QMainWindow

Prints one line `SHOWN {json}`: Unix times of the first Paint event of the window and of the
end of that paint pass (a zero-timer fired after it: "window painted"), and for ftgui the same
for the first Paint of the real LossPlot (objectName `lossPlot`, created after the window's
first paint: "plot ready"); the process' resident memory at both (VmRSS, kB), which modules
(tensorflow, pyqtgraph, numpy) are in sys.modules then, and whether tensorflow is after
`--linger` more seconds of running the event loop (the ftgui window polls its run from a timer
meanwhile). A line `FTGUI-WINDOW-PAINTED` goes to stderr when the window has been painted, so
a `-X importtime` profile can be split into what was imported before and after.
Run it with QT_QPA_PLATFORM=offscreen where there is no display.
"""

from __future__ import annotations

import json
import sys
import time

START = time.time()
PLOT_NAME = "lossPlot"
PLOT_WAIT_S = 60.0  # give up on the plot after this long (reported as missing)


def rss_kb() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _is_plot(obj) -> bool:
    """The LossPlot or its viewport (a QGraphicsView paints into its viewport)."""
    if obj.objectName() == PLOT_NAME:
        return True
    parent = obj.parent()
    return parent is not None and parent.objectName() == PLOT_NAME


class FirstPaint:
    """Event filter: the first Paint of a top-level window, then (`wait_for_plot`) the first
    Paint of the loss plot, end the measurement."""

    def __init__(self, app, linger: float, wait_for_plot: bool = False):
        from PySide6.QtCore import QEvent, QObject, QTimer

        self.app, self.linger, self.result = app, linger, {"launcher_start": START}
        self.wait_for_plot, self.done = wait_for_plot, set()
        outer = self

        class Filter(QObject):
            def eventFilter(self, obj, event):  # noqa: N802 (Qt's name)
                if event.type() != QEvent.Type.Paint or not obj.isWidgetType():
                    return False
                if "first_paint" not in outer.result and obj.window().isVisible():
                    outer.result["first_paint"] = time.time()
                    outer.result["painted_widget"] = type(obj).__name__
                    QTimer.singleShot(0, outer.shown)
                if (outer.wait_for_plot and "plot_first_paint" not in outer.result
                        and _is_plot(obj)):
                    outer.result["plot_first_paint"] = time.time()
                    QTimer.singleShot(0, outer.plot_shown)
                return False

        self.filter = Filter()
        app.installEventFilter(self.filter)

    def _snapshot(self, prefix: str) -> None:
        self.result.update({
            prefix: time.time(), f"rss_kb_{prefix}": rss_kb(),
            f"tensorflow_at_{prefix}": "tensorflow" in sys.modules,
            f"pyqtgraph_at_{prefix}": "pyqtgraph" in sys.modules,
            f"numpy_at_{prefix}": "numpy" in sys.modules,
            f"modules_at_{prefix}": len(sys.modules),
        })

    def shown(self):
        from PySide6.QtCore import QTimer

        self._snapshot("shown")
        print("FTGUI-WINDOW-PAINTED", file=sys.stderr, flush=True)
        self._step_done("shown")
        if self.wait_for_plot:
            QTimer.singleShot(int(PLOT_WAIT_S * 1000), lambda: self._step_done("plot_ready"))

    def plot_shown(self):
        self._snapshot("plot_ready")
        self._step_done("plot_ready")

    def _step_done(self, name: str) -> None:
        from PySide6.QtCore import QTimer

        self.done.add(name)
        if self.done >= ({"shown", "plot_ready"} if self.wait_for_plot else {"shown"}) and (
                "finishing" not in self.done):
            self.done.add("finishing")
            QTimer.singleShot(int(self.linger * 1000), self.finish)

    def finish(self):
        self.result.update(rss_kb_end=rss_kb(), tensorflow_at_end="tensorflow" in sys.modules,
                           keras_at_end="keras" in sys.modules)
        print("SHOWN " + json.dumps(self.result), flush=True)
        self.app.quit()


MARKS: dict[str, float] = {}


def run_ftgui(linger: float) -> int:
    from ftgui import cli

    MARKS["cli_imported"] = time.time()
    from ftgui.qt.window import app as appmod

    MARKS["qt_app_imported"] = time.time()
    original = appmod.make_app
    probe = {}

    def make_app(argv=None):
        app = original(argv)
        MARKS["app_created"] = time.time()
        probe["filter"] = FirstPaint(app, linger, wait_for_plot=True)
        probe["filter"].result["marks"] = MARKS
        _time_window_construction()
        return app

    appmod.make_app = make_app
    return cli.main([])


def _time_window_construction() -> None:
    """Note when MainWindow's module is imported, when the window object is built and shown,
    and when it starts and ends creating its plot (after its first paint)."""
    from ftgui.qt.window import main_window

    MARKS["main_window_imported"] = time.time()
    cls = main_window.MainWindow
    init, show = cls.__init__, cls.show
    create_plot = getattr(cls, "_create_plot", None)  # None: a window built with its plot

    def timed_init(self, *args, **kwargs):
        MARKS["window_init_start"] = time.time()
        init(self, *args, **kwargs)
        MARKS["window_constructed"] = time.time()

    def timed_show(self):
        MARKS["show_called"] = time.time()
        show(self)

    def timed_create_plot(self):
        if self._plot is None:
            MARKS.setdefault("plot_create_start", time.time())
        plot = create_plot(self)
        MARKS.setdefault("plot_created", time.time())
        return plot

    cls.__init__, cls.show = timed_init, timed_show
    if create_plot is not None:
        cls._create_plot = timed_create_plot


def run_bare(linger: float) -> int:
    import PySide6.QtWidgets as widgets

    app = widgets.QApplication(sys.argv[:1])
    probe = FirstPaint(app, linger)
    window = widgets.QMainWindow()
    window.resize(1360, 820)
    window.show()
    code = app.exec()
    del probe
    return code


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "ftgui"
    linger = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
    if mode == "ftgui":
        return run_ftgui(linger)
    if mode == "bare":
        return run_bare(linger)
    print(f"unknown mode {mode!r}: ftgui or bare", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
