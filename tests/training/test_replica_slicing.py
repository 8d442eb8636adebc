"""The one-process step hands the whole global batch in and each replica slices its rows inside
the traced step (issue 28: ~0.2 ms a step cheaper than per-replica values). It must train every
replica on the same rows, to the bit, as the per-replica values a multi-worker cluster (and a
hand-written loop) hands in: the losses and every variable after a few steps are equal."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.tf

SCRIPT = r"""
import numpy as np
import tensorflow as tf

from ftgui.core.settings.config import RunConfig
from ftgui.training import data as datamod
from ftgui.training.step import TrainState
from ftgui.training.strategies import configure_devices, make_strategy

config = RunConfig(strategy="mirrored", replicas=REPLICAS, global_batch_size=64)
configure_devices(config)
tf.config.experimental.enable_op_determinism()
dataset = datamod.load(config.dataset, config.task)
strategy = make_strategy(config)
batches = datamod.StepBatches(len(dataset.x_train), config.global_batch_size, config.seed)


def trained(step_of):
    tf.keras.utils.set_random_seed(config.seed)
    state = TrainState(strategy, config, dataset)
    losses = []
    for step in range(1, 6):
        rows = batches.indices(step)
        losses.append(step_of(state)(dataset.x_train[rows], dataset.y_train[rows]))
    return losses, [v.numpy() for v in state.model.variables + state.optimizer.variables]


sliced = trained(lambda s: lambda x, y: s.train_step(x, y)[0])
per_replica = trained(lambda s: lambda x, y: s._agreed_step(x, y, (False, False), False)[0])
assert sliced[0] == per_replica[0], (sliced[0], per_replica[0])
assert len(sliced[1]) == len(per_replica[1]) > 0
for a, b in zip(sliced[1], per_replica[1], strict=True):
    assert a.tobytes() == b.tobytes()
print("SAME", sliced[0])
"""


@pytest.mark.parametrize("replicas", [2, 4])
def test_replicas_slicing_the_global_batch_in_the_step_train_as_per_replica_values_do(replicas):
    result = subprocess.run([sys.executable, "-c", SCRIPT.replace("REPLICAS", str(replicas))],
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "SAME [" in result.stdout
