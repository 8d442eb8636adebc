"""The loss of every step as a TensorBoard scalar (through `ftgui.training.summaries`)."""

from __future__ import annotations

from pathlib import Path

from ftgui.core.checkpoints import listing
from ftgui.core.record import events
from ftgui.training.actions import Action, StepOutput


def unlogged_after(run_dir: Path, start_step: int) -> int | None:
    """For a run resumed at `start_step`: the step after which TensorBoard may lack the losses
    up to `start_step`, or None when it has them all.

    Losses reach TensorBoard when a periodic checkpoint is saved, before its metadata, so a
    valid periodic checkpoint vouches for every step up to its own. A resume from an in-memory
    snapshot or a just-in-time save starts after steps that were never written: those since
    the newest periodic checkpoint below it (0 when there is none)."""
    found = [c for c in listing.list_checkpoints(run_dir) if c.valid and c.step <= start_step]
    periodic = [c.step for c in found
                if not c.meta.get("just_in_time") and c.meta.get("source") != "memory"]
    newest = max(periodic, default=0)
    return None if newest == start_step else newest


class LossSummary(Action):
    """Queues each step's loss on `summaries` (a `Summaries`; a no-op one on workers other than
    the chief) and closes it at the end. A run that starts after step 0 (resumed, forked) first
    tells TensorBoard that steps from `start_step + 1` are logged anew. `run_dir` (the chief's):
    a resume that TensorBoard's file lags behind (`unlogged_after`) first logs the missing
    losses again, from the run's `step` events."""

    def __init__(self, summaries, start_step: int, run_dir: Path | None = None):
        self.summaries = summaries
        if start_step <= 0:
            return
        after = unlogged_after(run_dir, start_step) if run_dir is not None else None
        if after is None:
            summaries.restart_at(start_step + 1)
            return
        summaries.restart_at(after + 1)
        summaries.backfill(lambda: _losses(run_dir, after, start_step))

    def __call__(self, output: StepOutput) -> None:
        self.summaries.scalar("loss", output.loss, output.step)
        return None

    def close(self) -> None:
        self.summaries.close()


def _losses(run_dir: Path, after: int, last: int) -> list[tuple[int, float]]:
    """The run's loss of each step in (after, last] from its `step` events, in step order."""
    losses = events.final_losses(events.read_all(run_dir))
    return [(step, losses[step]) for step in range(after + 1, last + 1)
            if losses.get(step) is not None]
