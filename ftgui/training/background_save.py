"""Checkpoints written off the step path: a shadow copy of the training state and one writer
thread.

At a checkpoint step the training thread only copies every variable (model, optimizer slots and
iterations, any other variable of the object graph, global step) into a shadow copy with the same
object structure - one traced function, about a millisecond for the built-in models - and goes on
training. A single worker thread then writes the shadow copy with a traced
`tf.train.Checkpoint.write`, evaluates it on the validation split, reports it (events) and hands the
bookkeeping (metadata, retention, state file) to the checkpoint clerk
(`ftgui.core.checkpoints.clerk`), a helper process. Because the structure is the same, the files
restore into the real model with `assert_existing_objects_matched()`.

Why not TensorFlow's own `CheckpointOptions(enable_async=True)`: in TF 2.21 it fails on the second
save of a Keras 3 model ("tf.function only supports singleton tf.Variables"). Why a copy: the
writer must not read variables that the next step is updating. At most one checkpoint is in
flight; the next one waits for it.

Used for strategies whose variables live in this process (default, one-device, mirrored). In a
multi-worker or parameter-server cluster a save is collective and stays on the step path.
The writer thread itself is `checkpoint_writer.OneWriter`; the checkpoint action
(`actions/checkpoint.py`) puts the two together.
"""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from ftgui.core.checkpoints import listing as checkpoints
from ftgui.training import models
from ftgui.training.state_variables import name_of, state_variables
from ftgui.training.traced import traced


def _first_difference(sources: list, targets: list) -> str:
    """The first variable whose shape or dtype differs between two lists of variables, in
    words ('' when none does): 'variable 3 dense_1/kernel (16, 8) float32, then dense_1/kernel
    (8, 16) float32', or the two counts."""
    def described(variable) -> str:
        dtype = getattr(variable.dtype, "name", variable.dtype)
        return f"{name_of(variable)} {tuple(variable.shape)} {dtype}"

    for k, (source, target) in enumerate(zip(sources, targets, strict=False)):
        if (tuple(source.shape), source.dtype) != (tuple(target.shape), target.dtype):
            return f"variable {k + 1} {described(source)}, then {described(target)}"
    if len(sources) != len(targets):
        return f"{len(sources)} variables, then {len(targets)}"
    return ""


