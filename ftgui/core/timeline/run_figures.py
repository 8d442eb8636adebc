"""A run's figures for comparing runs: incidents, steps redone, time lost, checkpoint stall and
goodput, from its `Timeline` and its `checkpoint_saved` events (no Qt, no TensorFlow).

Checkpoint time is the training time spent on checkpoints: the sum of each `checkpoint_saved`
event's `stall_seconds` (how long the step loop waited for the save; a background save stalls
only for its copy), or its `save_seconds` where an older trainer wrote no stall.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from ftgui.core.record import event_history
from ftgui.core.record.run_lock import is_busy
from ftgui.core.record.run_state import INTERRUPTED_REASON
from ftgui.core.timeline.model import Timeline

RUNNING_MEAN = "epoch's running mean"  # what model.fit logs as its loss (`running_mean`)


@dataclass(frozen=True)
class RunFigures:
    """One run's figures. Seconds are wall seconds; `goodput` is a fraction in [0, 1];
    `running_mean`: its step losses, the final one too, are `model.fit`'s running means over
    each epoch, not the last step's loss;
    incidents, steps redone, time lost, wall and goodput are the timeline's `Totals` (the
    figures the story line, the Incidents tab and `ftgui train` print), a fork counting as
    neither an incident's cost nor redone work."""

    name: str
    incidents: int
    steps_redone: int
    time_lost: float
    checkpoints: int
    checkpoint_seconds: float
    wall: float
    goodput: float
    last_step: int
    final_loss: float | None
    running_mean: bool = False  # its losses are Keras' running means over each epoch (fit)

    def shown(self) -> dict[str, str]:
        """Steps redone, time lost and goodput as every view prints them
        (`ftgui.core.formatting`): {"steps redone": "5", "time lost": "2.2 s",
        "goodput": "56 %"}."""
        from ftgui.core.formatting import percent, seconds

        return {"steps redone": str(self.steps_redone), "time lost": seconds(self.time_lost),
                "goodput": percent(self.goodput)}


def checkpoint_seconds(event: dict) -> float:
    """The seconds a `checkpoint_saved` event says training spent on that save (0 if unknown)."""
    for key in ("stall_seconds", "save_seconds"):
        value = event.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
                value):
            return float(value)
    return 0.0


def figures(name: str, timeline: Timeline, saves: list[dict]) -> RunFigures:
    """The figures of a run whose events fed `timeline`; `saves` are its `checkpoint_saved`
    events."""
    totals = timeline.totals()
    return RunFigures(
        name=name, incidents=totals.incidents,
        steps_redone=totals.steps_lost,
        time_lost=totals.time_lost, checkpoints=len(saves),
        checkpoint_seconds=sum(checkpoint_seconds(e) for e in saves), wall=totals.wall,
        goodput=totals.goodput, last_step=timeline.last_step, final_loss=timeline.last_loss,
        running_mean=timeline.config.get("loop") == "fit",
    )


def read_run(run_dir: str | os.PathLike, name: str | None = None) -> tuple[Timeline,
                                                                            RunFigures]:
    """The timeline and figures of the run in `run_dir` (named `name`, default its folder's
    name), read the fast way (`event_history.read_history`); a run without events has empty ones.
    A run whose events stop mid-attempt while no process holds its lock is `interrupted`."""
    history = event_history.read_history(run_dir)
    timeline = Timeline()
    timeline.feed(history)
    if timeline.state in ("running", "recovering") and not is_busy(run_dir):
        # as the window and the run history say it: nobody supervises it any more (`ftgui
        # train` killed with SIGKILL, a power cut); a report said "running" of such a run
        timeline.state, timeline.reason = "interrupted", INTERRUPTED_REASON
    saves = [event for _, event in history.others if event["event"] == "checkpoint_saved"]
    return timeline, figures(name or Path(run_dir).name, timeline, saves)
