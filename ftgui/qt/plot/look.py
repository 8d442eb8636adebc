"""The look of the loss plot (a mixin of `LossPlot`): fonts, pens and sizes from the theme at
its scale, in the normal view or the presentation view, where the y axis also follows the
interesting part of the run and marker labels are laid out apart (`ftgui.qt.plot.focus`)."""

from __future__ import annotations

import math
import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QFontMetricsF

from ftgui.core.timeline.axis_range import finite_extent, is_flat, padded_range
from ftgui.qt import theme
from ftgui.qt.plot import legend_place
from ftgui.qt.plot.focus import (
    MAX_LABEL_ROWS,
    MAX_LABELLED,
    clip_band,
    focus_span,
    focus_start,
    label_strip_px,
    layout_marker_labels,
)
from ftgui.qt.plot.legend_place import CORNERS
from ftgui.qt.plot.marker_line import MarkerLine
from ftgui.qt.plot.redone_inset import (
    GAP_PX,
    HEIGHT_FRACTION,
    LEFT_FRACTION,
    MAX_TOP_SHARE,
    MIN_SIZE_PX,
    WIDTH_FRACTION,
    clear_of_markers,
    covered,
    inset_rect,
    to_widget,
)

INSET_SLACK = 0.025  # the inset's left edge moves once off by this share of the view's width
NEWEST_MARKERS_SEEN = 2  # the legend keeps off the lines of this many newest markers
LEGEND_LOOK_SECONDS = 1.0  # how often the presentation view looks for a better legend corner
LEGEND_REFIT = 0.1  # ... and at once when the y range moved by this share of its span
SHORT_LEGEND_SHARE = 0.3  # a stacked legend taller than this share of the plot: side by side


