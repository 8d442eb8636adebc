"""Datasets and step-indexed batches: the examples of global step N are a pure function of N.

Each epoch is a fresh permutation of the training split, seeded by (seed, epoch); step N takes
the N-th slice of `global_batch_size` examples (the remainder of an epoch is dropped). So the data
position is part of the step counter: a resume needs only the step, and the same global batch is
seen whatever the replica count (replica r of R takes rows [r·B/R, (r+1)·B/R) of it).
This module uses NumPy and scikit-learn only (and runs the user's dataset function, whose
arrays must fit in memory: arrays too large for memory are out of scope).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

VALIDATION_FRACTION = 0.2
SPLIT_SEED = 0  # the train/validation split is fixed, whatever the training seed


@dataclass
class Dataset:
    """Train and validation arrays: `x_*` float32 (n, ...); `y_*` int32 (n,) class ids, or for
    regression float32 (n, k) targets. `num_classes` is the classes (or k, the targets per
    row): the model's second argument and its output width."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    num_classes: int
    task: str = "classification"

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])


def load(source: str, task: str = "classification") -> Dataset:
    """Load `digits` (scikit-learn's 1,797 8×8 images, scaled to [0, 1]), a `.npz` file or the
    user's `PATH.py:FUNCTION`.

    A `.npz` needs arrays `x` (n, ...) and `y` (n,) (integer class ids from 0; for regression
    float targets (n,) or (n, k)); it is split 80/20. FUNCTION() returns numpy
    `(x_train, y_train)` (split the same way) or `(x_train, y_train, x_val, y_val)`.
    Raises `ValueError` naming the problem when the arrays do not fit.
    """
    if source == "digits":
        from sklearn.datasets import load_digits

        digits = load_digits()
        x = digits.images.astype(np.float32) / 16.0
        y = digits.target.astype(np.int32)
        return _split("digits", x, y, task)
    if ".py:" in source:
        return _from_function(source, task)
    with np.load(Path(source), allow_pickle=False) as data:
        missing = {"x", "y"} - set(data.files)
        if missing:
            raise ValueError(f"dataset: {source} has no array {sorted(missing)[0]!r} "
                             f"(needs x and y)")
        x, y = data["x"], data["y"]
    if task == "classification":
        if len(x) != len(y) or y.ndim != 1:
            raise ValueError(f"dataset: {source}: y must be 1-D with one label per row of x")
        if not np.issubdtype(y.dtype, np.integer) or (len(y) and y.min() < 0):
            raise ValueError(f"dataset: {source}: y must hold integer class ids from 0")
    return _split(Path(source).name, x, y, task)


def _from_function(source: str, task: str) -> Dataset:
    from ftgui.core import user_code

    parsed = user_code.parse("dataset", source)
    _, function = user_code.user_function(parsed)
    arrays = function()
    name = f"{parsed.path.name}:{parsed.function}"
    if not isinstance(arrays, (tuple, list)) or len(arrays) not in (2, 4):
        raise ValueError(f"dataset: {name} must return (x_train, y_train) or "
                         f"(x_train, y_train, x_val, y_val), not {type(arrays).__name__}"
                         + (f" of {len(arrays)}" if isinstance(arrays, (tuple, list)) else ""))
    if len(arrays) == 2:
        return _split(name, *arrays, task)
    x_train, y_train = _arrays(name, "train", *arrays[:2], task)
    x_val, y_val = _arrays(name, "val", *arrays[2:], task)
    if x_train.shape[1:] != x_val.shape[1:] or y_train.shape[1:] != y_val.shape[1:]:
        raise ValueError(f"dataset: {name}: validation rows {x_val.shape[1:]} / "
                         f"{y_val.shape[1:]} differ from training rows {x_train.shape[1:]} / "
                         f"{y_train.shape[1:]}")
    return Dataset(name, x_train, y_train, x_val, y_val,
                   _outputs(np.concatenate([y_train, y_val]), task), task)


