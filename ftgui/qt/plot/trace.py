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
        # An earlier line's steps up to the one the next line resumed from are the run's own
        # history: `kept` draws them as the newest line is drawn, this trace only the steps
        # after it (lost, then redone). None: no next line with a first step yet.
        self.kept: Trace | None = None
        self.kept_until: float | None = None
        # A later line's first point on the step axis: (step, loss, smoothed loss or None) of
        # the step it resumed from, on the line before it, so that the two join (set by
        # `LossPlot._update_kept`); None: none known
        self.lead_in: tuple[float, float, float | None] | None = None
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
        if self.kept is not None:
            self.kept.style(smoothing, presenting)

    def set_range_limit(self, limit: float | None) -> None:
        """pyqtgraph's `dynamicRangeLimit` of both curve items (None: no y clipping)."""
        for item in (self.raw, self.smooth):
            item.setDynamicRangeLimit(limit)
        if self.kept is not None:
            self.kept.set_range_limit(limit)

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

    def keep_until(self, plot_item: pg.PlotItem, step: float | None, colour: str) -> bool:
        """Draw this earlier line's points up to global `step` as the run's history (a solid
        copy in `colour`, the newest line's), and only the rest as this trace; None: draw it
        all as this trace. True when that changed."""
        if step == self.kept_until:
            return False
        self.kept_until = step
        if step is not None and self.kept is None:
            self.kept = Trace(plot_item, colour, z=self.raw.zValue())
        elif step is None and self.kept is not None:
            self.kept.remove(plot_item)
            self.kept = None
        return True

    def draw(self, x: np.ndarray, y: np.ndarray, smoothed: np.ndarray | None,
             steps: np.ndarray) -> None:
        """Push the points (`x` on the plot's axis, `y`, the `smoothed` y or None, and each
        point's global step) to the curve items: those up to `kept_until` to `kept`, the
        rest here, joined to the last kept point so the curve has no gap."""
        if self.kept is not None:
            cut = int(np.searchsorted(steps, self.kept_until, side="right"))
            self.kept.draw(x[:cut], y[:cut], None if smoothed is None else smoothed[:cut],
                           steps[:cut])
            start = cut - 1 if 0 < cut < len(x) else cut
            x, y = x[start:], y[start:]
            smoothed = None if smoothed is None else smoothed[start:]
        self.raw.setData(x, y, connect="finite")
        if smoothed is not None:
            self.smooth.setData(x, smoothed, connect="finite")

    def remove(self, plot_item: pg.PlotItem) -> None:
        plot_item.removeItem(self.raw)
        plot_item.removeItem(self.smooth)
        if self.kept is not None:
            self.kept.remove(plot_item)
            self.kept = None
            self.kept_until = None
