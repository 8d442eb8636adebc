"""Other runs' loss curves overlaid on a `LossPlot` (Runs dock → Overlay, the comparison view)."""

from __future__ import annotations

from ftgui.core.record import event_history
from ftgui.core.record.runs import RunSummary


def overlay_runs(plot, selected: list[RunSummary]) -> list[str]:
    """Overlay each run's surviving training-loss curve on `plot` (a `LossPlot`); returns the
    problems met (one line per run that could not be shown)."""
    problems = []
    for run in selected:
        try:
            curves = event_history.read_curves(run.path)
        except OSError as exc:
            problems.append(f"{run.name}: cannot read its events ({exc.strerror or exc})")
            continue
        steps, times, losses = curves.surviving_train()
        if not len(steps):
            problems.append(f"{run.name}: no training steps logged yet")
            continue
        plot.add_overlay(str(run.path), run.name, steps, losses, times, curves.origin)
    return problems