class PlotLook:
    """`set_presenting(on)` and what it changes; mixed into `LossPlot`, whose attributes
    (`presenting`, `legend`, `traces`, `markers`, `regions`, `_span`, `_clip`, …) it uses.
    `label_rows`: how many rows the marker labels may take at the top (`focus.MAX_LABEL_ROWS`;
    the comparison, whose runs' markers share one plot, takes more). `max_labelled`: how many
    of the newest markers get a label (`focus.MAX_LABELLED`); `legend_when_presenting`:
    whether the legend shows in the presentation view."""

    label_rows = MAX_LABEL_ROWS
    max_labelled = MAX_LABELLED
    legend_when_presenting = True  # False: the view names its curves itself (the comparison)
    legend_corner = "bottom left"  # the presentation view's (`legend_place.CORNERS`)
    legend_slide = 0.0  # ... slid that far towards its edge's middle (`legend_place.slide_px`)
    _legend_looked = -math.inf  # when `_place_legend` last looked (monotonic seconds)
    _legend_scene = None  # the y range and the newest markers it looked at
    _legend_anchored = None  # the (anchor, offset) last given to the legend
    _inset_left: float | None = None  # the presentation view's inset's left edge (view share)

    def set_presenting(self, on: bool) -> None:
        """The presentation view's look (`True`): tick and axis fonts, curves, markers and the
        legend at the theme's presentation sizes, the y axis fitted to the interesting part
        (`ftgui.qt.plot.focus`); `False` gives back the normal look and y auto-range."""
        on = bool(on)
        if on == self.presenting:
            return
        self.presenting = on
        self._apply_look()
        if not on:
            self.getPlotItem().enableAutoRange(y=True)
        self._span, self._refit = None, True  # fit y again for this view at the redraw
        self.redraw()

    def _apply_look(self, *_scale) -> None:
        """Fonts, pens and sizes from the theme, at its scale and for the current view."""
        item, presenting = self.getPlotItem(), self.presenting
        if item is None:
            return  # closed
        tick_font = theme.tick_font(presenting)
        for side in ("left", "bottom"):
            axis = item.getAxis(side)
            axis.setStyle(tickFont=tick_font, tickTextOffset=round(4 * theme.scale()))
            axis.setTickFont(tick_font)
            axis.setTextPen(theme.TEXT)  # not pyqtgraph's light grey
            axis.enableAutoSIPrefix(False)  # "loss (x0.001)" over 0–200 misleads a room
            axis.setPen(theme.SECONDARY_TEXT)
            self._set_label(side, self._labels[side])
        # room above the view for half a label: a tick at its top edge (the presentation
        # view fits y to round figures) lost the top half of its label to the widget's edge
        half_label = math.ceil(QFontMetricsF(tick_font).height() / 2)
        item.layout.setContentsMargins(1, half_label, 1, 1)
        legend_size = (f"{theme.presenting_px('legend')}px" if presenting
                       else f"{theme.LEGEND_FONT_PT * theme.scale():.1f}pt")
        self.legend.opts["labelTextSize"] = legend_size
        self._anchor_legend()
        symbol = theme.presenting_px("validation_symbol") if presenting else round(
            theme.VALIDATION_SYMBOL_PX * theme.scale())
        self.validation_item.setSymbolSize(symbol)
        for trace in self._all_traces():
            trace.style(self.smoothing, presenting)
        for kind, _step, line in self.markers:
            self._style_marker(kind, line)
        shade = theme.REDONE_SHADE_PRESENTING if presenting else theme.REDONE_SHADE
        for region in self.regions:
            region.setBrush(pg.mkBrush(theme.rgba(shade)))
        self.redone_sample.setOpts(brush=pg.mkBrush(theme.rgba(shade)))
        self._legend_dirty = True
        if self.traces or self.overlays or self.validation.size:
            self._rebuild_legend()
        self._layout_labels()

    def _anchor_legend(self) -> None:
        """Where a falling loss leaves room: the top right of the whole run; in the
        presentation view the corner of its fitted part that hides the least of the curves
        (`legend_place`; the bottom left at first: the early steps run above the view)."""
        corner = CORNERS[self.legend_corner] if self.presenting else ((1, 0), (-10, 10))
        anchor, (dx, dy) = corner
        if self.presenting and self.legend_slide:
            shift = legend_place.slide_px(
                self.getPlotItem().getViewBox().sceneBoundingRect().width(),
                self.legend.boundingRect().width(), self.legend_slide)
            dx += shift if anchor[0] == 0 else -shift
        if self.presenting and anchor[1] == 0:  # a top corner: under the marker labels' strip
            dy += self._label_strip_px()
        placed = (anchor, (dx, dy))
        if self.legend.parentItem() is not None and placed != self._legend_anchored:
            self._legend_anchored = placed  # each label layout asks again (a top corner)
            self.legend.anchor(anchor, anchor, offset=(dx, dy))

    def _place_legend(self) -> None:
        """Move the presentation view's legend to the corner that hides clearly less of the
        curves, at most once a `LEGEND_LOOK_SECONDS` (step axis, linear y), but at once after
        a new marker or a refit of the y range (`LEGEND_REFIT`): the kill's picture, taken
        just after it, had the legend where the view before the kill had left it, over the
        newest validation points."""
        now = time.monotonic()
        self._fit_legend_columns()
        if not self.presenting or self.x_axis != "step" or self.log_y or \
                not self.legend.isVisible():
            return
        box_item = self.getPlotItem().getViewBox()
        low, high = box_item.viewRange()[1]
        newest = [step for _kind, step, _line in self.markers[-NEWEST_MARKERS_SEEN:]]
        self._anchor_legend()  # a slid legend's offset follows the view box's width
        inset = self._inset_scene_rect()
        if now - self._legend_looked < LEGEND_LOOK_SECONDS and not self._legend_scene_moved(
                low, high, newest, inset):
            return
        self._legend_looked, self._legend_scene = now, (low, high, newest, inset)
        curves = [(t.series.x(), t.series.y()) for t in self._all_traces() if t.series.size]
        validation = []
        if self.validation.size:
            order = np.argsort(self.validation.x(), kind="stable")
            validation.append((self.validation.x()[order], self.validation.y()[order]))
        if not curves and not validation:
            return
        scores, across = {}, {}
        for place in self._legend_places():
            score, crossing = self._legend_cost(place, curves, validation, newest, inset)
            if score is not None:  # None: the inset is drawn over it
                # a place across the newest marker lines (the kill a room has just seen) only
                # where every place is
                (across if crossing else scores)[place] = score
        if not scores and not across:  # the inset is over every place: the least of it
            scores = {place: self._inset_overlap(place, inset)
                      for place in self._legend_places()}
        place = legend_place.best_corner(scores or across,
                                         (self.legend_corner, self.legend_slide))
        if place != (self.legend_corner, self.legend_slide):
            self.legend_corner, self.legend_slide = place
            self._anchor_legend()
            self._layout_labels()

    def _fit_legend_columns(self) -> None:
        """The legend's names side by side in a short plot of the presentation view (stacked
        they would take over `SHORT_LEGEND_SHARE` of its height), else one above the other:
        beside a demo's checkpoint table the stacked legend took 40 % of the plot and hid
        validation points wherever it went (helper-22)."""
        count = len(self.legend.items)
        if not count:
            return
        height = self.getPlotItem().getViewBox().sceneBoundingRect().height()
        # the names' own heights, the same side by side or stacked (the box's height would
        # not be: its margins count once per layout, and a legend side by side in a plot
        # grown tall again stayed so, across the curve: the demo's end picture)
        stacked = sum(label.boundingRect().height() for _sample, label in self.legend.items)
        columns = count if self.presenting and height > 0 and \
            stacked > SHORT_LEGEND_SHARE * height else 1
        if columns != self.legend.columnCount:
            self.legend.setColumnCount(columns)
            self._legend_scene = None  # its size changed: look for a place again
            self._anchor_legend()

    @staticmethod
    def _legend_places() -> list[tuple[str, float]]:
        """(corner, slide) of each place the legend may take: the corners first."""
        slides = [k / legend_place.SLIDES for k in range(legend_place.SLIDES + 1)]
        return [(corner, slide) for slide in slides for corner in CORNERS]

    def _legend_cost(self, place: tuple[str, float], curves, validation, newest, inset
                     ) -> tuple[float | None, bool]:
        """How much the legend at `place` would hide of `curves` and the `validation` points
        (`legend_place.hidden`; a validation point counts when its symbol touches the box, and
        weighs `VALIDATION_WEIGHT`; sliding costs `SLIDE_COST` at most), None where the redone
        inset (its scene rectangle `inset`, None when hidden) is drawn over it; and whether it
        lies across one of the `newest` markers' steps."""
        box_item = self.getPlotItem().getViewBox()
        scene = self._legend_rect(place)
        if inset is not None and scene.intersects(inset):
            return None, False
        x_low, x_high = box_item.viewRange()[0]
        recent_from = x_high - legend_place.RECENT_FRACTION * (x_high - x_low)
        rect = box_item.mapSceneToView(scene).boundingRect()
        score = legend_place.hidden(
            curves, (rect.left(), rect.right(), rect.top(), rect.bottom()), recent_from
        ) + legend_place.SLIDE_COST * place[1]
        if validation:
            radius = self.validation_item.opts["symbolSize"] / 2
            grown = box_item.mapSceneToView(scene.adjusted(-radius, -radius, radius, radius)
                                            ).boundingRect()
            score += legend_place.VALIDATION_WEIGHT * legend_place.hidden(
                validation, (grown.left(), grown.right(), grown.top(), grown.bottom()),
                recent_from)
        return score, any(rect.left() <= step <= rect.right() for step in newest)

    def _legend_rect(self, place: tuple[str, float]):
        """The scene rectangle of the legend at `place` ((corner, slide))."""
        size = self.legend.boundingRect()
        return legend_place.corner_rect(
            place[0], self.getPlotItem().getViewBox().sceneBoundingRect(), size.width(),
            size.height(), self._label_strip_px(), place[1])

    def _inset_scene_rect(self):
        """The redone inset's scene rectangle, None while it is hidden."""
        inset = getattr(self, "inset", None)
        if inset is None or not inset.isVisible():
            return None
        return self.mapToScene(inset.geometry()).boundingRect()

    def _inset_overlap(self, place: tuple[str, float], inset) -> float:
        """The area (square pixels) the `inset` rectangle covers of the legend at `place`."""
        common = self._legend_rect(place).intersected(inset)
        return common.width() * common.height()

    def _legend_scene_moved(self, low: float, high: float, newest: list[float], inset=None
                            ) -> bool:
        """Whether the y range (`low`, `high`), the newest markers' steps or the redone inset's
        scene rectangle `inset` differ from what the legend last looked at: the inset appears
        and moves after the markers (a demo's picture just after a kill had the legend under
        it, another the inset over its right side)."""
        if self._legend_scene is None:
            return True
        was_low, was_high, was_newest, was_inset = self._legend_scene
        span = max(was_high - was_low, 1e-12)
        return newest != was_newest or inset != was_inset or max(
            abs(low - was_low), abs(high - was_high)) > LEGEND_REFIT * span

    def _set_label(self, side: str, text: str) -> None:
        self._labels[side] = text
        size = (f"{theme.presenting_px('axis_label')}px" if self.presenting
                else f"{theme.font_pt():.1f}pt")
        self.getPlotItem().setLabel(side, text, **{"font-size": size})

    def _style_marker(self, kind: str, line: MarkerLine) -> None:
        """The pen of a marker (its turn among those at its step, `line.dash_slot`) and its
        label's font, padding and fill: the plot's background, opaque, so that no curve or
        validation point shows through the text."""
        line.setPen(theme.marker_pen(kind, self.presenting, *line.dash_slot))
        label = line.label
        if self.presenting:
            size = theme.presenting_px("marker_label")
            padding = theme.presenting_px("marker_label_padding")
        else:
            size = round(theme.font_pt() * 4 / 3)
            padding = round(theme.MARKER_LABEL_PADDING_PX * theme.scale())
        label.textItem.document().setDocumentMargin(padding)
        label.setFont(theme.font_px(size, bold=self.presenting))  # places the text anew
        fill = QColor(self.backgroundBrush().color())
        fill.setAlpha(255)
        label.fill = pg.mkBrush(fill)
        label.update()

    def _flat_span(self) -> tuple[float, float] | None:
        """The y range for data too flat for pyqtgraph's auto-range (a constant 1e30 loss gave
        eight identical ticks): ±10 % of the value (`ftgui.core.timeline.axis_range`), in log10
        units on the log axis; None when the data varies (auto-range does well) or is empty."""
        series = [trace.series for trace in self._all_traces()] + [self.validation]
        if self.log_y:
            with np.errstate(divide="ignore", invalid="ignore"):
                extent = finite_extent([np.log10(s.y()[s.y() > 0]) for s in series])
        else:  # each series keeps its extent up to date (only new points are scanned)
            extent = finite_extent([pair for s in series if (pair := s.y_extent())])
        if extent is None or not is_flat(*extent):
            return None
        return padded_range(*extent)

    def _layout_labels(self, *_args) -> None:
        layout_marker_labels(self.getPlotItem().getViewBox(),
                             [line for _kind, _step, line in self.markers], self.legend,
                             self.label_rows, self.max_labelled)
        if self.presenting and CORNERS[self.legend_corner][0][1] == 0:
            self._anchor_legend()  # a top corner's legend stays under the strip as it grows
        self._place_inset()

    def _label_strip_px(self) -> float:
        return label_strip_px([line for _kind, _step, line in self.markers], self.label_rows)

    def _place_inset(self) -> None:
        """The redone inset under the marker labels' strip, in the view box's top middle."""
        inset = getattr(self, "inset", None)
        if inset is None or not inset.isVisible() and self.inset_steps() is None:
            return
        box = self.getPlotItem().getViewBox()
        view = to_widget(self, box.sceneBoundingRect())
        left = LEFT_FRACTION
        if self.presenting and self._focus_from is not None:  # over the fitted part of the run
            x_low, x_high = box.viewRange()[0]
            left = (self._focus_from - x_low) / (x_high - x_low) if x_high > x_low else left
            # moved only when off by INSET_SLACK of the width: the x range changes with each
            # step, a redraw or two after the focus, and the inset followed both, wobbling
            # 1-6 px back and forth (a presenter's grabs)
            kept = self._inset_left
            if kept is not None and abs(left - kept) < INSET_SLACK:
                left = kept
            self._inset_left = left
        x_low, x_high = box.viewRange()[0]
        width, strip = WIDTH_FRACTION, self._label_strip_px()
        if x_high > x_low and view.width() > 0:  # off the marker lines it would cover
            lines = [(step - x_low) / (x_high - x_low)
                     for _kind, step, line in self.markers if line.isVisible()]
            left, width, strip = self._inset_spot(view, left, lines, strip)
        inset.place(view, strip, left, width)
        if inset.isVisible():  # a label pushed below the strip (a legend at the top took its
            under = inset.geometry()  # row) would be covered by it: its text is in the tooltip
            for _kind, _step, line in self.markers:
                label = line.label
                if label.isVisible() and to_widget(self, label.sceneBoundingRect()).toRect(
                        ).intersects(under):
                    label.setVisible(False)

    def _inset_spot(self, view: QRectF, left: float, lines: list[float], strip: float
                    ) -> tuple[float, float, float]:
        """(left edge, width, top strip px) of the inset off the marker `lines` (fractions of
        the view's width) and, in the normal view, off its legend in the top right: beside
        both where it fits, else under the legend, else left of the legend over a line. The
        inset, moved right of the kill and resume lines, hid the legend's "validation loss"
        (a presenter's grab)."""
        least = MIN_SIZE_PX[0] / view.width()
        legend = self._fixed_legend_rect()
        if legend is None or legend.left() <= view.left() or \
                legend.bottom() <= view.top() + strip:  # the legend is within the strip
            return (*clear_of_markers(left, lines, least), strip)
        edge = (legend.left() - view.left()) / view.width() - 0.01
        beside = clear_of_markers(left, lines, least, high=edge)
        if not covered(lines, *beside):
            return (*beside, strip)
        below = clear_of_markers(left, lines, least)
        under = legend.bottom() - view.top()
        if inset_rect(view, under, *below) is not None:
            return (*below, under)
        return (*beside, strip)

    def _fixed_legend_rect(self) -> QRectF | None:
        """The normal view's legend in widget pixels (it stays in the top right), None where
        it is hidden or the presentation view moves it off the inset (`_place_legend`)."""
        if self.presenting or not self.legend.isVisible() or not self.legend.items:
            return None
        return to_widget(self, self.legend.sceneBoundingRect())

    def _headroom(self, span: tuple[float, float]) -> tuple[float, float]:
        """`span` with room added above the losses for the marker labels' strip and, once
        there is a redone range, the inset under it (presentation view): neither covers the
        curves there."""
        height = self.getPlotItem().getViewBox().sceneBoundingRect().height()
        if height <= 0:
            return span
        top = self._label_strip_px()
        if self.inset_steps() is not None:
            top += GAP_PX + height * HEIGHT_FRACTION
        share = min(top / height, MAX_TOP_SHARE)
        low, high = span
        return low, high + (high - low) * share / (1 - share)

    def _focus_y(self) -> None:
        """In the presentation view on a linear axis: fit y to the interesting part (the steps
        from the last redone range on, or the recent ones); x still shows the whole run.

        The curves are then drawn with y clipped to a band of the view's height beyond each
        edge (`focus.clip_band`): a thick pen costs per pixel of its segments, and the
        steep early losses far above the view were most of a frame. Clipped that far out, no
        visible pixel changes."""
        focused = self.presenting and not self.log_y
        span = None
        if focused:
            redone = [r.getRegion() for r in self.regions] if self.x_axis == "step" else []
            curves = [(self._x(t.series, self.time_origin), t.series.y())
                      for t in self.traces.values()] or [  # a comparison: the runs compared
                (self._x(t.series, t.origin), t.series.y()) for t in self.overlays.values()]
            x = self._x(self.validation, self.time_origin)
            points = None if x is None else (x, self.validation.y())
            curves = [(x, y) for x, y in curves if x is not None and len(x)]
            span = focus_span(curves, redone, points)
            self._focus_from = focus_start(redone, max(float(x[-1]) for x, _y in curves)) \
                if curves else None
            span = None if span is None else self._headroom(span)
        elif self._dirty or self._validation_dirty or self._flat or self._refit:
            span = self._flat_span()
        self._refit = False
        if span is not None and span != self._span:
            self.getPlotItem().setYRange(*span, padding=0)
        elif span is None and self._flat and not focused:
            self.getPlotItem().enableAutoRange(y=True)  # no longer flat: pyqtgraph fits again
        self._flat = span is not None and not focused
        self._span = span
        clip = clip_band(span if focused else None, self._clip)  # log or flat: no clipping
        if clip != self._clip:
            self._clip = clip
            self._dirty.update(self._all_traces())
