"""The realistic workload (issue 28): the built-in ResNet-style CNN on the built-in synthetic
images trains exactly like the MLP. Its batch normalization keeps moving statistics, variables
the step updates but no gradient touches: a run killed at step 5 and resumed from the checkpoint
files or from the in-memory snapshot has every loss, every validation value (which the moving
statistics decide) and every variable of its last checkpoint equal to a run never killed, to
the bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import made_once
from recorded import losses_and_validations

from ftgui import cli
from ftgui.core.checkpoints import listing
from ftgui.core.record import events
from ftgui.core.settings import datasets

RESNET = ["--model", "resnet", "--dataset", "synthetic", "--strategy", "mirrored",
          "--batch-size", "16", "--steps", "8", "--checkpoint-every", "2", "--quiet"]
KILLED = ["--kill-at-step", "5", "--auto-recover", "--restart-backoff", "0"]


def test_the_synthetic_images_are_the_same_every_time_and_fit_the_checked_size():
    from ftgui.training import data

    x, y = data.synthetic_images()
    again_x, again_y = data.synthetic_images()
    assert x.shape == (datasets.SYNTHETIC_EXAMPLES, *datasets.SYNTHETIC_SHAPE)
    assert (x.dtype, y.dtype) == (np.uint8, np.int32)
    assert np.array_equal(x, again_x) and np.array_equal(y, again_y)
    assert sorted(set(y.tolist())) == list(range(datasets.SYNTHETIC_CLASSES))
    loaded = data.load("synthetic")
    assert len(loaded.x_train) == datasets.train_size(datasets.SYNTHETIC_EXAMPLES) == 4000
    assert loaded.x_train.dtype == np.float32 and 0.0 <= loaded.x_train.min() < 0.01
    assert 0.99 < loaded.x_train.max() <= 1.0


@pytest.mark.tf
def test_the_resnet_has_over_a_million_parameters_and_moving_statistics():
    from ftgui.training import models

    model = models.build("resnet", datasets.SYNTHETIC_SHAPE, datasets.SYNTHETIC_CLASSES)
    assert model.count_params() == 1_211_514
    moving = [v for v in model.non_trainable_variables if "moving" in v.path]
    assert len(moving) == 2 * 12  # mean and variance of 12 batch normalizations
    assert {id(v) for v in model.variables} >= {id(v) for v in moving}  # what snapshots copy


def _variables(run_dir) -> dict[str, np.ndarray]:
    """Every tensor of the run's newest valid checkpoint but its save counter."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(listing.newest_valid(run_dir).prefix))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if "save_counter" not in name and name != "_CHECKPOINTABLE_OBJECT_GRAPH"}


@pytest.fixture(scope="module")
def never_killed(tmp_path_factory):
    """({step: loss}, {step: (val_loss, val_accuracy)}, last checkpoint's variables) of a run
    never killed, validated every step (a resume from memory validates at its step; the
    checkpoint interval changes no value). Trained once per session, whichever xdist worker
    asks first (`made_once`): a ResNet run costs ~20 s of CPU."""
    def train(folder: Path) -> None:
        assert cli.main(["train", str(folder / "run"), *RESNET, "--checkpoint-every", "1"]) == 0

    run_dir = made_once(tmp_path_factory, "resnet-never-killed", train) / "run"
    steps, validations = losses_and_validations(events.read_all(run_dir))
    return ({s: v for (_, s), v in steps.items()}, {s: v for (_, s), v in validations.items()},
            _variables(run_dir))


@pytest.mark.tf
@pytest.mark.timeout(900)  # three ResNet processes: at load 13 on 2 cores each took ~150 s
@pytest.mark.parametrize("snapshot_every, source, from_step", [(0, "disk", 4),
                                                                (1, "memory", 5)])
def test_a_resnet_run_killed_at_5_resumes_equal_to_the_bit(
        snapshot_every, source, from_step, tmp_path, never_killed):
    reference_steps, reference_validations, reference_variables = never_killed
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), *RESNET, "--snapshot-every", str(snapshot_every),
                     *KILLED]) == 0
    seen = events.read_all(run_dir)
    [resumed] = [e for e in seen if e["event"] == "resumed"]
    assert (resumed["source"], resumed["from_step"]) == (source, from_step)
    steps, validations = losses_and_validations(seen)
    assert sorted(s for a, s in steps if a == 1) == list(range(from_step + 1, 9))
    assert steps == {(a, s): reference_steps[s] for a, s in steps}
    assert {(1, 6), (1, 8)} <= set(validations)  # after the resume: the moving statistics count
    assert validations == {(a, s): reference_validations[s] for a, s in validations}
    variables = _variables(run_dir)
    assert set(variables) == set(reference_variables)
    moving = [name for name in variables if "moving_mean" in name]
    assert len(moving) == 12 and all(np.any(variables[name] != 0) for name in moving)
    assert [name for name in variables
            if not np.array_equal(variables[name], reference_variables[name])] == []
