"""Growing numpy buffers for curves that are appended to while they are drawn."""

from __future__ import annotations

import numpy as np

from ftgui.core.timeline.axis_range import finite_extent


class GrowingSeries:
    """x/y/t float64 buffers that double when full; `x()`/`y()`/`t()` are views of the filled
    part. For a loss curve x is the global step, y the loss (NaN when not finite or unknown)
    and t the event's Unix time (NaN when unknown)."""

    def __init__(self, capacity: int = 1024):
        self._x = np.empty(capacity, dtype=np.float64)
        self._y = np.empty(capacity, dtype=np.float64)
        self._t = np.empty(capacity, dtype=np.float64)
        self.size = 0
        self._extent: tuple[float, float] | None = None  # finite y of the first _extent_of
        self._extent_of = 0

    def append(self, x: float, y: float | None, t: float | None = None) -> None:
        if self.size == len(self._x):
            self._grow(2 * self.size)
        self._x[self.size] = x
        self._y[self.size] = np.nan if y is None else y
        self._t[self.size] = np.nan if t is None else t
        self.size += 1

    def extend(self, xs, ys, ts=None) -> None:
        count = len(xs)
        if self.size + count > len(self._x):
            self._grow(max(2 * len(self._x), self.size + count))
        end = self.size + count
        self._x[self.size:end] = xs
        self._y[self.size:end] = ys
        self._t[self.size:end] = np.nan if ts is None else ts
        self.size = end

    def _grow(self, capacity: int) -> None:
        self._x = np.resize(self._x, capacity)
        self._y = np.resize(self._y, capacity)
        self._t = np.resize(self._t, capacity)

    def x(self) -> np.ndarray:
        return self._x[: self.size]

    def y(self) -> np.ndarray:
        return self._y[: self.size]

    def t(self) -> np.ndarray:
        return self._t[: self.size]

    def index_of(self, x: float) -> int | None:
        """The index of the point at `x` (x ascending, as steps are logged), None if none."""
        xs = self.x()
        at = int(np.searchsorted(xs, x))
        return at if at < len(xs) and xs[at] == x else None

    def y_extent(self) -> tuple[float, float] | None:
        """(lowest, highest) finite y, None when no y is finite: `axis_range.finite_extent` of
        `y()`, looking only at the points added since the last call (points are only ever
        appended, so the earlier ones' extent still holds; a full scan of 1M points took 5-10
        ms of every redraw, bench_streaming)."""
        if self._extent_of < self.size:
            new = finite_extent([self._y[self._extent_of:self.size]])
            if new is not None and self._extent is not None:
                new = (min(new[0], self._extent[0]), max(new[1], self._extent[1]))
            self._extent = new if new is not None else self._extent
            self._extent_of = self.size
        return self._extent
