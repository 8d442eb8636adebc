"""One loss curve on the plot: its points, a raw curve item and a smoothed one drawn over it."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPen

from ftgui.core.timeline.series import GrowingSeries
from ftgui.core.timeline.smoothing import Ema
from ftgui.qt import theme

# Points drawn per pixel of x (pyqtgraph's autoDownsampleFactor; peak mode keeps each bin's min
# and max). A thick pen costs about 8 µs per segment here, so the presentation view draws one
# bin per 4 px: the envelope under a 3 px pen, a 20th of the segments
# (benchmarks/bench_presentation.py).
SAMPLES_PER_PIXEL = {False: 5.0, True: 0.25}


def _curve_pen(colour, width: float) -> QPen:
    """A curve's pen: flat caps, as pyqtgraph draws a thick curve as separate segments and a
    square cap paints past each segment's end (bench_presentation: 17 -> 11-16 ms)."""
    pen = pg.mkPen(colour, width=width)
    pen.setCapStyle(Qt.PenCapStyle.FlatCap)
    return pen


class Trace:
    """One loss curve: its points, the raw curve item and the smoothed curve item over it."""

    def __init__(self, plot_item: pg.PlotItem, colour: str, z: float, name: str = "",
                 origin: float | None = None, series: GrowingSeries | None = None):
        self.series = series if series is not None else GrowingSeries()
        self.drawn = -1  # points pushed to the screen (-1: never drawn)
        self.colour = colour
        self.name = name
        self.origin = origin  # Unix time of the run's first event (wall-time x = t - origin)
        self.raw = pg.PlotDataItem([], [], connect="finite")
        self.smooth = pg.PlotDataItem([], [], connect="finite")
        self.raw.setZValue(z)
        self.smooth.setZValue(z + 0.5)
        plot_item.addItem(self.raw)
        plot_item.addItem(self.smooth)
        self.overlay = False  # another run's curve (its own time origin), not the open run's
        self.earlier = False  # an earlier line of training of the open run
        self._smoothed = np.empty(0, dtype=np.float64)
        self._ema: Ema | None = None
        self._ema_done = 0  # points already smoothed

    def style(self, smoothing: float, presenting: bool = False) -> None:
        """Solid raw curve without smoothing; faint raw under a solid smoothed one with it.
        Widths are the theme's at its scale, thicker when `presenting`; there an earlier line of
        training is wider than the newest and grey, a halo that shows around the resumed curve
        where the two coincide."""
        for item in (self.raw, self.smooth):
            if item.opts["autoDownsampleFactor"] != SAMPLES_PER_PIXEL[presenting]:
                item.opts["autoDownsampleFactor"] = SAMPLES_PER_PIXEL[presenting]
                item.updateItems(styleUpdate=False)
        width = theme.pen_width("curve", presenting)
        colour = self.colour
        if presenting and self.earlier:
            width, colour = theme.pen_width("earlier", True), theme.CURVE_COLOURS["halo"]
        if smoothing > 0:
            faint = QColor(colour)
            faint.setAlpha(theme.RAW_ALPHA_WHEN_SMOOTHED)
            self.raw.setPen(_curve_pen(faint, width))
            smoothed = theme.pen_width("smoothed", presenting)
            self.smooth.setPen(_curve_pen(colour, max(smoothed, width)))
            self.smooth.setVisible(True)
        else:
            self.raw.setPen(_curve_pen(colour, width))
            self.smooth.setVisible(False)

    def set_range_limit(self, limit: float | None) -> None:
        """pyqtgraph's `dynamicRangeLimit` of both curve items (None: no y clipping)."""
        for item in (self.raw, self.smooth):
            item.setDynamicRangeLimit(limit)

    @property
    def shown(self) -> pg.PlotDataItem:
        """The item a legend entry should sample: the solid one."""
        return self.smooth if self.smooth.isVisible() else self.raw

    def smoothed(self, weight: float) -> np.ndarray:
        """The smoothed losses, extended by the points added since the last call."""
        if self._ema is None or self._ema.weight != weight:
            self._ema, done = Ema(weight), 0
        else:
            done = self._ema_done
        size = self.series.size
        if len(self._smoothed) < size:
            self._smoothed = np.resize(self._smoothed, max(size, 2 * len(self._smoothed)))
        self._smoothed[done:size] = self._ema.extend(self.series.y()[done:size])
        self._ema_done = size
        return self._smoothed[:size]

    def remove(self, plot_item: pg.PlotItem) -> None:
        plot_item.removeItem(self.raw)
        plot_item.removeItem(self.smooth)
