"""pyqtgraph's y clipping of far-out points (`dynamicRangeLimit`) is on exactly while the y axis
does not follow the data: zoomed in by hand, or set to a range; following the data, no point
lies far out and the check that scans every point at every redraw is left out."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import numpy as np

from ftgui.qt.plot.loss_plot import RANGE_LIMIT, LossPlot


def limits(plot: LossPlot) -> set:
    return {item.opts["dynamicRangeLimit"] for trace in plot._all_traces()
            for item in (trace.raw, trace.smooth)}


def test_the_limit_is_off_while_y_follows_the_data_and_on_after_a_zoom(qtbot):
    plot = LossPlot()
    qtbot.addWidget(plot)
    for step in range(1, 50):
        plot.add_step(0, step, 1.0 / step)
    plot.add_step(1, 50, 0.5)
    plot.add_overlay("other", "other run", np.arange(1.0, 40.0), np.full(39, 0.3))
    plot.redraw()
    assert limits(plot) == {None}
    plot.getPlotItem().setYRange(0.0, 0.1)  # what a mouse zoom does: y stops following
    assert limits(plot) == {RANGE_LIMIT}
    plot.add_step(2, 60, 0.25)  # a line of training that begins while zoomed
    plot.redraw()
    assert limits(plot) == {RANGE_LIMIT}
    plot.reset_zoom()
    assert limits(plot) == {None}


def test_a_far_out_point_is_still_clipped_when_zoomed_in(qtbot):
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(600, 300)
    plot.show()
    for step in range(1, 100):
        plot.add_step(0, step, 1e30 if step == 50 else 0.5)
    plot.redraw()
    plot.getPlotItem().setRange(xRange=(40, 60), yRange=(0.4, 0.6), padding=0)
    plot.viewport().repaint()
    shown = plot.traces[0].raw._getDisplayDataset()
    assert np.nanmax(shown.y) < 1e30  # clipped to the limit, as pyqtgraph does by default
    assert np.nanmax(plot.traces[0].series.y()) == 1e30  # the data itself is untouched
