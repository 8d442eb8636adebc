"""The faults a supervisor injects: Kill, Preempt, Freeze, Thaw and Checkpoint now from the user,
the scheduled faults it fires itself on the chief's step, the timer fault and the watchdog.

`FaultInjection` is a part of `ftgui.core.supervision.supervisor.Supervisor` (a mixin): it uses the
supervisor's processes, its fault schedule (`_faults`), `_emit`, `_drain`, `_chief`,
`_await_just_in_time` and `_kill_all`, and writes `fault_injected`, `checkpoint_requested`,
`thawed` and `hang_detected`; and it holds and lets go the trainers at planned steps
(`ftgui.core.supervision.holds`): a fault injected into a held attempt lets it go, so the fault
lands at the held step. A command on a run whose trainer has written `run_finished` does nothing,
writes nothing, and says why in `refusal` (its processes may still be alive for a moment
while they exit: a signal then would record a fault after the end).
"""

from __future__ import annotations

import os
import signal
import time

from ftgui.core.supervision import holds
from ftgui.core.supervision.processes import signal_tree

FAULT_SIGNALS = {"kill": signal.SIGKILL, "preempt": signal.SIGTERM, "hang": signal.SIGSTOP}
FAULT_NAMES = {"kill": "Kill", "preempt": "Preempt", "hang": "Freeze"}
STARTUP_GRACE_SECONDS = 120.0  # the watchdog allows this long for imports before a first step
STANDBY_HOLD_SECONDS = 60.0  # the longest a fault waits for the warm standby (imports: 3-7 s)


