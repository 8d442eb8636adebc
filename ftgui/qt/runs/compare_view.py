"""The comparison view: two or more runs' training loss on one step axis, each run's crash and
resume markers, and what each run's faults and checkpoints cost (incidents, steps redone, time
lost, checkpoint stall, goodput, final loss) as `ftgui.core.timeline.run_figures` computes them from
each run's timeline: in a table, and in large lines over the plot (`compareFigures`).

Opened by the Runs dock's Compare button, Run → Compare and a demo's end. It is a window of its
own in the normal view; in the presentation view the window shows it in place of its plot
(`RunHistory.compare`), at the presentation's sizes, the table left out for a small table of
the key figures in large type (`room_cells`), so that nothing covers the demo's claims. It
imports pyqtgraph (the `LossPlot`), so it is created only when asked for.
"""

from __future__ import annotations

import dataclasses
import math
from html import escape

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from ftgui.core import formatting
from ftgui.core.record import run_notes
from ftgui.core.record.runs import RunSummary
from ftgui.core.timeline.run_figures import RUNNING_MEAN, RunFigures, read_run
from ftgui.qt import theme
from ftgui.qt.plot.loss_plot import LossPlot
from ftgui.qt.plot.overlays import overlay_runs
from ftgui.qt.table_model import RowsModel, set_up_table

COLUMNS = ("run", "incidents", "steps redone", "time lost", "checkpoints", "checkpoint stall",
           "wall time", "goodput", "final loss")
# one colour per compared run: far apart in hue and lightness, none a marker's red or green
COMPARE_COLOURS = ("#1f77b4", "#e08e0b", "#7b3fa0", "#2a9d8f", "#8c564b", "#d4479b")
# where a line of training ended or began again: a parameter-server worker's return too (a
# presenter missed it beside "worker 1 lost", the other run's restart shown)
MARKER_KINDS = ("crash", "preemption", "hang", "nan_rollback", "resume", "worker_lost",
                "worker_back")
FIGURES_PX = {False: 13, True: 24}  # the large lines over the plot
COMPARE_LABELLED = 10  # a chaos demo's five faults, each with its resume, all named
COMPARE_LABEL_ROWS = 3  # each run's kill and resume labelled: two runs' resumes need a row each
MIN_FIGURES_PX = 16  # smaller than this a long line wraps instead
# A final loss prints with 4 to 6 significant digits when that tells the runs apart ("0.07339 ·
# 0.04708"); 17 digits each over the comparison's plot were noise to a room.
MIN_LOSS_DIGITS, MAX_LOSS_DIGITS = 4, 6
FIRST_WIDTH = 2.2  # the first run's curve, this many times wider: a curve lying on it shows
ROOM_GAP_PX = 18  # between the presentation table's columns
# its column names' size, of its figures': at 0.7 the back row read the figures and not their
# names (14 px beside 20, helper-36); each name takes two lines, so they are no wider for it
ROOM_HEADER_FRACTION = 0.85


def marker_owners(runs: list[tuple[str, list]]) -> list[tuple[str, float, str, tuple]]:
    """The markers to draw for `runs` ((key, `Timeline.markers`) each; those of
    `MARKER_KINDS`), as (kind, step, label, owners): a marker every run has (all killed at one
    step) once, owned by none; one that only some runs have, owned by the keys of those runs
    where more than one run has markers (its label gets a square in each one's colour), or a
    room cannot tell whose resume is whose."""
    owners: dict[tuple[str, float, str], list[str]] = {}
    for key, markers in runs:
        for marker in markers:
            if marker.kind in MARKER_KINDS:
                named = owners.setdefault((marker.kind, marker.step, marker.label), [])
                if key not in named:
                    named.append(key)
    marked = {key for named in owners.values() for key in named}  # the runs with markers
    every = {key for key, _ in runs}
    return [(kind, step, label, () if len(marked) < 2 or set(named) == every else tuple(named))
            for (kind, step, label), named in owners.items()]


