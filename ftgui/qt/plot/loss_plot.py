"""The live loss plot: it draws a run's `Timeline` (one curve per line of training, validation
points, markers, redone ranges), other runs' curves overlaid for comparison, and applies the view
tools (smoothing, log scale, x axis).

The plot holds no model of the open run: `show_timeline(timeline)` binds it to one, and each
`redraw()` (called from one timer, ~30 Hz) draws what the timeline gained since the last one —
new points of a curve (the curve shares the timeline's numpy buffers), new markers and ranges —
the streaming recipe of pyqtgraph's scrollingPlots example. A NaN or infinite loss is drawn as a
gap (`connect="finite"`). Without a timeline, `add_step`/`add_validation`/`add_marker`/
`shade_redone` put data in directly (tests, benchmarks).

Smoothing is TensorBoard's debiased EMA (`ftgui.core.timeline.smoothing`): the raw curve stays,
faint, and the smoothed one is drawn solid over it. A live curve is smoothed incrementally, once per
point. On the wall-time x axis a curve's x is seconds since its run's first event; the kill / resume
markers are step positions and are hidden there.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pyqtgraph as pg

from ftgui.core.timeline.model import Timeline
from ftgui.core.timeline.series import GrowingSeries
from ftgui.core.timeline.smoothing import MAX_WEIGHT
from ftgui.qt import theme
from ftgui.qt.plot.branches import BranchLayer
from ftgui.qt.plot.look import PlotLook
from ftgui.qt.plot.loss_axis import loss_axes
from ftgui.qt.plot.marker_line import MarkerLine
from ftgui.qt.plot.redone_inset import RedoneInset
from ftgui.qt.plot.redone_sample import RedoneSample
from ftgui.qt.plot.trace import Trace

# Colours, widths and font sizes come from the theme (ftgui.qt.theme), at its current scale.
CURRENT_COLOUR = theme.CURVE_COLOURS["current"]
EARLIER_COLOUR = theme.CURVE_COLOURS["earlier"]
OVERLAY_COLOURS = theme.OVERLAY_COLOURS
LOST_LABEL = "loss before the restart"  # an earlier line's steps after its resume point
REDONE_LABEL = "steps redone"  # the shaded ranges (and LOST_LABEL's line in them), one entry
X_AXES = {"step": "global step", "time": "wall time (s) since the run's first event"}
# pyqtgraph's default: y clipped to this many view heights beyond the view (Qt mis-draws huge
# coordinates). Only needed while y does not follow the data: fitted to the data, nothing lies
# that far out, and the check scans every point at every redraw (~3 ms at 1M points).
RANGE_LIMIT = 1e6


class LossPlot(PlotLook, pg.PlotWidget):
    """A run's `Timeline` drawn: training loss per global step (one curve per line of training),
    validation loss, vertical markers (crash, preemption, hang, NaN rollback, fork, resume,
    setting changed, worker lost / back) and shaded redone ranges; plus overlaid curves of other
    runs (`add_overlay`), smoothing, log scale and x axis choice; the look of the normal or
    the presentation view (`set_presenting`, from `PlotLook`)."""

    def __init__(self, parent=None):
        super().__init__(parent=parent, background=theme.PLOT_BACKGROUND, axisItems=loss_axes())
        self.setObjectName("lossPlot")
        item = self.getPlotItem()
        self.presenting = False  # the presentation view's large fonts, thick lines, y focus
        self._labels = {"bottom": X_AXES["step"], "left": "loss"}
        # No grid: pyqtgraph redraws it on every paint (~15 ms, more than the curves at 1M
        # points; benchmarks/bench_streaming.py). Right-click → Plot options turns it on.
        item.setDownsampling(auto=True, mode="peak")
        item.setClipToView(True)
        self.legend = item.addLegend(offset=(-10, 10), labelTextColor=theme.LEGEND_TEXT,
                                     labelTextSize=f"{theme.LEGEND_FONT_PT}pt")
        self.legend.setBrush(pg.mkBrush(theme.rgba(theme.LEGEND_FILL)))
        self.legend.setPen(pg.mkPen(theme.LEGEND_FRAME))
        self.legend.setVisible(False)  # until it names something (`_rebuild_legend`)
        self.traces: dict[int, Trace] = {}
        self.overlays: dict[str, Trace] = {}
        self.validation = GrowingSeries(64)
        self.validation_item = pg.PlotDataItem(
            [], [], pen=None, symbol="o", symbolSize=theme.VALIDATION_SYMBOL_PX,
            symbolBrush=pg.mkBrush(theme.CURVE_COLOURS["validation"]),
            symbolPen=pg.mkPen(theme.CURVE_COLOURS["validation_edge"]),
        )
        self.validation_item.setZValue(1000)
        item.addItem(self.validation_item)
        self.markers: list[tuple[str, float, MarkerLine]] = []
        self.regions: list[pg.LinearRegionItem] = []
        # the shaded ranges' swatch in the legend (a LinearRegionItem has none of its own)
        self.redone_sample = pg.BarGraphItem(x=[0], height=[1], width=1, pen=None,
                                             brush=pg.mkBrush(theme.rgba(theme.REDONE_SHADE)))
        self.smoothing = 0.0
        self.log_y = False
        self.x_axis = "step"
        self.time_origin: float | None = None
        self.timeline: Timeline | None = None
        self._drawn_markers = self._drawn_redone = self._drawn_validation = 0
        self._span: tuple[float, float] | None = None  # the y range the view was fitted to
        self._flat = False  # y fitted by `_flat_span` (data too flat for auto-range)
        self._focus_from: float | None = None  # the presentation view's first fitted step
        self._refit = False  # look at the y range again at the next redraw, data new or not
        self._clip: tuple[float, float] | None = None  # y band the curves are drawn within
        self._dirty: set[Trace] = set()
        self._validation_dirty = False
        self._legend_dirty = False
        self.notice = pg.TextItem("", color=theme.NOTICE, anchor=(0, 0),
                                  fill=pg.mkBrush(theme.rgba(theme.NOTICE_FILL)))
        self.notice.setParentItem(item.getViewBox())  # one line about what the view leaves out
        self.notice.setPos(6, 4)
        view = item.getViewBox()
        view.sigRangeChanged.connect(self._layout_labels)
        view.sigResized.connect(self._layout_labels)
        view.sigStateChanged.connect(self._follow_y_auto_range)
        self._apply_look()
        self._empty_range()
        theme.follow_scale(self, self._apply_look)
        self.branches = BranchLayer(self)  # forks: abandoned parts dashed, branch colours
        self.inset = RedoneInset(self)  # the newest redone range magnified
        self._inset_drawn: tuple | None = None  # what the inset shows: regions, sizes, view

    # ------------------------------------------------------------ compatibility views
    @property
    def series(self) -> dict[int, GrowingSeries]:
        """The open run's data per line of training (the timeline's segment index)."""
        return {attempt: trace.series for attempt, trace in self.traces.items()}

    @property
    def curves(self) -> dict[int, pg.PlotDataItem]:
        """The open run's raw curve item per line of training."""
        return {attempt: trace.raw for attempt, trace in self.traces.items()}

    # ------------------------------------------------------------ data of the open run
    def clear_run(self) -> None:
        """Forget the open run's curves and markers (before showing another run); overlays stay."""
        for trace in self.traces.values():
            trace.remove(self.getPlotItem())
            self._dirty.discard(trace)
        for item in [item for _, _, line in self.markers for item in line.items()] + \
                self.regions:
            self.getPlotItem().removeItem(item)
        self.regions.clear()
        self.traces.clear()
        self.markers.clear()
        self.validation = GrowingSeries(64)
        self.validation_item.setData([], [])
        self.time_origin = None
        self.timeline = None
        self.branches.clear()
        self.legend_corner, self._legend_looked = type(self).legend_corner, -math.inf
        self.legend_slide = type(self).legend_slide
        self._legend_scene = None
        self._anchor_legend()
        self._drawn_markers = self._drawn_redone = self._drawn_validation = 0
        self._legend_dirty = True
        # pyqtgraph fits a single point with the width shown before: the next run's first
        # step would sit alone in the middle of the last run's 600 steps
        self._empty_range()

    def _empty_range(self) -> None:
        """x and y at 0–1 with a margin, so that no tick label at an edge is cut, until data
        comes (auto-range stays on)."""
        self.getPlotItem().getViewBox().setRange(xRange=(0, 1), yRange=(0, 1), padding=0.05,
                                                 disableAutoRange=False)

    def show_timeline(self, timeline: Timeline) -> None:
        """Draw `timeline` from now on (instead of the open run's data so far): all of it at
        the next `redraw()`, then what it gains before each later one."""
        self.clear_run()
        self.timeline = timeline
        self.validation = timeline.validation

    def _take_timeline(self) -> None:
        """Pick up what the timeline gained since the last redraw (segments share its arrays)."""
        timeline = self.timeline
        if self.time_origin is None and timeline.origin is not None:
            self.set_time_origin(timeline.origin)
        for segment in timeline.segments[len(self.traces):]:
            self._new_attempt(segment.index, series=segment.series)
        for trace in self.traces.values():
            if trace.drawn != trace.series.size:
                self._dirty.add(trace)
        for marker in timeline.markers[self._drawn_markers:]:
            self.add_marker(marker.kind, marker.step, marker.label)
        self._drawn_markers = len(timeline.markers)
        for redone in timeline.redone[self._drawn_redone:]:
            if redone.cause != "fork":  # a fork's branch is drawn dashed instead (branches.py)
                self.shade_redone(redone.start, redone.end)
        self._drawn_redone = len(timeline.redone)
        if timeline.validation.size != self._drawn_validation:
            self._legend_dirty |= self._drawn_validation == 0
            self._drawn_validation = timeline.validation.size
            self._validation_dirty = True

    def set_time_origin(self, time: float) -> None:
        """The Unix time of the open run's first event (the zero of the wall-time axis).
        Without it, the time of the first step added is used."""
        self.time_origin = time
        self._dirty.update(self.traces.values())
        self._validation_dirty = True

    def add_step(self, attempt: int, step: int, loss: float | None, *,
                 time: float | None = None) -> None:
        """Record the training loss of `step` in `attempt` (None/NaN shows as a gap); `time`
        (the event's Unix time) places it on the wall-time axis."""
        trace = self.traces.get(attempt)
        if trace is None:
            trace = self._new_attempt(attempt)
        if time is not None and self.time_origin is None:
            self.time_origin = time
        trace.series.append(step, loss, time)
        self._dirty.add(trace)

    def add_validation(self, step: int, loss: float | None, *, time: float | None = None) -> None:
        self.validation.append(step, loss, time)
        self._validation_dirty = True
        self._legend_dirty |= self.validation.size == 1

    def add_marker(self, kind: str, step: float, label: str,
                   owners: tuple[str, ...] = ()) -> MarkerLine:
        """A vertical line at `step`; `kind` is one of `ftgui.core.timeline.model.MARKER_KINDS`;
        `owners`: the colours of the compared runs it belongs to (a square of each before the
        label).
        Its label (filled with the plot's background) and its line are drawn above every
        curve and the validation points, the label above every marker's line too; markers of
        one dash family at one step take turns along the line (`theme.dash_slots`)."""
        pen = theme.marker_pen(kind, self.presenting)
        # the label beside the line, on the side of the line of training it belongs to
        anchor = (0, 0.5) if kind in theme.BEGINNING_MARKERS else (1, 0.5)
        options = {"position": 0.9, "color": pen.color(), "anchors": [anchor, anchor]}
        line = MarkerLine(step, pen, label, options, owners)
        line.prefers_right = kind in theme.BEGINNING_MARKERS
        line.setVisible(self.x_axis == "step")
        for item in line.items():
            self.getPlotItem().addItem(item, ignoreBounds=True)
        self.markers.append((kind, float(step), line))
        at_step = [(other_kind, other) for other_kind, at, other in self.markers
                   if at == float(step)]
        slots = theme.dash_slots([other_kind for other_kind, _ in at_step])
        for (other_kind, other), slot in zip(at_step, slots, strict=True):
            other.dash_slot = slot
            self._style_marker(other_kind, other)
        self._layout_labels()
        return line

    def shade_redone(self, from_step: float, to_step: float) -> pg.LinearRegionItem | None:
        """Shade the steps (from_step, to_step] that a restart has to compute again."""
        if to_step <= from_step:
            return None
        shade = theme.REDONE_SHADE_PRESENTING if self.presenting else theme.REDONE_SHADE
        region = pg.LinearRegionItem(values=(from_step, to_step), movable=False,
                                     brush=pg.mkBrush(theme.rgba(shade)), pen=pg.mkPen(None))
        region.setToolTip(f"steps {from_step:.0f}–{to_step:.0f} redone after the restart")
        region.setVisible(self.x_axis == "step")
        self.getPlotItem().addItem(region, ignoreBounds=True)
        self.regions.append(region)
        self._legend_dirty |= len(self.regions) == 1
        return region

    def _new_attempt(self, attempt: int, series: GrowingSeries | None = None) -> Trace:
        for earlier in self.traces.values():
            earlier.colour, earlier.earlier = EARLIER_COLOUR, True
            earlier.style(self.smoothing, self.presenting)
        trace = Trace(self.getPlotItem(), CURRENT_COLOUR, z=attempt + 1, series=series)
        trace.style(self.smoothing, self.presenting)
        trace.set_range_limit(self._range_limit())
        self.traces[attempt] = trace
        self._legend_dirty = True
        return trace

    # ------------------------------------------------------------ other runs
    def add_overlay(self, key: str, name: str, steps, losses, times=None,
                    origin: float | None = None) -> Trace:
        """Show another run's training loss (`steps`, `losses`, optional event `times` and the
        run's first-event time `origin`) in its own colour, named `name` in the legend.
        Overlaying the same `key` again replaces that curve."""
        previous = self.overlays.pop(key, None)
        if previous is not None:
            colour = previous.colour
            previous.remove(self.getPlotItem())
            self._dirty.discard(previous)
        else:
            used = {trace.colour for trace in self.overlays.values()}
            free = [c for c in OVERLAY_COLOURS if c not in used]
            colour = free[0] if free else OVERLAY_COLOURS[len(used) % len(OVERLAY_COLOURS)]
        trace = Trace(self.getPlotItem(), colour, z=0.1, name=name, origin=origin)
        trace.overlay = True
        trace.set_range_limit(self._range_limit())
        trace.series.extend(np.asarray(steps, dtype=np.float64),
                            np.asarray(losses, dtype=np.float64),
                            None if times is None else np.asarray(times, dtype=np.float64))
        trace.style(self.smoothing, self.presenting)
        self.overlays[key] = trace
        self._dirty.add(trace)
        self._legend_dirty = True
        self.redraw()
        return trace

    def clear_overlays(self) -> None:
        for trace in self.overlays.values():
            trace.remove(self.getPlotItem())
            self._dirty.discard(trace)
        self.overlays.clear()
        self._legend_dirty = True
        self.redraw()

    # ------------------------------------------------------------ view tools
    def set_smoothing(self, weight: float) -> None:
        """EMA weight 0 (off) to 0.99 for every curve; redraws at once."""
        weight = min(max(float(weight), 0.0), MAX_WEIGHT)
        if weight == self.smoothing:
            return
        was_on, self.smoothing = self.smoothing > 0, weight
        for trace in self._all_traces():
            trace.style(weight, self.presenting)
        self._dirty.update(self._all_traces())
        self._legend_dirty |= was_on != (weight > 0)
        self.redraw()

    def set_log_y(self, on: bool) -> None:
        self.log_y = bool(on)
        self.getPlotItem().setLogMode(y=self.log_y)
        self._set_label("left", "loss (log scale)" if self.log_y else "loss")
        self.reset_zoom()

    def set_x_axis(self, axis: str) -> None:
        """`step` (global step) or `time` (wall-clock seconds since each run's first event)."""
        if axis not in X_AXES:
            raise ValueError(f"x axis {axis!r} is not one of {', '.join(X_AXES)}")
        if axis == self.x_axis:
            return
        self.x_axis = axis
        self._set_label("bottom", X_AXES[axis])
        bottom = self.getPlotItem().getAxis("bottom")
        bottom.whole = axis == "step"
        bottom.picture = None  # its ticks anew
        bottom.update()
        for item in [line for _, _, line in self.markers] + self.regions:
            item.setVisible(axis == "step")
        self._legend_dirty = True  # the shaded ranges' entry goes with them
        self._dirty.update(self._all_traces())
        self._validation_dirty = True
        self.redraw()
        self.reset_zoom()

    def reset_zoom(self) -> None:
        """Show all data again and follow new data (undoes mouse zoom and pan); in the
        presentation view the y axis goes on following the interesting part."""
        self.getPlotItem().enableAutoRange(x=True, y=not self.presenting)
        self._span, self._refit = None, True  # fit the y axis again at the next redraw
        self.redraw()

    # ------------------------------------------------------------ drawing
    def _range_limit(self) -> float | None:
        """The curves' `dynamicRangeLimit`: none while the y axis follows the data."""
        return None if self.getPlotItem().getViewBox().autoRangeEnabled()[1] else RANGE_LIMIT

    def _follow_y_auto_range(self, *_args) -> None:
        limit = self._range_limit()
        for trace in self._all_traces():
            trace.set_range_limit(limit)

    def _all_traces(self) -> list[Trace]:
        return [*self.traces.values(), *self.overlays.values()]

    def _x(self, series: GrowingSeries, origin: float | None) -> np.ndarray | None:
        if self.x_axis == "step":
            return series.x()
        if origin is None:
            return None
        return series.t() - origin

    def redraw(self) -> int:
        """Push changed data to the screen (first taking what the timeline gained); returns the
        number of curves and point sets updated."""
        if self.timeline is not None:
            self._take_timeline()
        self._focus_y()
        updated = 0
        self._update_kept()
        for trace in self._dirty:
            origin = trace.origin if trace.overlay else self.time_origin
            x, y = self._x(trace.series, origin), trace.series.y()
            steps = trace.series.x()
            smoothed = trace.smoothed(self.smoothing) if self.smoothing > 0 else None
            if x is None:
                x = y = steps = smoothed = np.empty(0)
            elif self.x_axis == "time" and not np.isfinite(x).all():
                known = np.isfinite(x)  # steps logged without a time are left out
                x, y, steps = x[known], y[known], steps[known]
                smoothed = None if smoothed is None else smoothed[known]
            lead = trace.lead_in
            if self.x_axis == "step" and lead is not None and len(steps) and steps[0] > lead[0]:
                # begun at the restored step's point, the resumed line joins the one before it:
                # a resume left a gap of one step in the curve (a kill at 45 resumed from 45)
                x, y, steps = (np.concatenate(([lead[i]], a)) for i, a in ((0, x), (1, y),
                                                                            (0, steps)))
                if smoothed is not None:
                    smoothed = np.concatenate(([lead[1] if lead[2] is None else lead[2]],
                                               smoothed))
            if self._clip is not None:  # short segments where the curve leaves the view
                y = np.clip(y, *self._clip)
                smoothed = None if smoothed is None else np.clip(smoothed, *self._clip)
            trace.draw(x, y, smoothed, steps)
            trace.drawn = trace.series.size
            updated += 1
        self._dirty.clear()
        if self._validation_dirty:
            x = self._x(self.validation, self.time_origin)
            if x is None:
                x = np.empty(0)
                y = x
            else:
                y = self.validation.y()
                finite = np.isfinite(y) & np.isfinite(x)
                x, y = x[finite], y[finite]
            self.validation_item.setData(x, y)
            self._validation_dirty = False
            updated += 1
        if self._legend_dirty:
            self._rebuild_legend()
        self._update_notice()
        self.branches.redraw()
        self._update_inset()
        self._place_legend()
        return updated

    def _update_kept(self) -> None:
        """Each earlier line of training keeps, drawn as the newest, its steps up to the one the
        next line resumed from (that line's first step − 1): after a resume that redid
        nothing the run is one unbroken curve; only steps lost and then redone are pale. A
        line a fork left is the branch layer's to draw."""
        attempts = sorted(self.traces)
        abandoned = {s.index for s in self.timeline.segments if s.abandoned_after is not None} \
            if self.timeline is not None else set()
        for attempt, following in itertools.pairwise(attempts):
            trace, steps = self.traces[attempt], self.traces[following].series.x()
            # before the next line's first step, all of this one is the run's so far
            until = None if attempt in abandoned else float(steps[0]) - 1 if len(steps) \
                else math.inf
            if trace.keep_until(self.getPlotItem(), until, CURRENT_COLOUR):
                trace.style(self.smoothing, self.presenting)
                trace.set_range_limit(self._range_limit())
                self._dirty.add(trace)
                self._legend_dirty = True
            lead = self._restored_point(trace, until)
            if lead != self.traces[following].lead_in:
                self.traces[following].lead_in = lead
                self._dirty.add(self.traces[following])

    def _restored_point(self, trace: Trace, step: float | None
                        ) -> tuple[float, float, float | None] | None:
        """(step, loss, smoothed loss or None) of `trace`'s point at global `step` (the one the
        next line resumed from), None when it has no finite one there."""
        if step is None or not math.isfinite(step) or not trace.series.size:
            return None
        at = trace.series.index_of(step)
        if at is None or not np.isfinite(trace.series.y()[at]):
            return None
        smoothed = float(trace.smoothed(self.smoothing)[at]) if self.smoothing > 0 else None
        return float(step), float(trace.series.y()[at]), smoothed

    def lost_then_redone(self) -> bool:
        """Whether an earlier line of training has steps with a finite loss after the one the
        next line resumed from (drawn pale; a NaN rolled back one step leaves only its NaN
        there, which draws nothing for the legend to name)."""
        def lost(trace) -> bool:
            if trace.kept is None or not trace.series.size:
                return False
            x = trace.series.x()
            after = int(np.searchsorted(x, trace.kept_until, side="right"))
            return bool(np.isfinite(trace.series.y()[after:]).any())

        return any(lost(trace) for attempt, trace in self.traces.items()
                   if attempt != max(self.traces))

    def inset_steps(self) -> tuple[float, float] | None:
        """The redone range the inset magnifies (the newest shaded one, on the step axis, once
        a later line of training exists), or None."""
        if self.x_axis != "step" or not self.regions or len(self.traces) < 2:
            return None
        start, end = self.regions[-1].getRegion()
        return float(start), float(end)

    def _inset_curves(self):
        """(start, end, earlier curves, resumed curve, resumed points in the range) for the
        inset: the newest shaded range that a later line of training went over again (a
        fault that redid nothing, a preemption, leaves the one before it), or None. Found by
        bisection (each line's steps ascend): it runs at every redraw."""
        if self.inset_steps() is None:
            return None
        attempts = sorted(self.traces)
        for region in reversed(self.regions):
            start, end = (float(v) for v in region.getRegion())
            for position in range(len(attempts) - 1, 0, -1):
                series = self.traces[attempts[position]].series
                x = series.x()
                if not len(x) or x[0] > start + 1:
                    continue
                inside = int(np.searchsorted(x, end, side="right")
                             - np.searchsorted(x, start, side="right"))
                if inside > 0:
                    earlier = [(self.traces[a].series.x(), self.traces[a].series.y())
                               for a in attempts[:position]]
                    return start, end, earlier, (x, series.y()), inside
        return None

    def _update_inset(self) -> None:
        """Draw the inset anew when what it shows changed: its range, the view, or a resumed
        step inside the range (steps past it change nothing there)."""
        found = self._inset_curves()
        drawn = None if found is None else (found[0], found[1], len(found[2]), found[4],
                                            self.presenting, len(self.regions))
        if drawn == self._inset_drawn:
            return
        self._inset_drawn = drawn
        if found is None:
            self.inset.forget()
            return
        if self.inset.show_range(*found[:4], self.presenting):
            self._place_inset()

    def _update_notice(self) -> None:
        untimed = self.x_axis == "time" and any(
            trace.series.size and np.isnan(trace.series.t()[-1])
            for trace in self.traces.values()
        )
        text = "the open run's steps came without times: not on the wall-time axis" if untimed \
            else ""
        if text != self.notice.toPlainText():
            self.notice.setText(text)

    def _show_redone(self, sample) -> None:
        for region in self.regions:
            region.setVisible(sample.isVisible())

    def _rebuild_legend(self) -> None:
        self.legend.clear()
        if self.traces:
            attempts = sorted(self.traces)
            self.legend.addItem(self.traces[attempts[-1]].shown, "training loss")
            lost = self.traces[attempts[0]].shown if len(attempts) > 1 and \
                self.lost_then_redone() else None
            if self.regions and self.x_axis == "step":  # one entry for the band and its line
                self.redone_sample.setVisible(all(r.isVisible() for r in self.regions))
                sample = RedoneSample(self.redone_sample, lost)
                self.legend.addItem(sample, REDONE_LABEL)
                # the swatch, clicked, hides or shows the shaded ranges, as other entries do
                sample.sigClicked.connect(self._show_redone)
            elif lost is not None:
                self.legend.addItem(lost, LOST_LABEL)
        if self.validation.size:
            self.legend.addItem(self.validation_item, "validation loss")
        for trace in self.overlays.values():
            self.legend.addItem(trace.shown, trace.name)
        # no empty frame on an empty plot; none where the view names its lines itself
        self.legend.setVisible(bool(self.legend.items) and (
            self.legend_when_presenting or not self.presenting))
        self._legend_dirty = False
        self._layout_labels()  # the legend may now cover other pixels
