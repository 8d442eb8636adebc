"""What stands in for the loss plot until it exists.

The window is shown before pyqtgraph is imported (that import is most of a second here): the
plot area first shows `PlotPlaceholder`, and the `LossPlot` is created right after the window's
first paint (`MainWindow` does it). The run's data waits in the controller's `Timeline`
meanwhile, and the plot draws all of it once it exists. This module does not import pyqtgraph.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QWidget

LOADING_TEXT = "loading plot…"


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
