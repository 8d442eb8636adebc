"""A model with a non-deterministic op: Gaussian noise drawn by a stateful TensorFlow random op,
whose state no checkpoint holds. It trains, but exact resume cannot be promised; ftgui's check
finds and names the op."""

import keras
import tensorflow as tf
from keras import layers


class Noise(layers.Layer):
    def call(self, x, training=False):
        if training:
            return x + tf.random.normal(tf.shape(x), stddev=0.1)
        return x


def build(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = Noise(name="noise")(layers.Flatten()(inputs))
    x = layers.Dense(32, activation="relu")(x)
    return keras.Model(inputs, layers.Dense(num_classes)(x), name="noisy")
