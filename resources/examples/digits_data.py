"""The 1,797 digits of scikit-learn as a user's dataset function: (x_train, y_train, x_val,
y_val), numpy arrays, the last 300 images held out for validation."""

import numpy as np
from sklearn.datasets import load_digits


def load():
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)  # (1797, 8, 8) in [0, 1]
    y = digits.target.astype(np.int64)  # (1797,) class ids 0..9
    return x[:-300], y[:-300], x[-300:], y[-300:]
