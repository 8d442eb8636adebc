"""Helper process: compare checkpoints' saved tensors with a reference checkpoint, to the bit.

`python -m ftgui.training.helpers.compare_weights REFERENCE PREFIX [PREFIX …]` (or `--stdin`:
import TensorFlow first, then read the prefixes as one JSON list line, so that a caller can start
it early and have it warm) prints one JSON line:
{"results": {PREFIX: {"differ": [names], "only_reference": [names], "only_run": [names]}}}
(or {"error": one line}). Started by `ftgui.core.audit.weights`; one TensorFlow import for all.
The object graph and the save counter (how many saves the run made, not training state) are
left out.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")

SKIPPED = ("_CHECKPOINTABLE_OBJECT_GRAPH", "save_counter/")
SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


def tensors(prefix: str) -> dict:
    """Saved tensor name (without TensorFlow's attribute suffix) -> numpy value."""
    from ftgui.training.imports import import_tensorflow

    import_tensorflow()
    import tensorflow as tf

    reader = tf.train.load_checkpoint(prefix)
    return {name.removesuffix(SUFFIX): reader.get_tensor(name)
            for name in reader.get_variable_to_shape_map()
            if not name.startswith(SKIPPED)}


def bitwise_equal(a, b) -> bool:
    """Same dtype, shape and bytes."""
    import numpy as np

    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def compare(reference: dict, run: dict) -> dict:
    """The names whose values differ, and those only one side holds, each sorted."""
    return {"differ": sorted(n for n in set(reference) & set(run)
                             if not bitwise_equal(reference[n], run[n])),
            "only_reference": sorted(set(reference) - set(run)),
            "only_run": sorted(set(run) - set(reference))}


def main(argv: list[str] | None = None) -> int:
    """Print the answer (or `{"error": …}`) as JSON; exit 0, or 2 on any error."""
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--stdin"]:
        from ftgui.training.imports import import_tensorflow

        import_tensorflow()  # warm before the request comes

        line = sys.stdin.readline()
        try:
            argv = [str(item) for item in json.loads(line)]
        except ValueError:
            argv = []
    if len(argv) < 2:
        print(json.dumps({"error": "give REFERENCE PREFIX [PREFIX …]"}))
        return 2
    try:
        reference = tensors(argv[0])
        results = {prefix: compare(reference, tensors(prefix)) for prefix in argv[1:]}
    except Exception as exc:  # one line for the caller; the traceback to stderr
        import traceback

        traceback.print_exc()
        print(json.dumps({"error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}))
        return 2
    print(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
