"""What a presenter sees of a run's story, offscreen: forks drawn as branches, a readable event
log, keyboard shortcuts, slide-quality export, Reset to defaults and the New button."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import numpy as np
from PySide6.QtCore import Qt

from ftgui.core.timeline import Timeline
from ftgui.qt.branches import ABANDONED_LABEL, branch_colour


def fork_timeline() -> Timeline:
    """Steps 1-100 (attempt 0), then a fork from the checkpoint of step 50 (attempt 1)."""
    def steps(first, last, attempt):
        return [{"event": "step", "attempt": attempt, "step": s, "loss": 1.0 / s,
                 "time": 1000.0 + attempt * 200 + s} for s in range(first, last + 1)]

    timeline = Timeline()
    timeline.feed([
        *steps(1, 100, 0),
        {"event": "forked", "attempt": 1, "time": 1150.0, "from_step": 50,
         "archived_steps": [60, 80, 100], "archive": "history/fork-1/checkpoints"},
        {"event": "resumed", "attempt": 1, "time": 1151.0, "from_step": 50},
        *steps(51, 120, 1),
    ])
    return timeline


def test_a_fork_is_drawn_as_a_branch(qtbot):
    from ftgui.qt.loss_plot import LossPlot

    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.show_timeline(fork_timeline())
    plot.redraw()
    old, new = plot.traces[0], plot.traces[1]
    assert old.raw.opts["pen"].style() == Qt.PenStyle.DashLine  # the abandoned branch
    assert new.raw.opts["pen"].style() == Qt.PenStyle.SolidLine
    assert new.colour == branch_colour(1) != old.colour
    solid = plot.branches.solid[0]  # steps 1-50, the history both branches share
    x, _ = solid.getData()
    assert (x[0], x[-1], len(x)) == (1.0, 50.0, 50)
    assert solid.opts["pen"].style() == Qt.PenStyle.SolidLine
    assert plot.regions == []  # no red "redone" shading: a fork is no recovery
    labels = [label.text for _, label in plot.legend.items]
    assert ABANDONED_LABEL in labels and "fork ← 50" in labels
    plot.set_smoothing(0.6)  # restyling by the plot keeps the branch look
    plot.redraw()
    assert old.smooth.opts["pen"].style() == Qt.PenStyle.DashLine
    assert np.array_equal(plot.traces[0].series.x()[-1:], [100.0])


def test_a_fork_s_archived_checkpoints_stay_listed_greyed_under_the_fork(qtbot, tmp_path):
    from conftest import fake_checkpoint

    from ftgui.qt import theme
    from ftgui.qt.checkpoint_table import CheckpointTable

    run_dir = tmp_path / "run"
    for step in (10, 20, 30, 40, 50, 60, 70):
        fake_checkpoint(run_dir, step)
    for step in (60, 80, 100):  # what the fork of attempt 1 (from step 50) moved aside
        fake_checkpoint(run_dir / "history" / "fork-1", step)
    table = CheckpointTable()
    qtbot.addWidget(table)
    table.refresh(run_dir)
    model = table.model_
    steps = [model.data(model.index(row, 0)) for row in range(model.rowCount())]
    assert steps == ["10", "20", "30", "40", "50", "↳ 60 (fork 1)", "↳ 80 (fork 1)",
                     "↳ 100 (fork 1)", "60", "★ 70"]
    grey = model.data(model.index(6, 2), Qt.ItemDataRole.ForegroundRole)
    assert grey.color().name() == theme.MUTED
    assert model.data(model.index(6, 0), Qt.ItemDataRole.ToolTipRole).endswith(
        "history/fork-1/checkpoints/ckpt-80")
    table.selectRow(6)
    assert table.selected_step() is None  # shown, never restored from here
    table.selectRow(9)
    assert table.selected_step() == 70
