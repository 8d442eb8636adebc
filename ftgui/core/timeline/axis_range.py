"""The range of a plot's value axis for any series: constant, huge (1e30), tiny (1e-30), a
single point or none at all, every drawer (the window's plots, the report's SVG) gets a range
with a positive, representable height, so that its ticks are distinct numbers.

A series whose span is below `FLAT_RELATIVE` of its magnitude is drawn as flat: it gets
`FLAT_PAD_FRACTION` of its magnitude above and below (1e30 → 0.9e30 … 1.1e30), or ±`ZERO_PAD`
around 0. Qt-free: the Qt plots and `ftgui.core.reports.svg_plot` use the same function.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

FLAT_RELATIVE = 1e-6  # a span under this fraction of the magnitude: tick labels would repeat
FLAT_PAD_FRACTION = 0.1  # a flat series: this fraction of its value above and below
ZERO_PAD = 1.0  # a series that is 0 everywhere: -1 … 1


def finite_extent(arrays: Iterable[np.ndarray]) -> tuple[float, float] | None:
    """(lowest, highest) finite value over all `arrays` (any shapes), None when none is."""
    low, high = np.inf, -np.inf
    for values in arrays:
        values = np.asarray(values, dtype=np.float64)
        values = values[np.isfinite(values)]
        if values.size:
            low, high = min(low, float(values.min())), max(high, float(values.max()))
    return (low, high) if low <= high else None


def is_flat(low: float, high: float) -> bool:
    """Whether (low, high) is too narrow for distinct tick labels (a constant series)."""
    magnitude = max(abs(low), abs(high))
    return (high / 2 - low / 2) <= magnitude / 2 * FLAT_RELATIVE or magnitude == 0.0


def padded_range(low: float, high: float, pad_fraction: float = 0.0) -> tuple[float, float]:
    """A drawable axis range holding [low, high] (finite, low ≤ high): `pad_fraction` of the
    span added on each side; a flat range (`is_flat`) widened to ±`FLAT_PAD_FRACTION` of its
    magnitude (±`ZERO_PAD` at 0). The result is finite with high > low, also near ±1.8e308."""
    if not (np.isfinite(low) and np.isfinite(high)) or low > high:
        raise ValueError(f"axis range ({low!r}, {high!r}) is not two finite numbers, low ≤ high")
    low, high = float(low), float(high)  # Python floats: an overflow gives inf, then clamped
    if is_flat(low, high):
        magnitude = max(abs(low), abs(high))
        pad = magnitude * FLAT_PAD_FRACTION if magnitude else ZERO_PAD
    else:
        pad = (high / 2 - low / 2) * (2 * pad_fraction)  # halves: no overflow near float max
    limit = float(np.finfo(np.float64).max)
    return max(low - pad, -limit), min(high + pad, limit)


def series_range(arrays: Iterable[np.ndarray], pad_fraction: float = 0.0
                 ) -> tuple[float, float] | None:
    """`padded_range` of the finite values of `arrays`; None when there is no finite value."""
    extent = finite_extent(arrays)
    return None if extent is None else padded_range(*extent, pad_fraction)
