"""A model whose layer keeps its own state in a plain `tf.Variable`: a counter of training
steps, created in `build()` and `assign_add`ed on every training call, that scales the layer's
output up over the first 50 steps (a warm-up schedule).

Keras 3 does not list such a variable in `model.variables`, but TensorFlow's object graph tracks
it: ftgui checkpoints, snapshots and restores it with the rest of the state, so a resumed run
continues the warm-up where it stopped.
"""

import keras
import tensorflow as tf
from keras import layers

WARMUP_STEPS = 50.0


class WarmUp(layers.Layer):
    """Multiplies its input by min(1, (steps trained + 1) / WARMUP_STEPS)."""

    def build(self, input_shape):
        self.counter = tf.Variable(0.0, trainable=False, name="warmup_steps")

    def call(self, x, training=False):
        if training:
            self.counter.assign_add(1.0)
        return x * tf.minimum(1.0, (self.counter + 1.0) / WARMUP_STEPS)


def build(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = layers.Flatten()(inputs)
    x = layers.Dense(32, activation="relu")(x)
    x = WarmUp(name="warmup")(x)
    return keras.Model(inputs, layers.Dense(num_classes)(x), name="warmup_counter")
