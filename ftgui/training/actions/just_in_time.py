"""Just-in-time checkpoint of a MultiWorkerMirroredStrategy cluster: when a peer is lost, a
surviving worker saves the state of the last completed step (Gupta et al., EuroSys 2024).

In data-parallel training every worker holds the whole state, so a survivor can save it. But
the step that failed may already have changed it: measured here, `optimizer.iterations` was
already one ahead when the gradient all-reduce failed (DESIGN.md §4), and with several
all-reduce packs some weights could be updated and others not. So after every completed step
this action copies the state into a `ShadowState` (the background save's shadow copy: one
traced function of local assigns, no collective), and at a peer's loss it writes that copy,
never the live variables. The copy holds exactly step N's state when its own step counter
says N; otherwise (a NaN rollback just rewound the state) nothing is written and a
`just_in_time_skipped` event says why: the recovery then takes the periodic checkpoint.

Where it goes: the chief writes `RUN/checkpoints/ckpt-N` (validated: metadata with every
file's size, `"just_in_time": true`) and reports `validation` and `checkpoint_saved`
(`just_in_time: true`); another worker writes `RUN/scratch/<role>-<index>-just-in-time/ckpt-N`
and reports `just_in_time_saved`: the supervisor moves it into `RUN/checkpoints`
(`checkpoints.promote`) once the attempt has ended. Both events carry `live_differs`: how many
live variables the failed step had already changed (the proof that the copy was needed).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import tensorflow as tf

from ftgui.core.checkpoints import listing
from ftgui.core.checkpoints import moves as checkpoint_moves
from ftgui.core.record.run_folder import check_writer
from ftgui.training.actions import Action, StepOutput
from ftgui.training.actions.checkpoint import run_record
from ftgui.training.background_save import ShadowState
from ftgui.training.state_variables import state_variables

# What a surviving worker's step raises when a peer of the collective is gone.
PEER_LOST = (tf.errors.UnavailableError, tf.errors.CancelledError,
             tf.errors.DeadlineExceededError)


class JustInTime(Action):
    """Keeps a copy of the state after every completed step; at a peer's loss writes it.

    `state`: the `step.TrainState`; `epoch_of(step)`: the epoch of a global step. The copy is
    taken once at construction (the restored or initial state) and after every step.
    """

    def __init__(self, state, data, config, run_dir: Path, events, epoch_of, is_chief: bool,
                 role: str, index: int, position_after=None):
        self.state, self.data, self.config, self.events = state, data, config, events
        # step -> data.DataPosition after it, recorded like every checkpoint's (resume check)
        self.position_after = position_after
        self.run_dir, self.epoch_of, self.is_chief = run_dir, epoch_of, is_chief
        self.role, self.index = role, index
        self.directory = (listing.checkpoint_dir(run_dir) if is_chief
                          else checkpoint_moves.just_in_time_dir(run_dir, role, index))
        self.shadow = ShadowState(state, config.model, data.input_shape, data.num_classes,
                                  config.learning_rate)
        self.shadow.take()
        self.last = StepOutput(state.global_step, float("nan"))

    def __call__(self, output: StepOutput) -> None:
        self.shadow.take()
        self.last = output
        return None

    def step_failed(self, step: int, error: BaseException) -> None:
        """Global step `step` was the last to complete before `error` ended training: write
        the copy of that step if a peer was lost (else do nothing)."""
        if not isinstance(error, PEER_LOST):
            return
        copied = int(self.shadow.step.numpy())
        if copied != step or self.last.step != step:
            self._skip(step, f"the copy holds step {copied}, not the last completed step "
                             f"{step} (the state was rewound): the periodic checkpoint stands")
            return
        on_disk = listing.checkpoint_dir(self.run_dir) / f"{listing.PREFIX}-{step}"
        if listing.read_info(on_disk).valid:
            self._skip(step, f"step {step} is already checkpointed")
            return
        self._write(step, type(error).__name__)

    def _write(self, step: int, error_name: str) -> None:
        started = time.perf_counter()
        differs = self._live_differs()
        prefix = self.directory / f"{listing.PREFIX}-{step}"
        check_writer(self.events)  # a removed run folder is not re-created by the save
        listing.meta_path(prefix).unlink(missing_ok=True)
        self.shadow.write(prefix)
        save_seconds = time.perf_counter() - started
        val_loss, val_accuracy = self.shadow.evaluate(self.data.x_val, self.data.y_val)
        where = "checkpoints" if self.is_chief else f"scratch/{self.directory.name}"
        path = f"{where}/{prefix.name}"
        fields = dict(step=step, path=path, loss=self.last.loss, just_in_time=True,
                      live_differs=differs, error=error_name, save_seconds=save_seconds)
        if self.is_chief:
            self.events.emit("validation", step=step, val_loss=val_loss,
                             val_accuracy=val_accuracy)
        record = {"strategy": self.config.strategy,
                  "replicas": self.state.strategy.num_replicas_in_sync,
                  "global_batch_size": self.config.global_batch_size}
        if self.position_after is not None:  # what every checkpoint records (resume check)
            record = run_record(self.config, self.state, self.data, self.position_after(step))
        listing.write_metadata(
            prefix, loss=self.last.loss, val_loss=val_loss, val_accuracy=val_accuracy,
            time=time.time(), epoch=self.epoch_of(step), just_in_time=True,
            saved_by=f"{self.role}:{self.index}", live_differs=differs, **record,
        )
        size = sum(p.stat().st_size for p in listing.tf_files(prefix.parent, step))
        if self.is_chief:
            self.events.emit("checkpoint_saved", size=size, stall_seconds=None,
                             requested=False, background=False, **fields)
        else:
            self.events.emit("just_in_time_saved", role=self.role, index=self.index,
                             size=size, val_loss=val_loss, val_accuracy=val_accuracy,
                             **fields)
        print(f"just-in-time checkpoint of step {step} written to {path} after "
              f"{error_name} ({differs} live variable(s) already changed by the failed step)",
              flush=True)

    def _live_differs(self) -> int:
        """How many live variables differ from the copy of the last completed step."""
        live, copy = state_variables(self.state), state_variables(self.shadow)
        return sum(not np.array_equal(a.numpy(), b.numpy())
                   for a, b in zip(live, copy, strict=True))

    def _skip(self, step: int, reason: str) -> None:
        self.events.emit("just_in_time_skipped", role=self.role, index=self.index, step=step,
                         reason=reason)
        print(f"no just-in-time checkpoint: {reason}", flush=True)
