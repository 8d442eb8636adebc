"""Where the loss plot looks, and where its marker labels go: the y range that shows the
interesting part of a run (the redone steps, or the recent ones) and a layout that never lets
two marker labels overlap.

On a linear axis the loss of a trained model sits near 0 under a first-step loss of 2.5, so the
redone range — the whole point of a recovery demo — is a flat line at the bottom. The
presentation view fits the y axis to the losses from the last redone range on (or, before any
restart, to the newest `RECENT_FRACTION` of the steps), so the resumed curve is seen lying on the
old one without Log scale.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from PySide6.QtCore import QPointF

from ftgui.core.timeline.axis_range import is_flat, padded_range
from ftgui.core.timeline.label_rows import label_rows

RECENT_FRACTION = 0.5  # without a restart: fit the y axis to the newest half of the steps
PAD_FRACTION = 0.12  # empty space above and below the fitted losses, of their span
LEAD_FRACTION = 1.0  # show this much of a redone range's width before it too
CLIP_MARGIN = 2.0  # curves are drawn clipped this many view heights beyond the view
LABEL_MARGIN_PX, LABEL_GAP_PX = 6, 3  # above the top row of marker labels; left of the legend
LABEL_ROW_GAP_PX = 1  # between rows of labels: their padding, filled, already sets them apart
MAX_LABEL_ROWS = 2  # marker labels stay in a strip at the top: never over half the plot
MAX_LABELLED = 10  # only the newest markers are labelled (a chaos run has dozens); the chaos
# demo's five faults and their resumes all (at 6 its first two faults went unnamed: a new user)


def label_strip_px(lines, max_rows: int = MAX_LABEL_ROWS) -> float:
    """The height in pixels of the strip at the top of the plot that the labels of the shown
    marker `lines` take left of the legend (0 without one), in at most `max_rows` rows."""
    shown = [line for line in lines if line.isVisible() and line.label.isVisible()]
    if not shown:
        return 0.0
    row_px = max(line.label.boundingRect().height() for line in shown) + LABEL_ROW_GAP_PX
    return LABEL_MARGIN_PX + min(max_rows, len(shown)) * row_px


def focus_start(redone: Sequence[tuple[float, float]], last_step: float) -> float:
    """The first step of the interesting part: the start of the newest `RECENT_FRACTION` of the
    steps up to `last_step`, or, when earlier, a redone range's width before the newest redone
    range. So a resume never narrows the view to the redone steps alone: the whole resumed
    curve stays in view (the redone range is magnified in the plot's inset instead)."""
    recent = last_step * (1.0 - RECENT_FRACTION)
    if redone:
        start, end = redone[-1]
        return min(max(start - LEAD_FRACTION * (end - start), 0.0), recent)
    return recent


def focus_y(curves: Iterable[tuple[np.ndarray, np.ndarray]], x_from: float
            ) -> tuple[float, float] | None:
    """(low, high) of the y axis that fits the finite losses at x ≥ `x_from` of every curve (x
    ascending), padded by `PAD_FRACTION`; None when there are none."""
    low, high = np.inf, -np.inf
    for x, y in curves:
        part = y[int(np.searchsorted(x, x_from, side="left")):]
        part = part[np.isfinite(part)]
        if len(part):
            low, high = min(low, float(part.min())), max(high, float(part.max()))
    if not np.isfinite(low):
        return None
    if is_flat(low, high):  # constant, or one point: ±10 % of the value (axis_range)
        return padded_range(low, high)
    pad = (high - low) * PAD_FRACTION
    return low - pad, high + pad


def focus_span(curves: Sequence[tuple[np.ndarray, np.ndarray]],
               redone: Sequence[tuple[float, float]],
               points: tuple[np.ndarray, np.ndarray] | None = None
               ) -> tuple[float, float] | None:
    """The y range (low, high) that shows the interesting part of `curves` ((x, y) of each
    line of training, x ascending) given the `redone` ranges (`focus_start`, `focus_y`), and
    the validation `points` (x, y) in that part too."""
    drawn = [(x, y) for x, y in curves if len(x)]
    if not drawn:
        return None
    last = max(float(np.nanmax(x[-1:])) for x, _y in drawn)
    start = focus_start(redone, last)
    if points is not None and len(points[0]):
        order = np.argsort(points[0], kind="stable")
        drawn.append((points[0][order], points[1][order]))
    return focus_y(drawn, start)


def clip_band(span: tuple[float, float] | None, band: tuple[float, float] | None
              ) -> tuple[float, float] | None:
    """The y band to clip drawn curves to for the view range `span`: `band` while it still
    holds `span` with room to spare, else `CLIP_MARGIN` view heights beyond each edge (None
    without a span: nothing clipped). Kept while it fits, so that new steps do not make every
    curve be drawn again."""
    if span is None:
        return None
    low, high = span
    height = high - low
    if band is not None and band[0] <= low - height and high + height <= band[1] and (
            band[1] - band[0]) <= (2 * CLIP_MARGIN + 1) * height * 2:
        return band
    return low - CLIP_MARGIN * height, high + CLIP_MARGIN * height


def layout_marker_labels(view_box, lines, legend=None, max_rows: int = MAX_LABEL_ROWS,
                         max_labelled: int = MAX_LABELLED) -> None:
    """Put the label of each shown marker line (`pg.InfiniteLine`, label anchored left or right
    of its line) in a row where it overlaps no other and not the `legend` item (`label_rows`:
    the newest marker of `lines` first, each in its row of the last layout while it fits there,
    else the highest free one); a label with no room left is hidden until there is. A label goes
    on the side its line prefers (`line.prefers_right`, else its anchor), or on the other side
    when it would run past the edge of the plot there; one whose line is out of view, or that
    fits on neither side, is hidden. Labels use at most `max_rows` rows at the top, and only the
    newest `max_labelled` markers (by step) are labelled: the lines of older ones stay, their
    text is in the line's tooltip."""
    shown = [line for line in lines if line.isVisible()]
    order = list(lines)  # the order the markers came in: the last is the newest
    newest = sorted(shown, key=lambda line: line.value())[-max_labelled:]
    for line in shown:
        line.setToolTip(line.label.toPlainText())
        if line not in newest:
            line.label.setVisible(False)
    shown = newest
    box = view_box.sceneBoundingRect()
    height = box.height()
    if not shown or height <= 0:
        return
    row_px = max(line.label.boundingRect().height() for line in shown) + LABEL_ROW_GAP_PX
    extents = []
    for line in list(shown):
        x = view_box.mapViewToScene(QPointF(line.value(), 0)).x()
        width = line.label.boundingRect().width()
        fits_right, fits_left = x + width <= box.right(), x - width >= box.left()
        if not box.left() <= x <= box.right() or not (fits_right or fits_left):
            line.label.setVisible(False)
            shown.remove(line)
            continue
        right_of_line = getattr(line, "prefers_right", line.label.anchors[0][0] == 0)
        if right_of_line and not fits_right:
            right_of_line = False  # it fits on the left (checked above)
        elif not right_of_line and not fits_left:
            right_of_line = True
        anchor = (0, 0.5) if right_of_line else (1, 0.5)
        line.label.anchors = [anchor, anchor]
        extents.append((x, x + width) if right_of_line else (x - width, x))
    if not shown:
        return
    fitting = max(int((height - LABEL_MARGIN_PX) // row_px), 1)
    limits = []
    if legend is not None and legend.isVisible() and legend.items:
        rect = legend.sceneBoundingRect()
        for row in range(fitting):
            top = box.top() + LABEL_MARGIN_PX + row * row_px
            covered = top < rect.bottom() and top + row_px > rect.top()
            limits.append(rect.left() - LABEL_GAP_PX if covered else np.inf)
    # rows from the top until `max_rows` of them are free of the legend: a legend at the
    # top pushes the labels right of its left edge just under it, never further down
    rows, free = 0, 0
    while rows < fitting and free < max_rows:
        free += rows >= len(limits) or limits[rows] == np.inf
        rows += 1
    limits = limits[:rows]
    before = [getattr(line, "label_row", None) for line in shown]
    newest_first = sorted(range(len(shown)), key=lambda k: order.index(shown[k]), reverse=True)
    rows_of = label_rows(extents, rows, limits, before, newest_first)
    for line, row in zip(shown, rows_of, strict=True):
        line.label_row = row
        line.label.setVisible(row is not None)
        if row is not None:
            line.label.setPosition(1 - (LABEL_MARGIN_PX + (row + 0.5) * row_px) / height)
