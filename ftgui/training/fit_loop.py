"""The Keras `model.fit` path, for comparison with ftgui's custom loop.

Same model, optimizer, data order and strategy; fault tolerance is Keras' own:
`BackupAndRestore(save_freq=checkpoint_every)` backs up to `RUN/fit-backup/` and, after a
crash, restores to the start of the epoch it was in, not to the step (Keras 3); `ModelCheckpoint`
writes `RUN/fit-checkpoints/epoch-NNN.weights.h5` (Keras 3 needs the `.weights.h5` ending for
weights-only saves). What the fit path cannot restore, and the window says so:
- the step: training starts again at the first step of the epoch;
- the data position: Keras starts the dataset again from its first batch, so the replayed
  steps see other batches than the first time;
- per-step losses: `logs["loss"]` is the running mean over the epoch so far.
"""

from __future__ import annotations

import math
import os
import signal
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from ftgui.core.checkpoints import fit_checkpoints
from ftgui.core.record import exitcodes
from ftgui.training.actions.pace import Pace
from ftgui.training.data import Dataset, StepBatches
from ftgui.training.summaries import TENSORBOARD_DIR, Summaries

BACKUP_DIR = "fit-backup"
CHECKPOINT_DIR = fit_checkpoints.FIT_DIR
RESTORES = "the start of the epoch (Keras BackupAndRestore); the data position is not restored"


class SaveClock(keras.callbacks.Callback):
    """Notes when an epoch ended, just before ModelCheckpoint writes its epoch file (it comes
    right before ModelCheckpoint in the list), so that `EventsCallback`, right after, knows how
    long training waited for that file (seconds, `perf_counter`)."""

    def __init__(self):
        super().__init__()
        self.epoch_ended = None

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_ended = time.perf_counter()


class EventsCallback(keras.callbacks.Callback):
    """Writes ftgui's events from `model.fit`: step (the running mean loss), validation, resumed,
    run_finished; the same values as TensorBoard scalars (`RUN/tensorboard/`); the metadata of
    each epoch file, so that `ftgui checkpoints` and the window list it; fires the planned kill
    faults; stops after `steps` global steps. Must come after ModelCheckpoint in the list."""

    def __init__(self, events, steps: int, steps_per_epoch: int, faults, run_dir: Path,
                 strategy: str = "", pace: float = 0.0, clock: SaveClock | None = None):
        super().__init__()
        self.clock = clock
        self.events, self.steps, self.steps_per_epoch = events, steps, steps_per_epoch
        self.faults, self.run_dir, self.strategy = faults, run_dir, strategy
        self.summaries = Summaries(run_dir / TENSORBOARD_DIR)
        self.epoch = 0
        self.started = False
        self.last_loss = math.nan
        self.pace = Pace(pace) if pace else None  # `pace` steps/s at most (0: off)

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch
        if not self.started:
            self.started = True
            if epoch > 0:  # BackupAndRestore put the run back at the start of this epoch
                self.events.emit("resumed", from_step=epoch * self.steps_per_epoch,
                                 checkpoint=BACKUP_DIR, restores=RESTORES)
                self.summaries.restart_at(epoch * self.steps_per_epoch + 1)
            elif getattr(self.events, "attempt", 0) > 0:  # a restart with no backup yet
                self.events.emit("resumed", from_step=0, checkpoint=None, source="none",
                                 restores=RESTORES)

    def on_train_batch_end(self, batch, logs=None):
        step = self.epoch * self.steps_per_epoch + batch + 1
        self.last_loss = float((logs or {}).get("loss", math.nan))
        self.events.emit("step", step=step, loss=self.last_loss, epoch=self.epoch,
                         running_mean=True)
        self.summaries.scalar("loss", self.last_loss, step)
        target = self.faults.at(step, "kill")
        if target is not None:  # the supervisor passes only faults not fired yet
            self.events.emit("fault_injected", kind="kill", target=target, step=step,
                             source="schedule")
            os.kill(os.getpid(), signal.SIGKILL)
        if step >= self.steps:
            self.model.stop_training = True
        elif self.pace is not None:  # the wait after a step; the loss is not touched
            self.pace(None)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        step = min((epoch + 1) * self.steps_per_epoch, self.steps)
        val_loss = float(logs.get("val_loss", math.nan))
        val_accuracy = float(logs.get("val_accuracy", math.nan))
        if "val_loss" in logs:
            self.events.emit("validation", step=step, val_loss=val_loss,
                             val_accuracy=val_accuracy)
            self.summaries.scalar("val_loss", val_loss, step)
            self.summaries.scalar("val_accuracy", val_accuracy, step)
        weights = self.run_dir / CHECKPOINT_DIR / f"epoch-{epoch + 1:03d}.weights.h5"
        if weights.exists():  # ModelCheckpoint, earlier in the list, has just written it
            began = None if self.clock is None else self.clock.epoch_ended
            waited = 0.0 if began is None else time.perf_counter() - began
            fit_checkpoints.write_fit_metadata(
                weights, step=step, epoch=epoch, loss=self.last_loss, val_loss=val_loss,
                val_accuracy=val_accuracy, time=time.time(), strategy=self.strategy,
                steps_per_epoch=self.steps_per_epoch,
            )
            # counted as a checkpoint of the run: the comparison said "model.fit: 0
            # checkpoints" of a run with one per epoch (BackupAndRestore's backups of
            # `fit-backup/` are Keras' own, not counted)
            self.events.emit("checkpoint_saved", step=step,
                             path=f"{CHECKPOINT_DIR}/{weights.name}", loss=self.last_loss,
                             size=weights.stat().st_size, save_seconds=waited,
                             stall_seconds=waited, requested=False, background=False)
        self.summaries.flush()

    def on_train_end(self, logs=None):
        self.summaries.close()


