"""ParameterServerStrategy: the worker / ps server processes, and the coordinator's step function.

Workers and parameter servers are plain `tf.distribute.Server`s that serve until killed. The
coordinator (TF's `chief` task) builds the model under the strategy (variables live on the
parameter servers) and `ClusterCoordinator.schedule`s one function call per global step; each
call carries the row indices of that step's global batch, so the data of step N is the same as
under every other strategy. A worker that dies is retried by TensorFlow on another worker.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from ftgui.training.traced import traced


def serve_forever() -> None:
    """Run this process' worker or ps task from `TF_CONFIG` until the process is killed."""
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    server = tf.distribute.Server(
        resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc", start=True,
    )
    print(f"{resolver.task_type} {resolver.task_id} serving at {server.target}", flush=True)
    server.join()


def make_strategy() -> tuple[tf.distribute.Strategy, object]:
    """The coordinator's (strategy, ClusterCoordinator) from `TF_CONFIG`."""
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    return strategy, tf.distribute.coordinator.ClusterCoordinator(strategy)


class ScheduledSteps:
    """Schedules global steps on the workers and returns their losses after `join()`.

    `x_train` and `y_train` become constants of the step function, sent once to each worker.
    """

    chunked = True  # the loop hands over all steps up to the next checkpoint at once

    def __init__(self, state, coordinator, x_train: np.ndarray, y_train: np.ndarray):
        self.state = state
        self.coordinator = coordinator
        self._x = tf.constant(x_train)
        self._y = tf.constant(y_train)
        self._step_fn = traced(self._worker_step)

    def _worker_step(self, indices, scale):
        x = tf.gather(self._x, indices)
        y = tf.gather(self._y, indices)
        per_replica = self.state.strategy.run(self.state.replica_step, args=(x, y, scale))
        self.state.step.assign_add(1)
        return self.state.strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    def run(self, index_batches: list[np.ndarray], requests: tuple[bool, bool],
            poison: list[bool]) -> tuple[list[float], tuple[bool, bool]]:
        """Schedule one step per index batch (a NaN loss where `poison`), wait for all; returns
        their losses in order and the (stop, save) `requests` unchanged (only the coordinator
        takes them)."""
        remote = [
            self.coordinator.schedule(self._step_fn, args=(
                tf.constant(idx, dtype=tf.int32),
                tf.constant(np.nan if bad else 1.0, dtype=tf.float32),
            ))
            for idx, bad in zip(index_batches, poison, strict=True)
        ]
        self.coordinator.join()
        return [float(value.fetch()) for value in remote], requests
