"""The redone range magnified: a small second view inside the loss plot (`redoneInset`) that
shows the newest redone steps of the earlier line of training (wide, pale) and of the resumed
one (thin, in the current colour) over each other, y fitted to them alone.

On the main plot's scale the redone steps are a few pixels at the bottom; fitting the main y
axis to them took the rest of the curve and the validation points out of view. The inset shows
what a room must see — the new curve lying on the old one — and the main view keeps the run.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QFrame, QGraphicsItem

from ftgui.core.timeline.axis_range import series_range
from ftgui.qt import theme
from ftgui.qt.plot.loss_axis import loss_axes

WIDTH_FRACTION, HEIGHT_FRACTION = 0.36, 0.34  # of the main plot's view box
LEFT_FRACTION = 0.30  # its left edge at least, along the view box (a falling loss leaves the
# top free; in the presentation view it starts where the fitted part of the run does)
GAP_PX = 6  # below the marker labels' strip
PAD_FRACTION = 0.1  # above and below the redone losses
MIN_SIZE_PX = (160, 110)  # smaller than this it is not shown
# the most of the view's height the marker labels' strip and the inset under it take: the
# presentation view leaves that much room above the losses (`PlotLook._headroom`), so an inset
# that would reach further down is not shown (it hid the validation points of a demo's plot
# made short by the checkpoint table under it: helper-21)
MAX_TOP_SHARE = 0.6
TICK_PX = {False: 10, True: 16}  # 18 cut the step labels of a short inset (helper-22)
TITLE_PX = {False: 11, True: 17}


def redone_part(x: np.ndarray, y: np.ndarray, start: float, end: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """The points of one curve (x ascending) with start ≤ x ≤ end."""
    first = int(np.searchsorted(x, start, side="left"))
    last = int(np.searchsorted(x, end, side="right"))
    return x[first:last], y[first:last]


def inset_rect(view: QRectF, strip_px: float, left_fraction: float = LEFT_FRACTION,
               width_fraction: float = WIDTH_FRACTION) -> QRectF | None:
    """Where the inset goes in widget pixels, for the main plot's view box `view`, the
    height of its marker labels' strip at the top, its left edge and its width as fractions
    of the view's width (the edge at least `LEFT_FRACTION`, and room for the inset); None
    when too small."""
    width = view.width() * width_fraction
    height = max(view.height() * HEIGHT_FRACTION, MIN_SIZE_PX[1])
    if width < MIN_SIZE_PX[0] or strip_px + GAP_PX + height > view.height() * MAX_TOP_SHARE:
        return None
    left = min(max(left_fraction, LEFT_FRACTION), 1.0 - width_fraction - 0.02)
    return QRectF(view.left() + view.width() * left, view.top() + strip_px + GAP_PX,
                  width, height)


def covered(markers: list[float], at: float, width: float, gap: float = 0.01) -> list[float]:
    """The marker lines of `markers` (fractions of the view's width) an inset `width` wide at
    `at` (fractions too) would cover, `gap` to spare each side."""
    return [m for m in markers if at - gap / 2 <= m <= at + width + gap / 2]


def clear_of_markers(left: float, markers: list[float], min_width: float,
                     gap: float = 0.01, high: float = 0.98) -> tuple[float, float]:
    """(left edge, width) of the inset, fractions of the view's width as `inset_rect` takes
    them: at `left` and `WIDTH_FRACTION` wide, unless it would cover a marker line (`markers`:
    their x as fractions of the view's width); then right of them, else left of them but not
    left of `LEFT_FRACTION` (the early steps' losses lie there), narrowed to fit down to
    `min_width`, where it then covers none; else where it was. Its right edge stays left of
    `high` (the view's edge, or the normal view's legend). The inset sat over the kill and
    resume lines it magnifies, and moved far left it covered the curve (a presenter's
    findings)."""
    left = min(max(left, LEFT_FRACTION), high - WIDTH_FRACTION)
    under = covered(markers, left, WIDTH_FRACTION, gap)
    if not under:
        return left, WIDTH_FRACTION
    start = max(under) + gap
    width = min(WIDTH_FRACTION, high - start)
    if width >= min_width and not covered(markers, start, width, gap):
        return start, width
    end = min(under) - gap
    width = min(WIDTH_FRACTION, end - LEFT_FRACTION)
    if width >= min_width and not covered(markers, end - width, width, gap):
        return end - width, width
    return left, WIDTH_FRACTION


class RedoneInset(pg.PlotWidget):
    """The inset; `show_range(start, end, earlier, resumed, presenting)` draws it, `forget()`
    hides it, `place(view, strip_px, left_fraction)` puts it where it fits (or hides it)."""

    def __init__(self, parent):
        super().__init__(parent=parent, background=theme.PLOT_BACKGROUND, axisItems=loss_axes())
        self.setObjectName("redoneInset")
        self.setFrameShape(QFrame.Shape.Box)
        self.setStyleSheet(f"QGraphicsView#redoneInset {{ border: 2px solid "
                           f"{theme.SECONDARY_TEXT}; }}")
        item = self.getPlotItem()
        item.hideButtons()
        item.setMenuEnabled(False)
        item.setDownsampling(auto=True, mode="peak")  # a long redone range: few segments
        item.setClipToView(True)
        item.getViewBox().setMouseEnabled(False, False)
        self.old = pg.PlotDataItem([], [], connect="finite")
        self.new = pg.PlotDataItem([], [], connect="finite")
        self.new.setZValue(1)
        for curve in (self.old, self.new):  # one bin per 2 px: the envelope under thick pens
            curve.opts["autoDownsampleFactor"] = 0.5
            # painted once into a pixmap: the main plot repaints under the inset at every new
            # step, and the inset's thick curves cost 4 ms a frame drawn again each time
            curve.curve.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        item.addItem(self.old)
        item.addItem(self.new)
        self.steps: tuple[float, float] | None = None  # the redone range shown
        self.presenting: bool | None = None
        self.drawn = False  # whether `show_range` drew a range (hidden only for want of room)
        self._title_px = TITLE_PX[False]
        self._titled: str | None = None  # the title shown
        self.hide()

    def show_range(self, start: float, end: float, earlier: list[tuple[np.ndarray, np.ndarray]],
                   resumed: tuple[np.ndarray, np.ndarray], presenting: bool) -> bool:
        """Draw steps [start, end] of the `earlier` curves and of the `resumed` one; False
        (and hidden) when either has no finite loss there, or the earlier ones a single one
        (a NaN rolled back one step: its old step is the NaN, so no segment to lie on; the
        room saw one line "magnified" for half a minute)."""
        old = [redone_part(x, y, start, end) for x, y in earlier]
        old = [part for part in old if np.isfinite(part[1]).any()]
        new = redone_part(*resumed, start, end)
        span = series_range([y for _x, y in old] + [new[1]], PAD_FRACTION)
        finite_old = sum(int(np.isfinite(y).sum()) for _x, y in old)
        if finite_old < 2 or not np.isfinite(new[1]).any() or span is None:
            self.drawn = False
            self.hide()
            return False
        self.drawn = True
        self._style(presenting, start, end)
        x = np.concatenate([x for x, _y in old])
        y = np.concatenate([y for _x, y in old])
        self.old.setData(x, y, connect="finite")
        self.new.setData(*_from_restore_point(new, x, y, start), connect="finite")
        view = self.getPlotItem().getViewBox()
        view.setRange(xRange=(start, end), yRange=span, padding=0)
        self.show()
        return True

    def forget(self) -> None:
        """Hidden, with no range to show again when there is room."""
        self.drawn = False
        self.hide()

    def place(self, view: QRectF, strip_px: float, left_fraction: float = LEFT_FRACTION,
              width_fraction: float = WIDTH_FRACTION) -> None:
        """Put the inset at `inset_rect` of the main plot's view box (widget pixels): hidden
        where there is no room, shown again where there is once more (the plot grew taller
        when a demo's stage hid the checkpoint table) if it has a range drawn."""
        rect = inset_rect(view, strip_px, left_fraction, width_fraction)
        if rect is None:
            self.hide()
            return
        self.setGeometry(rect.toRect())
        self._fit_title()
        if self.drawn and not self.isVisible():
            self.show()

    def _style(self, presenting: bool, start: float, end: float) -> None:
        if (presenting, start, end) == (self.presenting, *(self.steps or (None, None))):
            return
        self.presenting, self.steps = presenting, (start, end)
        scale = theme.scale()
        width = theme.pen_width("curve", presenting)
        self.old.setPen(pg.mkPen(theme.CURVE_COLOURS["halo"], width=3 * width))
        self.new.setPen(pg.mkPen(theme.CURVE_COLOURS["current"], width=width))
        item = self.getPlotItem()
        font = theme.font_px(round(TICK_PX[presenting] * scale))
        for side in ("left", "bottom"):
            axis = item.getAxis(side)
            axis.setTickFont(font)
            # only the major ticks labelled: at the presentation view's size the minor ones'
            # labels touched each other in an inset 110 px high (helper-21)
            axis.setStyle(tickFont=font, tickTextOffset=2, maxTextLevel=0 if presenting else 2)
            axis.setTextPen(theme.TEXT)
        self._title_px = round(TITLE_PX[presenting] * scale)
        self._titled = None
        self._fit_title()

    def _fit_title(self) -> None:
        """"600–650 magnified" where it fits the inset's width beside its y axis, else
        "600–650": a title wider than the inset widened its layout past the widget, which
        cut the title to "600–650 ma" and the curve at step 630 (a presenter's grab of an
        inset narrowed beside the marker lines)."""
        if self.steps is None:
            return
        start, end = self.steps
        title = f"{start:.0f}–{end:.0f} magnified"
        room = self.width() - self.getPlotItem().getAxis("left").width() - 12
        if QFontMetrics(theme.font_px(self._title_px)).horizontalAdvance(title) > room:
            title = f"{start:.0f}–{end:.0f}"
        if title != self._titled:
            self._titled = title
            self.getPlotItem().setTitle(title, color=theme.TEXT, size=f"{self._title_px}px")


def _from_restore_point(new: tuple[np.ndarray, np.ndarray], x: np.ndarray, y: np.ndarray,
                        start: float) -> tuple[np.ndarray, np.ndarray]:
    """The resumed curve's points, begun at the restored step `start` when the earlier curve
    (`x`, `y`) has it: the state restored is that step's, so the resumed line starts there
    (as on the main plot), not one step later beside the old curve alone."""
    at = np.flatnonzero(x == start)
    if not len(at) or (len(new[0]) and new[0][0] <= start):
        return new
    return np.concatenate([[start], new[0]]), np.concatenate([y[at[-1:]], new[1]])


def to_widget(plot: pg.PlotWidget, scene_rect: QRectF) -> QRectF:
    """A scene rectangle of `plot` in its widget's pixels."""
    top_left = plot.mapFromScene(scene_rect.topLeft())
    bottom_right = plot.mapFromScene(scene_rect.bottomRight())
    return QRectF(QPointF(top_left), QPointF(bottom_right))
