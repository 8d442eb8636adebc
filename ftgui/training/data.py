"""Datasets and step-indexed batches: the examples of a global step are a pure function of the
data position at the resume step and the steps since.

Each epoch is a fresh permutation of the training split, seeded by (seed, epoch). A data position
is (epoch, offset): the next step takes rows `offset … offset + B` of that epoch's permutation
(B = global batch size), or, when fewer than B rows are left, the first B rows of the next epoch
(the remainder of an epoch is dropped). From step 0 with one batch size this is the N-th slice of
B examples for step N, as before; a checkpoint records the position after its step
(`DataPosition`), so a resume with another global batch size continues the same epoch and
permutation where the last step left it, and stays exact: the batches of a step depend only on
(position at the resume step, batch size, steps since). The same global batch is seen whatever
the replica count (replica r of R takes rows [r·B/R, (r+1)·B/R) of it).
This module uses NumPy and scikit-learn only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ftgui.core import resume_check

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
    info: dict = field(default_factory=dict)  # source, shapes, classes, fingerprint (metadata)

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
        raw_x, raw_y = digits.images, digits.target
        x = digits.images.astype(np.float32) / 16.0
        y = digits.target.astype(np.int32)
        name = "digits"
    else:
        raw_x, raw_y = _read_npz(Path(source))
        x, y = _load_npz(Path(source), raw_x, raw_y)
        name = Path(source).name
    dataset = _split(name, x, y)
    dataset.info = {"x_shape": list(raw_x.shape), "y_shape": list(raw_y.shape),
                    "num_classes": dataset.num_classes,
                    "fingerprint": resume_check.fingerprint(raw_x, raw_y)}
    return dataset


def _read_npz(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        missing = {"x", "y"} - set(data.files)
        if missing:
            raise ValueError(f"dataset: {path} has no array {sorted(missing)[0]!r} (needs x and y)")
        return data["x"], data["y"]


def _load_npz(path: Path, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


@dataclass(frozen=True)
class DataPosition:
    """Where the data stands after global step `step`: the next step starts at row `offset` of
    epoch `epoch`'s permutation (0-based epoch), and `examples_seen` examples were trained on
    so far (each step's global batch size, summed)."""

    step: int = 0
    epoch: int = 0
    offset: int = 0
    examples_seen: int = 0

    def to_dict(self) -> dict:
        """The metadata form: {"epoch", "offset", "examples_seen"} (the step is its own)."""
        return {"epoch": self.epoch, "offset": self.offset, "examples_seen": self.examples_seen}


def position_of_checkpoint(meta: dict, step: int, n_train: int,
                           fallback_batch_size: int) -> DataPosition:
    """The data position after checkpoint step `step` from its metadata `meta`.

    A checkpoint written before positions were recorded was made with one batch size from step
    0: its recorded `global_batch_size` (else `fallback_batch_size`) then gives the position.
    """
    recorded = meta.get("data_position")
    if isinstance(recorded, dict) and {"epoch", "offset", "examples_seen"} <= set(recorded):
        return DataPosition(step, int(recorded["epoch"]), int(recorded["offset"]),
                            int(recorded["examples_seen"]))
    batch = int(meta.get("global_batch_size") or fallback_batch_size)
    if step == 0:
        return DataPosition()
    return StepBatches(n_train, batch, 0).position_after(step)


class StepBatches:
    """Maps a global step (1-based) to the indices of its global batch, from the data position
    `start` (default: before step 1, epoch 0, offset 0) with `global_batch_size` from then on.

    `steps_per_epoch = n_train // global_batch_size`. Raises `ValueError` when the training split
    is smaller than one global batch.
    """

    def __init__(self, n_train: int, global_batch_size: int, seed: int,
                 start: DataPosition | None = None):
        if n_train < global_batch_size:
            raise ValueError(
                f"global_batch_size: {global_batch_size} is larger than the "
                f"{n_train} training examples"
            )
        self.n_train = n_train
        self.global_batch_size = global_batch_size
        self.seed = seed
        self.steps_per_epoch = n_train // global_batch_size
        self.start = start or DataPosition()
        self._epoch = -1
        self._order = np.empty(0, dtype=np.int64)

    def resume_at(self, start: DataPosition) -> None:
        """Continue from position `start` (a restore, e.g. a NaN rollback to a checkpoint)."""
        self.start = start

    def _locate(self, step: int) -> tuple[int, int]:
        """(epoch, first row in its permutation) of global step `step` (> `start.step`; an
        earlier step is placed as if one batch size had been used from step 0)."""
        batch = self.global_batch_size
        if step <= self.start.step:
            return (step - 1) // self.steps_per_epoch, ((step - 1) % self.steps_per_epoch) * batch
        epoch, offset = self.start.epoch, self.start.offset
        if offset + batch > self.n_train:  # the rest of this epoch is dropped
            epoch, offset = epoch + 1, 0
        since = step - 1 - self.start.step  # steps between the start and this step
        left = (self.n_train - offset) // batch  # steps left in the start's epoch
        if since < left:
            return epoch, offset + since * batch
        since -= left
        return epoch + 1 + since // self.steps_per_epoch, (since % self.steps_per_epoch) * batch

    def epoch_of(self, step: int) -> int:
        """0-based epoch that global step `step` (1-based) falls in."""
        return self._locate(step)[0]

    def position_after(self, step: int) -> DataPosition:
        """The data position after global step `step` has run (what its checkpoint records)."""
        epoch, offset = self._locate(step)
        seen = self.start.examples_seen + (step - self.start.step) * self.global_batch_size
        return DataPosition(step, epoch, offset + self.global_batch_size, seen)

    def indices(self, step: int) -> np.ndarray:
        """Row indices (global_batch_size,) of the training split for global step `step`."""
        epoch, start = self._locate(step)
        if epoch != self._epoch:
            rng = np.random.Generator(np.random.PCG64([self.seed, epoch]))
            self._order, self._epoch = rng.permutation(self.n_train), epoch
        return self._order[start : start + self.global_batch_size]

    @staticmethod
    def replica_slice(indices: np.ndarray, replica_id: int, num_replicas: int) -> np.ndarray:
        """The rows of one replica: contiguous slice `replica_id` of `num_replicas`."""
        per_replica = len(indices) // num_replicas
        return indices[replica_id * per_replica : (replica_id + 1) * per_replica]
