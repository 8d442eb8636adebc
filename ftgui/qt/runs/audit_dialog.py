"""Run → Audit my training…: `ftgui audit` with the panel's settings, in a QProcess.

The dialog (`auditDialog`) shows which run of how many is going and what the audit waits for
(`auditStatusLabel`, `auditProgressBar`, the full output in `auditLog`), and, once it has ended,
a table of the verdicts read from the audit's JSON summary (`auditVerdictTable`) and the exit
status in words. `auditCancelButton` ends the audit's whole process group. The runs are in the
audit folder under the Runs view's folder, where the Runs view lists them as a group.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from PySide6.QtCore import QProcess, Qt
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QTableView,
    QVBoxLayout,
)

from ftgui.core import formatting
from ftgui.core.audit import outputs, runner
from ftgui.qt.table_model import RowsModel, set_up_table
from ftgui.streams import CHILD_ENV

COLUMNS = ("fault", "at step", "verdict", "steps redone", "time lost", "restored from",
           "first difference")
OUTCOMES = {0: "every fault recovered exactly", 1: "not every fault recovered exactly",
            2: "the audit refused its settings"}


class VerdictsModel(RowsModel):
    """One row per fault of the audit's JSON summary (`faults`)."""

    columns = COLUMNS

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or role != Qt.ItemDataRole.DisplayRole:
            return None
        return cells(self.rows[index.row()])[index.column()]


def cells(fault: dict) -> tuple[str, ...]:
    """A verdict's row: the fault, its step, ✓/✗/– and its status, its cost, what differs."""
    mark = {"exact": "✓", "design": "–"}.get(fault["status"], "✗")
    redone = fault.get("steps_redone")
    difference = ", ".join(part for part in (fault.get("difference"),
                                             _weights(fault.get("weights_differ"))) if part)
    return (fault["name"], str(fault["step"]), f"{mark} {fault['status']}",
            "—" if redone is None else str(redone), formatting.seconds(fault.get("time_lost")),
            fault.get("source") or "—", difference or fault.get("reason") or "—")


def _weights(names) -> str:
    return f"final weights: {', '.join(names)}" if names else ""


class AuditDialog(QDialog):
    """Runs `command` (an `ftgui audit` command line for `audit_dir`) and shows its progress,
    then its verdicts."""

    def __init__(self, audit_dir: Path, command: list[str], parent=None):
        super().__init__(parent)
        self.setObjectName("auditDialog")
        self.setWindowTitle(f"Audit: {audit_dir.name}")
        self.audit_dir = audit_dir
        self.status = QLabel("starting the audit…")
        self.status.setObjectName("auditStatusLabel")
        self.status.setWordWrap(True)
        self.bar = QProgressBar()
        self.bar.setObjectName("auditProgressBar")
        self.bar.setRange(0, 0)  # busy until the first line says how many runs
        self.bar.setFormat("%v of %m runs done")
        self.log = QPlainTextEdit()
        self.log.setObjectName("auditLog")
        self.log.setReadOnly(True)
        self.model_ = VerdictsModel(self)
        self.table = QTableView()
        set_up_table(self.table, "auditVerdictTable", self.model_)
        self.table.hide()
        self.cancel = QPushButton("Cancel")
        self.cancel.setObjectName("auditCancelButton")
        self.cancel.clicked.connect(self.stop)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.cancel)
        layout = QVBoxLayout(self)
        for widget in (self.status, self.bar, self.table, self.log):
            layout.addWidget(widget)
        layout.addLayout(buttons)
        self.exit_code: int | None = None
        self._partial = b""
        self.process = QProcess(self)
        self.process.setProgram(command[0])
        self.process.setArguments(command[1:])
        self.process.setProcessChannelMode(QProcess.ProcessChannelMode.MergedChannels)
        environment = self.process.processEnvironment()
        if environment.isEmpty():
            environment = environment.systemEnvironment()
        for key, value in {**CHILD_ENV, "PYTHONUNBUFFERED": "1"}.items():
            environment.insert(key, value)
        self.process.setProcessEnvironment(environment)
        self.process.setUnixProcessParameters(QProcess.UnixProcessFlag.CreateNewSession)
        self.process.readyReadStandardOutput.connect(self._read)
        self.process.finished.connect(self._finished)

    def start(self) -> None:
        self.process.start()

    def stop(self) -> None:
        """End the audit and every process it started (its own session), or close."""
        if self.process.state() == QProcess.ProcessState.NotRunning:
            self.accept()
            return
        try:
            os.killpg(self.process.processId(), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            self.process.kill()

    def _read(self) -> None:
        data = self._partial + bytes(self.process.readAllStandardOutput())
        *lines, self._partial = data.split(b"\n")
        for raw in lines:
            self.show_line(raw.decode("utf-8", errors="replace"))

    def show_line(self, line: str) -> None:
        """Log `line`; a progress line moves the bar and the status."""
        self.log.appendPlainText(line)
        counts = runner.progress(line)
        if counts is not None:
            done, total = counts
            self.bar.setRange(0, total)
            self.bar.setValue(done)
        if line.strip():
            self.status.setText(line)

    def _finished(self, exit_code: int, _status) -> None:
        if self._partial:
            self.show_line(self._partial.decode("utf-8", errors="replace"))
            self._partial = b""
        self.exit_code = exit_code
        self.cancel.setText("Close")
        if self.bar.maximum() == 0:  # ended before it said how many runs
            self.bar.setRange(0, 1)
        self.bar.setValue(self.bar.maximum() if exit_code in (0, 1) else 0)
        summary = self.audit_dir / outputs.DEFAULT_NAMES["json"]
        words = OUTCOMES.get(exit_code, f"the audit ended with exit status {exit_code}")
        if exit_code in (0, 1) and summary.is_file():
            faults = json.loads(summary.read_text(encoding="utf-8"))["faults"]
            self.model_.set_rows(faults)
            self.table.show()
            self.status.setText(f"Audit done: {words} (exit status {exit_code}); report in "
                                f"{self.audit_dir / outputs.DEFAULT_NAMES['html']}")
        else:
            last = self.log.toPlainText().strip().splitlines()
            self.status.setText(f"Audit ended: {words}" + (f": {last[-1]}" if last else ""))
