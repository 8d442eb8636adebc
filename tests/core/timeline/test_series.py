"""GrowingSeries: the y extent kept up to date as points are appended."""

from __future__ import annotations

import numpy as np

from ftgui.core.timeline.axis_range import finite_extent
from ftgui.core.timeline.series import GrowingSeries


def test_the_kept_extent_equals_a_full_scan_after_every_append():
    rng = np.random.default_rng(2)
    values = rng.standard_normal(3000) * 10.0 ** rng.integers(-30, 30, 3000)
    values[rng.integers(0, 3000, 200)] = np.nan
    values[rng.integers(0, 3000, 20)] = np.inf
    values[rng.integers(0, 3000, 20)] = -np.inf
    series = GrowingSeries(4)
    assert series.y_extent() is None
    start = 0
    for size in rng.integers(0, 40, 150):
        chunk = values[start:start + size]
        if size % 3:
            series.extend(np.arange(start, start + size), chunk)
        else:
            for offset, value in enumerate(chunk):
                series.append(start + offset, None if np.isnan(value) else value)
        start += size
        assert series.y_extent() == finite_extent([series.y()])


def test_no_finite_value_has_no_extent_until_one_comes():
    series = GrowingSeries()
    series.extend([1.0, 2.0], [np.nan, np.inf])
    assert series.y_extent() is None
    series.append(3, -2.5)
    assert series.y_extent() == (-2.5, -2.5)
