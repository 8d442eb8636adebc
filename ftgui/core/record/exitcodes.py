"""Exit statuses and signals of a training process, named once for trainer, supervisor and views.

A process exit is recorded in a `process_exited` event as `exit_code` (it returned) or `signal`
(it was ended by one). Everything that asks "was that a crash, a preemption, a hang?" asks here.
"""

from __future__ import annotations

import signal

FINISHED = 0  # reached the last step
BAD_CONFIG = 2  # refused its configuration before training
NON_FINITE = 3  # the loss became NaN or infinite and no rollback was possible
DAMAGED_CHECKPOINT = 4  # the checkpoint to restore would not load; it is now marked invalid
RUN_FOLDER_GONE = 5  # the run folder was removed or replaced under the trainer; it stopped
PREEMPTED = 42  # saved at the current step on SIGTERM and stopped (TensorFlow's own code)

KILL_SIGNAL = int(signal.SIGKILL)  # a crash: power loss, OOM killer, Kill button
PREEMPT_SIGNAL = int(signal.SIGTERM)  # a graceful stop request: save, then exit PREEMPTED
HANG_SIGNAL = int(signal.SIGSTOP)  # a freeze: alive, no progress
THAW_SIGNAL = int(signal.SIGCONT)
CHECKPOINT_SIGNAL = int(signal.SIGUSR1)  # "save after the current step"

REASONS = {
    FINISHED: "finished",
    BAD_CONFIG: "bad configuration",
    NON_FINITE: "non-finite loss",
    DAMAGED_CHECKPOINT: "damaged checkpoint",
    RUN_FOLDER_GONE: "run folder removed or replaced",
    PREEMPTED: "preempted",
}


def was_killed(fields: dict) -> bool:
    """True for an exit by SIGKILL (`fields`: a `process_exited` event or `describe_exit`)."""
    return fields.get("signal") == KILL_SIGNAL


def was_preempted(fields: dict) -> bool:
    """True for an exit with PREEMPTED (saved at the current step on request)."""
    return fields.get("exit_code") == PREEMPTED


def was_error(fields: dict) -> bool:
    """True for any exit other than finishing: a non-zero status or a signal."""
    return bool(fields.get("signal")) or fields.get("exit_code") not in (FINISHED, None)
