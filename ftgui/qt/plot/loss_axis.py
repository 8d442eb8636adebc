"""The loss plot's axes: numbers as they are, never scaled by an SI prefix.

pyqtgraph 0.14's `AxisItem.enableAutoSIPrefix(False)` still runs `updateAutoSIPrefix()` on the
axis' current range, and its tick labels are always multiplied by the scale that left: fitted to
0–0.02 in the presentation view, the normal view's 0–2.5 read 0–2500 after F5 twice. Here the
scale is 1 whatever the range (DESIGN.md §4).
"""

from __future__ import annotations

import pyqtgraph as pg


class LossAxis(pg.AxisItem):
    """A `pg.AxisItem` whose tick values are never scaled (`autoSIPrefixScale` stays 1)."""

    def __init__(self, orientation: str, **kwargs):
        super().__init__(orientation, **kwargs)
        self.autoSIPrefix = False

    def updateAutoSIPrefix(self) -> None:  # noqa: N802 (pyqtgraph's name)
        self.autoSIPrefixScale = 1.0
        self.labelUnitPrefix = ""
        self._updateLabel()


class StepAxis(LossAxis):
    """The bottom axis: while it counts global steps (`whole`), no tick between two steps (an
    empty plot or a first step read 0.2, 0.4 … 0.8); on the wall-time axis, any tick."""

    def __init__(self, orientation: str, **kwargs):
        super().__init__(orientation, **kwargs)
        self.whole = True

    def tickSpacing(self, minVal, maxVal, size):  # noqa: N802, N803 (pyqtgraph's names)
        levels = super().tickSpacing(minVal, maxVal, size)
        if not self.whole:
            return levels
        whole = [(spacing, offset) for spacing, offset in levels if spacing >= 1]
        return whole or [(1.0, 0.0)]


def loss_axes() -> dict[str, LossAxis]:
    """The `axisItems` of a loss plot: left (loss) and bottom (`StepAxis`)."""
    return {"left": LossAxis("left"), "bottom": StepAxis("bottom")}
