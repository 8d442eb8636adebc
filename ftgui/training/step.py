"""The training step: model, optimizer and global step under one strategy, the traced replica
step under `strategy.run`, and evaluation (the part Orbit calls the trainer).

Shape of a step: the global batch (global_batch_size, ...) is split into `num_replicas` contiguous
slices; each replica computes `tf.nn.compute_average_loss(per_example, global_batch_size)` and the
losses are summed with `strategy.reduce(SUM)`, so the loss is the mean over the global batch for
any replica count (the recipe of the tf.distribute custom-training-loop guide). A model's own
`model.losses` (regularization) are added, each replica's divided by the replica count
(`tf.nn.scale_regularization_loss`), so the step's loss is data loss plus regularization.

Nothing here writes files or events: the loop (`loop.py`) runs the steps, and the actions
(`actions/`) do everything that follows a step.
"""

from __future__ import annotations

import math
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from ftgui.core.settings.config import RunConfig
from ftgui.training.data import Dataset
from ftgui.training.restore import restore
from ftgui.training.traced import traced


class TrainState:
    """Model, optimizer and global step under one strategy, with the replica step function."""

    def __init__(self, strategy: tf.distribute.Strategy, config: RunConfig, data: Dataset):
        from ftgui.training import models

        self.strategy = strategy
        self.global_batch_size = config.global_batch_size
        self.learning_rate = config.learning_rate
        self.task = config.task
        self.per_example_loss = models.per_example_loss(config.model, config.task)
        self._own_loss = models.user_loss(config.model) is not None
        self._metrics = models.resolve_metrics(models.user_metrics(config.model), config.task)
        self.last_metrics: dict[str, float] = {}  # the module's metrics at the last `score`
        # where the random generators stood: the background save's copy is built from there
        self.random_at_build = models.random_states()
        with strategy.scope():
            self.model = models.build(config.model, data.input_shape, data.num_classes)
            self.optimizer = keras.optimizers.Adam(learning_rate=config.learning_rate)
            # Built eagerly: Adam's slots created inside tf.function cannot be lifted under
            # MirroredStrategy in TF 2.21 (DESIGN.md §4).
            self.optimizer.build(self.model.trainable_variables)
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
        self.checkpoint = tf.train.Checkpoint(
            model=self.model, optimizer=self.optimizer, step=self.step,
            **models.checkpointed_state(self.model),  # seeded dropout's state
        )
        self._train_step = traced(self._distributed_step)
        # A function of exactly (x, y): traced over the method itself, whose `scale=None`
        # default is bound on every call, a step cost ~0.3 ms more (bench_training_overhead).
        self._plain_step = traced(lambda x, y: self._distributed_plain_step(x, y))
        self._poisoned_step = traced(
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
        self._evaluate = traced(self._eval_logits)
        # The plain step that also returns the whole state (an in-memory snapshot's
        # payload), and whether the next step is to be that one.
        self._fused_step = None
        self.state_output_next = False
        self.last_state_output = None  # what the last such step returned (a list of tensors)
        self._poison_to_trace = False
        self.plan_poison(config)

    def plan_poison(self, config: RunConfig) -> None:
        """Trace the poisoned step after the next plain step when `config` may inject a NaN
        (planned, or drawn by chaos), not at the fault: that step then took 2.5-3 s here and
        a 3 s watchdog killed the trainer instead of letting it roll back (issue 24 trial).
        Called again with the run's own configuration when a warm standby built for other
        settings takes its order (the NaN plan is read after it: `standby.NOT_BUILT`); a
        step traced already is a cache hit."""
        self._poison_to_trace = config.nan_at_step > 0 or (
            config.chaos_faults > 0 and "nan" in config.chaos_kinds.split(","))

    @property
    def global_step(self) -> int:
        """The number of global steps this state has taken (read from its variable)."""
        return int(self.step.numpy())

    def restore(self, prefix: Path) -> int:
        """Load checkpoint `prefix` (e.g. RUN/checkpoints/ckpt-30) into this state; returns its
        global step. The run's learning rate applies from there on: the checkpoint's (Adam
        saves its rate as a variable) would otherwise win over a rate changed on resume.
        Raises `tf.errors.OpError`, `ValueError` or `AssertionError` (from
        `assert_existing_objects_matched`) when the files do not fit or cannot be read."""
        restore(self.checkpoint, prefix)  # through a path TensorFlow does not glob
        self.optimizer.learning_rate = self.learning_rate  # assigns Adam's variable
        return self.global_step

    def fuse_state_output(self, read) -> None:
        """Give the plain step (one-process strategies) a second form that, after the update
        and the global step's increment, also returns `read()` — a function of no arguments
        that reads the whole state (`actions.snapshot.StateBytes.parts`: a list of tensors),
        traced into the same graph. A step run while `state_output_next` is set is that form,
        and leaves the tensors in `last_state_output`: a snapshot then costs no dispatch of its
        own (CheckFreq, FAST '21, overlaps its snapshot with the step the same way). Only the
        first call builds it: every `read` of one state reads the same variables in the same
        order."""
        if self._fused_step is None:
            self._fused_step = traced(
                lambda x, y: (self._distributed_plain_step(x, y), read()))

    def replica_step(self, x, y, scale=None):
        """One replica's forward, backward and update on its slice; returns its share of the
        global-batch mean loss (a scalar) plus, when the model has any, its share of
        `model.losses` (kernel regularizers, `add_loss`: the training loss `model.fit` would
        minimise). `scale` multiplies the loss: 1.0 (exact, changes no bit) or NaN for an
        injected numerics fault."""
        with tf.GradientTape() as tape:
            logits = self.model(x, training=True)
            per_example = self.per_example_loss(y, logits)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=self.global_batch_size)
            if self.model.losses:  # regularizers and add_loss, as model.fit adds them
                loss += tf.nn.scale_regularization_loss(tf.add_n(self.model.losses))
            if scale is not None:
                loss = loss * scale
        gradients = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.model.trainable_variables, strict=True))
        return loss

    def _sliced_replica_step(self, x_global, y_global, scale):
        """`replica_step` on this replica's contiguous slice of the global batch (a tensor of
        shape (global_batch_size, ...), the same one given to every replica)."""
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        rows = x_global.shape[0]
        per_replica = (tf.shape(x_global)[0] if rows is None else rows) // (
            self.strategy.num_replicas_in_sync)
        rows = slice(replica * per_replica, (replica + 1) * per_replica)
        return self.replica_step(x_global[rows], y_global[rows], scale)

    def _replica_step_with_flag(self, x, y, stop, scale):
        return self.replica_step(x, y, scale), stop

    def _distributed_step(self, x, y, stop, scale):
        loss, stop = self.strategy.run(self._replica_step_with_flag, args=(x, y, stop, scale))
        self.step.assign_add(1)
        total = self.strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None)
        # Every worker learns that one of them was asked to stop (or to save), in the same step.
        return total, self.strategy.reduce(tf.distribute.ReduceOp.SUM, stop, axis=None)

    def _distributed_plain_step(self, x, y, scale=None):
        loss = self.strategy.run(self._sliced_replica_step, args=(x, y, scale))
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
        if not self.agrees_in_step:
            # One process: the whole global batch goes in as two host tensors and each replica
            # slices its rows inside the traced step. Handing in per-replica values instead
            # (`experimental_distribute_values_from_function`) cost ~0.19 ms a step more here
            # (of an MLP step's ~1.5 ms), and the losses are the same to the bit.
            with tf.device("/cpu:0"):
                x, y = tf.constant(x_global), tf.constant(y_global)
            if self.state_output_next and self._fused_step is not None and not poison:
                self.state_output_next = False
                loss, self.last_state_output = self._fused_step(x, y)
                loss = float(loss)
            else:
                step = self._poisoned_step if poison else self._plain_step
                loss = float(step(x, y))
            if self._poison_to_trace:  # after a plain step: the model's variables exist
                self._poison_to_trace = False
                self._poisoned_step.get_concrete_function(x, y)  # traces; runs nothing
            return loss, tuple(requests)
        return self._agreed_step(x_global, y_global, requests, poison)

    def _agreed_step(self, x_global: np.ndarray, y_global: np.ndarray,
                     requests: tuple[bool, bool], poison: bool) -> tuple[float, tuple[bool, bool]]:
        """`train_step` in a multi-worker cluster: per-replica inputs, and the stop/save flags
        all-reduced inside the step."""
        replicas = self.strategy.num_replicas_in_sync

        def local(context, array):
            per_replica = len(array) // replicas  # a contiguous slice: a view, no copy
            first = context.replica_id_in_sync_group * per_replica
            # tf.constant, not convert_to_tensor: ~0.06 ms less per call (bench_training_overhead)
            return tf.constant(array[first:first + per_replica])

        distribute = self.strategy.experimental_distribute_values_from_function
        x = distribute(lambda ctx: local(ctx, x_global))
        y = distribute(lambda ctx: local(ctx, y_global))
        scale = self._scales[bool(poison)]
        flag = distribute(lambda ctx: tf.constant([int(r) for r in requests], dtype=tf.int32))
        loss, agreed = self._train_step(x, y, flag, scale)
        stop_all, save_all = (bool(v) for v in agreed.numpy())
        return float(loss), (stop_all, save_all)

    def evaluate(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float | None]:
        """Mean loss and accuracy (fraction; None for regression) on (x, y)."""
        return self.score(self._evaluate(tf.convert_to_tensor(x)).numpy(), y)

    def score(self, outputs: np.ndarray, y: np.ndarray) -> tuple[float, float | None]:
        """Validation (loss, accuracy) of model `outputs` against `y` (`models.evaluate_outputs`
        with this run's task and loss)."""
        from ftgui.training.models import evaluate_metrics, evaluate_outputs

        if self._metrics:
            self.last_metrics = evaluate_metrics(self._metrics, outputs, y)
        return evaluate_outputs(outputs, y, self.task,
                                self.per_example_loss if self._own_loss else None)


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
