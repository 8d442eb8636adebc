"""A run in which a NaN may be injected traces its poisoned step after the first step, so the
NaN step costs a step, not a trace (2.5-3 s here: a 3 s watchdog killed the chaos demo's
trainer in its NaN step, and the story said "rolled back" for a restart)."""

from __future__ import annotations

import pytest

from ftgui.core.settings.config import RunConfig


@pytest.mark.tf
@pytest.mark.parametrize("config, traced", [
    (RunConfig(strategy="default", nan_at_step=5), 1),
    (RunConfig(strategy="default", chaos_faults=5, chaos_kinds="kill,nan", chaos_seed=9), 1),
    (RunConfig(strategy="default"), 0),  # no NaN can come: nothing traced for it
])
def test_the_poisoned_step_is_traced_after_the_first_step_when_a_nan_may_come(config, traced):
    import tensorflow as tf

    from ftgui.training import data as datamod
    from ftgui.training.step import SyncSteps, TrainState

    digits = datamod.load("digits")
    state = TrainState(tf.distribute.get_strategy(), config, digits)
    batches = datamod.StepBatches(len(digits.x_train), 64, 42)
    runner = SyncSteps(state, digits)
    losses, _ = runner.run([batches.indices(1)], (False, False), [False])
    assert state._poisoned_step.experimental_get_tracing_count() == traced
    assert state.global_step == 1  # tracing ran no step
    if traced:
        [poisoned], _ = runner.run([batches.indices(2)], (False, False), [True])
        assert poisoned != poisoned  # NaN
        assert state._poisoned_step.experimental_get_tracing_count() == 1  # no new trace


@pytest.mark.tf
def test_a_state_built_without_a_nan_plan_traces_the_poisoned_step_for_the_run_s_own():
    """A warm standby built for settings without a NaN takes an order whose run plans one
    (`TrainState.plan_poison`): the poisoned step is traced after its first step, as a cold
    start of that run does."""
    import tensorflow as tf

    from ftgui.training import data as datamod
    from ftgui.training.step import SyncSteps, TrainState

    digits = datamod.load("digits")
    state = TrainState(tf.distribute.get_strategy(), RunConfig(strategy="default"), digits)
    state.plan_poison(RunConfig(strategy="default", chaos_faults=3, chaos_kinds="nan"))
    batches = datamod.StepBatches(len(digits.x_train), 64, 42)
    SyncSteps(state, digits).run([batches.indices(1)], (False, False), [False])
    assert state._poisoned_step.experimental_get_tracing_count() == 1
