"""The distributed custom training loop: a replica step under `strategy.run`, the step loop, and
its periodic side effects (events, checkpoints, validation, scheduled faults, preemption).

Shape of a step: the global batch (global_batch_size, ...) is split into `num_replicas` contiguous
slices; each replica computes `tf.nn.compute_average_loss(per_example, global_batch_size)` and the
losses are summed with `strategy.reduce(SUM)`, so the loss is the mean over the global batch for
any replica count (the recipe of the tf.distribute custom-training-loop guide).
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from ftgui.core import checkpoints, exitcodes
from ftgui.core.config import RunConfig
from ftgui.core.events import EventWriter
from ftgui.training.background_save import (
    OneWriter,
    ShadowState,
    loss_and_accuracy,
    point_state_file,
    write_error,
)
from ftgui.training.data import Dataset, StepBatches
from ftgui.training.signals import REQUESTS
from ftgui.training.summaries import TENSORBOARD_DIR, Summaries

MAX_ROLLBACKS = 3  # a loss that is non-finite again after this many rollbacks is not transient


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
        return [step for _, step, _ in self.planned if step > after]


class TrainState:
    """Model, optimizer and global step under one strategy, with the replica step function."""

    def __init__(self, strategy: tf.distribute.Strategy, config: RunConfig, data: Dataset):
        from ftgui.training import models

        self.strategy = strategy
        self.global_batch_size = config.global_batch_size
        with strategy.scope():
            self.model = models.build(config.model, data.input_shape, data.num_classes)
            self.optimizer = keras.optimizers.Adam(learning_rate=config.learning_rate)
            # Built eagerly: under MirroredStrategy in TF 2.21, Adam's slots created inside the
            # tf.function on the first call cannot be lifted ("must feed a value for placeholder").
            self.optimizer.build(self.model.trainable_variables)
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
        self.checkpoint = tf.train.Checkpoint(
            model=self.model, optimizer=self.optimizer, step=self.step
        )
        self._train_step = tf.function(self._distributed_step)
        # A function of exactly (x, y): traced over the method itself, whose `scale=None`
        # default is bound on every call, a step cost ~0.3 ms more (bench_training_overhead).
        self._plain_step = tf.function(lambda x, y: self._distributed_plain_step(x, y))
        self._poisoned_step = tf.function(
            lambda x, y: self._distributed_plain_step(x, y, tf.constant(math.nan))
        )
        # Only a multi-worker cluster must agree on stop/save requests inside the step; one
        # process reads its own flags (the extra reduce and fetch cost ~0.7 ms a step).
        self.agrees_in_step = isinstance(
            strategy, tf.distribute.MultiWorkerMirroredStrategy
        )
        # A cluster's variables are saved collectively (every worker, or through the ps):
        # such a save stays on the step path, without a shadow copy.
        self.saves_collectively = self.agrees_in_step or isinstance(
            strategy, tf.distribute.experimental.ParameterServerStrategy
        )
        self._scales = {False: tf.constant(1.0), True: tf.constant(math.nan)}
        self._evaluate = tf.function(self._eval_logits)

    def replica_step(self, x, y, scale=None):
        """One replica's forward, backward and update on its slice; returns its share of the
        global-batch mean loss (a scalar). `scale` multiplies the loss: 1.0 (exact, changes no
        bit) or NaN for an injected numerics fault."""
        with tf.GradientTape() as tape:
            logits = self.model(x, training=True)
            per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=self.global_batch_size)
            if scale is not None:
                loss = loss * scale
        gradients = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.model.trainable_variables, strict=True))
        return loss

    def _replica_step_with_flag(self, x, y, stop, scale):
        return self.replica_step(x, y, scale), stop

    def _distributed_step(self, x, y, stop, scale):
        loss, stop = self.strategy.run(self._replica_step_with_flag, args=(x, y, stop, scale))
        self.step.assign_add(1)
        total = self.strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None)
        # Every worker learns that one of them was asked to stop (or to save), in the same step.
        return total, self.strategy.reduce(tf.distribute.ReduceOp.SUM, stop, axis=None)

    def _distributed_plain_step(self, x, y, scale=None):
        args = (x, y) if scale is None else (x, y, scale)
        loss = self.strategy.run(self.replica_step, args=args)
        self.step.assign_add(1)
        return self.strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None)

    def _eval_logits(self, x):
        return self.model(x, training=False)

    def train_step(self, x_global: np.ndarray, y_global: np.ndarray,
                   requests: tuple[bool, bool] = (False, False),
                   poison: bool = False) -> tuple[float, tuple[bool, bool]]:
        """Run one global step on a global batch (`poison`: inject a NaN into its loss).

        Returns (mean loss over the global batch, whether any replica of any worker passed
        `stop=True`), so all workers of a cluster stop after the same step.
        """
        replicas = self.strategy.num_replicas_in_sync

        def local(context, array):
            per_replica = len(array) // replicas  # a contiguous slice: a view, no copy
            first = context.replica_id_in_sync_group * per_replica
            # tf.constant, not convert_to_tensor: ~0.06 ms less per call (bench_training_overhead)
            return tf.constant(array[first:first + per_replica])

        distribute = self.strategy.experimental_distribute_values_from_function
        x = distribute(lambda ctx: local(ctx, x_global))
        y = distribute(lambda ctx: local(ctx, y_global))
        if not self.agrees_in_step:
            step = self._poisoned_step if poison else self._plain_step
            return float(step(x, y)), tuple(requests)
        scale = self._scales[bool(poison)]
        flag = distribute(lambda ctx: tf.constant([int(r) for r in requests], dtype=tf.int32))
        loss, agreed = self._train_step(x, y, flag, scale)
        stop_all, save_all = (bool(v) for v in agreed.numpy())
        return float(loss), (stop_all, save_all)

    def evaluate(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """Mean cross-entropy and accuracy (fraction) on (x, y)."""
        return loss_and_accuracy(self._evaluate(tf.convert_to_tensor(x)).numpy(), y)


class SyncSteps:
    """Runs synchronous strategies one global step at a time (default, one-device, mirrored,
    multi-worker)."""

    chunked = False

    def __init__(self, state: TrainState, data: Dataset):
        self.state, self.data = state, data

    def run(self, index_batches: list[np.ndarray], requests: tuple[bool, bool],
            poison: list[bool]) -> tuple[list[float], tuple[bool, bool]]:
        """Run the steps of `index_batches` (poisoning those flagged); returns their losses and
        whether any process asked to (stop, save now)."""
        losses, agreed = [], (False, False)
        for indices, bad in zip(index_batches, poison, strict=True):
            loss, agreed = self.state.train_step(
                self.data.x_train[indices], self.data.y_train[indices], requests, bad
            )
            losses.append(loss)
        return losses, agreed


ROLL_BACK = -1  # _after_step's answer to a non-finite loss


class TrainingLoop:
    """Runs global steps `start+1 … config.steps` and their side effects; returns an exit status.

    Only the chief writes `step` events, checkpoints into `RUN/checkpoints` and validation; the
    other workers of a MultiWorkerMirroredStrategy save into their own scratch folder (the save
    is collective, so every worker takes part), delete it, and write a `heartbeat` event about
    once a second. Events written: `step` (step, loss, epoch), `heartbeat`, `validation`,
    `checkpoint_saved`, `fault_injected`, `preempted`, `non_finite_loss`, `run_finished`.

    Outside a cluster the chief's checkpoints are written in the background (see
    background_save): the step path only copies the variables, so `validation` and
    `checkpoint_saved` of step N can follow a few `step` events after N. Before a preemption
    exit, a rollback, a scheduled kill or hang, and the end of the run, the save in flight is
    waited for: the same fault schedule always recovers from the same checkpoint.
    """

    HEARTBEAT_SECONDS = 1.0

    def __init__(self, state: TrainState, data: Dataset, config: RunConfig, run_dir: Path,
                 events: EventWriter, faults: Faults, runner=None, role: str = "chief",
                 index: int = 0, is_chief: bool = True):
        self.state, self.data, self.config = state, data, config
        self.run_dir, self.events, self.faults = run_dir, events, faults
        self.runner = runner or SyncSteps(state, data)
        self.role, self.index, self.is_chief = role, index, is_chief
        self.batches = StepBatches(len(data.x_train), config.global_batch_size, config.seed)
        self.requests = REQUESTS
        self.directory = (checkpoints.checkpoint_dir(run_dir) if is_chief
                          else run_dir / "scratch" / f"{role}-{index}")
        self.shadow, self.writer, self.manager = None, None, None
        if is_chief and not state.saves_collectively:
            self.shadow = ShadowState(state, config.model, data.input_shape, data.num_classes,
                                      config.learning_rate)
            self.writer = OneWriter()
        else:
            self.manager = tf.train.CheckpointManager(
                state.checkpoint, directory=str(self.directory),
                max_to_keep=config.keep if is_chief else 1,
                checkpoint_name=checkpoints.PREFIX, step_counter=state.step,
            )
        self.last_saved = -1
        self._warmed = False
        self.summaries = Summaries(run_dir / TENSORBOARD_DIR if is_chief else None)
        if int(state.step.numpy()) > 0:  # resumed or forked: steps after it are logged anew
            self.summaries.restart_at(int(state.step.numpy()) + 1)
        self._last_heartbeat = 0.0
        self.rollbacks = 0
        self._poisoned_steps: set[int] = set()
        # A multi-worker process must not stop on its own: the stop flag is all-reduced in the
        # next step so that every worker saves the same step and exits together.
        self.may_stop_alone = config.strategy != "multi-worker"

    def run(self) -> int:
        step = int(self.state.step.numpy())
        loss = math.nan
        started, last_report = time.perf_counter(), (step, time.perf_counter())
        try:
            while step < self.config.steps:
                last = self._chunk_end(step)
                indices = [self.batches.indices(s) for s in range(step + 1, last + 1)]
                poison = [self._poisoned(s) for s in range(step + 1, last + 1)]
                self._arm_preemption(last)
                losses, (stop, save) = self.runner.run(indices, self.requests.pending, poison)
                if self.writer is not None:
                    self.writer.check()  # a failed background save stops training now
                if self.writer is not None and not self._warmed:
                    # after the first step, never before it: a recovery waits for that step
                    self._warmed = True
                    self.writer.submit(self.shadow.warm_up)
                rolled_back = False
                for loss in losses:
                    step += 1
                    status = self._after_step(step, loss)
                    if status == ROLL_BACK:
                        step, rolled_back = self._roll_back(step), True
                        if step is None:
                            return exitcodes.NON_FINITE
                        break
                    if status is not None:
                        return status
                if rolled_back:  # the rest of this chunk ran on poisoned weights: redo it
                    continue
                if step // 50 != (step - len(losses)) // 50:
                    last_report = self._report(step, loss, last_report)
                if (stop or (self.requests.stop and self.may_stop_alone)) and (
                    step < self.config.steps  # preempted at the last step: simply finished
                ):
                    return self._preempted(step, loss)
                if save or (self.requests.save and self.may_stop_alone):
                    self.requests.save = False
                    self.save(step, loss, requested=True)
            self._wait_for_save()
        finally:
            if self.writer is not None:
                self.writer.close()
            self._remove_scratch()
            self.summaries.close()
        if self.is_chief:
            self.events.emit("run_finished", step=step, loss=loss,
                             seconds=time.perf_counter() - started)
        print(f"finished at step {step}, loss {loss:.6f}", flush=True)
        return exitcodes.FINISHED

    def _chunk_end(self, step: int) -> int:
        """Last step of the next batch of work: one step, or for scheduled (parameter-server)
        steps everything up to the next checkpoint, fault or the end."""
        if not self.runner.chunked:
            return step + 1
        every = self.config.checkpoint_every
        ends = [self.config.steps, (step // every + 1) * every]
        ends += self.faults.steps(after=step)
        return min(ends)

    def _after_step(self, step: int, loss: float) -> int | None:
        if self.is_chief:
            self.events.emit("step", step=step, loss=loss, epoch=self.batches.epoch_of(step))
            self.summaries.scalar("loss", loss, step)
        elif time.monotonic() - self._last_heartbeat > self.HEARTBEAT_SECONDS:
            self._last_heartbeat = time.monotonic()
            self.events.emit("heartbeat", role=self.role, index=self.index, step=step)
        if not math.isfinite(loss):
            if self.is_chief:
                self.events.emit("non_finite_loss", step=step)
            print(f"step {step}: loss is {loss}; not checkpointing this state", flush=True)
            return ROLL_BACK
        if step % self.config.checkpoint_every == 0 or step == self.config.steps:
            self.save(step, loss)
        self._scheduled_faults(step)
        return None

    def _preempted(self, step: int, loss: float) -> int:
        self.save(step, loss)
        self._wait_for_save()
        if self.is_chief:
            self.events.emit("preempted", step=step,
                             checkpoint=f"{checkpoints.CHECKPOINT_DIR}/ckpt-{step}")
        print(f"preempted: saved step {step}, exiting", flush=True)
        return exitcodes.PREEMPTED

    def _report(self, step, loss, last):
        now = time.perf_counter()
        rate = (step - last[0]) / max(now - last[1], 1e-9)
        print(f"step {step} loss {loss:.6f} ({rate:.0f} steps/s)", flush=True)
        return step, now

    def _poisoned(self, step: int) -> bool:
        if self.requests.take_nan():  # "Inject NaN now" (SIGUSR2 from the window)
            self.events.emit("fault_injected", kind="nan", target="chief", step=step,
                             source="user")
            return True
        target = self.faults.at(step, "nan")
        if target is None or step in self._poisoned_steps:
            return False
        self._poisoned_steps.add(step)  # once: the replay after the rollback is clean
        self.events.emit("fault_injected", kind="nan", target=target, step=step,
                         source="schedule")
        return True

    def _roll_back(self, step: int) -> int | None:
        """Restore the newest valid checkpoint before `step` in this process; returns its step,
        or None when there is none or the loss keeps diverging."""
        self.rollbacks += 1
        self._wait_for_save()
        info = checkpoints.newest_valid(self.run_dir, at_most=step - 1)
        if info is None or self.rollbacks > MAX_ROLLBACKS:
            why = "no valid checkpoint" if info is None else f"{MAX_ROLLBACKS} rollbacks"
            print(f"step {step}: non-finite loss and {why}; stopping", flush=True)
            return None
        self.state.checkpoint.restore(str(info.prefix)).assert_existing_objects_matched()
        restored = int(self.state.step.numpy())
        self.summaries.restart_at(restored + 1)
        if self.is_chief:
            self.events.emit("rolled_back", from_step=step, to_step=restored,
                             checkpoint=info.relpath)
        print(f"rolled back from step {step} to checkpoint {restored}", flush=True)
        return restored

    def _arm_preemption(self, last: int) -> None:
        """A preemption planned at step `last` (the end of the coming chunk) is requested
        before that step runs, so that every worker learns it in that step and saves it."""
        target = self.faults.at(last, "preempt")
        if target is not None:
            self.events.emit("fault_injected", kind="preempt", target=target, step=last,
                             source="schedule")
            self.requests.stop = True

    def _scheduled_faults(self, step: int) -> None:
        for kind, sig in (("hang", signal.SIGSTOP), ("kill", signal.SIGKILL)):
            target = self.faults.at(step, kind)
            if target is not None:
                self._wait_for_save()
                self.events.emit("fault_injected", kind=kind, target=target, step=step,
                                 source="schedule")
                print(f"fault: {signal.Signals(sig).name} at step {step}", flush=True)
                os.kill(os.getpid(), sig)

    def save(self, step: int, loss: float, requested: bool = False) -> None:
        """Checkpoint at `step` (numbered by step); on the chief also validate and write the
        metadata file. Every worker of a cluster must call it at the same steps. Outside a
        cluster it returns once the variables are copied; the files follow on the writer
        thread (`_wait_for_save` waits for them)."""
        if step == self.last_saved:
            return
        self.last_saved = step
        if not self.is_chief:
            self.manager.save(checkpoint_number=step)
            self._remove_scratch()
            return
        began = time.perf_counter()
        fields = {"loss": loss, "time": time.time(), "epoch": self.batches.epoch_of(step),
                  "requested": requested}
        if self.writer is None:
            self._complete_save(step, fields, began)
            return
        self.writer.wait()  # at most one checkpoint in flight
        self.shadow.take()
        self.writer.submit(self._complete_save, step, fields, None,
                           time.perf_counter() - began)

    def _wait_for_save(self) -> None:
        if self.writer is not None:
            self.writer.wait()

    def _complete_save(self, step: int, fields: dict, began: float | None,
                       stall_seconds: float | None = None) -> None:
        """Write checkpoint `step` (the shadow copy, or the real state through the manager),
        validate it, write its metadata and report it. `began`: when the step path started
        the save (it stalls until this returns), else `stall_seconds` is how long it did."""
        prefix = self.directory / f"{checkpoints.PREFIX}-{step}"
        checkpoints.meta_path(prefix).unlink(missing_ok=True)  # a stale one must not vouch
        checkpoints.damage_path(prefix).unlink(missing_ok=True)  # nor a stale verdict damn
        started = time.perf_counter()
        if self.shadow is not None:
            try:
                self.shadow.write(prefix)
            except (tf.errors.OpError, OSError) as exc:
                raise write_error(prefix, exc) from exc
        else:
            before = set(self.manager.checkpoints)
            self.manager.save(checkpoint_number=step)
            dropped = before - set(self.manager.checkpoints)
        save_seconds = time.perf_counter() - started
        val_loss, val_accuracy = (self.shadow or self.state).evaluate(self.data.x_val,
                                                                      self.data.y_val)
        # The events go first: a kill right after the metadata (which makes the checkpoint
        # valid) must not leave a valid checkpoint whose validation was never reported.
        self.events.emit("validation", step=step, val_loss=val_loss, val_accuracy=val_accuracy)
        self.summaries.scalar("val_loss", val_loss, step)
        self.summaries.scalar("val_accuracy", val_accuracy, step)
        checkpoints.write_metadata(
            prefix, loss=fields["loss"], val_loss=val_loss, val_accuracy=val_accuracy,
            time=fields["time"], epoch=fields["epoch"], strategy=self.config.strategy,
            replicas=self.state.strategy.num_replicas_in_sync,
            global_batch_size=self.config.global_batch_size,
        )
        size = sum(p.stat().st_size for p in checkpoints.tf_files(prefix.parent, step))
        if began is not None:
            stall_seconds = time.perf_counter() - began
        self.events.emit("checkpoint_saved", step=step, path=f"checkpoints/{prefix.name}",
                         loss=fields["loss"], size=size, save_seconds=save_seconds,
                         stall_seconds=stall_seconds, requested=fields["requested"],
                         background=self.shadow is not None)
        if self.shadow is not None:
            point_state_file(self.directory,
                             checkpoints.keep_newest(self.directory, self.config.keep, step))
        else:
            self._drop_metadata(dropped)
        self.summaries.flush()

    def _remove_scratch(self) -> None:
        if not self.is_chief:
            shutil.rmtree(self.directory, ignore_errors=True)
            try:
                self.directory.parent.rmdir()  # RUN/scratch, once no worker uses it
            except OSError:
                pass

    def _drop_metadata(self, dropped: set[str]) -> None:
        # CheckpointManager deletes old checkpoints beyond max_to_keep but not our metadata.
        for prefix in map(Path, dropped):
            if not checkpoints.tf_files(prefix.parent, int(prefix.name.rsplit("-", 1)[1])):
                checkpoints.meta_path(prefix).unlink(missing_ok=True)
