"""The `step` events of the chief and the heartbeats of the other workers; `run_finished`."""

from __future__ import annotations

import time
from collections.abc import Callable

from ftgui.training.actions import Action, StepOutput


class StepEvents(Action):
    """Writes a `step` event (step, loss, epoch) for every step of the chief; another worker of
    a cluster writes a `heartbeat` (role, index, step) at most about once a second, so that the
    supervisor sees it alive without a line per step. At the end the chief writes
    `run_finished` (step, loss, seconds).

    `events`: an `EventWriter`; `epoch_of(step)`: the epoch of a global step; `clock`: seconds
    of a monotonic clock (a parameter for tests).
    """

    HEARTBEAT_SECONDS = 1.0

    def __init__(self, events, epoch_of: Callable[[int], int], is_chief: bool,
                 role: str = "chief", index: int = 0,
                 clock: Callable[[], float] = time.monotonic):
        self.events, self.epoch_of, self.is_chief = events, epoch_of, is_chief
        self.role, self.index, self.clock = role, index, clock
        self._last_heartbeat = 0.0

    def __call__(self, output: StepOutput) -> None:
        if self.is_chief:
            self.events.emit_step(output.step, output.loss, self.epoch_of(output.step))
        elif self.clock() - self._last_heartbeat > self.HEARTBEAT_SECONDS:
            self._last_heartbeat = self.clock()
            self.events.emit("heartbeat", role=self.role, index=self.index, step=output.step)
        return None

    def finished(self, output: StepOutput, seconds: float) -> None:
        if self.is_chief:
            self.events.emit("run_finished", step=output.step, loss=output.loss,
                             seconds=seconds)
