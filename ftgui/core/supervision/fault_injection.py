"""The faults a supervisor injects: Kill, Preempt, Freeze, Thaw and Checkpoint now from the user,
the scheduled faults it fires itself on the chief's step, the timer fault and the watchdog.

`FaultInjection` is a collaborator of `ftgui.core.supervision.supervisor.Supervisor`: it is given
the run's shared state and journal (`shared_state`), the attempt's tasks (`task_launch`: the
just-in-time grace, ending the attempt), the launcher (standby readiness), the fault schedule, the
restart policy, the supervisor's `config` getter and `drain` (reads the run's new events); it
signals processes through their launcher handles only, and writes `fault_injected`,
`checkpoint_requested`, `thawed` and `hang_detected`; and it holds and lets go the trainers at
planned steps (`ftgui.core.supervision.holds`): a fault injected into a held attempt lets it go, so
the fault lands at the held step. A command on a run whose trainer has written `run_finished` does
nothing, writes nothing, and says why in `refusal` (its processes may still be alive for a moment
while they exit: a signal then would record a fault after the end).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision import holds
from ftgui.core.supervision.fault_schedule import FaultSchedule
from ftgui.core.supervision.launcher import Launcher
from ftgui.core.supervision.recovery import RestartPolicy
from ftgui.core.supervision.shared_state import Journal, SupervisionState
from ftgui.core.supervision.task_launch import AttemptTasks

FAULT_SIGNALS = {"kill": signal.SIGKILL, "preempt": signal.SIGTERM, "hang": signal.SIGSTOP}
FAULT_NAMES = {"kill": "Kill", "preempt": "Preempt", "hang": "Freeze"}
STARTUP_GRACE_SECONDS = 120.0  # the watchdog allows this long for imports before a first step
STANDBY_HOLD_SECONDS = 60.0  # the longest a fault waits for the warm standby (imports: 3-7 s)


class FaultInjection:
    """Injecting faults into the processes of a supervisor's current attempt. `refusal`: why
    the last command did nothing (a finished run), else ''."""

    def __init__(self, run_dir: Path, state: SupervisionState, journal: Journal,
                 tasks: AttemptTasks, launcher: Launcher, faults: FaultSchedule,
                 recovery: RestartPolicy, config: Callable[[], RunConfig | None],
                 drain: Callable[[], None]):
        self.run_dir, self.state, self.journal, self.tasks = run_dir, state, journal, tasks
        self.launcher, self.faults, self.recovery = launcher, faults, recovery
        self.config, self.drain = config, drain
        self.refusal = ""

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
        self.recovery.held = True
        return self.preempt("chief")

    def checkpoint_now(self) -> bool:
        """Ask the chief to save a checkpoint after its current step (SIGUSR1); the other
        workers of a cluster learn it in the same step. False if no chief is alive."""
        chief = self.state.chief()
        if self._has_finished("Checkpoint now"):
            return False
        if chief is None or not self.state.progress_seen:
            return False  # before its first step the trainer may not handle SIGUSR1 yet
        self.journal.emit("checkpoint_requested", step=self.state.last_step)
        chief.handle.signal(signal.SIGUSR1, tree=False)
        return True

    def freeze(self, target: str = "chief") -> bool:
        """Hang `target` (SIGSTOP to its tree): it stays alive but makes no progress, as a
        deadlocked or swapped-out process would. False if not alive."""
        return self._inject("hang", target, signal.SIGSTOP)

    def thaw(self, target: str = "chief") -> bool:
        """Let a frozen `target` go on (SIGCONT). False if not alive."""
        if self._has_finished("Thaw"):
            return False
        victims = [p for p in self.state.processes if p.alive and p.matches(target)]
        for proc in victims:
            proc.handle.signal(signal.SIGCONT)
            proc.last_heartbeat = time.time()
        if victims:
            self.journal.emit("thawed", target=target, step=self.state.last_step)
        return bool(victims)

    def _has_finished(self, command: str, drain: bool = True) -> bool:
        """True (and `refusal` says so) when the run has reached its last step. `drain`: read
        the newest events first (not while they are being read: a scheduled fault)."""
        if drain:
            self.drain()  # a `run_finished` just written counts
        finished = 0 <= self.state.finished_attempt == self.state.attempt
        self.refusal = (f"{command} ignored: the run has finished (step {self.state.last_step})"
                        if finished else "")
        return finished

    def _inject(self, kind: str, target: str, sig: int, source: str = "user",
                step: int | None = None) -> bool:
        if self._has_finished(FAULT_NAMES.get(kind, kind), drain=step is None):
            return False
        alive = [p for p in self.state.processes if p.alive and p.matches(target)]
        victims = [p for p in alive if not (kind == "hang" and p.frozen)]
        if not victims:
            name, who = FAULT_NAMES.get(kind, kind), target.replace(":", " ")
            self.refusal = (f"{name} ignored: {who} is frozen already" if alive else
                            f"{name} ignored: no {who} process is running now")
            return False
        if kind == "preempt":
            self.recovery.due = None
        self.state.user_stop = kind
        stop_first = kind == "hang" and step is None  # then the step it stopped at is known
        if stop_first:
            self._signal(victims, kind, sig)
        if step is None:
            self.drain()  # the event names the step the trainer reached, not the last poll's
        self.journal.emit("fault_injected", kind=kind, target=target,
                          step=self.state.last_step if step is None else step, source=source)
        if not stop_first:
            self._signal(victims, kind, sig)
        self.release_hold("fault")  # after the signal: a killed chief takes no further step
        return True

    def check_timer(self) -> None:
        """Kill the fault target once the `kill_after_seconds` timer is due."""
        if self.faults.timer_fires():
            self._inject("kill", self.config().fault_target, signal.SIGKILL, source="timer")

    def check_watchdog(self) -> None:
        """Kill and recover an attempt whose chief reported no step for `watchdog_seconds`
        (`STARTUP_GRACE_SECONDS` at least before its first step): a hang, not a crash.

        In a multi-worker cluster the processes that are not frozen are first told, and given the
        grace, to save the last completed step just in time (`AttemptTasks.await_just_in_time`): a
        hung peer holds the others in a collective until TensorFlow misses its heartbeats (7-7.6 s
        here); a shorter watchdog would otherwise cost every step since the last periodic
        checkpoint."""
        watched = self._watched()
        if watched is None:
            return
        chief, limit = watched
        state = self.state
        silent = time.time() - chief.last_heartbeat
        if silent <= limit:
            return
        state.stop_reason = f"hang: no progress for {silent:.1f} s (watchdog {limit:g} s)"
        self.journal.emit("hang_detected", role=chief.role, index=chief.index,
                          seconds=silent, last_step=chief.last_step)
        if state.progress_seen:  # the others may be waiting for the hung one
            self.tasks.await_just_in_time(state.stop_reason)
        self.tasks.kill_all()

    @staticmethod
    def _signal(victims, kind: str, sig: int) -> None:
        for proc in victims:
            proc.killed_by_fault = kind == "kill"
            if kind == "preempt":
                proc.preempted_at = time.time()
            proc.handle.signal(sig)

    def repeat_preemption(self, event: dict) -> bool:
        """Send SIGTERM again to the process whose `training_started` is `event` when a
        preemption was sent to it before that moment: it may have come while the trainer
        built a cluster strategy, whose coordination service holds SIGTERM until the trainer
        takes it back (`ftgui/training/__main__.py`), and been swallowed there (a Ctrl-C of
        `ftgui train` during a forked multi-worker restart trained on to the last step).
        The trainer only sets a flag: a second SIGTERM asks nothing more. Returns whether
        it was sent."""
        for proc in self.state.processes:
            if proc.alive and proc.pid == event.get("pid") and proc.preempted_at is not None \
                    and proc.preempted_at <= event.get("time", 0.0):
                proc.preempted_at = None
                return proc.handle.signal(signal.SIGTERM)
        return False

    def watchdog_due_in(self) -> float | None:
        """Seconds until `check_watchdog` ends the attempt if its chief reports no step before
        (≤ 0: at the next check, within one poll), or None without a watchdog or a chief."""
        watched = self._watched()
        if watched is None:
            return None
        chief, limit = watched
        return limit - (time.time() - chief.last_heartbeat)

    def _watched(self):
        """(chief, its watchdog limit in seconds: `watchdog_seconds`, at least
        `STARTUP_GRACE_SECONDS` before its first step), or None when nothing is watched."""
        config, state = self.config(), self.state
        limit = config.watchdog_seconds if config else 0
        chief = state.chief()
        if not limit or chief is None or state.settled:
            return None
        return chief, limit if state.progress_seen else max(limit, STARTUP_GRACE_SECONDS)

    def fire_armed(self, step: int, held: bool = False) -> None:
        """Fire the armed faults due at the chief's `step` (`held`: it holds there;
        `FaultSchedule.due`)."""
        for fault in self.faults.due(step, held):
            self._inject(fault.kind, fault.target, FAULT_SIGNALS[fault.kind],
                         source="schedule", step=fault.step)
            # the coordinator holds at the fault's step until now (`FaultSchedule.args_for`);
            # written even before its `held` comes, and when the target was gone already
            holds.release(self.run_dir, self.state.attempt, fault.step, "fault")

    # ------------------------------------------------------------ holds
    # (`ftgui.core.supervision.holds`)
    def plan_hold(self, step: int, why: str = "presenter") -> None:
        """Hold training after global `step` in the next attempts, once per run, until
        `release_hold()` (`why` = `presenter`), or until a warm standby is ready (`standby`).
        Call before `start`."""
        self.faults.holds[step] = why

    def release_hold(self, by: str = "presenter") -> bool:
        """Let a held attempt go on (`by`: who, for its `hold_released` event); False when
        nothing is held."""
        if self.state.held is None:
            return False
        holds.release(self.run_dir, self.state.attempt, self.state.held[0], by)
        self.state.held = None
        return True

    def standby_ready(self) -> bool:
        """Whether a restart now would find its warm standby ready (TensorFlow imported; a
        multi-worker standby cluster prepared for this run); True without `warm_standby`."""
        config = self.config()
        if config is None or not config.warm_standby:
            return True
        return self.launcher.standbys_ready(config, len(self.state.task_names))

    def check_holds(self) -> None:
        """Let go a hold that waits for the warm standby once one is ready, or after
        `STANDBY_HOLD_SECONDS` (a standby that cannot start must not stop the run)."""
        state = self.state
        if state.held is None or state.held[1] != "standby":
            return
        if state.held_since is None:
            state.held_since = time.monotonic()
        ready = self.standby_ready()
        if ready or time.monotonic() - state.held_since > STANDBY_HOLD_SECONDS:
            state.held_since = None  # a timeout said as one: it read "the standby is ready"
            self.release_hold("standby" if ready else "standby-timeout")
