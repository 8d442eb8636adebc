"""A planned hold inside the trainer: after a global step, wait at the step boundary until the
supervisor lets this attempt go on (`ftgui.core.supervision.holds`), writing heartbeats
meanwhile."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ftgui.core.supervision import holds
from ftgui.training.actions import Action, StepOutput

POLL_SECONDS = 0.05  # how often the release file is looked for while held
HEARTBEAT_SECONDS = 1.0


class Hold(Action):
    """Holds after each step of `planned` (step -> why: `presenter`, `standby`, a target),
    once per process. It first lets the checkpoint in flight finish (`wait_for_save`), so that
    a fault the supervisor fires at the held step (under Slurm, or at a parameter-server task)
    recovers from the same checkpoint as one the trainer fires itself; then writes `held`
    (step, role, index, why), a `heartbeat` about once a second, and `hold_released` (step,
    role, index, seconds, by) when the supervisor's release comes or SIGTERM asked to stop
    (`requests.stop`: the preemption is then taken at this step). `clock` and `sleep` are
    parameters for tests."""

    def __init__(self, planned: dict[int, str], run_dir: Path, events, requests,
                 role: str = "chief", index: int = 0,
                 wait_for_save: Callable[[], None] = lambda: None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.planned, self.run_dir, self.events = dict(planned), run_dir, events
        self.requests, self.role, self.index = requests, role, index
        self.wait_for_save = wait_for_save
        self.clock, self.sleep = clock, sleep

    def __call__(self, output: StepOutput) -> None:
        why = self.planned.pop(output.step, None)
        if why is None:
            return None
        self.wait_for_save()
        who = {"role": self.role, "index": self.index}
        self.events.emit("held", step=output.step, why=why, **who)
        print(f"held after step {output.step} ({why})", flush=True)
        began = beat = self.clock()
        while (by := self._released(output.step)) is None:
            if self.clock() - beat >= HEARTBEAT_SECONDS:
                beat = self.clock()
                self.events.emit("heartbeat", step=output.step, held=True, **who)
            self.sleep(POLL_SECONDS)
        self.events.emit("hold_released", step=output.step, seconds=self.clock() - began,
                         by=by, **who)
        return None

    def _released(self, step: int) -> str | None:
        if self.requests.stop:
            return "preemption"
        return holds.released_by(self.run_dir, self.events.attempt, step)


def planned_holds(planned: list[tuple[str, int, str]]) -> dict[int, str]:
    """step -> why of the holds among a process' planned faults (kind, step, target)."""
    return {step: why for kind, step, why in planned if kind == holds.KIND}
