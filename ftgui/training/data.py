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
This module uses NumPy and scikit-learn's digits file only (and runs the user's dataset function,
whose arrays must fit in memory: arrays too large for memory are out of scope).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ftgui.core.checkpoints import resume_check
from ftgui.core.settings.datasets import (
    SYNTHETIC_CLASSES,
    SYNTHETIC_EXAMPLES,
    SYNTHETIC_SHAPE,
    array_problem,
)

VALIDATION_FRACTION = 0.2
SPLIT_SEED = 0  # the train/validation split is fixed, whatever the training seed
SYNTHETIC_SEED = 28  # the synthetic images are the same on every machine, whatever --seed


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
    info: dict = field(default_factory=dict)  # source, shapes, classes, fingerprint (metadata)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])


def load(source: str, task: str = "classification") -> Dataset:
    """Load `digits` (scikit-learn's 1,797 8×8 images, scaled to [0, 1]), `synthetic`
    (`synthetic_images`), a `.npz` file or the user's `PATH.py:FUNCTION`.

    A `.npz` needs arrays `x` (n, ...) and `y` (n,) (integer class ids from 0; for regression
    float targets (n,) or (n, k)); it is split 80/20. FUNCTION() returns numpy
    `(x_train, y_train)` (split the same way) or `(x_train, y_train, x_val, y_val)`.
    Raises `ValueError` naming the problem when the arrays do not fit.
    """
    if source == "digits":
        raw_x, raw_y = digits()
        x = raw_x.astype(np.float32) / 16.0
        y = raw_y.astype(np.int32)
        return _with_info(_split("digits", x, y, task), raw_x, raw_y)
    if source == "synthetic":
        x, y = synthetic_images()
        return _with_info(_split("synthetic", x, y, task), x, y)
    if ".py:" in source:  # its file's content hash is recorded too (`core.user_code`)
        dataset = _with_info(_from_function(source, task))
        dataset.info["fingerprint"] = resume_check.dataset_fingerprint(
            dataset.x_train, dataset.y_train, dataset.x_val, dataset.y_val)
        return dataset
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
    return _with_info(_split(Path(source).name, x, y, task), x, y)


def synthetic_images(examples: int = SYNTHETIC_EXAMPLES) -> tuple[np.ndarray, np.ndarray]:
    """The built-in `synthetic` dataset, made from `SYNTHETIC_SEED` (no download), stored as
    CIFAR-10 is: x uint8 (examples, 32, 32, 3) (`load` scales it to [0, 1]), y int32
    (examples,) class ids 0-9. Each class is a coloured grating of its own frequency,
    orientation and phase; an example is its class's grating at a random contrast (20-60 %)
    around grey 128, plus uniform noise of ±100 levels, clipped to 0-255: learnable, but not from
    one pixel. 15 MB (61 MB as float32)."""
    rng = np.random.Generator(np.random.PCG64(SYNTHETIC_SEED))
    height, width, channels = SYNTHETIC_SHAPE
    rows, cols = np.meshgrid(np.arange(height) / height, np.arange(width) / width,
                             indexing="ij")
    frequency = rng.uniform(1.0, 4.0, size=(SYNTHETIC_CLASSES, 2))
    phase = rng.uniform(0.0, 2 * np.pi, size=SYNTHETIC_CLASSES)
    colour = rng.uniform(0.2, 1.0, size=(SYNTHETIC_CLASSES, channels))
    angle = (2 * np.pi * (frequency[:, :1, None] * rows + frequency[:, 1:, None] * cols)
             + phase[:, None, None])
    gratings = np.round(127 * np.sin(angle)[..., None] * colour[:, None, None, :]).astype(
        np.int16)  # (classes, h, w, c), -127 … 127
    y = rng.integers(0, SYNTHETIC_CLASSES, size=examples).astype(np.int32)
    contrast = rng.integers(2, 7, size=(examples, 1, 1, 1), dtype=np.int16)  # tenths
    x = rng.integers(-100, 101, size=(examples, *SYNTHETIC_SHAPE), dtype=np.int16)
    x += 128
    x += gratings[y] * contrast // 10
    np.clip(x, 0, 255, out=x)
    return x.astype(np.uint8), y


