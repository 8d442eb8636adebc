"""Checking a run's dataset before any process starts (NumPy only, no TensorFlow).

The training process splits the data 80/20 into training and validation (`ftgui.training.data`),
so a global batch must fit in the training split: 1,437 examples for the built-in digits, 4,000
for the built-in synthetic images.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ftgui.core.settings.config import ConfigError, RunConfig

DIGITS_EXAMPLES = 1797
# The synthetic images (`ftgui.training.data.synthetic_images`): (n, 32, 32, 3) float32, 10 classes
SYNTHETIC_EXAMPLES = 5000
SYNTHETIC_SHAPE = (32, 32, 3)
SYNTHETIC_CLASSES = 10
BUILTIN_EXAMPLES = {"digits": DIGITS_EXAMPLES, "synthetic": SYNTHETIC_EXAMPLES}
VALIDATION_FRACTION = 0.2
# Classes are the largest label + 1: a label of 10^9 would ask for an output layer of 10^9 units
# (the trainer ran out of memory). Far above any real label set.
MAX_CLASSES = 100_000


def train_size(examples: int) -> int:
    """Examples in the training split of a dataset of `examples` rows."""
    return examples - int(round(examples * VALIDATION_FRACTION))


def check(config: RunConfig) -> int | None:
    """Raise `ConfigError` naming `dataset` or `global_batch_size` when the data cannot train
    this run; returns the size of the training split. A `PATH.py:FUNCTION` dataset runs the
    user's code, so only the helper process checks it (`ftgui.core.settings.user_code.check`):
    None."""
    if ".py:" in config.dataset:
        return None
    if config.dataset in BUILTIN_EXAMPLES:
        examples = BUILTIN_EXAMPLES[config.dataset]
    else:
        examples = _check_npz(Path(config.dataset), config.task)
    train = train_size(examples)
    if config.global_batch_size > train:
        raise ConfigError(
            f"global_batch_size: {config.global_batch_size} is larger than the {train} training "
            f"examples of {config.dataset}"
        )
    validation = examples - train
    if config.loop == "fit" and validation < config.num_replicas:
        # Keras cannot split a first validation batch unevenly (`fit_loop.validation_batch`)
        raise ConfigError(
            f"dataset: {config.dataset} leaves {validation} validation row(s), fewer than the "
            f"{config.num_replicas} replicas that --loop fit validates on; give it at least "
            f"{math.ceil(config.num_replicas / VALIDATION_FRACTION)} rows or fewer replicas")
    return train


def _check_npz(path: Path, task: str = "classification") -> int:
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in ("x", "y") if name in data.files}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"dataset: {path} is not a readable .npz file ({exc})") from None
    missing = {"x", "y"} - set(arrays)
    if missing:
        raise ConfigError(f"dataset: {path} has no array {sorted(missing)[0]!r} (needs x and y)")
    x, y = arrays["x"], arrays["y"]
    if task == "regression":
        if len(x) != len(y) or y.ndim not in (1, 2):
            raise ConfigError(f"dataset: {path}: y must have one target row per row of x "
                              f"(x has {len(x)} rows, y has shape {y.shape})")
        if not (np.issubdtype(y.dtype, np.number) or y.dtype == np.bool_):
            raise ConfigError(f"dataset: {path}: y must hold numbers (it holds {y.dtype})")
        _check_finite(path, y.astype(np.float64), "y")
    else:
        if y.ndim != 1 or len(x) != len(y):
            raise ConfigError(f"dataset: {path}: y must be 1-D with one label per row of x "
                              f"(x has {len(x)} rows, y has shape {y.shape})")
        _check_labels(path, y)
    if not (np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_):
        raise ConfigError(f"dataset: {path}: x must hold numbers (it holds {x.dtype})")
    problem = array_problem(x, y, task)
    if problem:
        raise ConfigError(f"dataset: {path}: {problem}")
    _check_finite(path, x)
    return len(x)


def array_problem(x: np.ndarray, y: np.ndarray, task: str = "classification",
                  x_name: str = "x", y_name: str = "y") -> str:
    """What makes arrays `x` (n, features…) and `y` unfit to train ('' when nothing): complex
    numbers (a cast to float32 would drop the imaginary part), an `x` without a feature axis,
    or (classification, integer labels) a label of MAX_CLASSES or more. Also used for a
    `PATH.py:FUNCTION` dataset's arrays (`ftgui.training.data`), named `x_name`, `y_name`."""
    for name, array in ((x_name, x), (y_name, y)):
        if np.iscomplexobj(array):
            return (f"{name} holds complex numbers ({array.dtype}); training needs real "
                    f"numbers: store the real and imaginary parts as separate features")
    if x.ndim < 2:
        return (f"{x_name} must have one row per example and a feature axis, shape "
                f"(n, features…); it has shape {x.shape}")
    if task == "classification" and np.issubdtype(y.dtype, np.integer) and len(y):
        index = int(np.argmax(y))
        if y[index] >= MAX_CLASSES:
            return (f"{y_name}[{index}] is {y[index].item()}: labels are class ids from 0 and "
                    f"that one would mean {y[index].item() + 1:,} classes (at most "
                    f"{MAX_CLASSES:,}); renumber the classes 0 … N-1")
    return ""


def _check_labels(path: Path, y: np.ndarray) -> None:
    """Raise ConfigError naming the first label that is no integer class id from 0."""
    if np.issubdtype(y.dtype, np.integer):
        wrong = np.flatnonzero(y < 0)
    elif np.issubdtype(y.dtype, np.floating):
        # 2.5 or NaN is named first; a whole 3.0 is still refused, by its type
        fraction = np.flatnonzero(~np.isfinite(y) | (y != np.round(y)))
        wrong = fraction if len(fraction) else np.flatnonzero(y == y)[:1]
    else:
        wrong = np.arange(min(len(y), 1))
    if len(wrong):
        index = int(wrong[0])
        raise ConfigError(f"dataset: {path}: y must hold integer class ids from 0; "
                          f"y[{index}] is {y[index].item()!r} ({y.dtype})")


def _check_finite(path: Path, x: np.ndarray, name: str = "x") -> None:
    """Raise ConfigError counting the rows of `x` (the array `name`) that hold NaN or an
    infinity (a model fed one learns NaN, and every checkpoint after it is useless)."""
    if not np.issubdtype(x.dtype, np.inexact) or not len(x):
        return
    bad = np.flatnonzero(~np.isfinite(x.reshape(len(x), -1)).all(axis=1))
    if len(bad):
        raise ConfigError(f"dataset: {path}: {name} holds NaN or infinity in {len(bad)} of "
                          f"{len(x)} rows (the first is row {int(bad[0])}); remove or fix them")
