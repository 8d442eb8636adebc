"""Checking a run's dataset before any process starts (NumPy only, no TensorFlow).

The training process splits the data 80/20 into training and validation (`ftgui.training.data`),
so a global batch must fit in the training split: 1,437 examples for the built-in digits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ftgui.core.config import ConfigError, RunConfig

DIGITS_EXAMPLES = 1797
VALIDATION_FRACTION = 0.2


def train_size(examples: int) -> int:
    """Examples in the training split of a dataset of `examples` rows."""
    return examples - int(round(examples * VALIDATION_FRACTION))


def check(config: RunConfig) -> int:
    """Raise `ConfigError` naming `dataset` or `global_batch_size` when the data cannot train
    this run; returns the size of the training split."""
    if config.dataset == "digits":
        examples = DIGITS_EXAMPLES
    else:
        examples = _check_npz(Path(config.dataset))
    train = train_size(examples)
    if config.global_batch_size > train:
        raise ConfigError(
            f"global_batch_size: {config.global_batch_size} is larger than the {train} training "
            f"examples of {config.dataset}"
        )
    return train


def _check_npz(path: Path) -> int:
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in ("x", "y") if name in data.files}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"dataset: {path} is not a readable .npz file ({exc})") from None
    missing = {"x", "y"} - set(arrays)
    if missing:
        raise ConfigError(f"dataset: {path} has no array {sorted(missing)[0]!r} (needs x and y)")
    x, y = arrays["x"], arrays["y"]
    if y.ndim != 1 or len(x) != len(y):
        raise ConfigError(f"dataset: {path}: y must be 1-D with one label per row of x "
                          f"(x has {len(x)} rows, y has shape {y.shape})")
    if not np.issubdtype(y.dtype, np.integer) or (len(y) and y.min() < 0):
        raise ConfigError(f"dataset: {path}: y must hold integer class ids from 0 "
                          f"(it holds {y.dtype})")
    if not (np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_):
        raise ConfigError(f"dataset: {path}: x must hold numbers (it holds {x.dtype})")
    return len(x)
