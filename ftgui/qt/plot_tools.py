"""The row of view tools above the loss plot: smoothing, log scale, x axis, reset zoom.

The tools only change how `LossPlot` draws; the choices are remembered in the window's QSettings
(`plot/smoothing`, `plot/log_y`, `plot/x_axis`).
"""

from __future__ import annotations

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

from ftgui.core.smoothing import MAX_WEIGHT
from ftgui.qt.loss_plot import LossPlot

SLIDER_STEPS = round(MAX_WEIGHT * 100)  # the slider counts hundredths of the EMA weight
X_AXIS_CHOICES = (("step", "step"), ("wall time (s)", "time"))


class PlotToolbar(QWidget):
    """Smoothing slider (`smoothingSlider`, EMA weight 0–0.99), `logScaleCheck`, `xAxisCombo`
    (step / wall time (s)) and `resetZoomButton` for one `LossPlot`."""

    def __init__(self, plot: LossPlot, settings: QSettings | None = None, parent=None):
        super().__init__(parent)
        self.setObjectName("plotTools")
        self.plot = plot
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
        self.reset_button.clicked.connect(plot.reset_zoom)
        # the plot's own right-click menu has a log checkbox too: keep the two in step
        plot.getPlotItem().ctrl.logYCheck.toggled.connect(self.log_check.setChecked)

    # ------------------------------------------------------------ values
    @property
    def smoothing(self) -> float:
        return self.smoothing_slider.value() / 100

    def _smoothing_changed(self, value: int) -> None:
        self.smoothing_value.setText("off" if value == 0 else f"{value / 100:.2f}")
        self.plot.set_smoothing(value / 100)
        self._save("plot/smoothing", value / 100)

    def _log_changed(self, on: bool) -> None:
        self.plot.set_log_y(on)
        self._save("plot/log_y", on)

    def _x_axis_changed(self, _index: int) -> None:
        axis = self.x_axis_combo.currentData()
        self.plot.set_x_axis(axis)
        self._save("plot/x_axis", axis)

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
        self.plot.set_smoothing(value / 100)
        self.log_check.setChecked(log_y)
        self.plot.set_log_y(log_y)
        index = max(self.x_axis_combo.findData(axis), 0)
        self.x_axis_combo.setCurrentIndex(index)
        self.plot.set_x_axis(self.x_axis_combo.currentData())


class PlotPane(QWidget):
    """The loss plot with its toolbar above it, as one widget for the window's layout."""

    def __init__(self, plot: LossPlot, settings: QSettings | None = None, parent=None):
        super().__init__(parent)
        self.setObjectName("plotPane")
        self.plot = plot
        self.tools = PlotToolbar(plot, settings, self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.tools)
        layout.addWidget(plot, 1)