class FaultInjection:
    """Injecting faults into the processes of a supervisor's current attempt."""

    def kill(self, target: str = "chief") -> bool:
        """Crash `target` (`chief`, `worker:I`, `ps:I` or `all`) with SIGKILL to its process tree.

        Returns False when no such process is alive. Writes a `fault_injected` event first.
        """
        return self._inject("kill", target, signal.SIGKILL)

    def preempt(self, target: str = "chief") -> bool:
        """Ask `target` to save at its current step and stop (SIGTERM). False if not alive."""
        return self._inject("preempt", target, signal.SIGTERM)

    def preempt_and_stop(self) -> bool:
        """Ask the chief to save at its current step and stop, with no automatic restart
        after it (how a signal to `ftgui train` ends a run). False if nothing is alive."""
        self._recovery.held = True
        return self.preempt("chief")

    def checkpoint_now(self) -> bool:
        """Ask the chief to save a checkpoint after its current step (SIGUSR1); the other
        workers of a cluster learn it in the same step. False if no chief is alive."""
        chief = self._chief()
        if self._has_finished("Checkpoint now"):
            return False
        if chief is None or not self._progress_seen:
            return False  # before its first step the trainer may not handle SIGUSR1 yet
        self._emit("checkpoint_requested", step=self.last_step)
        os.kill(chief.pid, signal.SIGUSR1)
        return True

    def freeze(self, target: str = "chief") -> bool:
        """Hang `target` (SIGSTOP to its tree): it stays alive but makes no progress, as a
        deadlocked or swapped-out process would. False if not alive."""
        return self._inject("hang", target, signal.SIGSTOP)

    def thaw(self, target: str = "chief") -> bool:
        """Let a frozen `target` go on (SIGCONT). False if not alive."""
        if self._has_finished("Thaw"):
            return False
        victims = [p for p in self.processes if p.alive and p.matches(target)]
        for proc in victims:
            signal_tree(proc.pid, signal.SIGCONT)
            proc.last_heartbeat = time.time()
        if victims:
            self._emit("thawed", target=target, step=self.last_step)
        return bool(victims)

    def _has_finished(self, command: str, drain: bool = True) -> bool:
        """True (and `refusal` says so) when the run has reached its last step. `drain`: read
        the newest events first (not while they are being read: a scheduled fault)."""
        if drain:
            self._drain()  # a `run_finished` just written counts
        finished = self._finished_attempt >= 0 and self._finished_attempt == self.attempt
        self.refusal = (f"{command} ignored: the run has finished (step {self.last_step})"
                        if finished else "")
        return finished

    def _inject(self, kind: str, target: str, sig: int, source: str = "user",
                step: int | None = None) -> bool:
        if self._has_finished(FAULT_NAMES.get(kind, kind), drain=step is None):
            return False
        victims = [p for p in self.processes if p.alive and p.matches(target)]
        if not victims:
            return False
        if kind == "preempt":
            self._recovery.due = None
        self._user_stop = kind
        if step is None:
            self._drain()  # the event names the step the trainer reached, not the last poll's
        self._emit("fault_injected", kind=kind, target=target,
                   step=self.last_step if step is None else step, source=source)
        for proc in victims:
            signal_tree(proc.pid, sig)
        self.release_hold("fault")  # after the signal: a killed chief takes no further step
        return True

    def _check_timer(self) -> None:
        if self._faults.timer_fires():
            self._inject("kill", self.config.fault_target, signal.SIGKILL, source="timer")

    def _check_watchdog(self) -> None:
        """Kill and recover an attempt whose chief reported no step for `watchdog_seconds`
        (`STARTUP_GRACE_SECONDS` at least before its first step): a hang, not a crash.

        In a multi-worker cluster the processes that are not frozen are first told, and given
        the grace, to save the last completed step just in time (`_await_just_in_time`): a
        hung peer holds the others in a collective until TensorFlow misses its heartbeats
        (7-7.6 s here); a shorter watchdog would otherwise cost every step since the last
        periodic checkpoint."""
        limit = self.config.watchdog_seconds if self.config else 0
        chief = self._chief()
        if not limit or chief is None or self._settled:
            return
        if not self._progress_seen:
            limit = max(limit, STARTUP_GRACE_SECONDS)
        silent = time.time() - chief.last_heartbeat
        if silent <= limit:
            return
        self._stop_reason = f"hang: no progress for {silent:.1f} s (watchdog {limit:g} s)"
        self._emit("hang_detected", role=chief.role, index=chief.index,
                   seconds=silent, last_step=chief.last_step)
        if self._progress_seen:  # the others may be waiting for the hung one
            self._await_just_in_time(self._stop_reason)
        self._kill_all()

    def _fire_armed(self, step: int) -> None:
        for fault in self._faults.due(step):
            self._inject(fault.kind, fault.target, FAULT_SIGNALS[fault.kind],
                         source="schedule", step=fault.step)
            # the coordinator holds at the fault's step until now (`FaultSchedule.args_for`);
            # written even before its `held` comes, and when the target was gone already
            holds.release(self.run_dir, self.attempt, fault.step, "fault")

    # ------------------------------------------------------------ holds
    # (`ftgui.core.supervision.holds`)
    def plan_hold(self, step: int, why: str = "presenter") -> None:
        """Hold training after global `step` in the next attempts, once per run, until
        `release_hold()` (`why` = `presenter`), or until a warm standby is ready (`standby`).
        Call before `start`."""
        self._faults.holds[step] = why

    def release_hold(self, by: str = "presenter") -> bool:
        """Let a held attempt go on (`by`: who, for its `hold_released` event); False when
        nothing is held."""
        if self.held is None:
            return False
        holds.release(self.run_dir, self.attempt, self.held[0], by)
        self.held = None
        return True

    def standby_ready(self) -> bool:
        """Whether a restart now would find its warm standby ready (TensorFlow imported; a
        multi-worker standby cluster prepared for this run); True without `warm_standby`."""
        config = self.config
        if config is None or not config.warm_standby:
            return True
        return self._standby.ready_for(config, len(self._task_names))

    def _check_holds(self) -> None:
        """Let go a hold that waits for the warm standby once one is ready, or after
        `STANDBY_HOLD_SECONDS` (a standby that cannot start must not stop the run)."""
        if self.held is None or self.held[1] != "standby":
            return
        if self._held_since is None:
            self._held_since = time.monotonic()
        if self.standby_ready() or time.monotonic() - self._held_since > STANDBY_HOLD_SECONDS:
            self._held_since = None
            self.release_hold("standby")
