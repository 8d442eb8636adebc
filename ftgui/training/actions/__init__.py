"""Actions: the side effects of training, run by the loop on what the steps produced (in the
shape of Orbit's `orbit/actions`).

An action is one small object with one job: `StepEvents` (the `step` event or a worker's
heartbeat), `LossSummary` (TensorBoard), `NanRollback`, `CheckpointAction` (periodic, requested
and preemption saves), `FaultHooks` (scheduled kill, hang, preempt and NaN faults). The loop
(`ftgui.training.loop`) calls each action, in list order, at these points:

- `ran(steps)`: the steps of a chunk (a `range` of global steps) ran; their outputs follow.
- `action(StepOutput)`: after each step, in step order. An action may answer `Rewind(step)`
  (training goes on after that step, the rest of the chunk is redone) or `Exit(code)`; the
  later actions then do not see that step.
- `after_chunk(ChunkOutput)`: after the steps of a chunk; may answer `Exit(code)`.
- `end(output)`: the last step is done (complete work in flight).
- `close()`: always, in reverse list order (like a stack of context managers).
- `finished(output, seconds)`: after `close`, when the run reached its last step.

This package and its modules other than `checkpoint` import no TensorFlow: their decisions are
tested without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class StepOutput(NamedTuple):
    """What one global step produced: its number (1-based) and its loss (the mean over the
    global batch; NaN or inf when the numerics failed). A tuple: made every step, it must
    cost next to nothing."""

    step: int
    loss: float


class ChunkOutput(NamedTuple):
    """The last step of a chunk and its loss, and what every process agreed to do after it:
    `stop` (a preemption: save this step and exit) and `save` (a checkpoint was requested)."""

    step: int
    loss: float
    stop: bool
    save: bool


@dataclass(frozen=True)
class Rewind:
    """Training goes on after global step `step` (the state now holds that step)."""

    step: int


@dataclass(frozen=True)
class Exit:
    """Training stops now; the process exits with `code` (see `ftgui.core.record.exitcodes`)."""

    code: int


class Action:
    """Base of the actions: every hook does nothing unless overridden (see the package doc);
    the loop calls only the hooks an action overrides."""

    def ran(self, steps: range) -> None:
        """The global steps `steps` ran; their outputs are about to be handed out."""

    def __call__(self, output: StepOutput) -> Rewind | Exit | None:
        """Act on one step's output; None lets training go on."""
        return None

    def after_chunk(self, output: ChunkOutput) -> Exit | None:
        """Act on the end of a chunk; None lets training go on."""
        return None

    def end(self, output: StepOutput) -> None:
        """The run's last step is done: finish what is in flight."""

    def close(self) -> None:
        """Release what the action holds (threads, files); called however training ended."""

    def finished(self, output: StepOutput, seconds: float) -> None:
        """The run reached its last step `output.step` after `seconds` of training."""


def overriding(actions: list[Action], hook: str) -> list:
    """The bound `hook` methods of those `actions` that override it, in list order."""
    return [getattr(action, hook) for action in actions
            if getattr(type(action), hook) is not getattr(Action, hook)]