def same_bits(a: float | None, b: float | None) -> bool:
    """Whether two final losses are the same float to the last bit (NaN equal to NaN)."""
    if a is None or b is None:
        return False
    return math.copysign(1.0, a) == math.copysign(1.0, b) and (
        a == b or (math.isnan(a) and math.isnan(b)))


def distinct_digits(losses: list[float | None]) -> int | None:
    """The fewest significant digits, from `MIN_LOSS_DIGITS` to `MAX_LOSS_DIGITS`, at which
    the different finite floats of `losses` all print differently; None when there are fewer
    than two or more digits are needed (two losses a few bits apart: only their full digits
    tell them apart)."""
    finite = {x for x in losses if x is not None and math.isfinite(x)}
    if len(finite) < 2:
        return None
    for digits in range(MIN_LOSS_DIGITS, MAX_LOSS_DIGITS + 1):
        if len({f"{x:.{digits}g}" for x in finite}) == len(finite):
            return digits
    return None


def loss_text(figures: RunFigures, rows: list[RunFigures], digits: int | None = None) -> str:
    """The final loss in full (the shortest digits that give its float back), or with
    `digits` significant digits (`distinct_digits` of `rows`: two equal texts are still equal
    floats), and "= NAME, bitwise" when an earlier run of `rows` ended on the same bits; "—"
    without a finite loss. A `model.fit` run's says it is the epoch's running mean."""
    loss = figures.final_loss
    if loss is None or not math.isfinite(loss):
        return "—"
    text = repr(loss) if digits is None else f"{loss:.{digits}g}"
    if figures.running_mean:  # not one step's loss: read beside one, it looked better
        text += f" ({RUNNING_MEAN})"
    for other in rows:
        if other is figures:
            break
        if same_bits(loss, other.final_loss):
            return f"{text} = {other.name}, bitwise"
    return text


def cells(figures: RunFigures, rows: list[RunFigures] | None = None) -> tuple[str, ...]:
    """One table row: counts as whole numbers, checkpoint and wall seconds to the hundredth;
    steps redone, time lost and goodput as the story line prints them (`RunFigures.shown`);
    the final loss as `loss_text` (against the earlier `rows`)."""
    shown, rows = figures.shown(), rows or [figures]
    return (figures.name, str(figures.incidents), shown["steps redone"],
            shown["time lost"], str(figures.checkpoints), stall_text(figures, rows),
            formatting.seconds(figures.wall, digits=2),
            shown["goodput"], loss_text(figures, rows))


def stall_text(figures: RunFigures, rows: list[RunFigures]) -> str:
    """`figures`' checkpoint stall in the unit the whole column of `rows` uses
    (`formatting.stalls`)."""
    texts = formatting.stalls([row.checkpoint_seconds for row in rows])
    for row, text in zip(rows, texts, strict=True):
        if row is figures:
            return text
    return formatting.stall(figures.checkpoint_seconds)


def headline(figures: RunFigures, rows: list[RunFigures] | None = None) -> str:
    """A run's key figures in one line: steps redone, time lost, its checkpoints and the
    training they stalled (what the time lost is weighed against: the presentation view
    leaves the table out; in the unit of the lines of `rows`), goodput."""
    shown = figures.shown()
    saves = formatting.counted(figures.checkpoints, "checkpoint")
    stalled = stall_text(figures, rows or [figures])
    return (f"{figures.name}: {formatting.counted(shown['steps redone'], 'step')} redone · "
            f"{shown['time lost']} lost · {saves}: {stalled} stalled · "
            f"goodput {shown['goodput']}")


ROOM_COLUMNS = ("steps redone", "time lost", "checkpoints", "checkpoint stall", "goodput")


def room_cells(figures: RunFigures, rows: list[RunFigures] | None = None) -> tuple[str, ...]:
    """One run's figures under `ROOM_COLUMNS`, as `headline` words them (the stall in the
    unit of the column of `rows`): the presentation view's table, which keeps them at a
    room's size where the one-line headline wrapped."""
    shown = figures.shown()
    return (shown["steps redone"], shown["time lost"], str(figures.checkpoints),
            stall_text(figures, rows or [figures]), shown["goodput"])


