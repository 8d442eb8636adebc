"""Building the run's `tf.distribute` strategy, with logical CPU devices for MirroredStrategy."""

from __future__ import annotations

import tensorflow as tf

from ftgui.core.settings.config import RunConfig

# A collective that waits longer than this for a lost peer fails instead of hanging
# (TensorFlow's `CommunicationOptions(timeout_seconds=…)` bounds each collective).
COLLECTIVE_TIMEOUT_SECONDS = 30.0


def configure_devices(config: RunConfig) -> None:
    """Split the CPU into `config.replicas` logical devices for a CPU MirroredStrategy.

    Must run before TensorFlow initialises its runtime (before any op or device query beyond
    listing physical devices); raises `RuntimeError` otherwise.
    """
    if config.strategy == "mirrored" and config.gpus == 0 and config.replicas > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(config.replicas)]
        )


def make_strategy(config: RunConfig) -> tf.distribute.Strategy:
    """The strategy named by `config.strategy` (`default`, `one-device`, `mirrored`,
    `multi-worker`; the latter reads `TF_CONFIG` and must be built before other TF work).

    Raises `ValueError` when the devices asked for are not there.
    """
    if config.strategy == "multi-worker":  # first: any device query would start the runtime
        options = tf.distribute.experimental.CommunicationOptions(
            timeout_seconds=COLLECTIVE_TIMEOUT_SECONDS
        )
        return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    gpus = tf.config.list_logical_devices("GPU")
    if config.strategy == "default":
        return tf.distribute.get_strategy()
    if config.strategy == "one-device":
        return tf.distribute.OneDeviceStrategy("/gpu:0" if config.gpus and gpus else "/cpu:0")
    if config.strategy == "mirrored":
        if config.gpus:
            if len(gpus) < config.gpus:
                raise ValueError(f"gpus: {config.gpus} asked for, {len(gpus)} present")
            devices = [d.name for d in gpus[: config.gpus]]
        else:
            devices = [d.name for d in tf.config.list_logical_devices("CPU")][: config.replicas]
        return tf.distribute.MirroredStrategy(devices=devices)
    raise ValueError(f"strategy: {config.strategy!r} is not run by this trainer")
