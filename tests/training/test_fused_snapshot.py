"""The snapshot taken from the step's own output (issue 28): the plain step's second form returns
the whole state after its update, the snapshot action uses it only when it holds the step it
snapshots, and a large state is written on a thread whose error stops training."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.tf


@pytest.fixture(scope="module")
def trained():
    """(state, dataset, batches) of the default strategy's MLP, built once per module."""
    return _build()


@pytest.fixture(scope="module")
def large_trained():
    """Another (state, dataset, batches), for the tests that count the MLP's state as large
    (`ASYNC_BYTES` 0): a state's step is fused once, with the part layout of its first
    snapshot action (one part, or one per variable for a large state), so a large-state test
    on `trained` left the small-state tests that ran after it (xdist's order) unfused."""
    return _build()


def _build():
    import tensorflow as tf

    from ftgui.core.settings.config import RunConfig
    from ftgui.training import data as datamod
    from ftgui.training.step import TrainState

    tf.keras.utils.set_random_seed(0)
    config = RunConfig(strategy="default")
    dataset = datamod.load(config.dataset, config.task)
    state = TrainState(tf.distribute.get_strategy(), config, dataset)
    batches = datamod.StepBatches(len(dataset.x_train), config.global_batch_size, config.seed)
    return state, dataset, batches


def _steps(trained, action, count: int) -> None:
    from ftgui.training.actions import StepOutput

    state, dataset, batches = trained
    for _ in range(count):
        step = state.global_step + 1
        rows = batches.indices(step)
        loss, _ = state.train_step(dataset.x_train[rows], dataset.y_train[rows])
        action(StepOutput(step, loss))


def _newest(run_dir):
    from ftgui.core.checkpoints import snapshots

    snapshot = snapshots.SnapshotFile.open(snapshots.snapshot_path(run_dir))
    slot = snapshot.newest()
    return slot, bytes(snapshot.payload(slot))


def test_every_snapshot_step_returns_the_state_it_left_and_only_those_do(trained, tmp_path):
    from ftgui.training.actions.snapshot import SnapshotAction, StateBytes

    state = trained[0]
    action = SnapshotAction(state, tmp_path, every=2)
    try:
        first = state.global_step
        assert state.state_output_next == ((first + 1) % 2 == 0)
        _steps(trained, action, 4)
        assert (action.taken, action.fused) == (2, 2)
        slot, payload = _newest(tmp_path)
        assert slot.step == state.global_step
        assert payload == StateBytes(state).read().tobytes()  # every bit, read apart
        assert state.last_state_output is None  # handed on, not kept
        assert state.state_output_next == ((state.global_step + 1) % 2 == 0)
    finally:
        action.close()
    assert state.state_output_next is False  # a closed action arms no step


def test_the_values_a_step_returned_keep_that_step_while_the_next_steps_update(trained):
    """They share the variables' buffers until an update: TensorFlow then copies (a read's
    tensor is immutable), so a write still in flight copies the step it was given."""
    from ftgui.training.actions.snapshot import StateBytes

    state, dataset, batches = trained
    state_bytes = StateBytes(state)
    state.fuse_state_output(state_bytes.parts)
    state.state_output_next = True
    step = state.global_step + 1
    rows = batches.indices(step)
    state.train_step(dataset.x_train[rows], dataset.y_train[rows])
    held = state_bytes.of_step(state.last_state_output, step)
    assert held is not None and state_bytes.of_step(state.last_state_output, step + 1) is None
    expected = state_bytes.read().tobytes()
    for later in (step + 1, step + 2):
        rows = batches.indices(later)
        state.train_step(dataset.x_train[rows], dataset.y_train[rows])
    assert state_bytes.read().tobytes() != expected  # the variables moved on ...
    assert b"".join(a.tobytes() for a in held) == expected  # ... what the step gave did not
    state.last_state_output = None


def test_a_state_output_of_another_step_is_not_taken_for_this_one(trained, tmp_path):
    from ftgui.training.actions.snapshot import SnapshotAction, StateBytes

    state = trained[0]
    action = SnapshotAction(state, tmp_path, every=1)
    try:
        _steps(trained, action, 1)
        stale = StateBytes(state).parts()  # holds the step just taken
        _steps(trained, action, 1)
        state.last_state_output = stale
        action.take(state.global_step, 0.5)  # the step after the one `stale` holds
        slot, payload = _newest(tmp_path)
        assert (slot.step, slot.loss) == (state.global_step, 0.5)
        assert payload == StateBytes(state).read().tobytes()
        assert (action.taken, action.fused) == (3, 2)
    finally:
        action.close()


def test_a_large_state_is_written_on_the_writer_thread_whose_error_stops_training(
        large_trained, tmp_path, monkeypatch):
    from ftgui.training.actions import StepOutput, snapshot
    from ftgui.training.actions.snapshot import SnapshotAction, StateBytes

    monkeypatch.setattr(snapshot, "ASYNC_BYTES", 0)  # the MLP's state counts as large
    state = large_trained[0]
    action = SnapshotAction(state, tmp_path, every=1)
    try:
        assert action._writer is not None
        _steps(large_trained, action, 3)
        action.wait()
        slot, payload = _newest(tmp_path)
        assert slot.step == state.global_step
        assert payload == StateBytes(state).read().tobytes()

        def full(*args):
            raise OSError(28, "No space left on device")

        action.file.write = full
        _steps(large_trained, action, 1)  # submitted; it fails on the thread
        with pytest.raises(OSError, match="No space left"):
            action.wait()
            action(StepOutput(state.global_step + 1, 0.0))
    finally:
        action.file.write = lambda *args: None
        action.close()


