"""A model written with the Keras functional API, two branches and a seeded dropout layer.

The dropout mask is drawn from a Keras seed generator whose state is a variable of the model, so
it is checkpointed and a resumed run draws the same masks as a run never stopped.
"""

import keras
from keras import layers


def build(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape, name="pixels")
    flat = layers.Flatten()(inputs)
    wide = layers.Dense(32, activation="relu", name="wide")(flat)
    narrow = layers.Dense(16, activation="tanh", name="narrow")(flat)
    x = layers.Concatenate()([wide, narrow])
    x = layers.Dropout(0.25, seed=7, name="dropout")(x)
    return keras.Model(inputs, layers.Dense(num_classes, name="logits")(x), name="two_branch")
