"""The two built-in Keras 3 models: a small MLP and a small CNN, both ending in logits."""

from __future__ import annotations

import keras
from keras import layers


def build(name: str, input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """`mlp`: Flatten → Dense(64, relu) → Dense(num_classes).
    `cnn`: Conv(16, 3×3) → MaxPool(2) → Conv(32, 3×3) → global average → Dense(num_classes).

    Create it inside `strategy.scope()`. Raises `ValueError` for an unknown name or a CNN on
    inputs that are not images (h, w) or (h, w, c).
    """
    inputs = keras.Input(shape=input_shape)
    if name == "mlp":
        x = layers.Flatten()(inputs)
        x = layers.Dense(64, activation="relu")(x)
    elif name == "cnn":
        if len(input_shape) == 2:
            x = layers.Reshape((*input_shape, 1))(inputs)
        elif len(input_shape) == 3:
            x = inputs
        else:
            raise ValueError(f"model: cnn needs images (h, w) or (h, w, c), got {input_shape}")
        x = layers.Conv2D(16, 3, padding="same", activation="relu")(x)
        x = layers.MaxPooling2D(2)(x)
        x = layers.Conv2D(32, 3, padding="same", activation="relu")(x)
        x = layers.GlobalAveragePooling2D()(x)
    else:
        raise ValueError(f"model: {name!r} is not one of mlp, cnn")
    outputs = layers.Dense(num_classes)(x)
    return keras.Model(inputs, outputs, name=name)