def test_a_prepared_standby_has_traced_the_step_that_returns_the_state():
    from ftgui.core.settings.config import RunConfig
    from ftgui.training import warm_standby
    from ftgui.training.actions.snapshot import StateBytes

    state, dataset, _ = _build()  # its own: no earlier test traced its steps
    assert state._fused_step is None
    before = StateBytes(state).read()
    warm_standby.run_one_step_and_undo(state, dataset, RunConfig(strategy="default",
                                                                 snapshot_every=1))
    assert state._fused_step is not None
    assert len(state._fused_step._list_all_concrete_functions_for_serialization()) == 1
    assert (state.state_output_next, state.last_state_output) == (False, None)
    assert (StateBytes(state).read() == before).all()  # both warm-up steps undone


def test_a_warm_up_stopped_after_its_first_step_still_undoes_it():
    """The order came during the warm-up (`stop()` true): the stages left (the step that
    returns the state, the warm restore) are skipped, and the step run is undone."""
    from ftgui.core.settings.config import RunConfig
    from ftgui.training import warm_standby
    from ftgui.training.actions.snapshot import StateBytes

    state, dataset, _ = _build()
    before = StateBytes(state).read()
    asked = []
    warm_standby.run_one_step_and_undo(
        state, dataset, RunConfig(strategy="default", snapshot_every=1),
        warm_restore="no/such/checkpoint", stop=lambda: asked.append(1) or True)
    assert state._fused_step is None and len(asked) == 2
    assert (StateBytes(state).read() == before).all()


def test_a_state_restored_from_memory_is_the_first_snapshot_of_the_new_file(trained, tmp_path):
    """Its checkpoint is written on the writer thread once training runs: until then the
    snapshot file must hold it, or a crash meanwhile would lose it."""
    from ftgui.core.settings.config import RunConfig
    from ftgui.training.assemble import _snapshots
    from ftgui.training.restore import MemoryRestore

    state = trained[0]
    [action] = _snapshots(state, RunConfig(strategy="default"), tmp_path, True,
                          restored=MemoryRestore(state.global_step, 0.25, None, "x"))
    try:
        action.wait()
        slot, _ = _newest(tmp_path)
        assert (slot.step, slot.loss) == (state.global_step, 0.25)
        assert action.fused == 0  # read, not a step's output
    finally:
        action.close()


def test_a_restored_state_is_in_the_new_file_before_it_replaces_the_old_one(
        trained, tmp_path, monkeypatch):
    """A breaker's find: the new file replaced the one the state came from while still empty,
    and the state was copied in after; a trainer SIGKILLed between the two (0.06-0.15 s after
    `resumed`, 3 of 9 tries) left no snapshot, and the next attempt redid 15 steps from an
    older checkpoint. The file that appears must already hold the restored state."""
    import os

    from ftgui.core.checkpoints import snapshots
    from ftgui.core.settings.config import RunConfig
    from ftgui.training.assemble import _snapshots
    from ftgui.training.restore import MemoryRestore

    state = trained[0]
    seen, real_replace = [], os.replace

    def replace(src, dst):
        if str(dst).endswith(".snapshot"):
            held = snapshots.SnapshotFile.open(Path(src)).newest()
            seen.append(None if held is None else held.step)
        real_replace(src, dst)

    monkeypatch.setattr(snapshots.os, "replace", replace)
    [action] = _snapshots(state, RunConfig(strategy="default"), tmp_path, True,
                          restored=MemoryRestore(state.global_step, 0.25, None, "x"))
    action.close()
    assert seen == [state.global_step]


def test_a_kill_inside_a_large_states_snapshot_leaves_half_its_bytes_and_the_last_whole(
        large_trained, tmp_path, monkeypatch):
    """A large state hands the step's tensors to the writer thread; a kill planned inside its
    snapshot still copies half of the payload's bytes into the other slot, unmarked, so the
    snapshot before it stays the newest consistent one."""
    from ftgui.core.checkpoints import snapshots
    from ftgui.core.record import events
    from ftgui.training.actions import snapshot
    from ftgui.training.actions.fault_hooks import Faults, KillInside
    from ftgui.training.actions.snapshot import SnapshotAction, StateBytes

    monkeypatch.setattr(snapshot, "ASYNC_BYTES", 0)  # the MLP's state counts as large
    class Killed(BaseException):
        pass

    def die(signum):
        raise Killed(signum)

    state = large_trained[0]
    with events.EventWriter(tmp_path, attempt=0) as writer:
        kill = KillInside(Faults([("kill-in-snapshot", state.global_step + 2, "chief")]),
                          writer, send_signal=die)
        action = SnapshotAction(state, tmp_path, every=1, kill_inside=kill)
        try:
            _steps(large_trained, action, 1)
            action.wait()
            whole = (state.global_step, StateBytes(state).read().tobytes())
            with pytest.raises(Killed):
                _steps(large_trained, action, 1)  # the kill's step
        finally:
            action.close()
            state.last_state_output = None
    opened = snapshots.SnapshotFile.open(snapshots.snapshot_path(tmp_path))
    slot = opened.newest()
    assert (slot.step, bytes(opened.payload(slot))) == whole
    torn = opened.slot(1 - slot.index)
    assert torn.reason == "empty or being written"
    start = snapshots._slot_offset(torn.index, opened.capacity) + snapshots.SLOT_HEADER.size
    half = opened.capacity // 2
    assert bytes(opened._data[start:start + half]) == StateBytes(state).read().tobytes()[:half]
