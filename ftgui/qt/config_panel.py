"""The configuration panel: strategy, devices, model, data, optimisation, checkpoints, recovery."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from ftgui.core import config as configmod
from ftgui.core.config import RunConfig
from ftgui.core.runs import new_run_dir, runs_root  # moved to core; importable from here too

STRATEGY_LABELS = {
    "default": "Default (no distribution)",
    "one-device": "OneDeviceStrategy",
    "mirrored": "MirroredStrategy",
    "multi-worker": "MultiWorkerMirroredStrategy",
    "parameter-server": "ParameterServerStrategy",
}


class ConfigPanel(QWidget):
    """Edits a `RunConfig` and the run directory. `config()` returns what the fields say."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("configPanel")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._run_group())
        layout.addWidget(self._strategy_group())
        layout.addWidget(self._training_group())
        layout.addWidget(self._recovery_group())
        self.error_label = QLabel("")
        self.error_label.setObjectName("configError")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #b00020;")
        layout.addWidget(self.error_label)
        layout.addStretch(1)
        self.strategy_combo.currentIndexChanged.connect(self._update_enabled)
        self.workers_spin.valueChanged.connect(self._update_enabled)
        self.ps_spin.valueChanged.connect(self._update_enabled)
        self.set_config(RunConfig())

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

    def _strategy_group(self) -> QGroupBox:
        group = QGroupBox("Strategy and devices")
        form = QFormLayout(group)
        self.strategy_combo = QComboBox()
        self.strategy_combo.setObjectName("strategyCombo")
        for name, label in STRATEGY_LABELS.items():
            self.strategy_combo.addItem(label, name)
        form.addRow("Strategy", self.strategy_combo)
        self.replicas_spin = _spin("replicasSpin", 1, configmod.MAX_LOGICAL_CPUS)
        self.replicas_spin.setToolTip("MirroredStrategy replicas on logical CPU devices")
        form.addRow("CPU replicas", self.replicas_spin)
        self.gpus_spin = _spin("gpusSpin", 0, 16)
        self.gpus_spin.setToolTip("GPUs to use (0: CPU). `ftgui devices` lists what is present.")
        form.addRow("GPUs", self.gpus_spin)
        self.workers_spin = _spin("workersSpin", 1, configmod.MAX_WORKERS)
        self.workers_spin.setToolTip("Worker processes (multi-worker: worker 0 is the chief)")
        form.addRow("Workers", self.workers_spin)
        self.ps_spin = _spin("psSpin", 1, configmod.MAX_PS)
        self.ps_spin.setToolTip("Parameter-server processes")
        form.addRow("Parameter servers", self.ps_spin)
        self.cluster_edit = QLineEdit()
        self.cluster_edit.setObjectName("clusterEdit")
        self.cluster_edit.setPlaceholderText("all on this machine")
        self.cluster_edit.setToolTip(
            "Task addresses, e.g. worker=localhost:0,gpu-box:2222 (jobs chief, worker, ps; "
            "port 0: any free port here). Tasks on other machines get a command in the log."
        )
        form.addRow("Cluster", self.cluster_edit)
        return group

    def _training_group(self) -> QGroupBox:
        group = QGroupBox("Training")
        form = QFormLayout(group)
        self.model_combo = QComboBox()
        self.model_combo.setObjectName("modelCombo")
        self.model_combo.addItems(configmod.MODELS)
        form.addRow("Model", self.model_combo)
        self.loop_combo = QComboBox()
        self.loop_combo.setObjectName("loopCombo")
        self.loop_combo.addItem("custom loop (restores the exact step)", "custom")
        self.loop_combo.addItem("Keras model.fit (restores to the epoch start)", "fit")
        self.loop_combo.setToolTip(
            "The fit path uses Keras' BackupAndRestore and ModelCheckpoint, for comparison: "
            "after a crash it restarts at the epoch start and the data position is lost"
        )
        form.addRow("Training loop", self.loop_combo)
        data_row = QHBoxLayout()
        self.dataset_combo = QComboBox()
        self.dataset_combo.setObjectName("datasetCombo")
        self.dataset_combo.setEditable(True)
        self.dataset_combo.addItems(configmod.BUILTIN_DATASETS)
        self.dataset_combo.setToolTip("digits (built in) or a .npz file with arrays x and y")
        browse = _small_button("…", "Choose a .npz file")
        browse.clicked.connect(self._browse_dataset)
        data_row.addWidget(self.dataset_combo, 1)
        data_row.addWidget(browse)
        form.addRow("Dataset", data_row)
        self.batch_spin = _spin("batchSizeSpin", 1, 1_000_000)
        self.batch_spin.setToolTip("Global batch size: examples per step over all replicas")
        form.addRow("Global batch size", self.batch_spin)
        self.lr_spin = QDoubleSpinBox()
        self.lr_spin.setObjectName("learningRateSpin")
        self.lr_spin.setDecimals(5)
        self.lr_spin.setRange(0.00001, 10.0)
        self.lr_spin.setSingleStep(0.001)
        form.addRow("Learning rate", self.lr_spin)
        self.steps_spin = _spin("stepsSpin", 1, 100_000_000)
        form.addRow("Steps", self.steps_spin)
        self.checkpoint_spin = _spin("checkpointEverySpin", 1, 100_000_000)
        form.addRow("Checkpoint every", self.checkpoint_spin)
        self.keep_spin = _spin("keepSpin", 1, 1000)
        form.addRow("Checkpoints kept", self.keep_spin)
        self.seed_spin = _spin("seedSpin", 0, 2**31 - 1)
        form.addRow("Seed", self.seed_spin)
        return group

    def _recovery_group(self) -> QGroupBox:
        group = QGroupBox("Faults and recovery")
        form = QFormLayout(group)
        self.auto_recover_check = QCheckBox("on")
        self.auto_recover_check.setToolTip("After a crash, restart from the newest valid one")
        self.auto_recover_check.setObjectName("autoRecoverCheck")
        form.addRow("Automatic recovery", self.auto_recover_check)
        self.max_restarts_spin = _spin("maxRestartsSpin", 0, 1000)
        form.addRow("Max restarts", self.max_restarts_spin)
        self.kill_at_spin = _spin("killAtStepSpin", 0, 100_000_000)
        self.kill_at_spin.setSpecialValueText("off")
        self.kill_at_spin.setToolTip("Crash the chief (SIGKILL) right after this step")
        form.addRow("Kill at step", self.kill_at_spin)
        self.preempt_at_spin = _spin("preemptAtStepSpin", 0, 100_000_000)
        self.preempt_at_spin.setSpecialValueText("off")
        self.preempt_at_spin.setToolTip("Preempt the chief (SIGTERM: save, then stop) at this step")
        form.addRow("Preempt at step", self.preempt_at_spin)
        self.nan_at_spin = _spin("nanAtStepSpin", 0, 100_000_000)
        self.nan_at_spin.setSpecialValueText("off")
        self.nan_at_spin.setToolTip("Inject a NaN into this step's loss; the run rolls back")
        form.addRow("NaN at step", self.nan_at_spin)
        self.hang_at_spin = _spin("hangAtStepSpin", 0, 100_000_000)
        self.hang_at_spin.setSpecialValueText("off")
        self.hang_at_spin.setToolTip("Freeze (SIGSTOP) the target after this step")
        form.addRow("Hang at step", self.hang_at_spin)
        self.kill_after_spin = _seconds_spin("killAfterSpin", "Crash the target this long after "
                                             "the start")
        form.addRow("Kill after", self.kill_after_spin)
        self.watchdog_spin = _seconds_spin("watchdogSpin", "Kill and recover a run that makes "
                                           "no progress this long")
        form.addRow("Watchdog", self.watchdog_spin)
        self.chaos_spin = _spin("chaosFaultsSpin", 0, 1000)
        self.chaos_spin.setSpecialValueText("off")
        self.chaos_spin.setToolTip("Random faults at random steps, repeatable from the seed")
        self.chaos_kinds_edit = QLineEdit()
        self.chaos_kinds_edit.setObjectName("chaosKindsEdit")
        self.chaos_kinds_edit.setToolTip("kill, preempt, nan, hang (comma separated)")
        self.chaos_seed_spin = _spin("chaosSeedSpin", 0, 2**31 - 1)
        chaos = QHBoxLayout()
        chaos.addWidget(self.chaos_spin, 1)
        chaos.addWidget(QLabel("seed"))
        chaos.addWidget(self.chaos_seed_spin, 1)
        form.addRow("Chaos faults", chaos)
        form.addRow("Chaos kinds", self.chaos_kinds_edit)
        self.fault_target_combo = QComboBox()
        self.fault_target_combo.setObjectName("faultTargetCombo")
        self.fault_target_combo.setEditable(True)
        self.fault_target_combo.setToolTip("Which process the scheduled faults hit")
        form.addRow("Fault target", self.fault_target_combo)
        return group

    # ------------------------------------------------------------ values
    def set_config(self, config: RunConfig) -> None:
        index = self.strategy_combo.findData(config.strategy)
        self.strategy_combo.setCurrentIndex(max(index, 0))
        self.replicas_spin.setValue(config.replicas)
        self.gpus_spin.setValue(config.gpus)
        self.workers_spin.setValue(config.workers)
        self.ps_spin.setValue(config.ps)
        self.cluster_edit.setText(config.cluster)
        self.model_combo.setCurrentText(config.model)
        self.loop_combo.setCurrentIndex(max(self.loop_combo.findData(config.loop), 0))
        self.dataset_combo.setCurrentText(config.dataset)
        self.batch_spin.setValue(config.global_batch_size)
        self.lr_spin.setValue(config.learning_rate)
        self.steps_spin.setValue(config.steps)
        self.checkpoint_spin.setValue(config.checkpoint_every)
        self.keep_spin.setValue(config.keep)
        self.seed_spin.setValue(config.seed)
        self.auto_recover_check.setChecked(config.auto_recover)
        self.max_restarts_spin.setValue(config.max_restarts)
        self.kill_at_spin.setValue(config.kill_at_step)
        self.preempt_at_spin.setValue(config.preempt_at_step)
        self.nan_at_spin.setValue(config.nan_at_step)
        self.hang_at_spin.setValue(config.hang_at_step)
        self.kill_after_spin.setValue(config.kill_after_seconds)
        self.watchdog_spin.setValue(config.watchdog_seconds)
        self.chaos_spin.setValue(config.chaos_faults)
        self.chaos_kinds_edit.setText(config.chaos_kinds)
        self.chaos_seed_spin.setValue(config.chaos_seed)
        self._fill_targets(config.strategy, config.workers, config.ps)
        self.fault_target_combo.setCurrentText(config.fault_target)
        self._hidden = config  # fields without a widget (workers, ps, …) pass through
        self._update_enabled()

    def config(self) -> RunConfig:
        """The configuration the fields show (not yet validated)."""
        return self._hidden.replace(
            strategy=self.strategy_combo.currentData(),
            replicas=self.replicas_spin.value(),
            gpus=self.gpus_spin.value(),
            workers=self.workers_spin.value(),
            ps=self.ps_spin.value(),
            model=self.model_combo.currentText(),
            loop=self.loop_combo.currentData(),
            dataset=self.dataset_combo.currentText().strip(),
            global_batch_size=self.batch_spin.value(),
            learning_rate=self.lr_spin.value(),
            steps=self.steps_spin.value(),
            checkpoint_every=self.checkpoint_spin.value(),
            keep=self.keep_spin.value(),
            seed=self.seed_spin.value(),
            auto_recover=self.auto_recover_check.isChecked(),
            max_restarts=self.max_restarts_spin.value(),
            kill_at_step=self.kill_at_spin.value(),
            preempt_at_step=self.preempt_at_spin.value(),
            nan_at_step=self.nan_at_spin.value(),
            hang_at_step=self.hang_at_spin.value(),
            kill_after_seconds=self.kill_after_spin.value(),
            watchdog_seconds=self.watchdog_spin.value(),
            chaos_faults=self.chaos_spin.value(),
            chaos_kinds=self.chaos_kinds_edit.text().strip(),
            chaos_seed=self.chaos_seed_spin.value(),
            fault_target=self.fault_target_combo.currentText().strip() or "chief",
            cluster=self.cluster_edit.text().strip(),
        ).with_cluster_counts()

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
        strategy = self.strategy_combo.currentData()
        self.replicas_spin.setEnabled(strategy == "mirrored")
        self.gpus_spin.setEnabled(strategy in ("mirrored", "one-device"))
        self.workers_spin.setEnabled(strategy in ("multi-worker", "parameter-server"))
        self.ps_spin.setEnabled(strategy == "parameter-server")
        self.cluster_edit.setEnabled(strategy in ("multi-worker", "parameter-server"))
        current = self.fault_target_combo.currentText()
        self._fill_targets(strategy, self.workers_spin.value(), self.ps_spin.value())
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

    def _browse_dataset(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Dataset", "", "NumPy archives (*.npz)")
        if path:
            self.dataset_combo.setCurrentText(path)


def _spin(name: str, low: int, high: int) -> QSpinBox:
    spin = QSpinBox()
    spin.setObjectName(name)
    spin.setRange(low, high)
    return spin


def _small_button(text: str, tip: str) -> QPushButton:
    button = QPushButton(text)
    button.setToolTip(tip)
    button.setFixedWidth(44)
    return button


def _seconds_spin(name: str, tip: str) -> QDoubleSpinBox:
    spin = QDoubleSpinBox()
    spin.setObjectName(name)
    spin.setRange(0.0, 86400.0)
    spin.setDecimals(1)
    spin.setSuffix(" s")
    spin.setSpecialValueText("off")
    spin.setToolTip(tip)
    return spin