def unbroken_clauses(line: str) -> str:
    """`line` with the spaces inside each " · " clause made no-break: a line too long for the
    room's font wraps between its figures, not inside one ("goodput" / "100 %")."""
    return " · ".join(clause.replace(" ", formatting.NO_BREAK)
                      for clause in line.split(" · "))


def same_curves(curves: list[tuple[np.ndarray, np.ndarray]]) -> int:
    """How many steps the curves ((steps, losses) each) all have, when they have the same
    steps and every loss is the same float to the last bit (NaN equal to NaN); 0 otherwise
    or for fewer than two curves."""
    if len(curves) < 2:
        return 0
    steps, losses = (np.asarray(a) for a in curves[0])
    bits = np.asarray(losses, dtype=np.float64).view(np.uint64)
    for other_steps, other_losses in curves[1:]:
        if not np.array_equal(steps, np.asarray(other_steps)) or not np.array_equal(
                bits, np.asarray(other_losses, dtype=np.float64).view(np.uint64)):
            return 0
    return len(steps)


def final_line(rows: list[RunFigures], equal_steps: int = 0) -> str:
    """One line on the final losses: which runs ended on the first run's bits (the loss in
    full), or each run's final loss when they differ, with the fewest digits that tell them
    apart (`distinct_digits`; the table and the tooltip give them in full). Where every run
    logged the same `equal_steps` steps with the same losses to the bit (`same_curves`), the
    line says so: their curves lie on each other, and a room saw one colour and not why."""
    if len(rows) < 2:
        return ""
    first = rows[0]
    equal = [row.name for row in rows[1:] if same_bits(row.final_loss, first.final_loss)]
    if equal_steps and len(equal) == len(rows) - 1:
        runs = "both runs" if len(rows) == 2 else f"all {len(rows)} runs"
        return (f"same loss at all {equal_steps:,} steps in {runs}, to the bit: one curve lies "
                "on the other")
    if len(equal) == len(rows) - 1:
        return f"final loss {loss_text(first, rows)}: {', '.join(equal)} = {first.name}, bitwise"
    digits = distinct_digits([row.final_loss for row in rows])
    return "final loss " + " · ".join(f"{row.name} {loss_text(row, rows, digits)}"
                                      for row in rows)


