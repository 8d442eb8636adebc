"""Smoothing of the loss curve: TensorBoard's debiased EMA, NaN and inf as gaps, fed in pieces."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ftgui.core.timeline import smoothing


def test_smoothing_is_tensorboards_debiased_ema_and_skips_gaps():
    smoothed = smoothing.ema([1.0, 2.0, math.nan, 4.0], weight=0.5)
    # last: 0.5, 1.25, (skipped), 2.625; debias by 1 - 0.5^n with n = 1, 2, 3 finite values
    assert smoothed[0] == 1.0
    assert smoothed[1] == 1.25 / 0.75
    assert math.isnan(smoothed[2])
    assert smoothed[3] == 3.0


def test_smoothing_weight_zero_returns_the_values():
    values = [0.3, math.inf, 0.1, 7.25]
    smoothed = smoothing.ema(values, 0.0)
    assert smoothed[[0, 2, 3]].tolist() == [0.3, 0.1, 7.25]
    assert math.isnan(smoothed[1])  # infinite is a gap too


def test_smoothing_matches_the_formula_and_can_be_fed_in_pieces():
    rng = np.random.default_rng(0)
    values = rng.random(200)
    values[[5, 6, 100]] = np.nan
    weight = 0.9
    expected, last, n = [], 0.0, 0
    for x in values.tolist():
        if math.isnan(x):
            expected.append(math.nan)
            continue
        last = last * weight + (1 - weight) * x
        n += 1
        expected.append(last / (1 - weight ** n))
    whole = smoothing.ema(values, weight)
    np.testing.assert_array_equal(whole, expected)  # bit for bit, NaN where NaN
    stream = smoothing.Ema(weight)
    pieces = np.concatenate([stream.extend(values[:7]), stream.extend(values[7:8]),
                             stream.extend(values[8:])])
    np.testing.assert_array_equal(pieces, whole)


def test_a_weight_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match="not in"):
        smoothing.Ema(1.0)
