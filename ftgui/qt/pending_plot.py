"""What stands in for the loss plot until it exists.

The window is shown before pyqtgraph is imported (that import is most of a second here): the
plot area first shows `PlotPlaceholder`, and the `LossPlot` is created right after the window's
first paint (`MainWindow` does it). Meanwhile the controller talks to a `PendingPlot`, which
records the data calls it receives; `replay(plot)` hands them to the real plot, in order.

Neither class imports pyqtgraph.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QWidget

LOADING_TEXT = "loading plot…"


class PendingPlot:
    """Records the `LossPlot` calls the controller makes before the plot exists.

    It keeps `time_origin` the way `LossPlot` does (the controller reads it) and draws nothing:
    `redraw()` returns 0. `replay(plot)` makes the same calls on `plot`, in the same order.
    Only the open run's data comes through here (overlays and view tools wait for the real
    plot), so `clear_run` forgets everything recorded. Arrays given to `add_steps` are kept
    by reference until the replay, as `LossPlot.add_steps` copies them.
    """

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple, dict]] = []
        self.time_origin: float | None = None

    def __len__(self) -> int:
        return len(self.calls)

    def _record(self, name: str, *args, **kwargs) -> None:
        self.calls.append((name, args, kwargs))

    # ------------------------------------------------------------ the LossPlot calls it takes
    def clear_run(self) -> None:
        self.calls.clear()
        self.time_origin = None

    def set_time_origin(self, time: float) -> None:
        self.time_origin = time
        self._record("set_time_origin", time)

    def add_step(self, attempt: int, step: int, loss: float | None, *,
                 time: float | None = None) -> None:
        if time is not None and self.time_origin is None:
            self.time_origin = time
        self._record("add_step", attempt, step, loss, time=time)

    def add_steps(self, attempt: int, steps, losses, times=None) -> None:
        if not len(steps):
            return
        if times is not None and self.time_origin is None:
            self.time_origin = float(times[0])
        self._record("add_steps", attempt, steps, losses, times)

    def add_validation(self, step: int, loss: float | None, *, time: float | None = None) -> None:
        self._record("add_validation", step, loss, time=time)

    def add_marker(self, kind: str, step: float, label: str) -> None:
        self._record("add_marker", kind, step, label)

    def shade_redone(self, from_step: float, to_step: float) -> None:
        self._record("shade_redone", from_step, to_step)

    def redraw(self) -> int:
        return 0

    # ------------------------------------------------------------ handing over
    def replay(self, plot) -> int:
        """Make the recorded calls on `plot` (a `LossPlot`); returns how many there were."""
        calls, self.calls = self.calls, []
        for name, args, kwargs in calls:
            getattr(plot, name)(*args, **kwargs)
        return len(calls)


class PlotPlaceholder(QWidget):
    """The plot area while the plot loads: its white background, a faint frame where the axes
    go, and "loading plot…". Emits `firstPainted` once, after its first paint pass is done."""

    firstPainted = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("lossPlotPlaceholder")
        self.setAutoFillBackground(False)
        self.setMinimumSize(120, 80)
        self._painted = False

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor("white"))
        # Where LossPlot's axes will be (left and bottom), so the area reads as a plot.
        area = QRectF(self.rect()).adjusted(42, 8, -4, -38)
        if area.width() > 40 and area.height() > 40:
            painter.setPen(QPen(QColor("#d0d0d0"), 1))
            painter.drawLine(area.bottomLeft(), area.topLeft())
            painter.drawLine(area.bottomLeft(), area.bottomRight())
        painter.setPen(QColor("#8a8a8a"))
        painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, LOADING_TEXT)
        painter.end()
        if not self._painted:
            self._painted = True
            # after this paint pass has reached the screen, not within it
            QTimer.singleShot(0, self, self.firstPainted.emit)
