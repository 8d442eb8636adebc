"""The user-code check's proof of exact resume: step, save, restore, step again, compare.

Run on the helper's `step.TrainState` (`check_user_code`). After one training step (so that state a
save misses is no longer at its initial value), the state is saved the three ways a run saves it:
checkpoint files of the state's own `tf.train.Checkpoint` (periodic saves under a cluster, a restore
from memory persisted), the background save's shadow copy written as files
(`background_save.ShadowState`, also the just-in-time save) and an in-memory snapshot's bytes
(`actions.snapshot.StateBytes`, when snapshots are on). Then step 2 is run from the live state, and
again after restoring each save: the loss and every variable must be equal, bit for bit. Before
that, the variables that the traced step reads or writes are compared with what is saved: one that
no save holds (a `tf.Variable` kept outside the model's object graph) is named.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ftgui.training.state_variables import name_of, state_variables, unsaved_in


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


def _values(saved: list) -> list[bytes]:
    return [np.asarray(v.numpy()).tobytes() for v in saved]


def _step(state, saved: list, dataset, rows) -> list[bytes]:
    loss, _ = state.train_step(dataset.x_train[rows], dataset.y_train[rows])
    return [np.float32(loss).tobytes(), *_values(saved)]


def _differences(reference: list[bytes], result: list[bytes], names: list[str]) -> list[str]:
    return [name for name, a, b in zip(names, reference, result, strict=True) if a != b]
