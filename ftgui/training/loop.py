"""The training loop (what Orbit calls the controller): runs global steps in chunks, hands what
they produced to the actions, and turns the actions' answers into an exit status.

A chunk is one step for the synchronous strategies, and for a parameter-server run every step
up to the next checkpoint, planned fault or the end (they are scheduled together). The loop
knows nothing of files, events or TensorFlow: the step runner (`step.SyncSteps`,
`parameter_server.ScheduledSteps`) trains, the actions (`actions/`) do the rest, and
`assemble.build_loop` puts the pieces of one training process together.
"""

from __future__ import annotations

import math
import time

from ftgui.core.record import exitcodes
from ftgui.training.actions import Action, ChunkOutput, Exit, Rewind, StepOutput, overriding
from ftgui.training.actions.fault_hooks import FaultHooks

REPORT_EVERY = 50  # steps between two progress lines in the process log


def scheduled_chunk_end(step: int, last_step: int, checkpoint_every: int,
                        fault_steps: list[int]) -> int:
    """The last global step of the chunk a scheduling runner (parameter server) takes after
    `step`: the nearest of the run's `last_step`, the next multiple of `checkpoint_every` and
    the planned `fault_steps` after `step`. (Other runners take one step at a time.)"""
    return min([last_step, (step // checkpoint_every + 1) * checkpoint_every, *fault_steps])


def agreed_requests(agreed: tuple[bool, bool], local: tuple[bool, bool], may_stop_alone: bool,
                    step: int, last_step: int) -> tuple[bool, bool]:
    """(stop, save) after global step `step`: what every process agreed inside the step
    (`agreed`), or this process' own SIGTERM/SIGUSR1 flags (`local`) where it may act alone
    (not in a multi-worker cluster, whose processes must save the same step). A preemption
    at the run's last step is no preemption: the run simply finishes; a stop wins over a save.
    """
    stop = (agreed[0] or (local[0] and may_stop_alone)) and step < last_step
    save = not stop and (agreed[1] or (local[1] and may_stop_alone))
    return stop, save


class TrainingLoop:
    """Runs global steps `start_step + 1 … last_step` and returns an exit status
    (`exitcodes.FINISHED`, or the code of an action's `Exit`: PREEMPTED, NON_FINITE).

    `runner.run(index_batches, requests, poison) -> (losses, (stop, save))` trains a chunk;
    `runner.chunked` says whether it takes several steps at once. `batches.indices(step)`:
    the rows of a step's global batch. `faults` poisons steps and arms preemptions before a
    chunk (it is also one of the `actions`). `requests`: this process' stop/save flags
    (`signals.Requests`). `may_stop_alone`: False in a multi-worker cluster, where a stop or
    save request is all-reduced in the next step so that every worker acts on the same step.
    """

    def __init__(self, runner, batches, last_step: int, checkpoint_every: int,
                 start_step: int, faults: FaultHooks, actions: list[Action], requests,
                 may_stop_alone: bool = True):
        self.runner, self.batches = runner, batches
        self.last_step, self.checkpoint_every = last_step, checkpoint_every
        self.start_step, self.faults, self.actions = start_step, faults, actions
        self.requests, self.may_stop_alone = requests, may_stop_alone
        # Only the hooks an action overrides are called: the step path pays for no no-ops.
        self._ran, self._after_step_hooks = overriding(actions, "ran"), overriding(actions,
                                                                                  "__call__")
        self._after_chunk_hooks = overriding(actions, "after_chunk")
        # `step_failed(step, error)`: the chunk after global step `step` raised `error`
        # (e.g. a multi-worker peer was lost: `actions/just_in_time.py`).
        self._failed_hooks = [action.step_failed for action in actions
                              if hasattr(action, "step_failed")]

    def run(self) -> int:
        """Train to the last step or to an exit; every action is closed however it ends."""
        started = time.perf_counter()
        try:
            code, last = self._train()
        finally:
            for close in reversed(overriding(self.actions, "close")):
                close()
        if code is not None:
            return code
        for finished in overriding(self.actions, "finished"):
            finished(last, time.perf_counter() - started)
        print(f"finished at step {last.step}, loss {last.loss:.6f}", flush=True)
        return exitcodes.FINISHED

    def _train(self) -> tuple[int | None, StepOutput]:
        """(exit code or None when the last step was reached, the last step's output)."""
        step, loss = self.start_step, math.nan
        last_report = (step, time.perf_counter())
        while step < self.last_step:
            last = step + 1 if not self.runner.chunked else scheduled_chunk_end(
                step, self.last_step, self.checkpoint_every, self.faults.planned_after(step))
            steps = range(step + 1, last + 1)
            indices = [self.batches.indices(s) for s in steps]
            poison = self.faults.poison(steps)
            self.faults.arm_preemption(last)
            try:
                losses, agreed = self.runner.run(indices, self.requests.pending, poison)
            except Exception as error:
                self._step_failed(step, error)
                raise
            for ran in self._ran:
                ran(steps)
            answer = None
            for loss in losses:
                step += 1
                answer = self._after_step(StepOutput(step, loss))
                if answer is not None:
                    break
            if isinstance(answer, Exit):
                return answer.code, StepOutput(step, loss)
            if isinstance(answer, Rewind):  # the rest of this chunk ran on poisoned weights
                step = answer.step
                continue
            if step // REPORT_EVERY != (step - len(losses)) // REPORT_EVERY:
                last_report = self._report(step, loss, last_report)
            stop, save = agreed_requests(agreed, self.requests.pending, self.may_stop_alone,
                                         step, self.last_step)
            if save:
                self.requests.save = False
            answer = self._after_chunk(ChunkOutput(step, loss, stop, save))
            if answer is not None:
                return answer.code, StepOutput(step, loss)
        for end in overriding(self.actions, "end"):
            end(StepOutput(step, loss))
        return None, StepOutput(step, loss)

    def _step_failed(self, step: int, error: Exception) -> None:
        """Tell the actions that the chunk after `step` failed; a hook's own failure is
        printed, never raised: `error` is what ends training."""
        for failed in self._failed_hooks:
            try:
                failed(step, error)
            except Exception as hook_error:  # noqa: BLE001 (the step's error must propagate)
                print(f"after the failure of the step after {step}: "
                      f"{type(hook_error).__name__}: {hook_error}", flush=True)

    def _after_step(self, output: StepOutput) -> Rewind | Exit | None:
        for action in self._after_step_hooks:
            answer = action(output)
            if answer is not None:
                return answer
        return None

    def _after_chunk(self, output: ChunkOutput) -> Exit | None:
        for after_chunk in self._after_chunk_hooks:
            answer = after_chunk(output)
            if answer is not None:
                return answer
        return None

    @staticmethod
    def _report(step: int, loss: float, last: tuple[int, float]) -> tuple[int, float]:
        now = time.perf_counter()
        rate = (step - last[0]) / max(now - last[1], 1e-9)
        print(f"step {step} loss {loss:.6f} ({rate:.0f} steps/s)", flush=True)
        return step, now
