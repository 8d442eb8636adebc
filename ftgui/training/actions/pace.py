"""The `pace` setting in the trainer: at most `pace` global steps a second, so that a room can
follow the curve. The loop waits after a step; the step itself, its data and its loss are the
same as at full speed."""

from __future__ import annotations

import time
from collections.abc import Callable

from ftgui.training.actions import Action, StepOutput


class Pace(Action):
    """Waits after each step until `1 / steps_per_second` seconds have passed since the step
    before was let go. A step that came late (a checkpoint, a hold for the presenter) starts a
    new count from now: the loop never races to catch up. `clock` (seconds, monotonic) and
    `sleep` are parameters for tests."""

    def __init__(self, steps_per_second: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        if steps_per_second <= 0:
            raise ValueError(f"pace: {steps_per_second!r} is not a positive number of steps/s")
        self.interval = 1.0 / steps_per_second
        self.clock, self.sleep = clock, sleep
        self._due: float | None = None  # when the next step may be let go

    def __call__(self, output: StepOutput) -> None:
        now = self.clock()
        if self._due is None or now > self._due + self.interval:
            self._due = now
        self._due += self.interval
        if self._due > now:
            self.sleep(self._due - now)
        return None