def _arrays(name: str, split: str, x, y, task: str) -> tuple[np.ndarray, np.ndarray]:
    """`x` as float32 (uint8 scaled to [0, 1]) and `y` as int32 class ids or float32 (n, k)
    targets; raises `ValueError` naming the dataset and what does not fit."""
    if not isinstance(x, np.ndarray) or not isinstance(y, np.ndarray):
        raise ValueError(f"dataset: {name}: x_{split} and y_{split} must be numpy arrays, not "
                         f"{type(x).__name__} and {type(y).__name__}")
    if len(x) != len(y):
        raise ValueError(f"dataset: {name}: x_{split} has {len(x)} rows but y_{split} has "
                         f"{len(y)}; they must have one label per row")
    if not (np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_) or x.ndim < 2:
        raise ValueError(f"dataset: {name}: x_{split} must be numbers of shape (n, ...), "
                         f"not {x.dtype} {x.shape}")
    x = x.astype(np.float32) / (255.0 if x.dtype == np.uint8 else 1.0)
    if task == "regression":
        if y.ndim not in (1, 2) or not np.issubdtype(y.dtype, np.number):
            raise ValueError(f"dataset: {name}: y_{split} must be numeric targets (n,) or "
                             f"(n, k), not {y.dtype} {y.shape}")
        return x, y.astype(np.float32).reshape(len(y), -1)
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer) or (len(y) and y.min() < 0):
        raise ValueError(f"dataset: {name}: y_{split} must be 1-D integer class ids from 0, "
                         f"not {y.dtype} {y.shape}")
    return x, y.astype(np.int32)


def _outputs(y: np.ndarray, task: str) -> int:
    """Classes (max id + 1), or k targets per row for regression."""
    return int(y.shape[1]) if task == "regression" else int(y.max()) + 1


def _split(name: str, x, y, task: str = "classification") -> Dataset:
    x, y = _arrays(name, "train", x, y, task)
    order = np.random.RandomState(SPLIT_SEED).permutation(len(x))
    n_val = int(round(len(x) * VALIDATION_FRACTION))
    val, train = order[:n_val], order[n_val:]
    return Dataset(name, x[train], y[train], x[val], y[val], _outputs(y, task), task)


class StepBatches:
    """Maps a global step (1-based) to the indices of its global batch.

    `steps_per_epoch = n_train // global_batch_size`. Raises `ValueError` when the training split
    is smaller than one global batch.
    """

    def __init__(self, n_train: int, global_batch_size: int, seed: int):
        if n_train < global_batch_size:
            raise ValueError(
                f"global_batch_size: {global_batch_size} is larger than the "
                f"{n_train} training examples"
            )
        self.n_train = n_train
        self.global_batch_size = global_batch_size
        self.seed = seed
        self.steps_per_epoch = n_train // global_batch_size
        self._epoch = -1
        self._order = np.empty(0, dtype=np.int64)

    def epoch_of(self, step: int) -> int:
        """0-based epoch that global step `step` (1-based) falls in."""
        return (step - 1) // self.steps_per_epoch

    def indices(self, step: int) -> np.ndarray:
        """Row indices (global_batch_size,) of the training split for global step `step`."""
        epoch = self.epoch_of(step)
        if epoch != self._epoch:
            rng = np.random.Generator(np.random.PCG64([self.seed, epoch]))
            self._order, self._epoch = rng.permutation(self.n_train), epoch
        start = ((step - 1) % self.steps_per_epoch) * self.global_batch_size
        return self._order[start : start + self.global_batch_size]

    @staticmethod
    def replica_slice(indices: np.ndarray, replica_id: int, num_replicas: int) -> np.ndarray:
        """The rows of one replica: contiguous slice `replica_id` of `num_replicas`."""
        per_replica = len(indices) // num_replicas
        return indices[replica_id * per_replica : (replica_id + 1) * per_replica]
