"""The Runs dock: the runs of a runs folder in a table; Refresh, Open, Overlay, Compare, Clear
overlays; each run's name (double-click it to rename) and notes, kept in `RUN/run.toml`.

The list comes from `ftgui.core.record.runs.list_runs` and the names and notes from
`ftgui.core.record.run_notes` (Qt-free); the dock only shows them and turns clicks into signals
(`openRequested`, `overlayRequested`, `compareRequested`, `clearOverlaysRequested`), which
`ftgui.qt.runs.run_history` connects to the window and the plot.
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import (
    QItemSelectionModel,
    QSettings,
    QSortFilterProxyModel,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from ftgui.core import formatting
from ftgui.core.record import run_notes, runs
from ftgui.core.record.run_notes import RunNotes
from ftgui.core.record.runs import RunSummary
from ftgui.qt import theme
from ftgui.qt.controls import named_button
from ftgui.qt.table_model import RowsModel, set_up_table

COLUMNS = ("run", "status", "strategy", "steps", "incidents", "attempts", "started", "final loss",
           "why it ended", "notes")
SETTINGS_KEY = "runs_root"
AUTO_REFRESH_MS = 2000
_SORT_ROLE = Qt.ItemDataRole.UserRole
_NUMERIC = {"steps", "incidents", "attempts", "final loss"}
_NO_NOTES = RunNotes()


class RunsModel(RowsModel):
    """One row per run (`RunSummary`) with its name and notes (`notes[path]`); the run open in
    the window (`open_path`) is in bold. The name is editable: it is stored in `RUN/run.toml`
    (a failure to write it is passed to `problem`, one line)."""

    columns = COLUMNS

    def __init__(self, parent=None, problem=lambda _text: None):
        super().__init__(parent)
        self.rows: list[RunSummary] = []
        self.notes: dict[Path, RunNotes] = {}
        self.open_path: Path | None = None
        self.problem = problem

    def set_rows(self, rows: list[RunSummary]) -> None:
        """Show `rows`; the same runs in the same order update in place (selection survives)."""
        self.notes = {row.path: run_notes.load(row.path) for row in rows}
        if [row.path for row in rows] == [row.path for row in self.rows] and rows:
            self.rows = rows
            self.dataChanged.emit(self.index(0, 0),
                                  self.index(len(rows) - 1, len(COLUMNS) - 1))
            return
        self.reset_rows(rows)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        run = self.rows[index.row()]
        column = COLUMNS[index.column()]
        notes = self.notes.get(run.path, _NO_NOTES)
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            if column == "run" and role == Qt.ItemDataRole.EditRole:
                return notes.name or run.name
            return _text(run, column, notes)
        if role == _SORT_ROLE:
            return _sort_key(run, column, notes)
        if role == Qt.ItemDataRole.ToolTipRole:
            tip = f"{run.path}\n{run.status}: {run.reason}" if run.reason else str(run.path)
            return tip + (f"\n{notes.notes}" if notes.notes else "")
        if role == Qt.ItemDataRole.ForegroundRole and column == "status":
            return QBrush(QColor(theme.state_colour(run.status)))
        if role == Qt.ItemDataRole.FontRole and run.path == self.open_path:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.TextAlignmentRole and column in _NUMERIC:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def flags(self, index):
        flags = super().flags(index)
        if index.isValid() and COLUMNS[index.column()] == "run":
            flags |= Qt.ItemFlag.ItemIsEditable
        return flags

    def setData(self, index, value, role=Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802
        """Rename the run (its folder's name when `value` is blank) in `RUN/run.toml`."""
        if role != Qt.ItemDataRole.EditRole or COLUMNS[index.column()] != "run":
            return False
        run = self.rows[index.row()]
        name = str(value).strip()
        try:
            self.notes[run.path] = run_notes.rename(run.path, "" if name == run.name else name)
        except (ValueError, OSError) as exc:
            self.problem(f"{run.name}: name not saved ({exc})")
            return False
        self.dataChanged.emit(index, index)
        return True

    def set_notes(self, path: Path, text: str) -> bool:
        """Store `text` as the notes of the run at `path`; False (told to `problem`) if the
        folder cannot be written."""
        try:
            self.notes[path] = run_notes.annotate(path, text)
        except OSError as exc:
            self.problem(f"{path.name}: notes not saved ({exc.strerror or exc})")
            return False
        row = next(i for i, run in enumerate(self.rows) if run.path == path)
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))
        return True


def _text(run: RunSummary, column: str, notes: RunNotes = _NO_NOTES) -> str:
    if column == "run":
        return notes.name or run.name
    if column == "notes":
        return notes.notes.splitlines()[0] if notes.notes else ""
    if column == "status":
        return run.status
    if column == "strategy":
        return run.strategy or "—"
    if column == "steps":
        planned = "?" if run.steps_planned is None else str(run.steps_planned)
        return f"{run.steps_done} / {planned}"
    if column == "incidents":
        return str(run.incidents)
    if column == "attempts":
        return str(run.attempts)
    if column == "started":
        if run.started is None:
            return "—"
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(run.started))
    if column == "final loss":
        return formatting.loss(run.final_loss)
    return "" if run.status == "running" else run.reason  # why it ended


