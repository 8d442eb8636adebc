"""The loss plot for a slide: PNG at a chosen size and DPI, or SVG, with pyqtgraph's exporters.

The plot is laid out for the export at `size / (dpi / 96)` logical pixels and rendered at `size`,
so DPI is how large text and lines come out (192 dpi: twice the screen's size) and the PNG
carries it as its resolution. The legend is drawn beside the data, not over it, in the export
only. The window's plot is left as it was.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyqtgraph as pg
import pyqtgraph.exporters as exporters
from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QSizePolicy,
    QSpinBox,
)

from ftgui.qt import theme

SCREEN_DPI = 96  # the logical DPI Qt lays widgets out at
PRESETS = {"1920 × 1080 (Full HD slide)": (1920, 1080), "1280 × 720 (HD slide)": (1280, 720),
           "3840 × 2160 (4K)": (3840, 2160), "1200 × 900 (4:3)": (1200, 900)}
MIN_PIXELS, MAX_PIXELS = 200, 8000
MIN_DPI, MAX_DPI = 48, 600


@dataclass(frozen=True)
class ImageSize:
    """A PNG's `width` and `height` in pixels and its `dpi` (dots per inch)."""

    width: int = 1920
    height: int = 1080
    dpi: int = 192

    @property
    def scale(self) -> float:
        """How much larger than on screen text and lines come out."""
        return self.dpi / SCREEN_DPI


def export_png(plot, path: Path, size: ImageSize | None = None) -> bool:
    """Write `plot` (a `LossPlot`) to `path` as a `size.width` × `size.height` PNG at
    `size.dpi` (default `ImageSize()`), legend beside the data. False when the file could not
    be written."""
    size = size or ImageSize()
    item = plot.getPlotItem()
    logical = (size.width / size.scale, size.height / size.scale)
    with _laid_out(plot, logical):
        exporter = exporters.ImageExporter(item)
        exporter.parameters()["width"] = size.width  # the height follows the aspect ratio
        image = exporter.export(toBytes=True)
    if image.height() != size.height:  # a rounding of the aspect ratio: one pixel at most
        image = image.copy(0, 0, size.width, size.height)
    dots_per_metre = round(size.dpi / 0.0254)
    image.setDotsPerMeterX(dots_per_metre)
    image.setDotsPerMeterY(dots_per_metre)
    return image.save(str(path), "PNG")


def export_svg(plot, path: Path, width: int = 960, height: int = 540) -> bool:
    """Write `plot` to `path` as SVG laid out at `width` × `height` (scalable: the size only
    sets the proportions and the text size relative to the plot), legend beside the data.

    pyqtgraph's SVGExporter first; pyqtgraph 0.14.0's cannot read the closepath (`Z`) that Qt
    ≥ 6.9 writes into SVG paths (pyqtgraph issue #3485, fixed after that release), and then the
    plot is drawn with Qt's own `QSvgGenerator`, as that exporter does for each item."""
    with _laid_out(plot, (width, height)):
        try:
            exporters.SVGExporter(plot.getPlotItem()).export(str(path))
        except ValueError:
            _render_svg(plot.getPlotItem(), path, width, height)
    return Path(path).is_file()


def _render_svg(item, path: Path, width: int, height: int) -> None:
    generator = QSvgGenerator()
    generator.setFileName(str(path))
    generator.setSize(QSize(width, height))
    generator.setViewBox(QRectF(0, 0, width, height))
    generator.setTitle("ftgui loss plot")
    painter = QPainter(generator)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        item.scene().render(painter, QRectF(0, 0, width, height),
                            item.mapRectToScene(item.boundingRect()))
    finally:
        painter.end()


@contextmanager
def _laid_out(plot, logical: tuple[float, float]):
    """`plot`'s PlotItem laid out at `logical` size with its legend beside the data, for the
    duration of an export; everything as it was afterwards."""
    item = plot.getPlotItem()
    before = item.geometry()
    legend = plot.legend
    beside = _legend_beside(legend)
    shown = legend.isVisible()
    if beside is not None:
        legend.hide()
        item.layout.addItem(beside, 2, 3)
        item.layout.setAlignment(beside, Qt.AlignmentFlag.AlignTop)
    item.setGeometry(QRectF(0, 0, *logical))
    item.layout.activate()
    try:
        yield
    finally:
        if beside is not None:
            item.layout.removeItem(beside)
            plot.scene().removeItem(beside)
            legend.setVisible(shown)
        item.setGeometry(before)
        item.layout.activate()


def _legend_beside(legend) -> pg.LegendItem | None:
    """A copy of the plot's legend to put in the plot's layout, right of the data."""
    if legend is None or not legend.items:
        return None
    copy = pg.LegendItem(labelTextColor=theme.TEXT, labelTextSize=f"{1.25 * theme.font_pt():.0f}pt")
    for sample, label in legend.items:
        copy.addItem(sample.item, label.text)
    copy.layout.activate()
    copy.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
    copy.setPreferredSize(copy.layout.preferredSize())
    return copy


class ExportSizeDialog(QDialog):
    """Asks for a PNG's size (a preset or width × height in pixels) and DPI."""

    def __init__(self, parent=None, size: ImageSize | None = None):
        super().__init__(parent)
        size = size or ImageSize()
        self.setWindowTitle("Export plot as PNG")
        form = QFormLayout(self)
        self.preset = QComboBox()
        self.preset.setObjectName("exportPresetCombo")
        self.preset.addItems([*PRESETS, "custom"])
        self.width_spin = _spin("exportWidthSpin", MIN_PIXELS, MAX_PIXELS, size.width, " px")
        self.height_spin = _spin("exportHeightSpin", MIN_PIXELS, MAX_PIXELS, size.height, " px")
        self.dpi_spin = _spin("exportDpiSpin", MIN_DPI, MAX_DPI, size.dpi, " dpi")
        self.dpi_spin.setToolTip("Text and lines come out dpi/96 times their size on screen")
        self.preset.currentTextChanged.connect(self._preset)
        for label, widget in (("Size", self.preset), ("Width", self.width_spin),
                              ("Height", self.height_spin), ("Resolution", self.dpi_spin)):
            form.addRow(label, widget)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def _preset(self, text: str) -> None:
        if text in PRESETS:
            width, height = PRESETS[text]
            self.width_spin.setValue(width)
            self.height_spin.setValue(height)

    def size_chosen(self) -> ImageSize:
        return ImageSize(self.width_spin.value(), self.height_spin.value(), self.dpi_spin.value())


def _spin(name: str, low: int, high: int, value: int, suffix: str) -> QSpinBox:
    spin = QSpinBox()
    spin.setObjectName(name)
    spin.setRange(low, high)
    spin.setValue(value)
    spin.setSuffix(suffix)
    return spin