def validation_batch(rows: int, global_batch_size: int, replicas: int) -> int:
    """The batch size of `fit`'s validation data: the global batch size, or, for fewer `rows`,
    the largest multiple of `replicas` in them. Keras 3 under MirroredStrategy fails
    (`AddN … [7,8] != [6,8]`) when the first validation batch does not split evenly across
    the replicas (numpy arrays given to `fit` are one batch of 32); a smaller last batch is
    fine. Every row is scored. Needs rows >= replicas (`datasets.check` refuses fewer)."""
    if rows >= global_batch_size:
        return global_batch_size
    return max(replicas, rows // replicas * replicas)


def run_fit(state, data: Dataset, config, run_dir: Path, events, faults) -> int:
    """Train with `model.fit` until `config.steps` global steps; returns an exit status."""
    replicas = state.strategy.num_replicas_in_sync
    if len(data.x_val) < replicas:  # a dataset function's own validation split
        raise ValueError(f"dataset: {data.name}: {len(data.x_val)} validation row(s), fewer "
                         f"than the {replicas} replicas that --loop fit validates on")
    batches = StepBatches(len(data.x_train), config.global_batch_size, config.seed)
    steps_per_epoch = batches.steps_per_epoch
    epochs = math.ceil(config.steps / steps_per_epoch)
    # The same global batches, in the same order, as the custom loop's steps 1, 2, …
    order = np.concatenate([batches.indices(s) for s in range(1, epochs * steps_per_epoch + 1)])
    dataset = tf.data.Dataset.from_tensor_slices(
        (data.x_train[order], data.y_train[order])
    ).batch(config.global_batch_size, drop_remainder=True)
    validation = tf.data.Dataset.from_tensor_slices((data.x_val, data.y_val)).batch(
        validation_batch(len(data.x_val), config.global_batch_size, replicas))
    with state.strategy.scope():
        state.model.compile(
            optimizer=state.optimizer,
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
    (run_dir / CHECKPOINT_DIR).mkdir(parents=True, exist_ok=True)
    clock = SaveClock()
    callbacks = [
        keras.callbacks.BackupAndRestore(str(run_dir / BACKUP_DIR),
                                         save_freq=config.checkpoint_every,
                                         delete_checkpoint=False),
        clock,
        keras.callbacks.ModelCheckpoint(
            str(run_dir / CHECKPOINT_DIR / "epoch-{epoch:03d}.weights.h5"),
            save_weights_only=True,
        ),
        EventsCallback(events, config.steps, steps_per_epoch, faults, run_dir, config.strategy,
                       config.pace, clock),
    ]
    started = time.perf_counter()
    print(f"model.fit: {epochs} epochs of {steps_per_epoch} steps; restores to {RESTORES}",
          flush=True)
    state.model.fit(dataset, epochs=epochs, steps_per_epoch=steps_per_epoch, verbose=0,
                    callbacks=callbacks, validation_data=validation)
    loss = callbacks[-1].last_loss
    events.emit("run_finished", step=config.steps, loss=loss,
                seconds=time.perf_counter() - started)
    print(f"finished at step {config.steps}, running-mean loss {loss:.6f}", flush=True)
    return exitcodes.FINISHED
