"""A model with regularization losses: an L2 `kernel_regularizer` on its Dense layers and an
activity penalty added with `add_loss`. ftgui adds `model.losses` to the training loss (as
`model.fit` does), so the logged loss is the data loss plus these penalties.
"""

import keras
from keras import layers, regularizers


class ActivityPenalty(layers.Layer):
    """Passes its input through and adds `rate` × mean square of it to the model's losses."""

    def __init__(self, rate=1e-3, **kwargs):
        super().__init__(**kwargs)
        self.rate = rate

    def call(self, x):
        self.add_loss(self.rate * keras.ops.mean(keras.ops.square(x)))
        return x


def build(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = layers.Flatten()(inputs)
    x = layers.Dense(32, activation="relu", kernel_regularizer=regularizers.l2(1e-2))(x)
    x = ActivityPenalty(name="activity_penalty")(x)
    outputs = layers.Dense(num_classes, kernel_regularizer=regularizers.l2(1e-2))(x)
    return keras.Model(inputs, outputs, name="regularized")
