"""Open a window, note when it has been painted for the first time, then quit.

    python benchmarks/gui_launcher.py ftgui   # the real `ftgui` start-up path (ftgui.cli.main)
    python benchmarks/gui_launcher.py bare    # import PySide6.QtWidgets + an empty QMainWindow
    python benchmarks/gui_launcher.py ftgui-noplot   # experiment: ftgui's window with the
        # pyqtgraph LossPlot replaced by an empty QWidget (what deferring pyqtgraph could gain)

Prints one line `SHOWN {json}`: Unix times of the first Paint event of the window and of the
end of that paint pass (a zero-timer fired after it), the process' resident memory then
(VmRSS, kB), whether `tensorflow` is in sys.modules then, and again after `--linger` seconds
of running the event loop (the ftgui window polls its run from a timer meanwhile).
Run it with QT_QPA_PLATFORM=offscreen where there is no display.
"""

from __future__ import annotations

import json
import sys
import time

START = time.time()


def rss_kb() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class FirstPaint:
    """Event filter: the first Paint of a top-level window ends the measurement."""

    def __init__(self, app, linger: float):
        from PySide6.QtCore import QEvent, QObject, QTimer

        self.app, self.linger, self.result = app, linger, {"launcher_start": START}
        outer = self

        class Filter(QObject):
            def eventFilter(self, obj, event):  # noqa: N802 (Qt's name)
                if (event.type() == QEvent.Type.Paint and "first_paint" not in outer.result
                        and obj.isWidgetType() and obj.window().isVisible()):
                    outer.result["first_paint"] = time.time()
                    outer.result["painted_widget"] = type(obj).__name__
                    QTimer.singleShot(0, outer.shown)
                return False

        self.filter = Filter()
        app.installEventFilter(self.filter)

    def shown(self):
        from PySide6.QtCore import QTimer

        self.result.update(shown=time.time(), rss_kb_shown=rss_kb(),
                           tensorflow_at_shown="tensorflow" in sys.modules,
                           pyqtgraph_at_shown="pyqtgraph" in sys.modules,
                           numpy_at_shown="numpy" in sys.modules,
                           modules_at_shown=len(sys.modules))
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
    from ftgui.qt import app as appmod

    MARKS["qt_app_imported"] = time.time()
    original = appmod.make_app
    probe = {}

    def make_app(argv=None):
        app = original(argv)
        MARKS["app_created"] = time.time()
        probe["filter"] = FirstPaint(app, linger)
        probe["filter"].result["marks"] = MARKS
        _time_window_construction()
        return app

    appmod.make_app = make_app
    return cli.main([])


def _time_window_construction() -> None:
    """Note when MainWindow's module is imported and when the window object is built."""
    from ftgui.qt import main_window

    MARKS["main_window_imported"] = time.time()
    cls = main_window.MainWindow
    init, show = cls.__init__, cls.show

    def timed_init(self, *args, **kwargs):
        MARKS["window_init_start"] = time.time()
        init(self, *args, **kwargs)
        MARKS["window_constructed"] = time.time()

    def timed_show(self):
        MARKS["show_called"] = time.time()
        show(self)

    cls.__init__, cls.show = timed_init, timed_show


class _Null:
    """Accepts any attribute access, call or signal connection and does nothing."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __len__(self):
        return 0


def stub_loss_plot() -> None:
    """Replace ftgui.qt.loss_plot by a module whose LossPlot is an empty QWidget (no pyqtgraph,
    no numpy): an experiment, to measure what the plot's imports cost the first paint."""
    import types

    from PySide6.QtWidgets import QWidget

    null = _Null()

    class LossPlot(QWidget):
        def __init__(self, parent=None):
            super().__init__(parent)
            self.setObjectName("lossPlot")
            self.series, self.traces, self.overlays, self.markers, self.regions = {}, {}, {}, [], []

        def redraw(self):
            return 0

        def __getattr__(self, name):  # add_step, getPlotItem().ctrl…, clear_run, …: no-ops
            if name.startswith("_"):
                raise AttributeError(name)
            return null

    module = types.ModuleType("ftgui.qt.loss_plot")
    module.LossPlot = LossPlot
    module.__getattr__ = lambda name: null  # constants other modules import from it
    sys.modules["ftgui.qt.loss_plot"] = module


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
    if mode == "ftgui-noplot":
        stub_loss_plot()
        return run_ftgui(linger)
    if mode == "bare":
        return run_bare(linger)
    print(f"unknown mode {mode!r}: ftgui or bare", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
