"""A small CNN for scikit-learn's 8×8 digits: `ftgui train RUN --model digits_cnn.py:build
--dataset digits_data.py:load`."""

import keras
from keras import layers


def build(input_shape, num_classes):
    """Conv(8) → MaxPool → Conv(16) → Flatten → Dense(num_classes) logits, uncompiled."""
    inputs = keras.Input(shape=input_shape)
    x = layers.Reshape((*input_shape, 1))(inputs) if len(input_shape) == 2 else inputs
    x = layers.Conv2D(8, 3, padding="same", activation="relu")(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Conv2D(16, 3, padding="same", activation="relu")(x)
    x = layers.Flatten()(x)
    return keras.Model(inputs, layers.Dense(num_classes)(x), name="digits_cnn")
