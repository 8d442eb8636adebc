"""What a process exit means for a run: its state (`killed`, `preempted`, …) and whether it decided
the attempt. Shared by the supervisor (live), the run list and the timeline (from events)."""

from __future__ import annotations

from ftgui.core.record import exitcodes

# How an attempt (and so a run) can end, as shown in the window and the Runs view.
STATES = ("idle", "running", "recovering", "finished", "killed", "preempted", "failed",
          "stopped", "interrupted")
ENDED = ("finished", "killed", "preempted", "failed", "stopped", "interrupted")
# Why a run whose history stops mid-attempt, with no process holding its lock, is `interrupted`
INTERRUPTED_REASON = "its supervisor ended without recording an exit"

# How long a preempted process gets to save its step and exit before it is killed (seconds): a
# save took under a second here; a loaded machine gets margin. The window's "Preempt and quit"
# and a signal to `ftgui train` both wait this long.
PREEMPT_TIMEOUT_S = 60.0


def is_decisive(event: dict) -> bool:
    """True when a `process_exited` event decided its attempt's outcome.

    Events written before the `decisive` field existed count the chief's exit as decisive.
    """
    return bool(event.get("decisive", event.get("role") == "chief"))


def is_chief(event: dict) -> bool:
    """True when the event's process is its cluster's chief (older events: role `chief`)."""
    return bool(event.get("chief", event.get("role") == "chief"))


def state_from_exit(fields: dict) -> tuple[str, str]:
    """(state, reason) for a process exit given as `exit_code` or `signal` event fields."""
    if fields.get("shutdown") and exitcodes.was_killed(fields):
        return "stopped", "stopped by ftgui (closed or interrupted)"
    if fields.get("signal") is not None:
        name = fields.get("signal_name") or f"signal {fields['signal']}"
        return ("killed" if exitcodes.was_killed(fields) else "failed"), f"ended by {name}"
    code = fields.get("exit_code")
    if code == exitcodes.FINISHED:
        return "finished", "reached the last step"
    if exitcodes.was_preempted(fields):
        return "preempted", "saved at the current step and stopped"
    return "failed", f"exited with status {code} ({exitcodes.REASONS.get(code, 'error')})"
