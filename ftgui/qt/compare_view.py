"""The comparison view: two or more runs' training loss on one step axis, and under the plot a
table of what each run's faults and checkpoints cost (incidents, steps redone, time lost,
checkpoint time, goodput) as `ftgui.core.run_figures` computes them from each run's timeline.

Opened by the Runs dock's Compare button and Run → Compare; it imports pyqtgraph (the
`LossPlot`), so it is created only when asked for.
"""

from __future__ import annotations

import dataclasses
import math

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QLabel, QSplitter, QTableView, QVBoxLayout

from ftgui.core import run_notes
from ftgui.core.run_figures import RunFigures, read_run
from ftgui.core.runs import RunSummary
from ftgui.qt.loss_plot import LossPlot
from ftgui.qt.table_model import RowsModel, set_up_table

COLUMNS = ("run", "incidents", "steps redone", "time lost", "checkpoints", "checkpoint time",
           "wall time", "goodput", "final loss")


def cells(figures: RunFigures) -> tuple[str, ...]:
    """One table row: counts as whole numbers, checkpoint and wall seconds to the hundredth;
    steps redone, time lost and goodput as the story line prints them (`RunFigures.shown`)."""
    loss = figures.final_loss
    shown = figures.shown()
    return (figures.name, str(figures.incidents), shown["steps redone"],
            shown["time lost"], str(figures.checkpoints),
            f"{figures.checkpoint_seconds:.2f} s", f"{figures.wall:.2f} s",
            shown["goodput"],
            "—" if loss is None or not math.isfinite(loss) else f"{loss:.4f}")


class FiguresModel(RowsModel):
    """One row of `cells` per compared run (`rows`: `RunFigures`)."""

    columns = COLUMNS

    def set_rows(self, rows: list[RunFigures]) -> None:
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return cells(self.rows[index.row()])[index.column()]
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() > 0:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class CompareView(QDialog):
    """A window (`compareView`) with a `LossPlot` (`comparePlot`) of the compared runs'
    surviving training loss and their figures in `compareTable`."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("compareView")
        self.setWindowTitle("Compare runs")
        self.plot = LossPlot()
        self.plot.setObjectName("comparePlot")
        self.model_ = FiguresModel(self)
        self.table = QTableView()
        set_up_table(self.table, "compareTable", self.model_, stripes=True)
        self.problems = QLabel("")
        self.problems.setObjectName("compareProblems")
        self.problems.setWordWrap(True)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.plot)
        split.addWidget(self.table)
        split.setSizes([420, 160])
        layout = QVBoxLayout(self)
        layout.addWidget(split, 1)
        layout.addWidget(self.problems)
        self.resize(1000, 640)

    def show_runs(self, selected: list[RunSummary]) -> list[str]:
        """Compare `selected` (each shown by its name from `run.toml`, else its folder's);
        returns the problems met, one line per run that has no curve to draw."""
        from ftgui.qt.run_history import overlay_runs

        named = [dataclasses.replace(run, name=run_notes.load(run.path).name or run.name)
                 for run in selected]
        self.plot.clear_overlays()
        problems = overlay_runs(self.plot, named)
        self.model_.set_rows([read_run(run.path, run.name)[1] for run in named])
        self.problems.setText("; ".join(problems))
        self.problems.setVisible(bool(problems))
        self.table.resizeColumnsToContents()
        return problems
