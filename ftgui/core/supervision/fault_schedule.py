"""Which planned faults of a run have fired, and which the supervisor fires itself.

A planned fault fires once per run, even when a restart replays its step
(`ftgui.core.supervision.fault_plan`). A process that counts steps fires its own faults (they go on
its command line); a parameter-server worker or ps counts none, so its kill, hang and preempt are
armed here and fired by the supervisor on the chief's step (the coordinator holds at that step until
it is: `ftgui.core.supervision.holds`). Under Slurm every kill and preempt is armed so (each
task holds at its step), and the supervisor sends it through Slurm. Planned holds (`holds`: a
demo's presenter, a fault waiting for the warm standby) go to every process that counts steps,
and happen once per run like the faults. `kill_after_seconds` is a timer kept here too.
"""

from __future__ import annotations

import time

from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision import fault_plan, holds
from ftgui.core.supervision.cluster import Task

TIMER_KEY = "timer"  # the timer's key among the fired faults


class FaultSchedule:
    """The fault plan's state over a run's attempts: `fired` keys (`kind@step:target`, and
    `timer`), `armed` faults the supervisor fires itself, `timer_due` (Unix seconds) and
    `timer_left` (seconds, while paused)."""

    def __init__(self):
        self.fired: set[str] = set()
        self.armed: list[fault_plan.PlannedFault] = []
        self.timer_due: float | None = None
        self.timer_left: float | None = None  # seconds left while paused between attempts
        # planned holds: step -> why (`ftgui.core.supervision.holds`)
        self.holds: dict[int, str] = {}
        self.held: set[int] = set()  # steps the run already held at (a hold happens once)
        # a standby hold's step -> the keys of its faults: due again while one has not fired
        self.hold_faults: dict[int, list[str]] = {}

    def observe(self, event: dict) -> None:
        """Note a `fault_injected` event of a planned fault (from any attempt's history)."""
        if event.get("event") == "fault_injected" and event.get("source") == "schedule":
            self.fired.add(f"{event.get('kind')}@{event.get('step')}:{event.get('target')}")
        elif event.get("event") == "fault_injected" and event.get("source") == TIMER_KEY:
            self.fired.add(TIMER_KEY)  # a resume of the run must not fire it again
        elif event.get("event") == "held":
            self.held.add(event.get("step"))

    def new_attempt(self) -> None:
        """Forget the faults armed for the last attempt's processes."""
        self.armed = []

    def start_timer(self, config: RunConfig) -> None:
        """Start the `kill_after_seconds` timer, or go on with it, unless it runs or fired
        already. The supervisor calls it on each live step event, so it counts seconds of
        training: from the run's first step, paused between attempts (`pause_timer`) so that
        it never fires while a restarted process imports TensorFlow. It fires once per run."""
        if config.kill_after_seconds and TIMER_KEY not in self.fired and self.timer_due is None:
            left = config.kill_after_seconds if self.timer_left is None else self.timer_left
            self.timer_due = time.time() + left

    def pause_timer(self) -> None:
        """Stop the timer's clock (the attempt ended): what is left runs from the next
        attempt's first step."""
        if self.timer_due is not None:
            self.timer_left = max(self.timer_due - time.time(), 0.0)
            self.timer_due = None

    def args_for(self, config: RunConfig, task: Task, task_names: list[str]) -> list[str]:
        """The unfired faults `task` fires itself (as `KIND@STEP:TARGET`); the kill, hang and
        preempt of a task that counts no steps are armed instead."""
        runs_steps = config.strategy != "parameter-server" or task.role == "chief"
        own = []
        for fault in fault_plan.plan(config, task_names):
            slurm = self._through_slurm(config, fault)
            if runs_steps and (slurm or not self._hits(fault, task)) and self._armed_elsewhere(
                    config, fault):
                # the coordinator holds at the step of a worker's or ps' fault until the
                # supervisor fired it, so the fault lands at its step, not a chunk later
                # (under Slurm every task holds: the fault comes through Slurm, `scancel`)
                own.extend(self._hold_arg(fault.step, fault.target))
            if not self._hits(fault, task) or fault.key in self.fired:
                continue
            if runs_steps and not slurm:
                own.append(fault.key)
            elif fault.kind in ("kill", "hang", "preempt"):
                self.armed.append(fault)
        if runs_steps:
            for step, why in sorted(self.holds.items()):
                own.extend(self._hold_arg(step, why))
        return own

    @staticmethod
    def _hits(fault: fault_plan.PlannedFault, task: Task) -> bool:
        return fault.target == task.name or (fault.target == "chief" and task.is_chief)

    def _armed_elsewhere(self, config: RunConfig, fault: fault_plan.PlannedFault) -> bool:
        """A fault the supervisor fires itself on the chief's step (a parameter-server
        worker's or ps' kill, hang or preempt; any kill or preempt under Slurm), not fired
        yet."""
        elsewhere = (config.strategy == "parameter-server" and fault.target != "chief") or \
            self._through_slurm(config, fault)
        return (elsewhere and fault.kind in ("kill", "hang", "preempt")
                and fault.key not in self.fired)

    @staticmethod
    def _through_slurm(config: RunConfig, fault: fault_plan.PlannedFault) -> bool:
        """A kill or preempt of a run under Slurm: sent through Slurm (`scancel --signal`)
        by the supervisor, not fired by the trainer itself."""
        return config.launcher == "slurm" and fault.kind in ("kill", "preempt")

    def _hold_arg(self, step: int, why: str) -> list[str]:
        if why == "standby" and step in self.hold_faults:
            due = any(key not in self.fired for key in self.hold_faults[step])
        else:
            due = step not in self.held
        return [f"{holds.KIND}@{step}:{why}"] if due else []

    def due(self, step: int, held: bool = False) -> list[fault_plan.PlannedFault]:
        """The armed faults due when the chief reports `step`, now counted as fired: those of
        an earlier step, and those of `step` itself once the chief is `held` there (it holds
        at a fault's step after its checkpoint in flight is written, so the fault recovers
        from the same checkpoint as one the trainer fires itself). A fault whose hold was not
        planned (the run held at that step before) fires at the next step."""
        reached = [fault for fault in self.armed
                   if fault.step < step or (held and fault.step == step)]
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
