"""`--loop fit` on a dataset whose validation rows do not split evenly across the replicas
(issue 25, case 11): 67 rows, batch 10, 2 replicas crashed at step 5 in validation
(`AddN … [7,8] != [6,8]`); validation is now batched like training and scores every row."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import of_kind

from ftgui import cli
from ftgui.core.record import events


@pytest.mark.tf
def test_fit_validates_every_row_of_an_uneven_split(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "d67.npz"
    np.savez(path, x=rng.normal(size=(67, 8)).astype(np.float32), y=rng.integers(0, 3, 67))
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--loop", "fit", "--dataset", str(path),
                     "--batch-size", "10", "--replicas", "2", "--steps", "12",
                     "--checkpoint-every", "5", "--quiet"]) == 0
    seen = events.read_all(run_dir)
    validations = of_kind(seen, "validation")
    # 54 training rows: 5 steps of 10 per epoch (README, --loop fit); the run stops at 12
    assert [e["step"] for e in validations] == [5, 10, 12]
    assert [e["step"] for e in of_kind(seen, "step")] == list(range(1, 13))
    _assert_every_row_scored(path, run_dir, "epoch-003", validations[-1], rows=13)


def _assert_every_row_scored(path, run_dir, epoch: str, validation: dict, rows: int) -> None:
    """The validation event equals the epoch's weights scored on all `rows` validation rows."""
    import keras

    from ftgui.training import data, models

    loaded = data.load(str(path))
    assert len(loaded.x_val) == rows
    model = models.build("mlp", loaded.input_shape, loaded.num_classes)
    model.load_weights(run_dir / "fit-checkpoints" / f"{epoch}.weights.h5")
    logits = model(loaded.x_val, training=False)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(loaded.y_val, logits)
    right = int((np.argmax(logits, axis=1) == loaded.y_val).sum())
    assert validation["val_accuracy"] == pytest.approx(right / rows, abs=1e-7)
    assert validation["val_loss"] == pytest.approx(float(loss), rel=1e-5)


@pytest.mark.tf
def test_a_validation_split_smaller_than_a_batch_starts_with_an_even_batch(tmp_path):
    """16 rows: 3 for validation, fewer than the batch of 10; one batch of 3 split 2 / 1
    across the replicas crashed Keras as the unbatched arrays did."""
    from ftgui.training.fit_loop import validation_batch

    assert [validation_batch(rows, 10, 2) for rows in (13, 10, 9, 3, 2)] == [10, 10, 8, 2, 2]
    rng = np.random.default_rng(1)
    path = tmp_path / "d16.npz"
    np.savez(path, x=rng.normal(size=(16, 8)).astype(np.float32), y=rng.integers(0, 3, 16))
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--loop", "fit", "--dataset", str(path),
                     "--batch-size", "10", "--replicas", "2", "--steps", "2",
                     "--checkpoint-every", "1", "--quiet"]) == 0
    [first, second] = of_kind(events.read_all(run_dir), "validation")
    assert (first["step"], second["step"]) == (1, 2)
    _assert_every_row_scored(path, run_dir, "epoch-002", second, rows=3)
