"""Where the presentation view's legend goes: the corner of the plot where it hides the least of
the curves, the newest steps weighing most.

A fixed corner covered the curve: the bottom left hid a loss that flattens early (steps 70-150
of a demo), and its box, faded, looked like the pale "loss before the restart". The legend is
moved only when another corner hides clearly less (`MOVE_BELOW` of what it hides where it is),
so that it does not wander as each step comes in. Besides the corners it may slide along the top
or bottom edge towards the middle (`SLIDES` places each side, as matplotlib's "best" tries the
edges' middles too): beside a demo's panel the redone inset took the top right, and the top left
covered the first validation point (a presenter's end-of-demo picture). A validation point weighs
`VALIDATION_WEIGHT` points of the training curve: one of a dozen dots is a claim a room reads,
one point of a noisy curve is not.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PySide6.QtCore import QRectF

MARGIN_PX = 10  # between the legend and the plot's edges (and the marker labels' strip)
RECENT_FRACTION = 0.2  # the newest fifth of the x range ...
RECENT_WEIGHT = 5.0  # ... counts this much per point: the live edge is what a room watches
MOVE_BELOW = 0.5  # move when another corner hides less than this share of the current one's
SLIDES = 4  # places along each edge from a corner to the edge's middle (`corner_rect`'s slide)
VALIDATION_WEIGHT = 25.0  # a validation point hidden costs this many training-curve points
SLIDE_COST = 2.0  # a legend slid to an edge's middle costs as much as 2 points hidden: a
# corner wins where both hide nothing, and the legend leaves a slid place for a clear corner
# (item and parent anchor, offset) of each corner, as `LegendItem.anchor` takes them
CORNERS = {"bottom left": ((0, 1), (MARGIN_PX, -MARGIN_PX)),
           "bottom right": ((1, 1), (-MARGIN_PX, -MARGIN_PX)),
           "top left": ((0, 0), (MARGIN_PX, MARGIN_PX)),
           "top right": ((1, 0), (-MARGIN_PX, MARGIN_PX))}


def slide_px(box_width: float, width: float, slide: float) -> float:
    """How far (pixels) a `width`-wide legend slid by `slide` (0: in its corner, 1: in the
    middle of its edge) is from its corner in a view box `box_width` wide; never negative."""
    return max(box_width - width - 2 * MARGIN_PX, 0.0) / 2 * slide


def corner_rect(corner: str, box: QRectF, width: float, height: float, strip_px: float,
                slide: float = 0.0) -> QRectF:
    """The scene rectangle a `width` × `height` legend takes at `corner` of the view box
    `box` (scene coordinates), below the marker labels' strip (`strip_px`) at the top, slid
    towards the middle of its edge by `slide` (0 to 1, `slide_px`)."""
    shift = slide_px(box.width(), width, slide)
    left = box.left() + MARGIN_PX + shift if corner.endswith("left") else \
        box.right() - MARGIN_PX - width - shift
    top = box.top() + strip_px + MARGIN_PX if corner.startswith("top") else \
        box.bottom() - MARGIN_PX - height
    return QRectF(left, top, width, height)


def hidden(curves: Sequence[tuple[np.ndarray, np.ndarray]], area: tuple[float, float, float,
                                                                         float],
           recent_from: float) -> float:
    """How much of `curves` ((x, y) each, x ascending) the rectangle `area` (x0, x1, y0, y1 in
    data coordinates) hides: its points, those at x ≥ `recent_from` counted `RECENT_WEIGHT`
    times."""
    x0, x1, y0, y1 = area
    total = 0.0
    for x, y in curves:
        first, last = np.searchsorted(x, x0, side="left"), np.searchsorted(x, x1, side="right")
        inside = (y[first:last] >= y0) & (y[first:last] <= y1)
        recent = x[first:last] >= recent_from
        total += float(inside.sum()) + (RECENT_WEIGHT - 1) * float((inside & recent).sum())
    return total


def best_corner(scores: dict, current):
    """The corner (or any place: a (corner, slide) pair) to put the legend at, given how much
    it would hide at each (`scores`; a place left out may not be used, e.g. the redone inset
    is drawn there): `current` unless another hides less than `MOVE_BELOW` of it, or `current`
    is left out (the inset came over the legend when the plot grew shorter: a presenter's
    screenshots). No place: `current`. Among equal scores the first in `scores`' order wins
    (the corners come before their slides)."""
    if not scores:
        return current
    best = min(scores, key=lambda corner: (scores[corner], corner != current))
    if current not in scores:
        return best
    return best if scores[best] < MOVE_BELOW * scores[current] else current
