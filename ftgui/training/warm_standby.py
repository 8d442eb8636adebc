"""A fully warm standby: the training state built and its step run once before any order.

A standby (`python -m ftgui.training --standby RUN`) of a one-process strategy (default,
one-device, mirrored) builds what a cold start would from `RUN/config.toml` — devices, seeds,
dataset, strategy, model, optimizer — then runs one step so that TensorFlow traces, optimises
and places it, and puts every variable back to its value before that step, bit for bit. On its
order it only restores and trains. A cluster strategy (multi-worker, parameter server) needs the
order's `TF_CONFIG` before its strategy exists: such a standby only has TensorFlow imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from ftgui.core.config import RunConfig

PREPARED_STRATEGIES = ("default", "one-device", "mirrored")


@dataclass
class Prepared:
    """What a standby built for `config` (a `RunConfig.to_dict()`): (dataset, strategy,
    state, runner) as `__main__.build` returns them, and `seconds` it took."""

    config: dict
    built: tuple
    seconds: float


def can_prepare(config: RunConfig) -> bool:
    """Whether a standby can build this run's state before its order: one-process strategies
    with the custom loop (a cluster's strategy needs the order's `TF_CONFIG`)."""
    return config.strategy in PREPARED_STRATEGIES and config.loop == "custom"


def run_one_step_and_undo(state, data, config: RunConfig) -> None:
    """Run global step 1's batch through `state.train_step` (tracing and optimising the step
    function), then assign every variable (model, optimizer slots and iterations, global step)
    its value from before, so the state is exactly what it was built as."""
    from ftgui.training.data import StepBatches

    variables = [*state.model.variables, *state.optimizer.variables, state.step]
    before = [v.numpy() for v in variables]
    indices = StepBatches(len(data.x_train), config.global_batch_size, config.seed).indices(1)
    state.train_step(data.x_train[indices], data.y_train[indices])
    for variable, value in zip(variables, before, strict=True):
        variable.assign(value)
