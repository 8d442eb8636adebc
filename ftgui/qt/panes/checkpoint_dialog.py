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

from ftgui.core import formatting
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
        self._run_dir, self._step = Path(run_dir), step
        self._checks_files = evaluate or export is not None
        self.process = QProcess(self)
        self.process.setProgram(argv[0])
        self.process.setArguments(argv[1:])
        self.process.finished.connect(self._finished)

    def start(self) -> None:
        """Start the helper; an evaluation or export whose model or dataset file changed
        since the checkpoint was saved is refused first (`failed`, no process)."""
        if self._checks_files:
            try:
                tools.check_files(self._run_dir, self._step)
            except (RuntimeError, LookupError) as exc:
                self.failed.emit(str(exc))
                return
        self.process.start()

    def _finished(self, exit_code: int, exit_status) -> None:
        stdout = bytes(self.process.readAllStandardOutput()).decode(errors="replace")
        stderr = bytes(self.process.readAllStandardError()).decode(errors="replace")
        try:
            self.done.emit(tools.parse_result(stdout, stderr, exit_code))
        except (RuntimeError, ValueError) as exc:
            self.failed.emit(str(exc))


def validation_line(evaluation: dict) -> str:
    """One rich-text line of a checkpoint's evaluation (`inspect_checkpoint.evaluate`): the
    loss, the accuracy when the task has one (not regression), a model module's metrics."""
    parts = [f"loss <b>{formatting.loss(evaluation['val_loss'])}</b>"]
    if evaluation.get("val_accuracy") is not None:
        parts.append(f"accuracy <b>{formatting.percent(evaluation['val_accuracy'], 1)}</b>")
    parts += [f"{name} <b>{value:.4g}</b>"
              for name, value in (evaluation.get("metrics") or {}).items()]
    return f"Validation: {', '.join(parts)} on {evaluation['examples']} examples"


def size_line(result: dict, tensors: list[dict]) -> str:
    """The checkpoint's size (its files, the figure of the table, the log and `ftgui
    checkpoints`) and the bytes of its saved tensors (`tensors`, less than the files: the
    files hold an index and the object graph too): "Files 61.1 kB (61,074 bytes) · 12 saved
    tensors, 57.7 kB (57,748 bytes)"."""
    total = sum(v["bytes"] for v in tensors)
    tensors_word = "tensor" if len(tensors) == 1 else "tensors"
    return (f"Files {formatting.exact_size(result.get('size'))} · {len(tensors)} saved "
            f"{tensors_word}, {formatting.exact_size(total)}")


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
        size = QLabel(size_line(result, rows))
        size.setObjectName("checkpointSize")
        layout.addWidget(size)
        table = QTableWidget(len(rows), 4)
        table.setObjectName("variablesTable")
        table.setHorizontalHeaderLabels(["name", "shape", "dtype", "bytes"])
        for row, var in enumerate(rows):
            name = var["name"].replace("/.ATTRIBUTES/VARIABLE_VALUE", "")
            for column, text in enumerate(
                (name, "×".join(map(str, var["shape"])) or "scalar", var["dtype"],
                 formatting.count(var["bytes"]))
            ):
                table.setItem(row, column, QTableWidgetItem(text))
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        table.verticalHeader().setVisible(False)
        layout.addWidget(table, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(720, 480)
