"""Forks on the loss plot: a fork is a branch, drawn as one, not as a crash recovery.

For each fork of the run's `Timeline` (`timeline.forks`):
- the abandoned branch stays visible: the part of each segment after its `abandoned_after` step is
  drawn dashed (the segment's own curve items get a dashed pen; a solid copy of the part up to the
  fork step keeps the shared history solid);
- the newest line of training of a branch after a fork is drawn in that branch's colour (the fork
  marker's colour first) and named "fork ← S" in the legend, next to "abandoned branch".

`BranchLayer.redraw()` runs after each `LossPlot.redraw()`; it redoes its work only when what it
depends on changed (forks, curves, x axis, smoothing), so it costs nothing on an ordinary tick.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from ftgui.qt import theme

BRANCH_COLOURS = (theme.MARKER_COLOURS["fork"], *theme.OVERLAY_COLOURS)
ABANDONED_COLOUR = theme.MUTED
ABANDONED_LABEL = "abandoned branch"


def branch_colour(branch: int) -> str:
    """The colour of the newest curve of `branch` (1 = the first fork's branch)."""
    return BRANCH_COLOURS[(branch - 1) % len(BRANCH_COLOURS)]


class BranchLayer:
    """Draws the forks of `plot.timeline` over a `LossPlot` (see the module's docstring).

    `dashed` maps a segment index to the curve items of its abandoned part, `solid` to the solid
    copy of its part up to the fork step."""

    def __init__(self, plot):
        self.plot = plot
        self.solid: dict[int, pg.PlotDataItem] = {}
        self.dashed: dict[int, list[pg.PlotDataItem]] = {}
        self._key = None

    def clear(self) -> None:
        """Forget what was drawn (the plot shows another run)."""
        for item in self.solid.values():
            self.plot.getPlotItem().removeItem(item)
        self.solid.clear()
        self.dashed.clear()
        self._key = None

    def redraw(self) -> None:
        """Restyle the curves of abandoned branches and of the current branch, if needed."""
        plot, timeline = self.plot, self.plot.timeline
        if timeline is None or not timeline.forks:
            return
        abandoned = tuple(s.abandoned_after for s in timeline.segments)
        key = (len(timeline.forks), abandoned, len(plot.traces), plot.x_axis, plot.smoothing,
               theme.scale(), plot.legend is not None and len(plot.legend.items))
        if key == self._key:
            return
        self._key = key
        for segment in timeline.segments:
            trace = plot.traces.get(segment.index)
            if trace is None:
                continue
            if segment.abandoned_after is not None:
                self._abandon(segment, trace)
            elif segment is timeline.segments[-1] and segment.branch > 0:
                trace.colour = branch_colour(segment.branch)
                trace.style(plot.smoothing)
        self._legend(timeline)

    def _abandon(self, segment, trace) -> None:
        """Dash the part of `segment` after its fork step; keep the part before it solid."""
        plot = self.plot
        trace.style(plot.smoothing)  # the plot's own pens, then dashed
        items = [trace.raw, trace.smooth]
        for item in items:
            pen = pg.mkPen(item.opts["pen"])
            pen.setStyle(Qt.PenStyle.DashLine)
            if item is trace.shown:
                pen.setColor(pg.mkColor(ABANDONED_COLOUR))
            item.setPen(pen)
            item.setZValue(10_000 + segment.index)  # over the branch that replays the steps
        self.dashed[segment.index] = items
        x_steps = segment.series.x()
        x = plot._x(segment.series, plot.time_origin)
        y = trace.smoothed(plot.smoothing) if plot.smoothing > 0 else segment.series.y()
        kept = x_steps <= segment.abandoned_after
        solid = self.solid.get(segment.index)
        if solid is None:
            solid = self.solid[segment.index] = pg.PlotDataItem([], [], connect="finite")
            plot.getPlotItem().addItem(solid)
        solid.setPen(pg.mkPen(trace.colour, width=theme.pen_width("curve")))
        solid.setZValue(10_000 + segment.index + 0.5)
        if x is None or not kept.any():
            solid.setData([], [])
            return
        x, y = x[kept], y[kept]
        finite = np.isfinite(x)
        solid.setData(x[finite], y[finite], connect="finite")

    def _legend(self, timeline) -> None:
        legend = self.plot.legend
        if legend is None:
            return
        names = {label.text for _, label in legend.items}
        dashed = next(iter(self.dashed.values()), None)
        if dashed and ABANDONED_LABEL not in names:
            legend.addItem(dashed[0] if not dashed[1].isVisible() else dashed[1],
                           ABANDONED_LABEL)
        newest = timeline.segments[-1] if timeline.segments else None
        trace = None if newest is None else self.plot.traces.get(newest.index)
        if trace is not None and newest.branch > 0:
            fork = next(f for f in reversed(timeline.forks) if f.branch == newest.branch)
            label = f"fork ← {fork.step}"
            if label not in names:
                legend.addItem(trace.shown, label)
