"""The checkpoint table: a Qt model over `ftgui.core.checkpoints.list_checkpoints` and its view."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QBrush, QColor, QFont
from PySide6.QtWidgets import QMenu, QTableView

from ftgui.core import checkpoints
from ftgui.core.checkpoints import CheckpointInfo
from ftgui.qt import theme
from ftgui.qt.table_model import RowsModel, set_up_table

COLUMNS = ("step", "epoch", "loss", "val loss", "val acc", "time", "size", "strategy", "valid")


def _size_text(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


def _number(value) -> str:
    return "—" if value is None else f"{value:.4f}"


class CheckpointModel(RowsModel):
    """Rows of checkpoints (oldest first); the newest valid one is shown in bold with a ★."""

    columns = COLUMNS

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[CheckpointInfo] = []
        self.newest_valid_step: int | None = None

    def refresh(self, run_dir: Path | None) -> None:
        """Re-read the checkpoint folder of `run_dir` (None: empty table)."""
        rows = (checkpoints.list_checkpoints(run_dir) + checkpoints.list_fit_checkpoints(run_dir)
                if run_dir else [])
        self.beginResetModel()
        self.rows = rows
        valid = [row.step for row in rows if row.valid]
        self.newest_valid_step = valid[-1] if valid else None
        self.endResetModel()

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        info = self.rows[index.row()]
        column = COLUMNS[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(info, column)
        if role == Qt.ItemDataRole.ToolTipRole:
            return info.reason or f"{info.relpath} — {info.restores or 'restorable'}"
        if role == Qt.ItemDataRole.ForegroundRole and not info.valid:
            return QBrush(QColor(theme.ERROR))
        if role == Qt.ItemDataRole.FontRole and info.step == self.newest_valid_step:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.TextAlignmentRole and column != "valid":
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def _text(self, info: CheckpointInfo, column: str) -> str:
        if column == "step":
            return f"★ {info.step}" if info.step == self.newest_valid_step else str(info.step)
        if column == "loss":
            return _number(info.loss)
        if column == "val loss":
            return _number(info.meta.get("val_loss"))
        if column == "val acc":
            accuracy = info.meta.get("val_accuracy")
            return "—" if accuracy is None else f"{100 * accuracy:.1f}%"
        if column == "time":
            return time.strftime("%H:%M:%S", time.localtime(info.time)) if info.time else "—"
        if column == "size":
            return _size_text(info.size)
        if column == "epoch":
            epoch = info.meta.get("epoch")
            return "—" if epoch is None else str(epoch)
        if column == "strategy":
            strategy = info.meta.get("strategy")
            return "—" if strategy is None else f"{strategy} ×{info.meta.get('replicas', '?')}"
        return "yes" if info.valid else f"no: {info.reason}"


class CheckpointTable(QTableView):
    """The table view; the selected step survives refreshes. Emits `resumeRequested(step)`."""

    resumeRequested = Signal(int)
    inspectRequested = Signal(int)
    exportRequested = Signal(int)
    deleteRequested = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.model_ = CheckpointModel(self)
        set_up_table(self, "checkpointTable", self.model_, stripes=True)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._menu)
        self.resume_enabled = False

    def refresh(self, run_dir: Path | None) -> None:
        selected = self.selected_step()
        self.model_.refresh(run_dir)
        if selected is not None:
            for row, info in enumerate(self.model_.rows):
                if info.step == selected:
                    self.selectRow(row)
        self.scrollToBottom()

    def selected_step(self) -> int | None:
        rows = self.selectionModel().selectedRows()
        if not rows:
            return None
        return self.model_.rows[rows[0].row()].step

    def _menu(self, position) -> None:
        index = self.indexAt(position)
        if not index.isValid():
            return
        info = self.model_.rows[index.row()]
        menu = QMenu(self)
        action = QAction(f"Resume from step {info.step} (fork; newer checkpoints are kept)", menu)
        action.setEnabled(info.valid and self.resume_enabled)
        action.triggered.connect(lambda: self.resumeRequested.emit(info.step))
        menu.addAction(action)
        menu.addSeparator()
        for text, signal, enabled in (
            ("Inspect and evaluate…", self.inspectRequested, info.valid),
            ("Export as .keras model…", self.exportRequested, info.valid),
            ("Delete…", self.deleteRequested, self.resume_enabled),
        ):
            item = QAction(text, menu)
            item.setEnabled(enabled)
            item.triggered.connect(lambda _=False, s=signal: s.emit(info.step))
            menu.addAction(item)
        menu.exec(self.viewport().mapToGlobal(position))
