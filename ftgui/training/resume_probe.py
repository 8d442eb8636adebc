"""The user-code check's proof of exact resume: step, save, restore, step again, compare.

Run on the helper's `step.TrainState` (`check_user_code`). After one training step (so that state a
save misses is no longer at its initial value), the state is saved the three ways a run saves it:
checkpoint files of the state's own `tf.train.Checkpoint` (periodic saves under a cluster, a restore
from memory persisted), the background save's shadow copy written as files
(`background_save.ShadowState`, also the just-in-time save) and an in-memory snapshot's bytes
(`actions.snapshot.StateBytes`, when snapshots are on). Then step 2 is run from the live state, and
again after restoring each save: the loss and every variable (each replica's copy) must be
equal, bit for bit. A variable whose replicas hold different values after the first step is
named (a save keeps one copy). Before that, the variables that the traced step reads or writes
are compared with what is saved: one that no save holds (a `tf.Variable` kept outside the
model's object graph) is named.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ftgui.training.state_variables import components, name_of, state_variables, unsaved_in


def probe(state, dataset, config) -> tuple[str, bool]:
    """('' when a save and restore anywhere in the run resumes exactly, else why not as one
    sentence naming the variables or the save; whether the state came back whole and the
    step after it still differed, i.e. the step is not a function of the state: the caller
    then looks for stateful random ops)."""
    from ftgui.training.actions.snapshot import StateBytes
    from ftgui.training.background_save import ShadowState

    n, batch = len(dataset.x_train), config.global_batch_size
    first, second = np.arange(batch) % n, np.arange(batch, 2 * batch) % n
    state.train_step(dataset.x_train[first], dataset.y_train[first])
    saved = state_variables(state)
    unsaved = unsaved_in([state._plain_step, state._train_step], saved)
    if unsaved:
        return (f"the training step uses variables that no checkpoint or snapshot holds "
                f"(outside the model's and optimizer's object graph): {', '.join(unsaved)}",
                False)
    apart = replicas_apart(saved)
    if apart:
        return (f"variables hold another value on each replica after a step (each replica "
                f"updates them from its own batch): {', '.join(apart)}; a checkpoint or "
                f"snapshot keeps one replica's copy only, so after a restore the other "
                f"replicas train on another value (BatchNormalization(synchronized=True) "
                f"keeps its statistics equal on all replicas; a tf.Variable can be given "
                f"aggregation=tf.VariableAggregation.MEAN)", False)
    _ = state.checkpoint.save_counter  # created now, so that it is written and restored too
    snapshot = StateBytes(state) if config.snapshot_every else None
    shadow = ShadowState(state, config.model, dataset.input_shape, dataset.num_classes,
                         config.learning_rate)
    names = [name_of(v) for v in saved]
    with tempfile.TemporaryDirectory(prefix="ftgui-check-") as scratch:
        own = Path(state.checkpoint.write(str(Path(scratch) / "own-1")))
        shadow.take()
        shadow.write(Path(scratch) / "shadow-1")
        payload = snapshot.read() if snapshot else None
        at_save = _values(saved)
        reference = _step(state, saved, dataset, second)
        restores = {"checkpoint": lambda: state.restore(own),
                    "background save's checkpoint": lambda: state.restore(
                        Path(scratch) / "shadow-1"),
                    "in-memory snapshot": lambda: snapshot.load(payload)}
        if snapshot is None:  # --snapshot-every 0
            del restores["in-memory snapshot"]
        for what, restore in restores.items():
            restore()
            lost = _differences(at_save, _values(saved), names)
            if lost:
                return (f"a restore from the {what} does not bring back "
                        f"{', '.join(lost)}: that save misses them", False)
            differs = _differences(reference, _step(state, saved, dataset, second),
                                   ["the loss", *names])
            if differs:
                return (f"one training step after a restore from the {what} gave other "
                        f"results than without the restore ({', '.join(differs[:5])} "
                        f"differ{'s' if len(differs) == 1 else ''})", True)
    return "", False


def step_changes_when_traced_again(state, dataset, config) -> bool:
    """Whether one training step, traced anew (a new `tf.function` of the same step, 0.4 s
    for the MLP) and run from the same state, gives other results than the step traced
    first: Python code in the model that runs at each trace and changes what is traced
    (Python's `random`, a counter kept on a layer or in a module). A cold restart traces as
    the first attempt did and resumes exactly; a warm standby that traced its step before
    its order did not (a user's finding). One retrace, after the check's own traces, is
    enough: a standby's traces differ from a cold start's in which step form the model's
    2nd and 3rd calls trace (a counter crossing there resumed inexactly; at the 3rd or 4th,
    exactly). The state is put back as it was, bit for bit."""
    import tensorflow as tf

    from ftgui.training.traced import traced

    saved = state_variables(state)
    before = [v.numpy() for v in saved]
    rows = np.arange(config.global_batch_size) % len(dataset.x_train)
    again = traced(lambda x, y: state._distributed_plain_step(x, y))
    results = []
    for step in (state._plain_step, again):
        with tf.device("/cpu:0"):  # as `TrainState.train_step` hands the batch in
            x, y = tf.constant(dataset.x_train[rows]), tf.constant(dataset.y_train[rows])
        results.append([np.float32(step(x, y)).tobytes(), *_values(saved)])
        for variable, value in zip(saved, before, strict=True):
            variable.assign(value)
    return results[0] != results[1]


def copy_scores_like_the_model(state, dataset, config) -> bool:
    """Whether the background save's copy of the model (`ShadowState`, a second call of the
    model's build function, its weights copied from the model), on which every periodic
    checkpoint's validation pass runs, gives the model's own outputs on the validation
    inputs, bit for bit. False: `build` makes state that is no weight, and differs between
    calls; the validation loss a run reports would be another model's. Both forward passes
    are traced, as the run's are: an eager one differs from a traced one in the last bits
    (fused kernels), which said so of every model (a breaker's finding)."""
    import tensorflow as tf

    from ftgui.training.background_save import ShadowState
    from ftgui.training.traced import traced

    shadow = ShadowState(state, config.model, dataset.input_shape, dataset.num_classes,
                         config.learning_rate)
    shadow.take_eagerly()
    x = dataset.x_val[:64] if len(dataset.x_val) else dataset.x_train[:64]
    own = np.asarray(state._evaluate(tf.convert_to_tensor(x)))
    copy = np.asarray(traced(lambda rows: shadow.model(rows, training=False))(tf.constant(x)))
    return own.shape == copy.shape and own.tobytes() == copy.tobytes()


def replicas_apart(saved: list) -> list[str]:
    """Names of the distributed variables among `saved` whose replicas' copies differ: state
    a save cannot hold (it writes one copy and restores it into every replica's)."""
    return [name_of(v) for v in saved if len({_bytes(c) for c in components(v)}) > 1]


def _bytes(variable) -> bytes:
    return np.asarray(variable.numpy()).tobytes()


def _values(saved: list) -> list[bytes]:
    """Every variable's bytes, each replica's copy of a distributed one concatenated."""
    return [b"".join(_bytes(c) for c in components(v)) for v in saved]


def _step(state, saved: list, dataset, rows) -> list[bytes]:
    loss, _ = state.train_step(dataset.x_train[rows], dataset.y_train[rows])
    return [np.float32(loss).tobytes(), *_values(saved)]


def _differences(reference: list[bytes], result: list[bytes], names: list[str]) -> list[str]:
    return [name for name, a, b in zip(names, reference, result, strict=True) if a != b]
