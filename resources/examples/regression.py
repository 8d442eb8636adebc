"""A regression task on a synthetic dataset: y = sin(x·w) + 0.1·noise, two targets per row.

`ftgui train RUN --task regression --model regression.py:build --dataset regression.py:load`:
outputs (batch, 2), trained with mean squared error (the module's `loss`); the mean absolute
error (its `metrics`) is reported with each validation.
"""

import keras
import numpy as np
from keras import layers

loss = keras.losses.MeanSquaredError()
metrics = ["mean_absolute_error"]  # a name: no TensorFlow object is made at import


def load():
    """800 rows of 6 features and 2 targets, from a fixed seed: (x, y) float32 numpy arrays."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(800, 6)).astype(np.float32)
    w = rng.normal(size=(6, 2)).astype(np.float32)
    y = np.sin(x @ w) + 0.1 * rng.normal(size=(800, 2)).astype(np.float32)
    return x, y.astype(np.float32)


def build(input_shape, num_classes):
    """num_classes is k, the targets per row (2 here)."""
    inputs = keras.Input(shape=input_shape)
    x = layers.Dense(32, activation="relu")(inputs)
    return keras.Model(inputs, layers.Dense(num_classes)(x), name="sine_regression")