def _with_info(dataset: Dataset, raw_x=None, raw_y=None) -> Dataset:
    """`dataset` with `info` filled for the checkpoints' record: x/y shapes, classes (outputs)
    and, from the arrays as stored (`raw_x`, `raw_y`), the content fingerprint the resume
    check compares (`core.resume_check.dataset_fingerprint`)."""
    x = dataset.x_train if raw_x is None else raw_x
    y = dataset.y_train if raw_y is None else raw_y
    dataset.info = {"x_shape": list(x.shape), "y_shape": list(y.shape),
                    "num_classes": dataset.num_classes}
    if raw_x is not None:
        dataset.info["fingerprint"] = resume_check.dataset_fingerprint(raw_x, raw_y)
    return dataset


def _from_function(source: str, task: str) -> Dataset:
    from ftgui.core.settings import user_code

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
    problem = array_problem(x, y, task, f"x_{split}", f"y_{split}")
    if problem:
        raise ValueError(f"dataset: {name}: {problem}")
    if not (np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_) or x.ndim < 2:
        raise ValueError(f"dataset: {name}: x_{split} must be numbers of shape (n, ...), "
                         f"not {x.dtype} {x.shape}")
    x = x.astype(np.float32) / (255.0 if x.dtype == np.uint8 else 1.0)
    _check_finite(name, f"x_{split}", x)
    if task == "regression":
        if y.ndim not in (1, 2) or not np.issubdtype(y.dtype, np.number):
            raise ValueError(f"dataset: {name}: y_{split} must be numeric targets (n,) or "
                             f"(n, k), not {y.dtype} {y.shape}")
        y = y.astype(np.float32).reshape(len(y), -1)
        _check_finite(name, f"y_{split}", y)
        return x, y
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer) or (len(y) and y.min() < 0):
        hint = ("; for numeric targets give --task regression"
                if np.issubdtype(y.dtype, np.floating) else "")
        raise ValueError(f"dataset: {name}: y_{split} must be 1-D integer class ids from 0, "
                         f"not {y.dtype} {y.shape}{hint}")
    return x, y.astype(np.int32)


def _check_finite(name: str, what: str, array: np.ndarray) -> None:
    """Raise ValueError counting the rows of float32 `array` that hold NaN or an infinity (as
    the .npz check does: a model fed one learns NaN, its validation loss is NaN)."""
    bad = np.flatnonzero(~np.isfinite(array.reshape(len(array), -1)).all(axis=1))
    if len(bad):
        raise ValueError(f"dataset: {name}: {what} holds NaN or infinity in {len(bad)} of "
                         f"{len(array)} rows (the first is row {int(bad[0])}); remove or fix "
                         f"them")


def _outputs(y: np.ndarray, task: str) -> int:
    """Classes (max id + 1), or k targets per row for regression."""
    return int(y.shape[1]) if task == "regression" else int(y.max()) + 1


def digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits: images float64 (1797, 8, 8) with values 0 … 16, target int
    (1797,) — the arrays `sklearn.datasets.load_digits()` gives as `images` and `target`.

    Read from the file scikit-learn ships (`sklearn/datasets/data/digits.csv.gz`) the way
    `load_digits` reads it, without importing scikit-learn (1.7 s at load 5, in every trainer's
    start). Falls back to `load_digits` where that file is not found."""
    import gzip
    import importlib.util

    spec = importlib.util.find_spec("sklearn")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                data = np.loadtxt(handle, delimiter=",")
            return data[:, :-1].reshape(-1, 8, 8), data[:, -1].astype(int, copy=False)
    from sklearn.datasets import load_digits

    loaded = load_digits()
    return loaded.images, loaded.target


def _split(name: str, x, y, task: str = "classification") -> Dataset:
    x, y = _arrays(name, "train", x, y, task)
    order = np.random.RandomState(SPLIT_SEED).permutation(len(x))
    n_val = int(round(len(x) * VALIDATION_FRACTION))
    val, train = order[:n_val], order[n_val:]
    return Dataset(name, x[train], y[train], x[val], y[val], _outputs(y, task), task)


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
