"""Datasets and step-indexed batches: the examples of global step N are a pure function of N.

Each epoch is a fresh permutation of the training split, seeded by (seed, epoch); step N takes
the N-th slice of `global_batch_size` examples (the remainder of an epoch is dropped). So the data
position is part of the step counter: a resume needs only the step, and the same global batch is
seen whatever the replica count (replica r of R takes rows [r·B/R, (r+1)·B/R) of it).
This module uses NumPy and scikit-learn only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

VALIDATION_FRACTION = 0.2
SPLIT_SEED = 0  # the train/validation split is fixed, whatever the training seed


@dataclass
class Dataset:
    """Train and validation arrays: `x_*` float32 (n, ...), `y_*` int32 (n,) class ids."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    num_classes: int

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])


def load(source: str) -> Dataset:
    """Load `digits` (scikit-learn's 1,797 8×8 images, scaled to [0, 1]) or a `.npz` file.

    A `.npz` needs arrays `x` (n, ...) and `y` (n,) of integer class ids from 0.
    Raises `ValueError` naming the problem when the file does not fit.
    """
    if source == "digits":
        from sklearn.datasets import load_digits

        digits = load_digits()
        x = digits.images.astype(np.float32) / 16.0
        y = digits.target.astype(np.int32)
        name = "digits"
    else:
        x, y = _load_npz(Path(source))
        name = Path(source).name
    return _split(name, x, y)


def _load_npz(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        missing = {"x", "y"} - set(data.files)
        if missing:
            raise ValueError(f"dataset: {path} has no array {sorted(missing)[0]!r} (needs x and y)")
        x, y = data["x"], data["y"]
    if len(x) != len(y) or y.ndim != 1:
        raise ValueError(f"dataset: {path}: y must be 1-D with one label per row of x")
    if not np.issubdtype(y.dtype, np.integer) or (len(y) and y.min() < 0):
        raise ValueError(f"dataset: {path}: y must hold integer class ids from 0")
    x = x.astype(np.float32) / (255.0 if x.dtype == np.uint8 else 1.0)
    return x, y.astype(np.int32)


def _split(name: str, x: np.ndarray, y: np.ndarray) -> Dataset:
    order = np.random.RandomState(SPLIT_SEED).permutation(len(x))
    n_val = int(round(len(x) * VALIDATION_FRACTION))
    val, train = order[:n_val], order[n_val:]
    return Dataset(name, x[train], y[train], x[val], y[val], int(y.max()) + 1)


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
