"""Scheduled faults inside the trainer: poison a step's loss with NaN, ask for a preemption
before a step, kill or freeze this process right after a step, or kill it inside the checkpoint
save or the in-memory snapshot of a step (`KillInside`)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field

from ftgui.core.record import exitcodes
from ftgui.core.supervision.fault_plan import KILL_IN_SAVE
from ftgui.training.actions import Action, StepOutput

# After a step, in this order: a hang planned at the same step as a kill comes first.
SIGNALS_AFTER_STEP = (("hang", exitcodes.HANG_SIGNAL), ("kill", exitcodes.KILL_SIGNAL))


@dataclass
class Faults:
    """Faults the supervisor armed for this process: `(kind, step, target)` with kind kill or
    hang (right after the step), preempt (stop after the step), nan (poison that step's loss)."""

    planned: list[tuple[str, int, str]] = field(default_factory=list)

    def at(self, step: int, kind: str) -> str | None:
        """The target name of a `kind` fault planned at `step`, else None."""
        for planned_kind, planned_step, target in self.planned:
            if (planned_kind, planned_step) == (kind, step):
                return target
        return None

    def steps(self, after: int) -> list[int]:
        """The steps after global step `after` at which any fault is planned."""
        return [step for _, step, _ in self.planned if step > after]

    def signals_after(self, step: int) -> list[tuple[str, int, str]]:
        """(kind, signal number, target) of the hang and kill faults planned right after
        global step `step`, in the order they are sent."""
        return [(kind, sig, target) for kind, sig in SIGNALS_AFTER_STEP
                if (target := self.at(step, kind)) is not None]


def signal_self(signum: int) -> None:
    """Send `signum` to this process (a kill does not return)."""
    os.kill(os.getpid(), signum)


class KillInside:
    """The kills planned inside a checkpoint save (`kill-in-save`) or an in-memory snapshot
    (`kill-in-snapshot`) of this process. The save and the snapshot ask `planned(kind, step)`
    and, at the moment the fault is for, call `fire(kind, step)`: it writes the
    `fault_injected` event and SIGKILLs this process (from any thread)."""

    def __init__(self, faults: Faults, events, send_signal: Callable[[int], None] = signal_self):
        self.faults, self.events, self.send_signal = faults, events, send_signal
        # the checkpoint in flight: a snapshot's kill lets it finish first, as a plain kill
        # does, so that the schedule always recovers the same way (set by the assembly)
        self.wait_for_save: Callable[[], None] = lambda: None

    def planned(self, kind: str, step: int) -> bool:
        """Whether a `kind` kill is planned inside global step `step`'s save or snapshot."""
        return self.faults.at(step, kind) is not None

    def fire(self, kind: str, step: int) -> None:
        """Kill this process now if a `kind` kill is planned at `step` (else nothing)."""
        target = self.faults.at(step, kind)
        if target is None:
            return
        self.events.emit("fault_injected", kind=kind, target=target, step=step,
                         source="schedule")
        print(f"fault: SIGKILL inside the {kind.removeprefix('kill-in-')} of step {step}",
              flush=True)
        self.send_signal(exitcodes.KILL_SIGNAL)


class FaultHooks(Action):
    """Fires the planned `faults` of this process and writes a `fault_injected` event for each
    (kind, target, step, source "schedule").

    Before a chunk of steps the loop asks `poison(steps)` (a step's loss is poisoned once: the
    replay after a rollback is clean) and `arm_preemption(last)`; after each step this action
    sends the planned hang (SIGSTOP) and kill (SIGKILL) to the process, after `wait_for_save()`
    has let the checkpoint in flight finish, so the same schedule always recovers from the same
    checkpoint; after a step whose save holds a `kill-in-save` it waits for that save (which
    kills the process), so no later step runs. `requests`: the process' stop/save flags
    (`signals.Requests`); `send_signal`
    a parameter for tests.
    """

    def __init__(self, faults: Faults, events, requests, wait_for_save: Callable[[], None],
                 send_signal: Callable[[int], None] = signal_self):
        self.faults, self.events, self.requests = faults, events, requests
        self.wait_for_save, self.send_signal = wait_for_save, send_signal
        self._poisoned_steps: set[int] = set()
        # Looked up every step: sets, so that a step without a fault costs a lookup.
        self._steps = {kind: {step for planned_kind, step, _ in faults.planned
                              if planned_kind == kind}
                       for kind in ("nan", "preempt")}
        self._signal_steps = {step for kind, step, _ in faults.planned
                              if kind in dict(SIGNALS_AFTER_STEP)}
        self._save_kill_steps = {step for kind, step, _ in faults.planned
                                 if kind == KILL_IN_SAVE}

    def planned_after(self, step: int) -> list[int]:
        """The steps after global step `step` at which a fault is planned."""
        return self.faults.steps(after=step)

    def poison(self, steps: range) -> list[bool]:
        """For each global step in `steps`: whether to poison its loss with NaN."""
        return [self._poisoned(step) for step in steps]

    def _poisoned(self, step: int) -> bool:
        if self.requests.take_nan():  # "Inject NaN now" (SIGUSR2 from the window)
            self.events.emit("fault_injected", kind="nan", target="chief", step=step,
                             source="user")
            return True
        if step not in self._steps["nan"]:
            return False
        target = self.faults.at(step, "nan")
        if target is None or step in self._poisoned_steps:
            return False
        self._poisoned_steps.add(step)  # once: the replay after the rollback is clean
        self._injected("nan", target, step)
        return True

    def arm_preemption(self, last: int) -> None:
        """A preemption planned at step `last` (the end of the coming chunk) is requested
        before that step runs, so that every worker learns it in that step and saves it."""
        target = self.faults.at(last, "preempt") if last in self._steps["preempt"] else None
        if target is not None:
            self._injected("preempt", target, last)
            self.requests.stop = True

    def __call__(self, output: StepOutput) -> None:
        if output.step in self._save_kill_steps:
            self.wait_for_save()  # the background save kills the process inside it
        if output.step not in self._signal_steps:
            return None
        if self.requests.stop:
            # asked to save and stop (SIGTERM, e.g. Ctrl-C of `ftgui train` while a hold
            # waited at this step): the preemption is taken at this step; the fault would
            # throw its save away
            return None
        for kind, signum, target in self.faults.signals_after(output.step):
            self.wait_for_save()
            self._injected(kind, target, output.step)
            print(f"fault: {signal.Signals(signum).name} at step {output.step}", flush=True)
            self.send_signal(signum)
        return None

    def _injected(self, kind: str, target: str, step: int) -> None:
        self.events.emit("fault_injected", kind=kind, target=target, step=step,
                         source="schedule")
