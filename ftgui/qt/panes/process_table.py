"""The process table: every training process of the run with its state, and a Kill per row.

Killing one process needs no right-click: the column after its name is a Kill button per live
process (click it), and Delete kills the selected one. The right-click menu also offers Preempt,
Freeze and Thaw — Freeze only for a running process, Thaw only for a frozen one."""

from __future__ import annotations

import time

import psutil
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QKeySequence
from PySide6.QtWidgets import QMenu

from ftgui.core import formatting
from ftgui.qt import theme
from ftgui.qt.controls import add_signal_actions
from ftgui.qt.table_model import MenuTable, RowsModel

# The Kill cell sits next to the name, where a narrow table still shows it.
COLUMNS = ("process", "kill", "pid", "state", "last step", "heartbeat", "restarts")
KILL_TEXT = "✕ Kill"


def process_rows(processes, now: float | None = None) -> list[dict]:
    """Plain rows for the table from `Supervisor.processes` (newest process per task name).
    `pid` is the process id, or for a task that runs elsewhere its launcher's name for it.

    `heartbeat` is seconds since the process last reported (a step or a heartbeat event).
    """
    now = time.time() if now is None else now
    latest: dict[str, object] = {}
    for proc in processes:
        latest[proc.name] = proc
    rows = []
    for proc in latest.values():
        if proc.alive:
            state = "frozen" if proc.pid is not None and _stopped(proc.pid) else "running"
        elif proc.ended_by_supervisor:
            state = "ended"
        elif proc.returncode is not None and proc.returncode < 0:
            state = f"killed ({-proc.returncode})" if proc.returncode == -9 else "signalled"
        else:
            state = {0: "exited", 42: "preempted (42)"}.get(
                proc.returncode, f"failed ({proc.returncode})"
            )
        rows.append({
            # a task with no process here (a Slurm task) is named by its handle: "job 7 step 7.1"
            "name": proc.name, "label": proc.label, "state": state,
            "pid": proc.pid if proc.pid is not None else proc.handle.ident,
            "alive": proc.alive, "last_step": proc.last_step,
            "heartbeat": max(0.0, now - proc.last_heartbeat) if proc.alive else None,
            "restarts": proc.restarts,
        })
    return rows


def _stopped(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_STOPPED
    except psutil.Error:
        return False


class ProcessModel(RowsModel):
    columns = COLUMNS

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[dict] = []

    def set_rows(self, rows: list[dict]) -> None:
        if [r["name"] for r in rows] != [r["name"] for r in self.rows]:
            self.reset_rows(rows)
            return
        self.rows = rows
        if rows:
            self.dataChanged.emit(self.index(0, 0), self.index(len(rows) - 1, len(COLUMNS) - 1))

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        column = COLUMNS[index.column()]
        if column == "kill":
            return self._kill_cell(row, role)
        if role == Qt.ItemDataRole.DisplayRole:
            if column == "process":
                return row["label"]
            if column == "heartbeat":
                beat = row["heartbeat"]
                return "—" if beat is None else f"{formatting.seconds(beat)} ago"
            key = {"last step": "last_step"}.get(column, column)
            return str(row[key])
        if role == Qt.ItemDataRole.ForegroundRole and not row["alive"]:
            return QBrush(QColor(theme.ERROR if "killed" in row["state"] else theme.MUTED))
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if COLUMNS[section] == "kill" and orientation == Qt.Orientation.Horizontal:
            return "" if role == Qt.ItemDataRole.DisplayRole else None
        return super().headerData(section, orientation, role)

    def _kill_cell(self, row: dict, role):
        """The Kill button of a live process: red text, a tooltip naming the signal."""
        if not row["alive"]:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return KILL_TEXT
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"Kill {row['label']} now (SIGKILL); Delete does it for the selected row"
        if role == Qt.ItemDataRole.ForegroundRole:
            return QBrush(QColor(theme.ERROR))
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignCenter)
        return None


class ProcessTable(MenuTable):
    """Shows `process_rows`. Kill a process by its row's Kill cell or Delete; a right click
    offers Kill, Preempt, Freeze and Thaw for that one process."""

    model_class, object_name = ProcessModel, "processTable"
    killRequested = Signal(str)
    preemptRequested = Signal(str)
    freezeRequested = Signal(str)
    thawRequested = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.clicked.connect(self._clicked)

    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if event.matches(QKeySequence.StandardKey.Delete) and self.kill_selected():
            return
        super().keyPressEvent(event)

    def kill_selected(self) -> bool:
        """Kill the selected process if it is alive (what Delete does); False otherwise."""
        rows = self.selectionModel().selectedRows()
        if not rows or not self.model_.rows[rows[0].row()]["alive"]:
            return False
        self.killRequested.emit(self.model_.rows[rows[0].row()]["name"])
        return True

    def _clicked(self, index) -> None:
        row = self.model_.rows[index.row()]
        if COLUMNS[index.column()] == "kill" and row["alive"]:
            self.killRequested.emit(row["name"])

    def update_rows(self, processes) -> None:
        self.model_.set_rows(process_rows(processes))

    def selected_name(self) -> str | None:
        rows = self.selectionModel().selectedRows()
        return self.model_.rows[rows[0].row()]["name"] if rows else None

    def row_menu(self, number: int) -> QMenu:
        """The right-click menu of row `number`: Kill, Preempt, Freeze, Thaw that process."""
        row = self.model_.rows[number]
        menu = QMenu(self)
        frozen = row["state"] == "frozen"
        add_signal_actions(menu, [
            (f"{text} {row['label']}", signal, enabled) for text, signal, enabled in (
                ("Kill (SIGKILL)", self.killRequested, row["alive"]),
                ("Preempt (SIGTERM)", self.preemptRequested, row["alive"] and not frozen),
                ("Freeze (SIGSTOP)", self.freezeRequested, row["alive"] and not frozen),
                ("Thaw (SIGCONT)", self.thawRequested, frozen),
            )], row["name"])
        return menu
