"""Helper process: describe, evaluate or export one checkpoint of a run, as JSON on stdout.

`python -m ftgui.training.helpers.inspect_checkpoint RUN STEP [--evaluate] [--export FILE.keras]`
Started by `ftgui.core.checkpoints.tools`; short-lived, so TensorFlow stays out of the GUI.
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

    from ftgui.training.imports import import_tensorflow

    import_tensorflow()
    import tensorflow as tf

    reader = tf.train.load_checkpoint(prefix)
    dtypes = reader.get_variable_to_dtype_map()
    out = []
    for name, shape in sorted(reader.get_variable_to_shape_map().items()):
        dtype = dtypes[name]
        size = int(np.prod(shape, dtype=np.int64)) * dtype.size if shape else dtype.size
        out.append({"name": name, "shape": list(shape), "dtype": dtype.name, "bytes": size})
    return out


def restored_model(run_dir: Path, info):
    """The model checkpoint `info` was trained with, with its weights (no optimizer), the
    dataset and the run's config (`tools.checkpoint_config`). Raises
    `RuntimeError` (one line) when the model or dataset file changed since it was saved."""
    from ftgui.core.checkpoints import listing, tools

    config = tools.checkpoint_config(run_dir, info)
    problem = tools.changed_files(config, info)
    if problem:  # before TensorFlow is imported: a refusal costs no 3-6 s
        raise RuntimeError(problem)
    from ftgui.training.imports import import_tensorflow

    import_tensorflow()
    import tensorflow as tf

    from ftgui.training import data as datamod
    from ftgui.training import models

    prefix = str(listing.tf_path(info.prefix))  # TensorFlow globs paths
    dataset = datamod.load(config.dataset, config.task)
    model = models.build(config.model, dataset.input_shape, dataset.num_classes)
    tf.train.Checkpoint(model=model).restore(prefix).expect_partial()
    return model, dataset, config


def evaluate(model, dataset, config) -> dict:
    """The checkpoint's validation figures, computed as the trainer computes them
    (`models.evaluate_outputs`: softmax cross-entropy and accuracy for classification, mean
    squared error and no accuracy for regression, a model module's own `loss` and
    `metrics` when it defines them): val_loss, val_accuracy (None for regression),
    metrics (name -> value, when the module has some) and examples (the validation rows)."""
    import numpy as np

    from ftgui.training import models

    outputs = np.asarray(model(dataset.x_val, training=False))
    own = models.user_loss(config.model) is not None
    loss = models.per_example_loss(config.model, config.task) if own else None
    val_loss, val_accuracy = models.evaluate_outputs(outputs, dataset.y_val, config.task, loss)
    result = {"val_loss": val_loss, "val_accuracy": val_accuracy,
              "examples": int(len(dataset.y_val))}
    metrics = models.resolve_metrics(models.user_metrics(config.model), config.task)
    if metrics:
        result["metrics"] = models.evaluate_metrics(metrics, outputs, dataset.y_val)
    return result


def main(argv: list[str] | None = None) -> int:
    """Print the answer (or `{"error": one line}`) as JSON; exit 0, or 2 on any error."""
    try:
        return answer(argv)
    except Exception as exc:  # the window shows one line; the traceback goes to stderr
        import traceback

        from ftgui.core.record.process_output import error_sentence
        from ftgui.core.settings.schema import ConfigError

        traceback.print_exc()
        own = type(exc) in (RuntimeError, ConfigError)  # ftgui's refusals are lines already
        line = str(exc) if own else error_sentence(type(exc).__name__, str(exc))
        print(json.dumps({"error": line}))
        return 2


def answer(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ftgui.training.helpers.inspect_checkpoint")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("step", type=int)
    parser.add_argument("--evaluate", action="store_true")
    parser.add_argument("--export", type=Path)
    args = parser.parse_args(argv)
    from ftgui.core.checkpoints import listing

    try:
        info = listing.find(args.run_dir, args.step)
    except LookupError as exc:
        print(json.dumps({"error": str(exc)}))
        return 2
    if args.export and args.export.suffix != ".keras":
        print(json.dumps({"error": f"export: {args.export} must end in .keras"}))
        return 2
    built = restored_model(args.run_dir, info) if args.evaluate or args.export else None
    prefix = str(listing.tf_path(info.prefix))  # TensorFlow globs paths
    result = {"step": info.step, "path": info.relpath, "size": info.size,
              "variables": variables(prefix)}
    if built is not None:
        model, dataset, config = built
        if args.evaluate:
            result["evaluation"] = evaluate(model, dataset, config)
        if args.export:
            model.save(args.export)
            result["exported"] = str(args.export)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
