"""A marker of the loss plot (a crash, a resume, …): a vertical dashed line with a label beside
it, its dashes and its label drawn in two layers so that no marker's line crosses another's
label.

A pyqtgraph `InfiniteLine` paints its label as its child, so the label sits directly above its
own line but below every line added later: a resume's line drawn 12 steps right of a crash
went through the crash's label. Here the line paints only its label (`MARKER_LABEL_Z`) and a
plain `InfiniteLine`, its `stroke`, paints the dashes below (`MARKER_Z`), under all labels.
"""

from __future__ import annotations

from html import escape

import pyqtgraph as pg
from pyqtgraph.graphicsItems.InfiniteLine import InfLineLabel

MARKER_Z = 20_000  # above curves (z = attempt + 1), validation (1000) and branches (10,000 + i)
MARKER_LABEL_Z = MARKER_Z + 1  # every marker's label above every marker's line


class MarkerLine(pg.InfiniteLine):
    """A vertical marker at `step` drawn with `pen`, labelled `label` (pyqtgraph's
    `InfLineLabel` with `label_options`), after a square in each of the `owners` colours
    (a comparison's runs that have it: "■ resume ← 132" in the blue run's blue); `stroke` is
    the item that draws the dashes, to be added to the plot with it (`items()`). Pen and
    visibility are passed on to it; `dash_slot` is its (slot, sharing) among the markers of
    its family at its step (`theme.dash_slots`)."""

    def __init__(self, step: float, pen, label: str, label_options: dict,
                 owners: tuple[str, ...] = ()):
        self.stroke = pg.InfiniteLine(pos=step, angle=90, pen=pen, movable=False)
        self.stroke.setZValue(MARKER_Z)
        super().__init__(pos=step, angle=90, pen=pen, movable=False,
                         label=None if owners else label, labelOpts=label_options)
        if owners:
            squares = "".join(f'<span style="color:{colour}">■</span>' for colour in owners)
            self.label = OwnedLabel(self, f"{squares} {escape(label)}", **label_options)
        self.setZValue(MARKER_LABEL_Z)
        self.dash_slot = (0, 1)

    def items(self) -> tuple[pg.InfiniteLine, pg.InfiniteLine]:
        """What the plot shows of this marker: its dashes, then its label."""
        return self.stroke, self

    def setPen(self, *args, **kwargs) -> None:  # noqa: N802 (Qt's naming)
        super().setPen(*args, **kwargs)
        self.stroke.setPen(self.pen)

    def setVisible(self, visible: bool) -> None:  # noqa: N802
        super().setVisible(visible)
        self.stroke.setVisible(visible)

    def paint(self, painter, *args) -> None:
        """Nothing: the dashes are the `stroke`'s, the label paints itself."""


class OwnedLabel(InfLineLabel):
    """A marker's label of rich text (`html`): pyqtgraph's sets its plain text again each time
    it is shown."""

    def __init__(self, line, html: str, **options):
        super().__init__(line, text="", **options)
        self.html = html
        self.valueChanged()

    def valueChanged(self) -> None:  # noqa: N802 (pyqtgraph's naming)
        if self.isVisible() and getattr(self, "html", None) is not None:
            self.setHtml(self.html)
            self.updatePosition()
