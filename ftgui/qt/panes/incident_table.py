"""The incident table: what each fault cost (detection, recovery, steps and time lost, what the
recovery restored from), as the run's `Timeline` counts it; the totals line is the run's
`Totals` printed as the story line prints them, refreshed whenever the story line is."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QTableView, QVBoxLayout, QWidget

from ftgui.core.formatting import percent, plural, seconds
from ftgui.core.timeline.model import Timeline
from ftgui.core.timeline.story import detect_words, source_words
from ftgui.qt.table_model import RowsModel, set_up_table

# the story line's figures (redone, lost, restored from) first: at 1280 px the panel shows
# about six columns, and "redone" was cut off behind detect and recovery (their breakdown);
# what fired the fault has a column of its own after them ("kill (schedule)" in the fault
# column pushed "source" out of view)
COLUMNS = ("#", "fault", "target", "at step", "steps lost", "time lost", "source", "detect",
           "recovery", "fired by", "waiting for Slurm")
HEADERS = ("#", "fault", "target", "step", "redone", "lost", "source", "detect", "recovery",
           "fired by", "Slurm")  # short
SLURM_COLUMN = COLUMNS.index("waiting for Slurm")  # shown only when an incident waited
TIPS = {"at step": "the last global step reached when the fault hit",
        "detect": "seconds from the fault to the moment it was known (in-process: the trainer "
                  "found it itself, a non-finite loss, at the end of its step)",
        "recovery": "seconds from detection to the first new step",
        "steps lost": "steps computed a second time (fault step − checkpoint restored)",
        "time lost": "seconds from the fault to the first new step, plus the time the redone "
                     "steps had taken the first time (clock jumped: the wall clock was set back "
                     "meanwhile and the run has no monotonic stamps to measure by; the jump "
                     "counts as 0 s)",
        "source": "what the recovery restored: memory (an in-memory snapshot), just in time (a "
                  "checkpoint a survivor saved at the failure), disk (a periodic checkpoint), "
                  "none (nothing saved yet: trained again from step 0)",
        "fired by": "what fired the fault: user (a button, a key or a menu), schedule (a "
                    "planned fault: --kill-at-step and the like, chaos), timer "
                    "(--kill-after-seconds); — for a crash ftgui did not cause",
        "waiting for Slurm": "seconds the recovery's batch job waited as PENDING for Slurm, "
                             "part of the recovery (the incident line's \"waiting for Slurm\" "
                             "phase); — when its start did not wait in Slurm's queue"}


def _seconds(value: float | None) -> str:
    return "…" if value is None else seconds(value, digits=2)  # None: not known yet


class IncidentModel(RowsModel):
    """One row per incident (`ftgui.core.record.incidents.Incident`) of a run's timeline."""

    columns = COLUMNS

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        """Short headers (the story line's figures fit at 1280×720), the full name as tooltip."""
        if orientation == Qt.Orientation.Horizontal:
            if role == Qt.ItemDataRole.DisplayRole:
                return HEADERS[section]
            if role == Qt.ItemDataRole.ToolTipRole:
                name = COLUMNS[section]
                return f"{name}: {TIPS[name]}" if name in TIPS else name
        return super().headerData(section, orientation, role)

    def set_incidents(self, incidents) -> None:
        self.reset_rows(list(incidents))

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or role != Qt.ItemDataRole.DisplayRole:
            if role == Qt.ItemDataRole.TextAlignmentRole and index.column() >= 3 and \
                    COLUMNS[index.column()] not in ("source", "fired by"):  # figures right
                return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            return None
        incident = self.rows[index.row()]
        column = COLUMNS[index.column()]
        if column == "#":
            return str(index.row() + 1)
        if column == "fault":
            return incident.kind
        if column == "fired by":
            return incident.source or "—"
        if column == "target":
            return incident.target
        if column == "at step":
            return str(incident.step)
        if column == "detect":
            return detect_words(incident, unknown="…")
        if column == "recovery":
            if incident.ended_by == "crash":  # the next row's recovery took over
                return "none (restart crashed)"
            if incident.ended_by:  # the user forked instead: never recovered, charged nothing
                return f"none ({incident.ended_by})"
            return _seconds(incident.recovery_seconds)
        if column == "steps lost":
            if incident.ended_by:
                return "—"
            return "…" if incident.steps_lost is None else str(incident.steps_lost)
        if column == "source":
            return source_words(incident) or "—"
        if column == "waiting for Slurm":  # as the incident line prints it
            queued = incident.queued_seconds
            return "—" if queued is None else seconds(queued)
        if incident.ended_by == "fork":
            return "—"
        lost = "…" if incident.time_lost is None else seconds(incident.time_lost)
        return f"{lost}, clock jumped" if incident.clock_jumped else lost


class IncidentPanel(QWidget):
    """The table (objectName `incidentTable`) and a totals line (`incidentTotals`)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.table = QTableView()
        self.model_ = IncidentModel(self)
        set_up_table(self.table, "incidentTable", self.model_)
        self.totals = QLabel("no incidents")
        self.totals.setObjectName("incidentTotals")
        self.totals.setWordWrap(True)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.totals)

    def show_timeline(self, timeline: Timeline) -> None:
        """Show the incidents of `timeline` and its totals."""
        self.model_.set_incidents(timeline.incidents)
        self.table.setColumnHidden(SLURM_COLUMN, all(
            incident.queued_seconds is None for incident in timeline.incidents))
        self.table.scrollToBottom()
        self.show_totals(timeline)

    def show_totals(self, timeline: Timeline) -> None:
        """The totals line of `timeline` now (its wall time grows with every event: called
        whenever the story line is, so that both give the same goodput), and the rows' figures."""
        totals = timeline.totals()
        if not totals.incidents:
            text = "no incidents"
        else:
            text = (f"<b>{totals.incidents}</b> {plural(totals.incidents, 'incident')} · "
                    f"<b>{totals.steps_lost}</b> {plural(totals.steps_lost, 'step')} redone · "
                    f"<b>{seconds(totals.time_lost)}</b> lost of "
                    f"{seconds(totals.wall)} · goodput <b>{percent(totals.goodput)}</b>")
        if text != self.totals.text():
            self.totals.setText(text)
        rows = self.model_.rowCount()
        if rows:  # an open incident's cells change as its recovery goes on
            self.model_.dataChanged.emit(self.model_.index(0, 0),
                                         self.model_.index(rows - 1, len(COLUMNS) - 1))
