"""The legend's swatch for the steps a restart computed again: the shaded range's colour, with
the pale line of their loss before the restart drawn across it when there is one (one entry,
"steps redone", for what the plot shows as a band with a pale curve in it)."""

from __future__ import annotations

import pyqtgraph as pg
from pyqtgraph.graphicsItems.LegendItem import ItemSample


class RedoneSample(ItemSample):
    """`swatch`: an item whose `opts["brush"]` is the shaded ranges' (a `pg.BarGraphItem` that
    is never drawn in the plot; hiding it by a click on the swatch is how the legend says the
    ranges are hidden); `lost`: the curve item of the loss before the restart, or None."""

    def __init__(self, swatch: pg.BarGraphItem, lost: pg.PlotDataItem | None = None):
        super().__init__(swatch)
        self.lost = lost

    def paint(self, painter, *args) -> None:
        super().paint(painter, *args)  # the shaded square, or the hidden eye
        if self.lost is not None and self.item.isVisible():
            painter.setPen(pg.mkPen(self.lost.opts["pen"]))
            painter.drawLine(0, 11, 20, 11)
