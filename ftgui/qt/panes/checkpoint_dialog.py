"""Inspecting a checkpoint from the window: a helper process (QProcess) and a result dialog."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QProcess, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from ftgui.core.checkpoints import tools


class CheckpointJob(QObject):
    """Runs `ftgui.training.helpers.inspect_checkpoint` without blocking the window.

    Emits `done(dict)` with the helper's answer or `failed(str)` with a one-line reason.
    """

    done = Signal(dict)
    failed = Signal(str)

    def __init__(self, run_dir: Path, step: int, evaluate: bool = True,
                 export: Path | None = None, parent=None):
        super().__init__(parent)
        argv = tools.inspect_command(run_dir, step, evaluate, export)
        self.process = QProcess(self)
        self.process.setProgram(argv[0])
        self.process.setArguments(argv[1:])
        self.process.finished.connect(self._finished)

    def start(self) -> None:
        self.process.start()

    def _finished(self, exit_code: int, exit_status) -> None:
        stdout = bytes(self.process.readAllStandardOutput()).decode(errors="replace")
        try:
            self.done.emit(tools.parse_result(stdout))
        except (RuntimeError, ValueError) as exc:
            self.failed.emit(str(exc))


def validation_line(evaluation: dict) -> str:
    """One rich-text line of a checkpoint's evaluation (`inspect_checkpoint.evaluate`): the
    loss, the accuracy when the task has one (not regression), a model module's metrics."""
    parts = [f"loss <b>{evaluation['val_loss']:.4f}</b>"]
    if evaluation.get("val_accuracy") is not None:
        parts.append(f"accuracy <b>{100 * evaluation['val_accuracy']:.1f}%</b>")
    parts += [f"{name} <b>{value:.4g}</b>"
              for name, value in (evaluation.get("metrics") or {}).items()]
    return f"Validation: {', '.join(parts)} on {evaluation['examples']} examples"


class CheckpointDialog(QDialog):
    """Variables of a checkpoint (name, shape, dtype, bytes) and its validation score."""

    def __init__(self, result: dict, parent=None):
        super().__init__(parent)
        self.setObjectName("checkpointDialog")
        self.setWindowTitle(f"Checkpoint {result['step']} — {result['path']}")
        layout = QVBoxLayout(self)
        evaluation = result.get("evaluation")
        if evaluation:
            label = QLabel(validation_line(evaluation))
            label.setObjectName("checkpointEvaluation")
            layout.addWidget(label)
        rows = [v for v in result["variables"] if v["name"] != "_CHECKPOINTABLE_OBJECT_GRAPH"]
        total = sum(v["bytes"] for v in rows)
        layout.addWidget(QLabel(f"{len(rows)} saved tensors, {total:,} bytes"))
        table = QTableWidget(len(rows), 4)
        table.setObjectName("variablesTable")
        table.setHorizontalHeaderLabels(["name", "shape", "dtype", "bytes"])
        for row, var in enumerate(rows):
            name = var["name"].replace("/.ATTRIBUTES/VARIABLE_VALUE", "")
            for column, text in enumerate(
                (name, "×".join(map(str, var["shape"])) or "scalar", var["dtype"],
                 f"{var['bytes']:,}")
            ):
                table.setItem(row, column, QTableWidgetItem(text))
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        table.verticalHeader().setVisible(False)
        layout.addWidget(table, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(720, 480)
