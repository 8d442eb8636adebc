"""The checkpoint writer's first job, after the first step: trace the shadow copy and the write,
write a state restored from memory as its checkpoint, and only then run the copy once, so that
the first periodic checkpoint does not pay TensorFlow's first-call optimisation on the step path
(the ResNet's first checkpoint stalled training 0.09 s, the next ones 0.002 s)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.tf


def _mlp_state(shadow_class):
    """The built-in MLP's config, dataset and TrainState under the default strategy, with a
    shadow copy of class `shadow_class` (ShadowState or a subclass)."""
    import tensorflow as tf

    from ftgui.core.settings.config import RunConfig
    from ftgui.training import data as datamod
    from ftgui.training.step import TrainState

    tf.keras.utils.set_random_seed(0)
    config = RunConfig(strategy="default", steps=10)
    dataset = datamod.load(config.dataset, config.task)
    state = TrainState(tf.distribute.get_strategy(), config, dataset)
    return config, dataset, state, shadow_class(state, config.model, dataset.input_shape,
                                                dataset.num_classes, config.learning_rate)


def test_the_shadow_copy_runs_once_after_the_restored_state_is_written(tmp_path):

    from ftgui.core.checkpoints import listing
    from ftgui.core.record.events import EventWriter, read_all
    from ftgui.training.actions.checkpoint import CheckpointAction
    from ftgui.training.background_save import ShadowState
    from ftgui.training.summaries import Summaries

    calls = []

    class Recording(ShadowState):
        def warm_up(self, x_val=None):
            calls.append("warm_up")
            super().warm_up(x_val)

        def take(self):
            calls.append("take")
            super().take()

        def take_eagerly(self):
            calls.append("take_eagerly")
            super().take_eagerly()

        def write_and_evaluate(self, prefix, x, y):
            calls.append(f"write {prefix.name}")
            return super().write_and_evaluate(prefix, x, y)

    config, dataset, state, shadow = _mlp_state(Recording)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with EventWriter(run_dir, 0) as events:
        action = CheckpointAction(state, dataset, config, run_dir, events, Summaries(None),
                                  lambda step: 0, True, shadow=shadow)
        try:
            action.persist(0, 2.3)  # as if step 0 came back from memory
            action.ran(range(1, 2))
            action.wait()
        finally:
            action.close()
    assert calls == ["take_eagerly", "warm_up", "write ckpt-0", "take"]
    [saved] = [e for e in read_all(run_dir) if e["event"] == "checkpoint_saved"]
    assert (saved["step"], saved["source"]) == (0, "memory")
    assert listing.newest_valid(run_dir).step == 0


def test_a_warm_up_for_the_periodic_save_traces_the_fused_write_not_the_write_alone(tmp_path):
    import numpy as np

    from ftgui.training.background_save import ShadowState

    config, dataset, state, shadow = _mlp_state(ShadowState)
    shadow.warm_up(dataset.x_val)
    assert shadow._write.experimental_get_tracing_count() == 0
    assert shadow._write_logits.experimental_get_tracing_count() == 1
    shadow.take()
    files, val_loss, _ = shadow.write_and_evaluate(tmp_path / "ckpt-1", dataset.x_val,
                                                   dataset.y_val)
    assert shadow._write_logits.experimental_get_tracing_count() == 1  # no retrace
    assert np.isfinite(val_loss) and set(files) == {"ckpt-1.index",
                                                     "ckpt-1.data-00000-of-00001"}
    # the write alone (a just-in-time save, a resume probe) traces at its first call
    assert set(shadow.write(tmp_path / "ckpt-2")) == {"ckpt-2.index",
                                                       "ckpt-2.data-00000-of-00001"}
    assert shadow._write.experimental_get_tracing_count() == 1
    restored = ShadowState(state, config.model, dataset.input_shape, dataset.num_classes,
                           config.learning_rate)
    restored.checkpoint.read(str(tmp_path / "ckpt-2")).assert_existing_objects_matched()
    assert all(np.array_equal(a.numpy(), b.numpy())
               for a, b in zip(shadow.model.variables, restored.model.variables, strict=True))
