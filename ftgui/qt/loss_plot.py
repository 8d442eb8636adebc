"""The live loss plot: one training-loss curve per attempt, validation points, kill/resume markers.

Data arrives through `add_*` calls (cheap: numpy buffer appends); the screen is updated only by
`redraw()`, which the window calls from one timer (~30 Hz) for the curves that changed — the
streaming recipe of pyqtgraph's scrollingPlots example. A NaN or infinite loss is stored as NaN
and drawn as a gap (`connect="finite"`).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

CURRENT_PEN = pg.mkPen("#1f77b4", width=1)
EARLIER_PEN = pg.mkPen("#9fb7cf", width=1)
VALIDATION_BRUSH = pg.mkBrush("#ff7f0e")
LABEL_POSITIONS = {"kill": 0.72, "preempt": 0.72, "failed": 0.72, "resume": 0.62}
MARKER_PENS = {
    "kill": pg.mkPen("#d62728", width=1, style=Qt.PenStyle.DashLine),
    "preempt": pg.mkPen("#e6a100", width=1, style=Qt.PenStyle.DashLine),
    "failed": pg.mkPen("#8c564b", width=1, style=Qt.PenStyle.DashLine),
    "resume": pg.mkPen("#2ca02c", width=1, style=Qt.PenStyle.DashLine),
}


class GrowingSeries:
    """x/y float64 buffers that double when full; `x()`/`y()` are views of the filled part."""

    def __init__(self, capacity: int = 1024):
        self._x = np.empty(capacity, dtype=np.float64)
        self._y = np.empty(capacity, dtype=np.float64)
        self.size = 0

    def append(self, x: float, y: float | None) -> None:
        if self.size == len(self._x):
            self._x = np.resize(self._x, 2 * self.size)
            self._y = np.resize(self._y, 2 * self.size)
        self._x[self.size] = x
        self._y[self.size] = np.nan if y is None else y
        self.size += 1

    def x(self) -> np.ndarray:
        return self._x[: self.size]

    def y(self) -> np.ndarray:
        return self._y[: self.size]


class LossPlot(pg.PlotWidget):
    """Training loss per global step (one curve per attempt), validation loss at checkpoints,
    and vertical markers where a process was killed, preempted or failed and where it resumed."""

    def __init__(self, parent=None):
        super().__init__(parent=parent, background="w")
        self.setObjectName("lossPlot")
        item = self.getPlotItem()
        item.setLabel("bottom", "global step")
        item.setLabel("left", "loss")
        item.showGrid(x=True, y=True, alpha=0.25)
        item.setDownsampling(auto=True, mode="peak")
        item.setClipToView(True)
        self.legend = item.addLegend(offset=(-10, 10))
        self.series: dict[int, GrowingSeries] = {}
        self.curves: dict[int, pg.PlotDataItem] = {}
        self.validation = GrowingSeries(64)
        self.validation_item = pg.ScatterPlotItem(
            size=7, brush=VALIDATION_BRUSH, pen=pg.mkPen("#a04000"), name="validation loss"
        )
        item.addItem(self.validation_item)
        self.markers: list[tuple[str, float, pg.InfiniteLine]] = []
        self.regions: list[pg.LinearRegionItem] = []
        self._dirty: set[int] = set()
        self._validation_dirty = False

    def clear_run(self) -> None:
        """Forget every curve and marker (before showing another run)."""
        for curve in self.curves.values():
            self.getPlotItem().removeItem(curve)
            self.legend.removeItem(curve)
        for item in [line for _, _, line in self.markers] + self.regions:
            self.getPlotItem().removeItem(item)
        self.regions.clear()
        self.series.clear()
        self.curves.clear()
        self.markers.clear()
        self.validation = GrowingSeries(64)
        self.validation_item.clear()
        self._dirty.clear()

    def add_step(self, attempt: int, step: int, loss: float | None) -> None:
        """Record the training loss of `step` in `attempt` (None/NaN shows as a gap)."""
        series = self.series.get(attempt)
        if series is None:
            series = self.series[attempt] = GrowingSeries()
            self._new_curve(attempt)
        series.append(step, loss)
        self._dirty.add(attempt)

    def add_validation(self, step: int, loss: float | None) -> None:
        self.validation.append(step, loss)
        self._validation_dirty = True

    def add_marker(self, kind: str, step: float, label: str) -> pg.InfiniteLine:
        """A vertical line at `step`: kind is kill, preempt, failed or resume."""
        pen = MARKER_PENS[kind]
        options = {"position": LABEL_POSITIONS[kind], "color": pen.color(),
                   "fill": (255, 255, 255, 200)}
        line = pg.InfiniteLine(pos=step, angle=90, pen=pen, movable=False, label=label,
                               labelOpts=options)
        self.getPlotItem().addItem(line, ignoreBounds=True)
        self.markers.append((kind, float(step), line))
        return line

    def shade_redone(self, from_step: float, to_step: float) -> pg.LinearRegionItem | None:
        """Shade the steps (from_step, to_step] that a restart has to compute again."""
        if to_step <= from_step:
            return None
        region = pg.LinearRegionItem(values=(from_step, to_step), movable=False,
                                     brush=pg.mkBrush(214, 39, 40, 28), pen=pg.mkPen(None))
        region.setToolTip(f"steps {from_step:.0f}–{to_step:.0f} redone after the restart")
        self.getPlotItem().addItem(region, ignoreBounds=True)
        self.regions.append(region)
        return region

    def _new_curve(self, attempt: int) -> None:
        for earlier in self.curves.values():
            earlier.setPen(EARLIER_PEN)
        curve = self.getPlotItem().plot(
            [], [], pen=CURRENT_PEN, connect="finite",
            name="training loss" if not self.curves else None,
        )
        curve.setZValue(attempt + 1)
        self.curves[attempt] = curve

    def redraw(self) -> int:
        """Push changed data to the screen; returns the number of items updated."""
        updated = 0
        for attempt in self._dirty:
            series = self.series[attempt]
            self.curves[attempt].setData(series.x(), series.y(), connect="finite")
            updated += 1
        self._dirty.clear()
        if self._validation_dirty:
            finite = np.isfinite(self.validation.y())
            self.validation_item.setData(self.validation.x()[finite], self.validation.y()[finite])
            self._validation_dirty = False
            updated += 1
        return updated
