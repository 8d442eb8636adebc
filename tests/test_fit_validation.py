"""`--loop fit` on a dataset whose validation rows do not split evenly across the replicas
(issue 25, case 11): 67 rows, batch 10, 2 replicas crashed at step 5 in validation
(`AddN … [7,8] != [6,8]`); validation is now batched like training and scores every row."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import of_kind

from ftgui import cli
from ftgui.core import events


@pytest.mark.tf
def test_fit_validates_every_row_of_an_uneven_split(tmp_path):
    import keras

    from ftgui.training import data, models

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
    loaded = data.load(str(path))
    assert len(loaded.x_val) == 13
    model = models.build("mlp", loaded.input_shape, loaded.num_classes)
    model.load_weights(run_dir / "fit-checkpoints" / "epoch-003.weights.h5")
    logits = model(loaded.x_val, training=False)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(loaded.y_val, logits)
    right = int((np.argmax(logits, axis=1) == loaded.y_val).sum())
    last = validations[-1]
    assert last["val_accuracy"] == pytest.approx(right / 13, abs=1e-7)  # all 13 rows
    assert last["val_loss"] == pytest.approx(float(loss), rel=1e-5)
