"""The configuration panel: one form row per run setting, built from the settings schema.

The Model and Dataset rows take a built-in or a file (`…`: a `.py` file, then one of its
functions; a `.keras` model; an `.npz` dataset); the row below names the function chosen, and
after a start the user-code check's summary (layers, parameters) or its warning is shown.
"""

from __future__ import annotations

import ast
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from ftgui.core import formatting
from ftgui.core.record.runs import new_run_dir, runs_root
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import RunConfig
from ftgui.core.settings.schema import GROUPS, SETTINGS, Setting

COMBO_MIN_CHARACTERS = 12  # a choice list is at least this wide; longer choices are elided
FIELD_MIN_CHARACTERS = 9  # the narrowest a field gets

# A run started from the window keeps a fully warm standby per task (issue 12): recovery in
# well under a second, for one more process per task (~0.75 GB resident here). The CLI's
# default stays off (`RunConfig`).
WINDOW_DEFAULTS = RunConfig(warm_standby=True)


class ConfigPanel(QWidget):
    """Edits a `RunConfig` and the run directory. `config()` returns what the fields say.

    `widgets` maps each setting's name to its widget (objectName from the schema); a row's label
    and widget carry the setting's help text, unit and default as tooltip.
    """

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("configPanel")
        self.widgets: dict[str, QWidget] = {}
        self.source_labels: dict[str, QLabel] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._run_group())
        for group, title in GROUPS.items():
            layout.addWidget(self._settings_group(group, title))
        self.error_label = QLabel("")
        self.error_label.setObjectName("configError")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #b00020;")
        layout.addWidget(self.error_label)
        self.check_label = QLabel("")  # the user-code check: model summary or warning
        self.check_label.setObjectName("userCodeInfo")
        self.check_label.setWordWrap(True)
        layout.addWidget(self.check_label)
        layout.addStretch(1)
        self.strategy_combo = self.widgets["strategy"]
        self.fault_target_combo = self.widgets["fault_target"]
        self.strategy_combo.currentIndexChanged.connect(self._update_enabled)
        self.widgets["workers"].valueChanged.connect(self._update_enabled)
        self.widgets["ps"].valueChanged.connect(self._update_enabled)
        self.set_config(WINDOW_DEFAULTS)

    # ------------------------------------------------------------ building
    def _run_group(self) -> QGroupBox:
        group = QGroupBox("Run directory")
        row = QHBoxLayout(group)
        self.run_dir_edit = QLineEdit(str(new_run_dir()))
        self.run_dir_edit.setObjectName("runDirEdit")
        browse = _small_button("…", "Choose a run directory")
        browse.clicked.connect(self._browse_run_dir)
        new = _small_button("New", "A fresh run directory under the runs folder")
        new.setObjectName("newRunButton")
        new.clicked.connect(lambda: self.run_dir_edit.setText(str(new_run_dir())))
        row.addWidget(self.run_dir_edit, 1)
        row.addWidget(browse)
        row.addWidget(new)
        return group

    def _settings_group(self, group: str, title: str) -> QGroupBox:
        box = QGroupBox(title)
        form = QFormLayout(box)
        for setting in SETTINGS.values():
            if setting.group != group:
                continue
            widget = _make_widget(setting)
            self.widgets[setting.name] = widget
            label = QLabel(setting.label)
            label.setToolTip(widget.toolTip())
            label.setBuddy(widget)
            if setting.widget_kind == "file":
                form.addRow(label, self._file_row(setting.name, widget))
                source = QLabel("")
                source.setObjectName(f"{setting.name}SourceLabel")
                self.source_labels[setting.name] = source
                widget.currentTextChanged.connect(
                    lambda text, name=setting.name: self._show_source(name, text))
                form.addRow("", source)
            else:
                form.addRow(label, widget)
        return box

    def _file_row(self, name: str, widget: QWidget) -> QHBoxLayout:
        what = ("a PATH.py file and its function, or a saved .keras model" if name == "model"
                else "a PATH.py file and its function, or a .npz file with arrays x and y")
        browse = _small_button("…", f"Choose {what}")
        browse.setObjectName(f"{name}BrowseButton")
        browse.clicked.connect(lambda: self._browse_source(name))
        row = QHBoxLayout()
        row.addWidget(widget, 1)
        row.addWidget(browse)
        return row

    # ------------------------------------------------------------ values
    def set_config(self, config: RunConfig) -> None:
        """Show `config` in the fields (values beyond a field's range are clamped to it)."""
        for name, setting in SETTINGS.items():
            _set_value(self.widgets[name], setting, getattr(config, name))
        for name in self.source_labels:
            self._show_source(name, getattr(config, name))
        self._update_enabled()

    def config(self) -> RunConfig:
        """The configuration the fields show (coerced, not yet validated); `workers` and `ps`
        are the counts of the cluster addresses when some are given. Raises `ConfigError` only
        for an unparsable cluster."""
        values = {name: _value(self.widgets[name], setting) for name, setting in SETTINGS.items()}
        return configmod.from_dict(values).with_cluster_counts()

    def run_dir(self) -> Path:
        return Path(self.run_dir_edit.text().strip()).expanduser()

    def show_error(self, message: str) -> None:
        self.error_label.setText(message)

    def set_editable(self, editable: bool) -> None:
        """Lock the fields while a run is live (its configuration is fixed)."""
        for child in self.findChildren(QWidget):
            if child is not self.error_label and isinstance(
                child, (QComboBox, QSpinBox, QDoubleSpinBox, QCheckBox, QLineEdit, QPushButton)
            ):
                child.setEnabled(editable)
        if editable:
            self._update_enabled()

    def _update_enabled(self) -> None:
        """Enable the settings that matter for the chosen strategy; offer its fault targets."""
        strategy = self.strategy_combo.currentData()
        for name, setting in SETTINGS.items():
            if setting.strategies:
                self.widgets[name].setEnabled(strategy in setting.strategies)
        current = self.fault_target_combo.currentText()
        self._fill_targets(strategy, self.widgets["workers"].value(), self.widgets["ps"].value())
        self.fault_target_combo.setCurrentText(current or "chief")

    def _fill_targets(self, strategy: str, workers: int, ps: int) -> None:
        targets = ["chief"]
        if strategy in ("multi-worker", "parameter-server"):
            targets += [f"worker:{i}" for i in range(workers)]
        if strategy == "parameter-server":
            targets += [f"ps:{i}" for i in range(ps)]
        self.fault_target_combo.blockSignals(True)
        self.fault_target_combo.clear()
        self.fault_target_combo.addItems(targets)
        self.fault_target_combo.blockSignals(False)

    def _browse_run_dir(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Run directory", str(runs_root()))
        if path:
            self.run_dir_edit.setText(path)

    def _browse_source(self, name: str) -> None:
        files = ("Python or Keras (*.py *.keras)" if name == "model"
                 else "Python or NumPy (*.py *.npz)")
        path, _ = QFileDialog.getOpenFileName(self, name.capitalize(), "", files)
        if not path:
            return
        function = ""
        if path.endswith(".py"):
            names = functions_in(Path(path))
            preferred = "build" if name == "model" else "load"
            if not names:
                self.show_error(f"{name}: {path} defines no function")
                return
            start = names.index(preferred) if preferred in names else 0
            function, ok = QInputDialog.getItem(self, name.capitalize(), "Function:", names,
                                                start, False)
            if not ok:
                return
        self.choose_source(name, path, function)

    def choose_source(self, name: str, path: str | Path, function: str = "") -> None:
        """Set setting `name` (model or dataset) to file `path`, with `function` for a .py."""
        text = f"{path}:{function}" if function else str(path)
        self.widgets[name].setCurrentText(text)

    def _show_source(self, name: str, text: str) -> None:
        path, colon, function = text.rpartition(":") if ".py:" in text else (text, "", "")
        if colon:
            self.source_labels[name].setText(f"function {function}() in {Path(path).name}")
        elif text.endswith((".keras", ".npz")):
            self.source_labels[name].setText(f"file {Path(text).name}")
        else:
            self.source_labels[name].setText("built in" if text else "")

    def show_check(self, result) -> None:
        """Show a user-code check's result (`ftgui.core.settings.user_code.CheckResult`, or None for
        built-ins): the model summary (name, layers, parameters), its advice and any determinism
        warning."""
        if result is None:
            self.check_label.setText("")
            self.check_label.setToolTip("")
            return
        from ftgui.core.settings.user_code import warning_line

        text = "\n".join([result.summary_line(), *(f"warning: {line}" for line in result.advice)])
        if not result.deterministic:
            text += "\n" + warning_line(result)
        self.check_label.setText(text)
        rows = [f"{n}  {kind}  {shape}  {formatting.count(params)}"
                for n, kind, shape, params in result.summary.get("layers", [])]
        self.check_label.setToolTip("\n".join(["layer  class  output  parameters", *rows]))


def functions_in(path: Path) -> list[str]:
    """Names of the top-level functions of Python file `path` (read, never imported); []
    when it cannot be read or parsed."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return []
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]


def _make_widget(setting: Setting) -> QWidget:
    """The widget of `setting.widget_kind`, with its range, choices and tooltip."""
    kind = setting.widget_kind
    if kind == "check":
        widget = QCheckBox("on")
    elif kind == "combo":
        widget = QComboBox()
        # a long choice ("custom loop (restores the exact …)") must not widen the panel
        widget.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        widget.setMinimumContentsLength(COMBO_MIN_CHARACTERS)
        labels = setting.choice_labels or setting.choices
        for value, text in zip(setting.choices, labels, strict=True):
            widget.addItem(text, value)
    elif kind in ("file", "target"):  # a choice, or anything typed (a path, worker:3)
        widget = QComboBox()
        widget.setEditable(True)
        widget.addItems(setting.choices)
    elif kind == "spin":
        widget = _spin(setting)
    else:
        widget = QLineEdit()
        widget.setPlaceholderText(setting.placeholder)
    widget.setObjectName(setting.object_name)
    widget.setToolTip(setting.describe())
    # may be narrower than its content (a spin box's hint fits its largest value) so that the
    # panel fits its column at 1280 px
    widget.setMinimumWidth(widget.fontMetrics().averageCharWidth() * FIELD_MIN_CHARACTERS)
    return widget


def _spin(setting: Setting) -> QAbstractSpinBox:
    if setting.kind is int:
        spin = QSpinBox()
        spin.setRange(int(setting.low), int(setting.high))
    else:
        spin = QDoubleSpinBox()
        spin.setDecimals(setting.decimals)
        low = 10.0 ** -setting.decimals if setting.open_low else setting.low
        spin.setRange(low, setting.high)
        spin.setSingleStep(setting.spin_step)
    if setting.unit == "seconds":
        spin.setSuffix(" s")
    if setting.off:
        spin.setSpecialValueText(setting.off)  # shown at the minimum, 0
    return spin


def _set_value(widget: QWidget, setting: Setting, value) -> None:
    kind = setting.widget_kind
    if kind == "check":
        widget.setChecked(bool(value))
    elif kind == "combo":
        widget.setCurrentIndex(max(widget.findData(value), 0))
    elif kind in ("file", "target"):
        widget.setCurrentText(str(value))
    elif kind == "spin":
        widget.setValue(value)
    else:
        widget.setText(str(value))


def _value(widget: QWidget, setting: Setting):
    kind = setting.widget_kind
    if kind == "check":
        return widget.isChecked()
    if kind == "combo":
        return widget.currentData()
    if kind == "spin":
        return widget.value()
    text = (widget.currentText() if kind in ("file", "target") else widget.text()).strip()
    return (text or setting.default) if kind == "target" else text


def _small_button(text: str, tip: str) -> QPushButton:
    button = QPushButton(text)
    button.setToolTip(tip)
    button.setFixedWidth(44)
    return button
