"""Training processes: the only package of ftgui that imports TensorFlow.

Where things are (in the shape of TensorFlow's Orbit library): `__main__` starts one training
process; `step` holds the model, optimizer and traced distributed step; `loop` runs the steps and
turns what follows into an exit status (no TensorFlow); `actions/` are the small pieces run after
steps (step events and heartbeats, TensorBoard, NaN rollback, checkpoints, scheduled faults);
`assemble` puts them together. Beside them: `data`, `models`, `strategies`, `parameter_server`,
`background_save` and `checkpoint_writer` (checkpoints off the step path), `state_variables` (every
variable a save must hold, from TensorFlow's object graph), `resume_probe` (the user-code check's
step, save, restore, step again), `summaries`, `signals`, `peer_watch` (a multi-worker process stops
waiting for a peer the supervisor saw go), `fit_loop` (Keras `model.fit`, for comparison),
`devices`, `inspect_checkpoint`, `traced` (`tf.function` without autograph), `imports`
(TensorFlow imported with the garbage collector paused).
"""

import importlib.abc
import sys

# Keras 3 imports two packages no trainer uses, at `import keras`, when they are installed:
# scikit-learn for `keras.wrappers` (1.7 s of a 9 s TensorFlow + Keras import at load 5, the
# largest single part) and IPython for the notebook display of `keras.saving.KerasFileEditor`
# (0.45 s). Both imports sit in `try: … except ImportError`, so refusing them to Keras's own
# modules leaves Keras working without those two extras, and every trainer, standby and check
# process starts that much sooner. Anyone else (a user's dataset function) imports them as
# usual; only Keras's scikit-learn wrappers (`keras.wrappers.SKLearnClassifier`, …) then say
# that scikit-learn is not installed.
_NOT_FOR_KERAS = frozenset({"sklearn", "IPython"})


class _NotForKeras(importlib.abc.MetaPathFinder):
    """Refuses a top-level import of `_NOT_FOR_KERAS` whose importing module is Keras's own."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _NOT_FOR_KERAS:
            return None
        frame = sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__", "").startswith("importlib"):
            frame = frame.f_back
        importer = frame.f_globals.get("__name__", "") if frame is not None else ""
        if importer.startswith("keras."):
            raise ImportError(f"{fullname} is not imported for Keras in an ftgui trainer")
        return None


if not any(isinstance(finder, _NotForKeras) for finder in sys.meta_path):
    sys.meta_path.insert(0, _NotForKeras())
