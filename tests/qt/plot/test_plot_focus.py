"""Where the presentation view looks and where marker labels go: plain numbers, no display."""

from __future__ import annotations

import numpy as np

from ftgui.core.timeline.label_rows import label_rows
from ftgui.qt.plot.focus import clip_band, focus_span, focus_start, focus_y


def test_the_interesting_part_starts_a_redone_range_before_the_last_one():
    assert focus_start([(100.0, 130.0), (200.0, 230.0)], last_step=400) == 170.0
    assert focus_start([], last_step=400) == 200.0  # the newest half, before any restart
    assert focus_start([(10.0, 40.0)], last_step=60) == 0.0


def test_the_y_range_fits_the_losses_from_there_on_with_a_margin():
    steps = np.arange(1.0, 11.0)
    losses = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.5, np.nan, 0.75, 0.5, 1.0])
    resumed = (np.array([6.0, 7.0, 8.0]), np.array([0.5, 0.25, 0.75]))
    low, high = focus_y([(steps, losses), resumed], x_from=6.0)
    assert (low, high) == (0.25 - 0.75 * 0.12, 1.0 + 0.75 * 0.12)  # 0.25 … 1.0, padded
    assert focus_y([(steps, losses)], x_from=11.0) is None
    assert focus_span([(steps, losses)], [(4.0, 5.0)]) == focus_y([(steps, losses)], 3.0)


def test_curves_are_clipped_to_two_view_heights_beyond_the_view_and_the_band_is_kept():
    band = clip_band((1.0, 2.0), None)
    assert band == (-1.0, 4.0)
    assert clip_band((1.0, 2.25), band) == band  # still fits with room to spare
    assert clip_band((1.0, 3.5), band) == (-4.0, 8.5)  # no longer fits: a new band
    assert clip_band(None, band) is None


def test_labels_that_would_overlap_go_to_the_next_row_or_are_left_out():
    # pixel extents of four labels, placed left to right: (100, 200) on top, (120, 180) and
    # (150, 260) overlap it and each other, (210, 300) fits on top after the first
    extents = [(100, 200), (150, 260), (210, 300), (120, 180)]
    assert label_rows(extents, rows=3) == [0, 2, 0, 1]
    assert label_rows(extents, rows=2) == [0, None, 0, 1]
    assert label_rows([], rows=2) == []
    # a legend over the right part of the top row: a label reaching past its edge goes lower
    assert label_rows([(100, 200), (900, 1000)], rows=2, limits=[800]) == [0, 1]


def test_a_label_keeps_its_row_while_it_fits_there():
    # a crash's label and a resume's overlapping it: the resume went below; as the view
    # widens they no longer overlap, and neither moves up nor trades places
    assert label_rows([(100, 200), (150, 260)], rows=2) == [0, 1]
    assert label_rows([(100, 180), (190, 300)], rows=2, before=[0, 1]) == [0, 1]
    assert label_rows([(100, 180), (190, 300)], rows=2) == [0, 0]  # without `before`
    # one that no longer fits in its row takes the first that it fits in
    assert label_rows([(100, 200), (150, 260)], rows=2, before=[1, 1]) == [1, 0]
    assert label_rows([(100, 200)], rows=2, before=[5]) == [0]  # a row no longer there


def test_the_newest_label_is_placed_first_when_the_rows_are_full():
    # an old fault's label and the new one's overlap in the one free row: the new one, which
    # the room is being told about, is labelled; the old one's text stays in its tooltip
    assert label_rows([(100, 200), (150, 260)], rows=1) == [0, None]
    assert label_rows([(100, 200), (150, 260)], rows=1, first=[1, 0]) == [None, 0]
    # it takes its kept row before the older ones are placed around it
    assert label_rows([(100, 200), (150, 260)], rows=2, before=[0, 0], first=[1, 0]) == [1, 0]
