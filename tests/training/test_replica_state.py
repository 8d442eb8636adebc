"""State that each replica keeps apart (issue 25, found while trying to break it): a layer's
plain `tf.Variable` (aggregation NONE) assigned from each replica's own batch under
MirroredStrategy holds another value on each replica. A checkpoint and a snapshot keep the first
replica's copy only, so a run killed at 35 and restored from memory trained steps 40–60 to other
bits while `exact_resume = true` was recorded. The user-code check now names such a variable."""

from __future__ import annotations

import pytest

from ftgui import cli
from ftgui.core.settings import config as configmod

PER_REPLICA_MEAN = """
import keras
import tensorflow as tf
from keras import layers


class RunningMean(layers.Layer):
    def build(self, input_shape):
        self.ema = tf.Variable(tf.zeros(input_shape[-1:]), trainable=False, name="ema")

    def call(self, x, training=False):
        if training:
            self.ema.assign(0.9 * self.ema + 0.1 * tf.reduce_mean(x, axis=0))
        return x + 0.01 * self.ema


def build(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = layers.Dense(32, activation="relu")(layers.Flatten()(inputs))
    x = RunningMean(name="running")(x)
    return keras.Model(inputs, layers.Dense(num_classes)(x))
"""


@pytest.mark.tf
@pytest.mark.parametrize("strategy, promised", [("mirrored", False), ("default", True)])
def test_a_variable_each_replica_updates_apart_is_named(tmp_path, capsys, strategy, promised):
    model = tmp_path / "running_mean.py"
    model.write_text(PER_REPLICA_MEAN)
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--model", f"{model}:build", "--steps", "2",
                     "--checkpoint-every", "2", "--strategy", strategy]) == 0
    record = configmod.load_record(run_dir)
    assert record["exact_resume"] is promised
    if promised:
        return
    assert record["determinism_reason"] == (
        "variables hold another value on each replica after a step (each replica updates them "
        "from its own batch): running/ema; a checkpoint or snapshot keeps one replica's copy "
        "only, so after a restore the other replicas train on another value "
        "(BatchNormalization(synchronized=True) keeps its statistics equal on all replicas; a "
        "tf.Variable can be given aggregation=tf.VariableAggregation.MEAN)")
    assert "exact resume is not guaranteed" in capsys.readouterr().out
