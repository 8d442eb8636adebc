"""Curve smoothing as TensorBoard does it: a debiased exponential moving average that skips gaps.

For weight w (0 ≤ w < 1) and values x_0, x_1, …:

    last_i     = last_{i-1} · w + (1 - w) · x_i        (last_{-1} = 0)
    smoothed_i = last_i / (1 - w^n_i)                    (n_i: finite values up to x_i)

Dividing by 1 - w^n removes the pull towards the starting 0, so the first smoothed value is the
first value itself. A NaN or infinite value is skipped: it stays NaN in the output (a gap on the
plot) and neither moves the average nor counts in n. w = 0 gives the values back unchanged.
"""

from __future__ import annotations

import math

import numpy as np

MAX_WEIGHT = 0.99


class Ema:
    """A debiased EMA fed in pieces: `extend(values)` returns the smoothed values of that piece.

    Feeding a series in several pieces gives exactly (bit for bit) what one call gives, so a live
    curve is smoothed once per new point, not from the start at every redraw.
    """

    def __init__(self, weight: float):
        if not 0.0 <= weight < 1.0:
            raise ValueError(f"smoothing weight {weight!r} is not in [0, 1)")
        self.weight = float(weight)
        self.last = 0.0
        self.count = 0

    def extend(self, values) -> np.ndarray:
        values = np.asarray(values, dtype=np.float64)
        smoothed = np.full(values.shape, math.nan)
        finite = np.isfinite(values)
        weight, keep = self.weight, 1.0 - self.weight
        last, count = self.last, self.count
        out = []
        for value in values[finite].tolist():
            last = last * weight + keep * value
            count += 1
            out.append(last / (1.0 - weight**count))
        smoothed[finite] = out
        self.last, self.count = last, count
        return smoothed


def ema(values, weight: float) -> np.ndarray:
    """TensorBoard's smoothing of `values` with `weight` (see the module docstring)."""
    return Ema(weight).extend(values)
