"""A fully warm standby: the training state built and its step run once before any order.

A standby (`python -m ftgui.training --standby RUN`) of a one-process strategy (default,
one-device, mirrored) builds what a cold start would from `RUN/config.toml` — devices, seeds,
dataset, strategy, model, optimizer — then runs one step so that TensorFlow traces, optimises
and places it, and puts every variable back to its value before that step, bit for bit. On its
order it only restores and trains. A cluster strategy needs a `TF_CONFIG` before its strategy
exists: a member of a standby cluster (`ftgui.core.supervision.standby`) has its own, and is
prepared like a one-process standby; its warm-up step runs the cluster's collectives once. Any other
standby of a cluster (a parameter-server task, an explicit `cluster` setting) only has TensorFlow
imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision.standby import wants_cluster

PREPARED_STRATEGIES = ("default", "one-device", "mirrored")


@dataclass
class Prepared:
    """What a standby built for `config` (a `RunConfig.to_dict()`): (dataset, strategy,
    state, runner) as `__main__.build` returns them, the checkpoint action's `shadow` copy
    (`background_save.ShadowState`, traced; None when not built), and `seconds` it took;
    `failed`: why building failed ('' when it did not; then the order is run by a cold
    trainer); `warmed`: False when the order came before the warm-up step (the state is as
    built, its step traced at its first call, as in a cold start)."""

    config: dict
    built: tuple
    shadow: object
    seconds: float
    failed: str = ""
    warmed: bool = True


def can_prepare(config: RunConfig, cluster_member: bool = False) -> bool:
    """Whether a standby can build this run's state before its order: one-process strategies
    with the custom loop, and a multi-worker run's standby-cluster member (`cluster_member`:
    started with a `TF_CONFIG` of its own; `ftgui.core.supervision.standby.wants_cluster`)."""
    if cluster_member:
        return wants_cluster(config)
    return config.strategy in PREPARED_STRATEGIES and config.loop == "custom"


def shadow_for(state, data, config: RunConfig):
    """The checkpoint action's shadow copy of `state`, built and traced now (building costs
    ~0.05-0.25 s, tracing ~0.25 s: neither is then paid after the order)."""
    from ftgui.training.background_save import ShadowState

    shadow = ShadowState(state, config.model, data.input_shape, data.num_classes,
                         config.learning_rate)
    shadow.warm_up(data.x_val)
    return shadow


def run_one_step_and_undo(state, data, config: RunConfig, warm_restore=None,
                          stop=lambda: False) -> None:
    """Run global step 1's batch through `state.train_step` (tracing and optimising the step
    function) and, when `warm_restore` names a checkpoint prefix, restore it (the first restore of a
    process costs several times the next ones); with in-memory snapshots on, run it again in the
    form that also returns the state (`TrainState.fuse_state_output`: tracing it after the order
    cost the first snapshot step ~0.3 s for the MLP); then assign every variable (model, optimizer
    slots and iterations, the object graph's others, global step) its value from before, so the
    state is exactly what it was built as. A warm-up restore that fails is ignored: the order's
    own restore will report it. `stop()` true after a stage (the order came): the stages
    left are skipped, the undo is not. Raises ValueError when a variable cannot be
    snapshotted."""
    import tensorflow as tf

    from ftgui.training.data import StepBatches
    from ftgui.training.state_variables import state_variables

    variables = state_variables(state)
    before = [v.numpy() for v in variables]
    indices = StepBatches(len(data.x_train), config.global_batch_size, config.seed).indices(1)
    state.train_step(data.x_train[indices], data.y_train[indices])
    if config.snapshot_every and not state.saves_collectively and not stop():
        from ftgui.training.actions.snapshot import StateBytes

        state.fuse_state_output(StateBytes(state).parts)
        state.state_output_next = True
        state.train_step(data.x_train[indices], data.y_train[indices])
        state.last_state_output = None
    if warm_restore is not None and not stop():
        try:
            state.restore(warm_restore)
        except (tf.errors.OpError, ValueError, AssertionError):
            pass
    for variable, value in zip(variables, before, strict=True):
        variable.assign(value)
