"""The Runs dock: the runs of a runs folder in a table; Refresh, Open, Overlay, Clear overlays.

The list comes from `ftgui.core.runs.list_runs` (Qt-free); the dock only shows it and turns clicks
into signals (`openRequested`, `overlayRequested`, `clearOverlaysRequested`), which
`ftgui.qt.run_history` connects to the window and the plot.
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

from ftgui.core import runs
from ftgui.core.runs import RunSummary
from ftgui.qt import theme
from ftgui.qt.table_model import RowsModel, set_up_table

COLUMNS = ("run", "status", "strategy", "steps", "incidents", "attempts", "started", "final loss",
           "why it ended")
SETTINGS_KEY = "runs_root"
AUTO_REFRESH_MS = 2000
_SORT_ROLE = Qt.ItemDataRole.UserRole
_NUMERIC = {"steps", "incidents", "attempts", "final loss"}


class RunsModel(RowsModel):
    """One row per run (`RunSummary`); the run open in the window (`open_path`) is in bold."""

    columns = COLUMNS

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[RunSummary] = []
        self.open_path: Path | None = None

    def set_rows(self, rows: list[RunSummary]) -> None:
        """Show `rows`; the same runs in the same order update in place (selection survives)."""
        if [row.path for row in rows] == [row.path for row in self.rows] and rows:
            self.rows = rows
            self.dataChanged.emit(self.index(0, 0),
                                  self.index(len(rows) - 1, len(COLUMNS) - 1))
            return
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        run = self.rows[index.row()]
        column = COLUMNS[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return _text(run, column)
        if role == _SORT_ROLE:
            return _sort_key(run, column)
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{run.path}\n{run.status}: {run.reason}" if run.reason else str(run.path)
        if role == Qt.ItemDataRole.ForegroundRole and column == "status":
            return QBrush(QColor(theme.state_colour(run.status)))
        if role == Qt.ItemDataRole.FontRole and run.path == self.open_path:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.TextAlignmentRole and column in _NUMERIC:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


def _text(run: RunSummary, column: str) -> str:
    if column == "run":
        return run.name
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
        return "—" if run.final_loss is None else f"{run.final_loss:.4f}"
    return "" if run.status == "finished" else run.reason


def _sort_key(run: RunSummary, column: str):
    if column == "steps":
        return float(run.steps_done)
    if column in ("incidents", "attempts"):
        return float(getattr(run, column))
    if column == "started":
        return -1.0 if run.started is None else run.started
    if column == "final loss":
        return float("inf") if run.final_loss is None else run.final_loss
    return _text(run, column).lower()


class RunsDock(QDockWidget):
    """The Runs dock: the runs folder, its runs, and Refresh / Open / Overlay / Clear overlays.

    Emits `openRequested(Path)`, `overlayRequested(list[RunSummary])` and
    `clearOverlaysRequested()`; the folder is remembered in `settings` under `runs_root`.
    `open_run_dir()` gives the directory of the run open in the window (or None): its row is bold.
    """

    openRequested = Signal(object)
    overlayRequested = Signal(list)
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

        self.model_ = RunsModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model_)
        self.proxy.setSortRole(_SORT_ROLE)
        self.table = QTableView()
        set_up_table(self.table, "runsTable", self.proxy, multi=True, stripes=True,
                     row_padding=8)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(COLUMNS.index("started"), Qt.SortOrder.DescendingOrder)
        self.table.doubleClicked.connect(lambda _index: self._open())
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._menu)
        layout.addWidget(self.table, 1)

        buttons = QHBoxLayout()
        self.refresh_button = _button("runsRefreshButton", "Refresh", "Read the runs folder again")
        self.open_button = _button("runsOpenButton", "Open",
                                   "Show the selected run in the window (double-click works too)")
        self.overlay_button = _button("runsOverlayButton", "Overlay",
                                      "Draw the selected runs' training loss on the plot")
        self.clear_button = _button("runsClearOverlaysButton", "Clear overlays",
                                    "Remove the overlaid curves from the plot")
        self.info_label = QLabel("")
        self.info_label.setObjectName("runsInfoLabel")
        theme.style(self.info_label)
        theme.follow_scale(self, lambda _scale: theme.style(self.info_label))
        for button in (self.refresh_button, self.open_button, self.overlay_button):
            buttons.addWidget(button)
        buttons.addWidget(self.clear_button)
        buttons.addSpacing(12)
        buttons.addWidget(self.info_label, 1)
        layout.addLayout(buttons)
        self.setWidget(body)

        self.refresh_button.clicked.connect(self.refresh)
        self.open_button.clicked.connect(self._open)
        self.overlay_button.clicked.connect(self._overlay)
        self.clear_button.clicked.connect(self.clearOverlaysRequested)
        self.table.selectionModel().selectionChanged.connect(self._update_buttons)
        self.timer = QTimer(self)  # keeps running runs' steps and status current while shown
        self.timer.setInterval(AUTO_REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        self.visibilityChanged.connect(self._visibility_changed)

        self.root_edit.setText(str(self._stored_root()))
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
        menu.exec(self.table.viewport().mapToGlobal(position))

    def _visibility_changed(self, visible: bool) -> None:
        if visible:
            self.refresh()
            self.timer.start()
        else:
            self.timer.stop()


def _button(name: str, text: str, tip: str) -> QPushButton:
    button = QPushButton(text)
    button.setObjectName(name)
    button.setToolTip(tip)
    return button
