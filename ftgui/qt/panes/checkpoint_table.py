"""The checkpoint table: a Qt model over `ftgui.core.checkpoints.listing.list_checkpoints` and its
view."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics
from PySide6.QtWidgets import QMenu

from ftgui.core import formatting
from ftgui.core.checkpoints import fit_checkpoints, listing, moves
from ftgui.core.checkpoints.listing import CheckpointInfo
from ftgui.qt import theme
from ftgui.qt.controls import add_signal_actions
from ftgui.qt.table_model import MenuTable, RowsModel

ARCHIVE_TIP = "kept by the fork of attempt {fork} (the abandoned branch), not restorable here"
ANSWER_PADDING_PX = 12  # a cell's margins each side of its text
COLUMNS = ("step", "epoch", "loss", "val loss", "val acc", "time", "size", "strategy", "valid")


def with_archived(current: list[CheckpointInfo],
                  archived: list[tuple[int, CheckpointInfo]]) -> list[tuple[int | None, object]]:
    """The table's rows as (fork attempt or None, checkpoint): the run's checkpoints by step,
    each fork's archived ones right under the newest checkpoint older than all of them (the
    checkpoint the fork started from, if it is still kept)."""
    rows: list[tuple[int | None, object]] = [(None, info) for info in current]
    forks: dict[int, list[CheckpointInfo]] = {}
    for fork, info in archived:
        forks.setdefault(fork, []).append(info)
    for fork, infos in sorted(forks.items(), reverse=True):
        at = _after_step(rows, min(info.step for info in infos))
        rows[at:at] = [(fork, info) for info in infos]
    return rows


def _after_step(rows, step: int) -> int:
    """The index after the last row of the run's own checkpoints older than `step` (and any
    archived rows under it)."""
    at = 0
    for index, (owner, info) in enumerate(rows):
        if owner is None and info.step >= step:
            break
        at = index + 1
    return at


class CheckpointModel(RowsModel):
    """Rows of checkpoints (oldest first); the newest valid one is shown in bold with a ★.
    Checkpoints a fork moved to `RUN/history/fork-N/` are listed greyed under the fork's
    starting point (`fork_of(row)` is N for them, None for the run's own)."""

    columns = COLUMNS

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[CheckpointInfo] = []
        self.forks: list[int | None] = []  # per row: the fork that archived it, or None
        self.newest_valid_step: int | None = None

    def refresh(self, run_dir: Path | None) -> None:
        """Re-read the checkpoint folder of `run_dir` and its fork archives (None: empty)."""
        current = (listing.list_checkpoints(run_dir)
                   + fit_checkpoints.list_fit_checkpoints(run_dir) if run_dir else [])
        archived = moves.list_archived(run_dir) if run_dir else []
        rows = with_archived(current, archived)
        self.beginResetModel()
        self.rows = [info for _, info in rows]
        self.forks = [fork for fork, _ in rows]
        valid = [row.step for row in current if row.valid]
        self.newest_valid_step = valid[-1] if valid else None
        self.endResetModel()

    def fork_of(self, row: int) -> int | None:
        """The attempt whose fork archived the checkpoint of `row` (None: the run's own)."""
        return self.forks[row] if row < len(self.forks) else None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        info = self.rows[index.row()]
        column = COLUMNS[index.column()]
        fork = self.fork_of(index.row())
        if role == Qt.ItemDataRole.DisplayRole:
            text = self._text(info, column, fork)
            return f"↳ {text} (fork {fork})" if fork is not None and column == "step" else text
        if role == Qt.ItemDataRole.ToolTipRole:
            if fork is not None:
                return (f"{ARCHIVE_TIP.format(fork=fork)}: "
                        f"{info.prefix.relative_to(info.prefix.parents[3])}")
            return info.reason or f"{info.relpath} — {info.restores or 'restorable'}"
        if role == Qt.ItemDataRole.ForegroundRole and fork is not None:
            return QBrush(QColor(theme.MUTED))
        if role == Qt.ItemDataRole.ForegroundRole and not info.valid:
            return QBrush(QColor(theme.ERROR))
        if role == Qt.ItemDataRole.FontRole and fork is None and (
            info.step == self.newest_valid_step
        ):
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.TextAlignmentRole and column != "valid":
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def _text(self, info: CheckpointInfo, column: str, fork: int | None = None) -> str:
        if column == "step":
            newest = fork is None and info.step == self.newest_valid_step
            return f"★ {info.step}" if newest else str(info.step)
        if column == "loss":
            return formatting.loss(info.loss)
        if column == "val loss":
            return formatting.loss(info.meta.get("val_loss"))
        if column == "val acc":
            return formatting.percent(info.meta.get("val_accuracy"), digits=1)
        if column == "time":
            return time.strftime("%H:%M:%S", time.localtime(info.time)) if info.time else "—"
        if column == "size":
            return formatting.size(info.size)
        if column == "epoch":
            epoch = info.meta.get("epoch")
            return "—" if epoch is None else str(epoch)
        if column == "strategy":  # "mirrored ×2"; one replica needs no count ("one-device")
            strategy, replicas = info.meta.get("strategy"), info.meta.get("replicas", "?")
            if strategy is None:
                return "—"
            return strategy if replicas == 1 else f"{strategy} ×{replicas}"
        return "yes" if info.valid else f"no: {info.reason}"


class CheckpointTable(MenuTable):
    """The table view; the selected step survives refreshes. Emits `resumeRequested(step)`."""

    model_class, object_name, stripes = CheckpointModel, "checkpointTable", True
    resume_enabled = False  # the run can be resumed (nothing trains)
    resumeRequested = Signal(int)
    inspectRequested = Signal(int)
    exportRequested = Signal(int)
    deleteRequested = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._keep_the_answer_whole()
        theme.follow_scale(self, self._keep_the_answer_whole)

    def _keep_the_answer_whole(self, _scale=None) -> None:
        """No column narrower than a bold "yes": the last ("valid") takes the room the others
        leave, and beside archived rows ("↳ 160 (fork 2)") and a scroll bar it was cut to
        "y…" (a new user's find, 1280×720); the table scrolls sideways instead."""
        bold = QFont(theme.font())
        bold.setBold(True)
        self.horizontalHeader().setMinimumSectionSize(
            QFontMetrics(bold).horizontalAdvance("yes") + ANSWER_PADDING_PX)

    def refresh(self, run_dir: Path | None) -> None:
        selected = self.selected_step()
        self.model_.refresh(run_dir)
        if selected is not None:
            for row, info in enumerate(self.model_.rows):
                if info.step == selected and self.model_.fork_of(row) is None:
                    self.selectRow(row)
        self.scrollToBottom()

    def selected_step(self) -> int | None:
        """The step of the selected checkpoint of the run (None: none, or an archived one)."""
        rows = self.selectionModel().selectedRows()
        if not rows or self.model_.fork_of(rows[0].row()) is not None:
            return None
        return self.model_.rows[rows[0].row()].step

    def row_menu(self, number: int) -> QMenu:
        """The right-click menu of row `number`: resume from (fork), inspect, export, delete
        that checkpoint; an archived one (another branch's) offers them all disabled."""
        info = self.model_.rows[number]
        own = self.model_.fork_of(number) is None  # archived ones are shown, not used
        menu = QMenu(self)
        add_signal_actions(menu, [
            (f"Resume from step {info.step} (fork; newer checkpoints are kept)",
             self.resumeRequested, own and info.valid and self.resume_enabled)], info.step)
        menu.addSeparator()
        add_signal_actions(menu, [
            ("Inspect and evaluate…", self.inspectRequested, own and info.valid),
            ("Export as .keras model…", self.exportRequested, own and info.valid),
            ("Delete…", self.deleteRequested, own and self.resume_enabled),
        ], info.step)
        return menu
