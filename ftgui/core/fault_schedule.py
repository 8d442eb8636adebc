"""Which planned faults of a run have fired, and which the supervisor fires itself.

A planned fault fires once per run, even when a restart replays its step (`ftgui.core.faults`).
A process that counts steps fires its own faults (they go on its command line); a
parameter-server worker or ps counts none, so its kill, hang and preempt are armed here and
fired by the supervisor on the chief's step. `kill_after_seconds` is a timer kept here too.
"""

from __future__ import annotations

import time

from ftgui.core import faults
from ftgui.core.cluster import Task
from ftgui.core.config import RunConfig

TIMER_KEY = "timer"  # the timer's key among the fired faults


class FaultSchedule:
    """The fault plan's state over a run's attempts: `fired` keys (`kind@step:target`, and
    `timer`), `armed` faults the supervisor fires itself, and `timer_due` (Unix seconds)."""

    def __init__(self):
        self.fired: set[str] = set()
        self.armed: list[faults.Fault] = []
        self.timer_due: float | None = None

    def observe(self, event: dict) -> None:
        """Note a `fault_injected` event of a planned fault (from any attempt's history)."""
        if event.get("event") == "fault_injected" and event.get("source") == "schedule":
            self.fired.add(f"{event.get('kind')}@{event.get('step')}:{event.get('target')}")

    def new_attempt(self) -> None:
        """Forget the faults armed for the last attempt's processes."""
        self.armed = []

    def start_timer(self, config: RunConfig) -> None:
        """Start the `kill_after_seconds` timer unless it runs or fired already (it runs on
        across restarts until it fires)."""
        if config.kill_after_seconds and TIMER_KEY not in self.fired:
            self.timer_due = self.timer_due or time.time() + config.kill_after_seconds

    def args_for(self, config: RunConfig, task: Task, task_names: list[str]) -> list[str]:
        """The unfired faults `task` fires itself (as `KIND@STEP:TARGET`); the kill, hang and
        preempt of a task that counts no steps are armed instead."""
        runs_steps = config.strategy != "parameter-server" or task.role == "chief"
        own = []
        for fault in faults.plan(config, task_names):
            hits = fault.target == task.name or (fault.target == "chief" and task.is_chief)
            if not hits or fault.key in self.fired:
                continue
            if runs_steps:
                own.append(fault.key)
            elif fault.kind in ("kill", "hang", "preempt"):
                self.armed.append(fault)
        return own

    def due(self, step: int) -> list[faults.Fault]:
        """The armed faults the chief's `step` reaches, now counted as fired."""
        reached = [fault for fault in self.armed if step >= fault.step]
        for fault in reached:
            self.armed.remove(fault)
            self.fired.add(fault.key)
        return reached

    def timer_fires(self) -> bool:
        """True once, when the timer is due (it is then counted as fired)."""
        if self.timer_due is None or time.time() < self.timer_due:
            return False
        self.timer_due = None
        self.fired.add(TIMER_KEY)
        return True