def _sort_key(run: RunSummary, column: str, notes: RunNotes = _NO_NOTES):
    if column == "steps":
        return float(run.steps_done)
    if column in ("incidents", "attempts"):
        return float(getattr(run, column))
    if column == "started":
        return -1.0 if run.started is None else run.started
    if column == "final loss":
        return float("inf") if run.final_loss is None else run.final_loss
    return _text(run, column, notes).lower()


class RunsDock(QDockWidget):
    """The Runs dock: the runs folder, its runs, Refresh / Open / Overlay / Compare / Clear
    overlays, and the selected run's notes (`runsNotesEdit`).

    Emits `openRequested(Path)`, `overlayRequested(list[RunSummary])`,
    `compareRequested(list[RunSummary])` and `clearOverlaysRequested()`; the folder is
    remembered in `settings` under `runs_root`. `open_run_dir()` gives the directory of the run
    open in the window (or None): its row is bold. Double-clicking a run's name renames it;
    double-clicking elsewhere in its row opens it.
    """

    openRequested = Signal(object)
    overlayRequested = Signal(list)
    compareRequested = Signal(list)
    clearOverlaysRequested = Signal()

    def __init__(self, settings: QSettings, parent=None, open_run_dir=lambda: None):
        super().__init__("Runs", parent)
        self.setObjectName("runsDock")
        self.settings = settings
        self.open_run_dir = open_run_dir
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(6, 4, 6, 6)

        folder_row = QHBoxLayout()
        self.root_edit = QLineEdit()
        self.root_edit.setObjectName("runsRootEdit")
        self.root_edit.setReadOnly(True)
        self.root_edit.setToolTip("The folder whose run directories are listed")
        choose = QPushButton("Choose…")
        choose.setObjectName("runsRootButton")
        choose.setToolTip("Pick another runs folder")
        choose.clicked.connect(self._choose_root)
        folder_row.addWidget(QLabel("Runs folder"))
        folder_row.addWidget(self.root_edit, 1)
        folder_row.addWidget(choose)
        layout.addLayout(folder_row)

        self.model_ = RunsModel(self, problem=self._say)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model_)
        self.proxy.setSortRole(_SORT_ROLE)
        self.table = QTableView()
        set_up_table(self.table, "runsTable", self.proxy, multi=True, stripes=True,
                     row_padding=8)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(COLUMNS.index("started"), Qt.SortOrder.DescendingOrder)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked
                                   | QAbstractItemView.EditTrigger.EditKeyPressed)
        self.table.doubleClicked.connect(self._double_clicked)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._menu)
        layout.addWidget(self.table, 1)
        notes_row = QHBoxLayout()
        self.notes_edit = QLineEdit()
        self.notes_edit.setObjectName("runsNotesEdit")
        self.notes_edit.setPlaceholderText("notes on the selected run (kept in its run.toml)")
        self.notes_edit.setToolTip("Notes on the selected run, saved in RUN/run.toml when you "
                                   "press Enter or leave the field")
        self.notes_edit.editingFinished.connect(self._save_notes)
        notes_row.addWidget(QLabel("Notes"))
        notes_row.addWidget(self.notes_edit, 1)
        layout.addLayout(notes_row)

        buttons = QHBoxLayout()
        self.refresh_button = named_button("runsRefreshButton", "Refresh",
                                           "Read the runs folder again")
        self.open_button = named_button("runsOpenButton", "Open",
                                        "Show the selected run in the window "
                                        "(double-click works too)")
        self.overlay_button = named_button("runsOverlayButton", "Overlay",
                                           "Draw the selected runs' training loss on the plot")
        self.compare_button = named_button("runsCompareButton", "Compare",
                                           "The selected runs on one step axis, with what their "
                                           "faults and checkpoints cost")
        self.clear_button = named_button("runsClearOverlaysButton", "Clear overlays",
                                         "Remove the overlaid curves from the plot")
        self.info_label = QLabel("")
        self.info_label.setObjectName("runsInfoLabel")
        theme.style(self.info_label)
        theme.follow_scale(self, lambda _scale: theme.style(self.info_label))
        for button in (self.refresh_button, self.open_button, self.overlay_button,
                       self.compare_button):
            buttons.addWidget(button)
        buttons.addWidget(self.clear_button)
        buttons.addSpacing(12)
        buttons.addWidget(self.info_label, 1)
        layout.addLayout(buttons)
        self.setWidget(body)

        self.refresh_button.clicked.connect(self.refresh)
        self.open_button.clicked.connect(self._open)
        self.overlay_button.clicked.connect(self._overlay)
        self.compare_button.clicked.connect(self._compare)
        self.clear_button.clicked.connect(self.clearOverlaysRequested)
        self.table.selectionModel().selectionChanged.connect(self._update_buttons)
        self.timer = QTimer(self)  # keeps running runs' steps and status current while shown
        self.timer.setInterval(AUTO_REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        self.visibilityChanged.connect(self._visibility_changed)

        self.root_edit.setText(str(self._stored_root()))
        self._notes_path: Path | None = None  # the run whose notes the field shows
        self._update_buttons()

    # ------------------------------------------------------------ the folder
    def root(self) -> Path:
        return Path(self.root_edit.text())

    def set_root(self, root: Path) -> None:
        """List the runs of `root` from now on, and remember it."""
        self.root_edit.setText(str(root))
        self.settings.setValue(SETTINGS_KEY, str(root))
        self.refresh()

    def _stored_root(self) -> Path:
        stored = self.settings.value(SETTINGS_KEY)
        return Path(stored) if stored else runs.runs_root()

    def _choose_root(self) -> None:
        start = self.root() if self.root().is_dir() else Path.home()
        path = QFileDialog.getExistingDirectory(self, "Runs folder", str(start))
        if path:
            self.set_root(Path(path))

    # ------------------------------------------------------------ the list
    def refresh(self) -> None:
        """Read the runs folder again; the selected runs stay selected."""
        selected = {run.path for run in self.selected_runs()}
        rows = runs.list_runs(self.root().absolute())
        current = self.open_run_dir()
        self.model_.open_path = None if current is None else Path(current).absolute()
        self.model_.set_rows(rows)
        self.select_paths(selected)
        if not self.root().is_dir():
            self.info_label.setText("this folder does not exist yet: Choose… another one")
        elif not rows:
            self.info_label.setText("no runs in this folder")
        else:
            running = sum(run.status == "running" for run in rows)
            self.info_label.setText(f"{len(rows)} runs" + (f", {running} running"
                                                            if running else ""))
        self._update_buttons()

    def selected_runs(self) -> list[RunSummary]:
        """The selected runs, top to bottom as shown."""
        rows = sorted(index.row() for index in self.table.selectionModel().selectedRows())
        return [self.model_.rows[self.proxy.mapToSource(self.proxy.index(row, 0)).row()]
                for row in rows]

    def select_paths(self, paths) -> None:
        """Select the rows of the runs at `paths` (others are deselected)."""
        selection = self.table.selectionModel()
        selection.clearSelection()
        flags = (QItemSelectionModel.SelectionFlag.Select
                 | QItemSelectionModel.SelectionFlag.Rows)
        for row, run in enumerate(self.model_.rows):
            if run.path in paths:
                selection.select(self.proxy.mapFromSource(self.model_.index(row, 0)), flags)

    def _update_buttons(self, *_args) -> None:
        count = len(self.table.selectionModel().selectedRows())
        self.open_button.setEnabled(count == 1)
        self.overlay_button.setEnabled(count >= 1)
        self.compare_button.setEnabled(count >= 2)
        selected = self.selected_runs() if count == 1 else []
        self.notes_edit.setEnabled(bool(selected))
        if not self.notes_edit.hasFocus() or not selected:
            self._notes_path = selected[0].path if selected else None
            self.notes_edit.setText(self.model_.notes.get(self._notes_path, _NO_NOTES).notes
                                    if selected else "")

    def _save_notes(self) -> None:
        """Store the notes field's text for the run it shows (if it changed)."""
        path = self._notes_path
        text = self.notes_edit.text()
        if path is not None and text != self.model_.notes.get(path, _NO_NOTES).notes:
            self.model_.set_notes(path, text)

    def _say(self, text: str) -> None:
        self.info_label.setText(text)

    def _double_clicked(self, index) -> None:
        if COLUMNS[index.column()] != "run":  # the name column edits the name instead
            self._open()

    def _compare(self) -> None:
        selected = self.selected_runs()
        if len(selected) >= 2:
            self.compareRequested.emit(selected)

    def _open(self) -> None:
        selected = self.selected_runs()
        if len(selected) == 1:
            self.openRequested.emit(selected[0].path)

    def _overlay(self) -> None:
        selected = self.selected_runs()
        if selected:
            self.overlayRequested.emit(selected)

    def _menu(self, position) -> None:
        if not self.table.indexAt(position).isValid():
            return
        menu = QMenu(self)
        menu.addAction("Open", self._open).setEnabled(self.open_button.isEnabled())
        menu.addAction("Overlay on the plot", self._overlay)
        menu.addAction("Compare", self._compare).setEnabled(self.compare_button.isEnabled())
        menu.addAction("Rename", lambda: self.table.edit(
            self.table.indexAt(position).siblingAtColumn(COLUMNS.index("run"))))
        menu.exec(self.table.viewport().mapToGlobal(position))

    def _visibility_changed(self, visible: bool) -> None:
        if visible:
            self.refresh()
            self.timer.start()
        else:
            self.timer.stop()

