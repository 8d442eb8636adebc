"""ftgui's training state for a workload, built in this process as the trainer builds it (imports
TensorFlow: only for the benchmarks that measure the step path in one process)."""

from __future__ import annotations

from _common import WORKLOADS


def build_state(workload: str):
    """(TrainState, Dataset, StepBatches, RunConfig) of `workload` (`_common.WORKLOADS`) at
    ftgui's defaults: MirroredStrategy over 2 logical CPUs (split here, before TensorFlow's
    runtime starts), global batch 64, the run's seed, deterministic ops."""
    import tensorflow as tf

    from ftgui.core.settings.config import RunConfig
    from ftgui.training import data as datamod
    from ftgui.training.step import TrainState
    from ftgui.training.strategies import configure_devices, make_strategy

    config = RunConfig(**WORKLOADS[workload])
    configure_devices(config)
    tf.keras.utils.set_random_seed(config.seed)
    tf.config.experimental.enable_op_determinism()
    dataset = datamod.load(config.dataset)
    state = TrainState(make_strategy(config), config, dataset)
    batches = datamod.StepBatches(len(dataset.x_train), config.global_batch_size, config.seed)
    return state, dataset, batches, config
