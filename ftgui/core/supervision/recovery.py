"""What one process exit means for its attempt, and automatic restarts with doubling backoff."""

from __future__ import annotations

import signal
import time

from ftgui.core.record import exitcodes
from ftgui.core.record.run_state import state_from_exit
from ftgui.core.settings.config import RunConfig


def exit_verdict(fields: dict, *, error: str | None = None, stop_reason: str = "",
                 user_stop: str = "", cleanup: bool = False) -> tuple[str, str]:
    """(state, reason) of a process exit (`exit_code` or `signal` event fields), given what the
    supervisor knows: the process' own `training_error`, why the supervisor itself ended the
    attempt (`stop_reason`: the watchdog; it names every crash or failure that follows), a
    user's stop in flight (`kill`, `preempt`, `shutdown`), and whether the process was ended
    to clean up a cluster already over."""
    state, reason = state_from_exit(fields)
    if state == "failed" and error:
        reason = f"{reason}: {error}"
    if stop_reason and state in ("killed", "failed"):  # also a survivor the abort failed
        state, reason = "failed", stop_reason
    if user_stop == "shutdown" and state == "killed":
        state, reason = "stopped", "stopped by ftgui (closed or interrupted)"
    elif cleanup and state == "killed":
        reason = "ended by ftgui: the rest of the cluster was over"
    elif user_stop == "preempt" and fields.get("signal") == signal.SIGTERM:
        state, reason = "preempted", "preempted before training began: nothing to save"
    return state, reason


class RestartPolicy:
    """Automatic recovery: `restarts` so far (since training last went on), and `due`, the Unix
    time of the pending restart (None when none is pending)."""

    def __init__(self):
        self.restarts = 0
        self.due: float | None = None
        self.held = False  # the run is being stopped: no automatic restart
        self.waiting = False  # the due restart waits for the launcher (`Supervisor.poll`)

    def worth_it(self, config: RunConfig | None, exit_fields: dict, user_stop: str,
                 newest_restored: bool = False) -> bool:
        """A crash is worth a restart; a shutdown, a stop (`held`), a refused config or a
        diverged loss is not (the restarted trainer would refuse the same config, or diverge at
        the same step). A checkpoint found damaged at its restore is worth one even without
        automatic recovery when the attempt was to restore the newest valid checkpoint
        (`newest_restored`, not a fork the user pointed at one): the restart takes the newest
        still valid, which is what resuming promises."""
        futile = (exitcodes.BAD_CONFIG, exitcodes.NON_FINITE, exitcodes.RUN_FOLDER_GONE)
        if self.held or user_stop == "shutdown" or exit_fields.get("exit_code") in futile:
            return False
        if not config or self.restarts >= config.max_restarts:
            return False
        damaged = exit_fields.get("exit_code") == exitcodes.DAMAGED_CHECKPOINT
        return config.auto_recover or (damaged and newest_restored)

    def schedule(self, config: RunConfig) -> float:
        """Plan the next restart `restart_backoff` × 2^restarts seconds from now; the delay."""
        delay = config.restart_backoff * (2**self.restarts)
        self.restarts += 1
        self.due = time.time() + delay
        self.waiting = False
        return delay

    def overdue(self) -> float | None:
        """Seconds since the pending restart fell due (>= 0); None while none is due."""
        if self.due is None or time.time() < self.due:
            return None
        return time.time() - self.due

    def take_due(self) -> bool:
        """True once, when the pending restart is due (it is then no longer pending)."""
        if self.overdue() is None:
            return False
        self.due = None
        return True
