"""Every drawn range holds a constant, huge, tiny or single-point series with distinct ticks:
the shared axis range (`ftgui.core.timeline.axis_range`) and the report's SVG (issue 25, case 8)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from ftgui.core.reports.svg_plot import plot_svg, tick_label, tick_step, ticks
from ftgui.core.timeline.axis_range import padded_range, series_range
from ftgui.core.timeline.model import Timeline


def constant_run(loss: float, steps: int = 40) -> Timeline:
    timeline = Timeline()
    events = [{"event": "run_started", "time": 0.0, "attempt": 0}]
    events += [{"event": "step", "time": 1.0 + s, "attempt": 0, "step": s, "loss": loss}
               for s in range(1, steps + 1)]
    timeline.feed(events)
    return timeline


@pytest.mark.parametrize(("value", "expected"), [
    (1e30, (0.9e30, 1.1e30)),
    (-1e30, (-1.1e30, -0.9e30)),
    (1e-30, (0.9e-30, 1.1e-30)),
    (2.5, (2.25, 2.75)),
    (0.0, (-1.0, 1.0)),
])
def test_a_constant_series_gets_a_tenth_of_its_value_each_side(value, expected):
    low, high = series_range([np.full(40, value)])
    assert low == pytest.approx(expected[0], rel=1e-12)
    assert high == pytest.approx(expected[1], rel=1e-12)
    assert high > low


def test_a_single_point_and_a_varying_series():
    assert series_range([np.array([2.5])]) == pytest.approx((2.25, 2.75))
    assert series_range([np.array([1.0, 3.0])], pad_fraction=0.1) == (0.8, 3.2)
    assert series_range([np.array([np.nan, np.inf])]) is None
    assert series_range([]) is None


def test_a_range_near_the_float_maximum_stays_finite():
    big = np.finfo(np.float64).max
    low, high = padded_range(-big, big, 0.1)
    assert (low, high) == (-big, big)
    low, high = padded_range(big, big)
    assert math.isfinite(low) and high == big and low < high


def test_a_non_finite_range_is_refused_by_name():
    with pytest.raises(ValueError, match="axis range"):
        padded_range(1.0, math.inf)


def test_tick_labels_differ_however_close_the_ticks():
    step = tick_step(0.9e30, 1.1e30)
    labels = [tick_label(v, step) for v in ticks(0.9e30, 1.1e30)]
    assert labels == ["9.5e+29", "1e+30", "1.05e+30", "1.1e+30"]  # 0.9e30 rounds above 9e29
    step = tick_step(2.50001, 2.50005)
    labels = [tick_label(v, step) for v in ticks(2.50001, 2.50005)]
    assert labels == ["2.50002", "2.50003", "2.50004", "2.50005"]


def svg_numbers(svg: str, pattern: str) -> list[float]:
    return [float(v) for v in re.findall(pattern, svg)]


@pytest.mark.parametrize("loss", [1e30, 1e-30, 2.5])
def test_the_report_svg_draws_a_constant_loss_as_a_line_mid_height(loss):
    svg = plot_svg(constant_run(loss))
    assert "nan" not in svg
    points = re.search(r'class="segment"[^>]*points="([^"]+)"', svg).group(1).split()
    ys = {float(p.split(",")[1]) for p in points}
    assert len(points) == 40
    assert ys == {(16 + 320) / 2}  # the middle of the plot box (top 16, bottom 320)
    tick_texts = re.findall(r'text-anchor="end">([^<]+)</text>', svg)
    assert len(tick_texts) == len(set(tick_texts)) >= 3
    assert f"{loss:g}" in tick_texts


def test_the_report_svg_of_a_single_step():
    svg = plot_svg(constant_run(0.75, steps=1))
    assert "nan" not in svg
    assert re.search(r'class="segment"[^>]*points="[0-9.]+,168.0"', svg)


def resumed_run(killed_after: int, resumed_from: int, steps: int = 60) -> Timeline:
    timeline = Timeline()
    events = [{"event": "run_started", "time": 0.0, "attempt": 0}]
    events += [{"event": "step", "time": 1.0 + s, "attempt": 0, "step": s, "loss": 1.0 / s}
               for s in range(1, killed_after + 1)]
    events += [{"event": "step", "time": 100.0 + s, "attempt": 1, "step": s, "loss": 1.0 / s}
               for s in range(resumed_from + 1, steps + 1)]
    timeline.feed(events)
    return timeline


def polylines(svg: str) -> list[list[tuple[float, float]]]:
    return [[tuple(map(float, p.split(","))) for p in found.split()]
            for found in re.findall(r'class="segment"[^>]*points="([^"]+)"', svg)]


@pytest.mark.parametrize(("killed_after", "resumed_from"), [(45, 45), (50, 40)])
def test_the_report_svg_joins_a_resumed_line_at_its_restored_step(killed_after, resumed_from):
    """The resumed attempt's line begins at the point of the step it restored, as the window
    draws it: a resume that redid nothing leaves no one-step gap in the report's curve."""
    first, resumed = polylines(plot_svg(resumed_run(killed_after, resumed_from)))
    assert len(first) == killed_after and len(resumed) == 60 - resumed_from + 1
    assert resumed[0] == first[resumed_from - 1]  # the same (x, y) on the page


def test_the_report_svg_starts_a_fresh_line_where_it_starts():
    lines = polylines(plot_svg(constant_run(0.5, steps=10)))
    assert [len(line) for line in lines] == [10]
