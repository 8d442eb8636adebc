"""The row of view tools above the loss plot: smoothing, log scale, x axis, reset zoom.

The tools only change how `LossPlot` draws; the choices are remembered in the window's QSettings
(`plot/smoothing`, `plot/log_y`, `plot/x_axis`). The pane can be built before its plot exists (the
window shows a placeholder while pyqtgraph loads): `PlotPane.set_plot` puts the plot in and
applies the tools' current choices to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from ftgui.core.timeline.smoothing import MAX_WEIGHT
from ftgui.qt.plot.pending_plot import PlotPlaceholder

if TYPE_CHECKING:  # importing it imports pyqtgraph
    from ftgui.qt.plot.loss_plot import LossPlot

SLIDER_STEPS = round(MAX_WEIGHT * 100)  # the slider counts hundredths of the EMA weight
X_AXIS_CHOICES = (("step", "step"), ("wall time (s)", "time"))


class PlotToolbar(QWidget):
    """Smoothing slider (`smoothingSlider`, EMA weight 0–0.99), `logScaleCheck`, `xAxisCombo`
    (step / wall time (s)) and `resetZoomButton` for one `LossPlot` (given now, or later to
    `attach`; choices made before that are applied when it comes)."""

    def __init__(self, plot: LossPlot | None = None, settings: QSettings | None = None,
                 parent=None):
        super().__init__(parent)
        self.setObjectName("plotTools")
        self.plot: LossPlot | None = None
        self.settings = settings
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        layout.setSpacing(8)

        smoothing_label = QLabel("Smoothing")
        self.smoothing_slider = QSlider(Qt.Orientation.Horizontal)
        self.smoothing_slider.setObjectName("smoothingSlider")
        self.smoothing_slider.setRange(0, SLIDER_STEPS)
        self.smoothing_slider.setPageStep(10)
        self.smoothing_slider.setFixedWidth(160)
        self.smoothing_slider.setToolTip(
            "Exponential moving average weight, as in TensorBoard (0 = off). "
            "The raw curve stays, faint, under the smoothed one."
        )
        smoothing_label.setBuddy(self.smoothing_slider)
        self.smoothing_value = QLabel()
        self.smoothing_value.setObjectName("smoothingValue")
        self.smoothing_value.setMinimumWidth(self.fontMetrics().horizontalAdvance("0.00") + 6)

        self.log_check = QCheckBox("Log scale")
        self.log_check.setObjectName("logScaleCheck")
        self.log_check.setToolTip("Loss axis in powers of ten")

        x_label = QLabel("x axis")
        self.x_axis_combo = QComboBox()
        self.x_axis_combo.setObjectName("xAxisCombo")
        for text, axis in X_AXIS_CHOICES:
            self.x_axis_combo.addItem(text, axis)
        self.x_axis_combo.setToolTip(
            "Global step, or wall-clock seconds since each run's first event "
            "(shows how long a crash and its recovery took)"
        )
        x_label.setBuddy(self.x_axis_combo)

        self.reset_button = QPushButton("Reset zoom")
        self.reset_button.setObjectName("resetZoomButton")
        self.reset_button.setToolTip("Show all the data again (mouse wheel / drag zooms and pans)")

        for widget in (smoothing_label, self.smoothing_slider, self.smoothing_value):
            layout.addWidget(widget)
        layout.addSpacing(12)
        layout.addWidget(self.log_check)
        layout.addSpacing(12)
        layout.addWidget(x_label)
        layout.addWidget(self.x_axis_combo)
        layout.addStretch(1)
        layout.addWidget(self.reset_button)

        self._restore()
        self.smoothing_slider.valueChanged.connect(self._smoothing_changed)
        self.log_check.toggled.connect(self._log_changed)
        self.x_axis_combo.currentIndexChanged.connect(self._x_axis_changed)
        self.reset_button.clicked.connect(self._reset_zoom)
        if plot is not None:
            self.attach(plot)

    def attach(self, plot: LossPlot) -> None:
        """Drive `plot` from now on: it takes the tools' current smoothing, scale and x axis."""
        self.plot = plot
        plot.set_smoothing(self.smoothing)
        plot.set_log_y(self.log_check.isChecked())
        plot.set_x_axis(self.x_axis_combo.currentData())
        # the plot's own right-click menu has a log checkbox too: keep the two in step
        plot.getPlotItem().ctrl.logYCheck.toggled.connect(self.log_check.setChecked)

    # ------------------------------------------------------------ values
    @property
    def smoothing(self) -> float:
        return self.smoothing_slider.value() / 100

    def _smoothing_changed(self, value: int) -> None:
        self.smoothing_value.setText("off" if value == 0 else f"{value / 100:.2f}")
        if self.plot is not None:
            self.plot.set_smoothing(value / 100)
        self._save("plot/smoothing", value / 100)

    def _log_changed(self, on: bool) -> None:
        if self.plot is not None:
            self.plot.set_log_y(on)
        self._save("plot/log_y", on)

    def _x_axis_changed(self, _index: int) -> None:
        axis = self.x_axis_combo.currentData()
        if self.plot is not None:
            self.plot.set_x_axis(axis)
        self._save("plot/x_axis", axis)

    def _reset_zoom(self) -> None:
        if self.plot is not None:
            self.plot.reset_zoom()

    def _save(self, key: str, value) -> None:
        if self.settings is not None:
            self.settings.setValue(key, value)

    def _restore(self) -> None:
        settings = self.settings
        smoothing, log_y, axis = 0.0, False, "step"
        if settings is not None:
            try:
                smoothing = float(settings.value("plot/smoothing", 0.0))
            except (TypeError, ValueError):
                smoothing = 0.0
            log_y = str(settings.value("plot/log_y", "false")).lower() == "true"
            axis = str(settings.value("plot/x_axis", "step"))
        value = min(max(round(smoothing * 100), 0), SLIDER_STEPS)
        self.smoothing_slider.setValue(value)
        self.smoothing_value.setText("off" if value == 0 else f"{value / 100:.2f}")
        self.log_check.setChecked(log_y)
        self.x_axis_combo.setCurrentIndex(max(self.x_axis_combo.findData(axis), 0))


class PlotPane(QWidget):
    """The loss plot with its toolbar above it, as one widget for the window's layout.

    Built without a plot (`plot=None`) it shows a `PlotPlaceholder` (`placeholder`) until
    `set_plot` puts the plot in its place."""

    def __init__(self, plot: LossPlot | None = None, settings: QSettings | None = None,
                 parent=None):
        super().__init__(parent)
        self.setObjectName("plotPane")
        self.plot: LossPlot | None = None
        self.placeholder: PlotPlaceholder | None = None
        self.tools = PlotToolbar(None, settings, self)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(2)
        self._layout.addWidget(self.tools)
        if plot is None:
            self.placeholder = PlotPlaceholder(self)
            self._layout.addWidget(self.placeholder, 1)
        else:
            self.set_plot(plot)

    def set_plot(self, plot: LossPlot) -> None:
        """Show `plot` under the tools (in place of the placeholder) and let the tools drive it."""
        if self.plot is not None:
            raise RuntimeError("this pane has its plot already")
        self.plot = plot
        self.tools.attach(plot)
        if self.placeholder is None:
            self._layout.addWidget(plot, 1)
        else:
            self._layout.replaceWidget(self.placeholder, plot)
            self._layout.setStretchFactor(plot, 1)
            self.placeholder.hide()
            self.placeholder.deleteLater()
            self.placeholder = None