class ShadowState:
    """A second model, Adam optimizer and step counter shaped like a TrainState's, as plain
    variables under the default strategy.

    Raises ValueError if the copy does not match the original variable for variable (shape and
    dtype), which would mean the two were built differently.
    """

    def __init__(self, state, model_name: str, input_shape: tuple[int, ...], num_classes: int,
                 learning_rate: float):
        # built from the random state the original was: a constant drawn in build() that is
        # no weight is then the same in both (`models.build_at`)
        self.model = models.build_at(getattr(state, "random_at_build", None), model_name,
                                     input_shape, num_classes)
        self.optimizer = keras.optimizers.Adam(learning_rate=learning_rate)
        self.optimizer.build(self.model.trainable_variables)
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
        self.checkpoint = tf.train.Checkpoint(model=self.model, optimizer=self.optimizer,
                                              step=self.step,
                                              **models.checkpointed_state(self.model))
        # A checkpoint never save()d has no save_counter; the real one has it after a restore
        # and `assert_existing_objects_matched` would miss it in our files.
        _ = self.checkpoint.save_counter
        self._score = state.score
        # Every variable of the object graph, not only `model.variables`: a user layer's plain
        # tf.Variable would otherwise be written with its initial value (issue 25).
        self._sources = state_variables(state)
        self._targets = state_variables(self)
        problem = _first_difference(self._sources, self._targets)
        if problem:
            raise ValueError(f"model: building it a second time (the background save's copy) "
                             f"gave another model: {problem}; build(input_shape, num_classes) "
                             "must make the same variables, in the same order, every call")
        # Both traced: the copy then costs ~1 ms on the step path (~6 ms eager), the write
        # ~4 ms (~12-19 ms eager); `warm_up` traces them (~0.25 s) on the writer thread.
        # Once traced, the concrete functions are called: the polymorphic call's argument
        # binding and trace lookup cost as much Python (holding the GIL the training thread
        # needs) as the call itself, e.g. 0.41 against 0.28 ms for the copy, 2.2 against
        # 1.7 ms of CPU for the write (measured in one process, 2026-12-01).
        # The periodic save writes and runs the validation forward pass in one traced call:
        # one function execution instead of two, 2.45 against 3.0 ms of process CPU
        # (60 saves of the mlp in one process, issue 14's note, 2026-12-01).
        self._take = traced(self._copy)
        self._write = traced(self._write_on_one_device)
        self._write_logits = traced(self._write_and_logits)
        self._take_traced = self._write_traced = None
        self._traced_for: tuple[np.ndarray, tf.Tensor, object] | None = None  # x, tensor, fn

    def _copy(self):
        for source, target in zip(self._sources, self._targets, strict=True):
            target.assign(tf.convert_to_tensor(source))

    def warm_up(self, x_val: np.ndarray | None = None) -> None:
        """Trace the copy and the write now (call it on the writer thread once training runs),
        so that no checkpoint waits for TensorFlow's tracing; with `x_val` (the validation
        inputs), the write fused with the forward pass on them that `write_and_evaluate`
        runs (~0.4 ms for 359 rows against ~7 ms eager, bench_checkpoint.py) in place of the
        write alone, which `write` then traces at its first call (tracing both cost the
        ResNet's trainer 0.2 s more CPU beside its first steps, for a write no periodic
        save makes)."""
        self._take_traced = self._take.get_concrete_function()
        if x_val is None:
            self._write_traced = self._write.get_concrete_function(tf.TensorSpec([], tf.string))
            return
        tensor = tf.constant(x_val)
        self._traced_for = (x_val, tensor, self._write_logits.get_concrete_function(
            tf.TensorSpec([], tf.string), tensor))

    def take(self) -> None:
        """Copy the original's current values into the shadow variables."""
        (self._take_traced or self._take)()

    def take_eagerly(self) -> None:
        """`take`, traced if `warm_up` traced it, else eagerly (~6 ms for the MLP): before the
        first step, tracing (~0.1-0.25 s) would delay it."""
        (self._take_traced or self._copy)()

    def _write_on_one_device(self, prefix):
        # Traced without a device, the object-graph tensor would get a shard of its own.
        with tf.device(self.step.device):
            return self.checkpoint.write(prefix)

    def _write_and_logits(self, prefix, x):
        self._write_on_one_device(prefix)
        return self.model(x, training=False)

    def write(self, prefix: Path) -> dict[str, int]:
        """Write the copy as TensorFlow checkpoint files `prefix.index` and
        `prefix.data-00000-of-00001` (creating the folder); returns their sizes in bytes by
        file name (two stats: cheaper than listing the folder, `checkpoints.tf_files`)."""
        prefix.parent.mkdir(parents=True, exist_ok=True)
        (self._write_traced or self._write)(tf.constant(str(prefix)))
        return self._sizes(prefix)

    def write_and_evaluate(self, prefix: Path, x: np.ndarray, y: np.ndarray
                           ) -> tuple[dict[str, int], float, float | None]:
        """`write` then `evaluate` on (`x`, `y`): the files' sizes in bytes by name, the
        validation loss and accuracy. One traced call when `warm_up` was given this same `x`.
        Raises what `write` raises (TensorFlow's OpError, OSError)."""
        if self._traced_for is None or self._traced_for[0] is not x:
            files = self.write(prefix)
            return (files, *self.evaluate(x, y))
        prefix.parent.mkdir(parents=True, exist_ok=True)
        logits = self._traced_for[2](tf.constant(str(prefix)), self._traced_for[1])
        return (self._sizes(prefix), *self._score(np.asarray(logits), y))

    @staticmethod
    def _sizes(prefix: Path) -> dict[str, int]:
        names = (f"{prefix.name}.index", f"{prefix.name}.data-00000-of-00001")
        return {name: (prefix.parent / name).stat().st_size for name in names}

    def evaluate(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float | None]:
        """Validation loss and accuracy of the copy (the state's `score`: `models.loss_and_accuracy`
        for the built-ins), eager (~7 ms for 359 rows): tracing at that moment (~0.12 s) would
        cost more than it saves (a just-in-time save evaluates once; the periodic save calls
        `write_and_evaluate`)."""
        logits = self.model(tf.constant(x), training=False)
        return self._score(np.asarray(logits), y)


def valid_up_to(directory: Path, step: int) -> list[checkpoints.CheckpointInfo]:
    """The valid checkpoints in `directory` up to `step`, oldest first."""
    return [c for c in checkpoints.list_checkpoints(directory.parent)
            if c.valid and c.step <= step]
