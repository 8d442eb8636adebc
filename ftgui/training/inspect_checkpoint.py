"""Helper process: describe, evaluate or export one checkpoint of a run, as JSON on stdout.

`python -m ftgui.training.inspect_checkpoint RUN STEP [--evaluate] [--export FILE.keras]`
Started by `ftgui.core.checkpoint_tools`; short-lived, so TensorFlow stays out of the GUI.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")


def variables(prefix: str) -> list[dict]:
    """Every saved tensor: name, shape, dtype and size in bytes."""
    import numpy as np
    import tensorflow as tf

    reader = tf.train.load_checkpoint(prefix)
    dtypes = reader.get_variable_to_dtype_map()
    out = []
    for name, shape in sorted(reader.get_variable_to_shape_map().items()):
        dtype = dtypes[name]
        size = int(np.prod(shape, dtype=np.int64)) * dtype.size if shape else dtype.size
        out.append({"name": name, "shape": list(shape), "dtype": dtype.name, "bytes": size})
    return out


def restored_model(run_dir: Path, prefix: str):
    """The run's model with the checkpoint's weights (no optimizer), and the dataset."""
    import tensorflow as tf

    from ftgui.core import config as configmod
    from ftgui.training import data as datamod
    from ftgui.training import models

    config = configmod.load(run_dir)
    dataset = datamod.load(config.dataset, config.task)
    model = models.build(config.model, dataset.input_shape, dataset.num_classes)
    tf.train.Checkpoint(model=model).restore(prefix).expect_partial()
    return model, dataset


def evaluate(model, dataset) -> dict:
    import numpy as np

    logits = model(dataset.x_val, training=False).numpy()
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return {
        "val_loss": float(-log_probs[np.arange(len(dataset.y_val)), dataset.y_val].mean()),
        "val_accuracy": float((logits.argmax(axis=1) == dataset.y_val).mean()),
        "examples": int(len(dataset.y_val)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ftgui.training.inspect_checkpoint")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("step", type=int)
    parser.add_argument("--evaluate", action="store_true")
    parser.add_argument("--export", type=Path)
    args = parser.parse_args(argv)
    from ftgui.core import checkpoints

    try:
        info = checkpoints.find(args.run_dir, args.step)
    except LookupError as exc:
        print(json.dumps({"error": str(exc)}))
        return 2
    prefix = str(checkpoints.tf_path(info.prefix))  # TensorFlow globs paths
    result = {"step": info.step, "path": info.relpath, "variables": variables(prefix)}
    if args.evaluate or args.export:
        model, dataset = restored_model(args.run_dir, prefix)
        if args.evaluate:
            result["evaluation"] = evaluate(model, dataset)
        if args.export:
            if args.export.suffix != ".keras":
                print(json.dumps({"error": f"export: {args.export} must end in .keras"}))
                return 2
            model.save(args.export)
            result["exported"] = str(args.export)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
