"""NaN rollback: a non-finite loss is never checkpointed; the process restores the newest good
state before it — the in-memory snapshot of the step before (`--snapshot-every`, one-process
strategies) when it is newer than the newest valid checkpoint, else that checkpoint — and
trains on from there."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from ftgui.core.checkpoints import listing
from ftgui.core.record import exitcodes
from ftgui.training.actions import Action, Exit, Rewind, StepOutput

MAX_ROLLBACKS = 3  # a loss non-finite again after this many rollbacks in a row (no step past
# the failed one in between) is not transient


def refusal(found_state: bool, rollbacks: int, max_rollbacks: int = MAX_ROLLBACKS
            ) -> str | None:
    """Why the `rollbacks`-th rollback of this process (1 for the first) must not happen, as
    the end of the sentence "non-finite loss and …"; None when it may. `found_state`: a valid
    checkpoint or in-memory snapshot of an earlier step exists."""
    if not found_state:
        return "no valid checkpoint or snapshot before it"
    if rollbacks > max_rollbacks:
        return f"{max_rollbacks} rollbacks"
    return None


class NanRollback(Action):
    """After a step with a non-finite loss: the chief writes `non_finite_loss` (step); every
    process waits for the save in flight and restores the newest good state of an earlier
    step: `from_memory(step, newer_than)` → (step, loss) or None loads the in-memory snapshot
    of a step in (newer_than, step) (the newest valid checkpoint's step, or -1), else
    `restore(prefix) -> step` restores that checkpoint. It then restarts the TensorBoard log
    after it and answers `Rewind(step)` (the chief writes `rolled_back`: from_step, to_step,
    checkpoint (None from memory), source `memory` or `disk`). Without such a state, or after
    `MAX_ROLLBACKS`, it answers `Exit(NON_FINITE)`.

    The later actions (checkpoint, snapshot, faults) do not see the poisoned step.
    """

    def __init__(self, run_dir: Path, events, summaries, restore: Callable[[Path], int],
                 wait_for_save: Callable[[], None], is_chief: bool,
                 from_memory: Callable[[int, int], tuple[int, float] | None] | None = None,
                 role: str = "chief", index: int = 0):
        self.run_dir, self.events, self.summaries = run_dir, events, summaries
        self.role, self.index = role, index  # this process' task
        self.restore, self.wait_for_save, self.is_chief = restore, wait_for_save, is_chief
        self.from_memory = from_memory
        self.rollbacks = 0  # since training last got past a non-finite step
        self._failed_at = 0  # the newest step whose loss was not finite

    def __call__(self, output: StepOutput) -> Rewind | Exit | None:
        if math.isfinite(output.loss):
            if self.rollbacks and output.step >= self._failed_at:
                # past the step that failed: that NaN was transient. Counting every NaN of
                # the process stopped a run after its fourth separate one (a breaker's finding)
                self.rollbacks = 0
            return None
        self._failed_at = output.step
        if self.is_chief:
            self.events.emit("non_finite_loss", step=output.step)
        print(f"step {output.step}: loss is {output.loss}; not checkpointing this state",
              flush=True)
        return self.roll_back(output.step)

    def roll_back(self, step: int) -> Rewind | Exit:
        """Restore the newest good state before global step `step` in this process."""
        self.rollbacks += 1
        self.wait_for_save()
        info = listing.newest_valid(self.run_dir, at_most=step - 1)
        memory = None
        if self.from_memory is not None and self.rollbacks <= MAX_ROLLBACKS:
            memory = self.from_memory(step, -1 if info is None else info.step)
        why = refusal(info is not None or memory is not None, self.rollbacks)
        if why is not None:
            print(f"step {step}: non-finite loss and {why}; stopping", flush=True)
            # the run's reason then says why, not only the exit status
            self.events.emit("training_error", role=self.role, index=self.index,
                             error=f"non-finite loss at step {step} and {why}")
            return Exit(exitcodes.NON_FINITE)
        if memory is not None:
            restored, checkpoint, where = memory[0], None, f"step {memory[0]} from memory"
        else:
            restored = self.restore(info.prefix)
            checkpoint, where = info.relpath, f"checkpoint {restored}"
        self.summaries.restart_at(restored + 1)
        if self.is_chief:
            self.events.emit("rolled_back", from_step=step, to_step=restored,
                             checkpoint=checkpoint, source="disk" if memory is None else "memory")
        print(f"rolled back from step {step} to {where}", flush=True)
        return Rewind(restored)
