"""Every y tick label the plot draws is whole: a tick at the top of the view (the presentation
view fits y to round figures, so it often is) must not lose the top half of its label to the
widget's edge."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import pytest
from PySide6.QtGui import QImage, QPainter

from ftgui.qt.plot.loss_plot import LossPlot


def drawn_labels(plot: LossPlot) -> list[tuple[str, float, float]]:
    """(text, top, bottom) in the widget's pixels of each label the y axis draws."""
    axis = plot.getPlotItem().getAxis("left")
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    painter.setFont(axis.style["tickFont"])
    try:
        _, _, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    labels = []
    for rect, _flags, text in texts:
        on_screen = plot.mapFromScene(axis.mapRectToScene(rect)).boundingRect()
        labels.append((text, on_screen.top(), on_screen.bottom()))
    return labels


@pytest.mark.parametrize("presenting", [False, True])
def test_the_top_tick_label_is_inside_the_plot(qtbot, presenting):
    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(880, 500)
    plot.show()
    for step in range(1, 101):
        plot.add_step(0, step, 0.25 * (1 - step / 100))
    plot.redraw()
    plot.set_presenting(presenting)
    item = plot.getPlotItem()
    item.disableAutoRange()
    item.setYRange(0, 0.25, padding=0)  # a tick exactly at the top edge of the view
    qtbot.wait(50)
    labels = drawn_labels(plot)
    assert "0.25" in [text for text, _, _ in labels]
    for text, top, bottom in labels:
        assert top >= 0 and bottom <= plot.height(), (text, top, bottom)