class FiguresModel(RowsModel):
    """One row of `cells` per compared run (`rows`: `RunFigures`)."""

    columns = COLUMNS

    def set_rows(self, rows: list[RunFigures]) -> None:
        self.reset_rows(rows)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        figures = self.rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return cells(figures, self.rows)[index.column()]
        if role == Qt.ItemDataRole.ToolTipRole and index.column() == len(COLUMNS) - 1:
            loss = figures.final_loss
            return None if loss is None or not math.isfinite(loss) else loss.hex()
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() > 0:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class CompareView(QWidget):
    """The comparison (`compareView`): a `LossPlot` (`comparePlot`) of the compared runs'
    surviving training loss with their markers, their key figures in large lines
    (`compareFigures`) and all figures in `compareTable`. A window of its own unless
    `set_presenting(True)` (then it is placed in the main window, and `backRequested` is
    emitted by its Back button, `compareBack`)."""

    backRequested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("compareView")
        self.setWindowTitle("Compare runs")
        self.plot = LossPlot()
        self.plot.setObjectName("comparePlot")
        self.plot.label_rows = COMPARE_LABEL_ROWS
        self.plot.max_labelled = COMPARE_LABELLED
        # presenting, the figure lines above name each run in its colour: a legend over the
        # curves (under three rows of labels, mid-left) said it again
        self.plot.legend_when_presenting = False
        self.model_ = FiguresModel(self)
        self.table = QTableView()
        set_up_table(self.table, "compareTable", self.model_, stripes=True)
        self.figures = QLabel("")
        self.figures.setObjectName("compareFigures")
        self.figures.setWordWrap(True)
        self.figures.setTextFormat(Qt.TextFormat.RichText)
        self.back = QPushButton("Back to the run")
        self.back.setObjectName("compareBack")
        self.back.clicked.connect(self.backRequested)
        self.back.hide()
        self.problems = QLabel("")
        self.problems.setObjectName("compareProblems")
        self.problems.setWordWrap(True)
        self.presenting = False
        self.rows: list[RunFigures] = []
        self.equal_steps = 0  # steps every run logged with the same losses (`same_curves`)
        self.split = QSplitter(Qt.Orientation.Vertical)
        self.split.addWidget(self.plot)
        self.split.addWidget(self.table)
        self.split.setSizes([420, 160])
        top = QHBoxLayout()
        top.addWidget(self.figures, 1)
        top.addWidget(self.back, 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.split, 1)
        layout.addWidget(self.problems)
        self.resize(1000, 640)

    def show_runs(self, selected: list[RunSummary]) -> list[str]:
        """Compare `selected` (each shown by its name from `run.toml`, else its folder's);
        returns the problems met, one line per run that has no curve to draw."""

        named = [dataclasses.replace(run, name=run_notes.load(run.path).name or run.name)
                 for run in selected]
        self.plot.clear_overlays()
        self.plot.clear_run()
        problems = overlay_runs(self.plot, named)
        self.equal_steps = 0 if problems else same_curves(
            [(trace.series.x(), trace.series.y()) for trace in self.plot.overlays.values()])
        read = [read_run(run.path, run.name) for run in named]
        self.rows = [figures for _timeline, figures in read]
        self.model_.set_rows(self.rows)
        self._colour()
        keys = [str(run.path) for run in named]
        for kind, step, label, owners in marker_owners(
                [(key, timeline.markers) for key, (timeline, _) in zip(keys, read, strict=True)]):
            owners = tuple(self._colour_of(key) for key in owners if key in self.plot.overlays)
            self.plot.add_marker(kind, step, label, owners)
        self._show_figures()
        self.problems.setText("; ".join(problems))
        self.problems.setVisible(bool(problems))
        self.table.resizeColumnsToContents()
        return problems

    def set_presenting(self, on: bool) -> None:
        """The presentation's sizes (`on`): large curves, ticks and figure lines, the table
        left out (its figures are in the lines), a Back button; or the normal look."""
        self.presenting = bool(on)
        self.plot.set_presenting(self.presenting)
        self.table.setVisible(not self.presenting)
        self.back.setVisible(self.presenting)
        self._colour()
        self._show_figures()

    def _colour_of(self, key: str) -> str:
        """The colour `_colour` gave the run whose overlay is `key` (its folder)."""
        return COMPARE_COLOURS[list(self.plot.overlays).index(key) % len(COMPARE_COLOURS)]

    def _colour(self) -> None:
        """Each run its own colour of `COMPARE_COLOURS`, the first one's curve wider."""
        for index, trace in enumerate(self.plot.overlays.values()):
            trace.colour = COMPARE_COLOURS[index % len(COMPARE_COLOURS)]
            trace.style(self.plot.smoothing, self.presenting)
            if index == 0 and len(self.plot.overlays) > 1:
                pen = trace.raw.opts["pen"]
                pen.setWidthF(pen.widthF() * FIRST_WIDTH)
                trace.raw.setPen(pen)
        self.plot._rebuild_legend()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._show_figures()

    def _figures_px(self, lines: list[str], header: tuple[str, ...] = ()) -> int:
        """The largest font size, from `FIGURES_PX` down to `MIN_FIGURES_PX`, at which every
        line fits the label's width unwrapped (a wrapped line took the plot's height); with
        `header`, `lines` are a table's rows of cells under it (`_table_width`)."""
        px = round(FIGURES_PX[self.presenting] * theme.scale())
        width = self.width() - (self.back.sizeHint().width() + 40 if self.presenting else 30)
        while px > MIN_FIGURES_PX:
            if header:
                needed = _table_width(header, lines, px)
            else:
                metrics = QFontMetrics(theme.font_px(px, bold=True))
                needed = max((metrics.horizontalAdvance(line) for line in lines), default=0)
            if needed <= width:
                break
            px -= 1
        return px

    def _show_figures(self) -> None:
        html, px = self._room_table() if self.presenting and self.rows else self._lines()
        final = final_line(self.rows, self.equal_steps)
        if final:  # the verdict a room reads: sized on its own, not shrunk to the long lines
            html += (f'<div style="font-size:{self._figures_px([final])}px">'
                     f"{escape(formatting.unbroken_units(final))}</div>")
        self.figures.setText(f'<div style="font-size:{px}px; font-weight:bold; '
                             f'color:{theme.STORY_COLOUR}">' + html + "</div>")
        self._set_tip()

    def _lines(self) -> tuple[str, int]:
        """A line per run (`headline`), a coloured square before its name: (HTML, its
        pixel size)."""
        said = [headline(figures, self.rows) for figures in self.rows]
        px = self._figures_px([f"■ {line}" for line in said])
        lines = []
        for index, line in enumerate(said):
            colour = COMPARE_COLOURS[index % len(COMPARE_COLOURS)]
            lines.append(f'<span style="color:{colour}">■</span> '
                         f'{escape(unbroken_clauses(line))}')
        return "<br>".join(lines), px

    def _room_table(self) -> tuple[str, int]:
        """The presentation view's figures: a row per run under `ROOM_COLUMNS`, the columns
        aligned, at the largest size at which the table fits unwrapped (16 px and wrapped
        lines were what a room got from the headlines of two runs): (HTML, its pixel
        size)."""
        rows = [[f"■ {figures.name}", *room_cells(figures, self.rows)]
                for figures in self.rows]
        gap = ROOM_GAP_PX
        px = self._figures_px(rows, header=("", *ROOM_COLUMNS))
        header = "".join(f'<th align="right" valign="bottom" style="font-weight:normal; '
                         f'font-size:{_header_px(px)}px; padding-left:{gap}px">'
                         f'{"<br>".join(map(escape, name.split(" ")))}</th>'
                         for name in ROOM_COLUMNS)
        body = []
        for index, row in enumerate(rows):
            colour = COMPARE_COLOURS[index % len(COMPARE_COLOURS)]
            name = (f'<td><span style="color:{colour}">■</span> '
                    f"{escape(row[0][2:]).replace(' ', formatting.NO_BREAK)}</td>")
            cells_html = "".join(f'<td align="right" style="padding-left:{gap}px">'
                                 f"{escape(cell).replace(' ', formatting.NO_BREAK)}</td>"
                                 for cell in row[1:])
            body.append(f"<tr>{name}{cells_html}</tr>")
        return (f'<table cellspacing="0"><tr><th></th>{header}</tr>{"".join(body)}</table>',
                px)

    def _set_tip(self) -> None:
        self.figures.setToolTip("\n".join(f"{f.name}: final loss {f.final_loss!r} "
                                          f"({f.final_loss.hex()})" for f in self.rows
                                          if f.final_loss is not None
                                          and math.isfinite(f.final_loss)))


def _header_px(px: int) -> int:
    """The presentation table's column names: smaller than its figures, which a room reads."""
    return max(round(px * ROOM_HEADER_FRACTION), MIN_FIGURES_PX - 4)


def _table_width(header: tuple[str, ...], rows: list[list[str]], px: int) -> int:
    """Pixels the presentation table takes at size `px`: each column as wide as its widest
    cell (bold, `px`) or the longest word of its name (`_header_px`: a word a line),
    `ROOM_GAP_PX` between columns."""
    cells = QFontMetrics(theme.font_px(px, bold=True))
    names = QFontMetrics(theme.font_px(_header_px(px)))
    widths = [max([names.horizontalAdvance(word) for word in name.split(" ")]
                  + [cells.horizontalAdvance(row[k]) for row in rows])
              for k, name in enumerate(header)]
    return sum(widths) + ROOM_GAP_PX * (len(widths) - 1)
