"""Helper process: check a run's own model and dataset before any training process starts.

`python -m ftgui.training.helpers.check_user_code CONFIG_JSON` (started by
`ftgui.core.settings.user_code.check`). It imports the user's module, calls the dataset function,
checks shapes and dtypes, builds the model under the run's strategy, checks its outputs against the
classes (or k regression targets), then steps, saves the state as a run does (checkpoint, background
save, snapshot), restores each save, steps again and compares the results bit for bit
(`resume_probe`).

It prints one JSON line on stdout: `{"ok": true, "summary": …, "deterministic": …,
"nondeterministic_ops": […], "reason": "…"}` (exit 0) or `{"ok": false, "error": "FILE:LINE: …",
"traceback": "…"}` (exit 2). Strategies: default, one-device and mirrored are built as the run
builds them; multi-worker as a one-worker MultiWorkerMirroredStrategy (no cluster exists yet);
parameter-server under the default strategy (its cluster processes do not exist yet).
"""

from __future__ import annotations

import json
import os
import re
import sys
import traceback
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")

# Stateful random ops: their hidden state is in no checkpoint, so a resumed run draws other
# numbers than the run that was never stopped.
STATEFUL_RANDOM_OPS = {
    "RandomUniform", "RandomUniformInt", "RandomStandardNormal", "TruncatedNormal",
    "ParameterizedTruncatedNormal", "RandomShuffle", "Multinomial", "RandomGamma",
    "RandomPoisson", "RandomPoissonV2", "RandomCrop",
}


class Refusal(Exception):
    """The user's code cannot train: `message` names `path` and `line` (0 when none)."""

    def __init__(self, path: Path | None, line: int, message: str):
        super().__init__(message)
        self.path, self.line = path, line


def main(argv: list[str]) -> int:
    from ftgui.core.settings import config as configmod

    config = configmod.from_dict(json.loads(argv[0]))
    try:
        config.validate()
        answer = check(config)
    except Exception as exc:  # every failure becomes one line plus the traceback
        print(json.dumps({"ok": False, "error": one_line(exc, config),
                          "traceback": traceback.format_exc()}), flush=True)
        return 2
    print(json.dumps({"ok": True, **answer}), flush=True)
    return 0


def check(config) -> dict:
    """The checks in order; returns the summary and the determinism verdict."""
    from ftgui.training.imports import import_tensorflow

    import_tensorflow()
    import tensorflow as tf

    from ftgui.training import data as datamod
    from ftgui.training.data import StepBatches
    from ftgui.training.step import TrainState

    tf.keras.utils.set_random_seed(config.seed)
    tf.config.experimental.enable_op_determinism()
    strategy = _strategy(config)  # first, as in the trainer: devices are fixed before any op
    dataset = _stage("dataset", config.dataset, lambda: datamod.load(config.dataset, config.task))
    StepBatches(len(dataset.x_train), config.global_batch_size, config.seed)
    state = _stage("model", config.model, lambda: TrainState(strategy, config, dataset))
    try:
        # the step first, as in the trainer: the model's Python code runs at each call or
        # trace, and one that counts them traced later than in the trainer can look the same
        # when traced again (an eager call before the step hid a counter: a breaker's model)
        deterministic, ops, reason = _step_twice(state, dataset, config)
        retraced = deterministic and _traced_again_differs(state, dataset, config)
    except Exception:
        _check_outputs(config, state, dataset)  # the clearer refusal, when outputs are why
        raise
    outputs = _check_outputs(config, state, dataset)
    advice = _advice(config, state.model, outputs)
    if retraced:  # its validation copy traces anew too: the advice above says why
        advice += _warm_standby_advice(config)
    else:
        advice += _validation_advice(config, state, dataset)
    return {"summary": _summary(state.model, dataset, strategy), "deterministic": deterministic,
            "nondeterministic_ops": ops, "reason": reason, "advice": advice,
            "trace_dependent": retraced}


def _one_process_custom_loop(config) -> bool:
    """The runs whose warm standby traces its step before its order and whose checkpoints
    validate on the background save's copy: one-process strategies, the custom loop (a
    cluster's standby only imports TensorFlow; clusters and model.fit save with no copy)."""
    from ftgui.training.warm_standby import PREPARED_STRATEGIES

    return config.strategy in PREPARED_STRATEGIES and config.loop == "custom"


def _traced_again_differs(state, dataset, config) -> bool:
    """`resume_probe.step_changes_when_traced_again`, where a warm standby traces early."""
    from ftgui.training.resume_probe import step_changes_when_traced_again

    return _one_process_custom_loop(config) and step_changes_when_traced_again(
        state, dataset, config)


def _warm_standby_advice(config) -> list[str]:
    path, line = _where(config)
    return [f"{path}:{line}: the model's Python code gives another training step each time "
            "TensorFlow traces it (Python's random, or a counter on a layer, in call): a "
            "cold restart traces it as the first attempt did and resumes exactly, so this "
            "run's warm standbys only import TensorFlow and build and trace after their "
            "order, as a cold start does"]


def _validation_advice(config, state, dataset) -> list[str]:
    """A line when the background save's copy of the model, on which each checkpoint's
    validation pass runs, gives other outputs than the model (`resume_probe`)."""
    from ftgui.training.resume_probe import copy_scores_like_the_model

    if not _one_process_custom_loop(config) or copy_scores_like_the_model(
            state, dataset, config):
        return []
    path, line = _where(config)
    return [f"{path}:{line}: a second call of the build function, with the weights copied, "
            "gives other outputs than the model: it makes state that is no weight (a "
            "constant drawn with TensorFlow's random ops?), so the validation loss of each "
            "checkpoint, computed on that copy, would not be the trained model's; make it a "
            "weight (add_weight(trainable=False)), or draw it with tf.random.stateless_normal "
            "and a fixed seed (tf.random.normal's seed still draws anew in each build)"]


def _stage(name: str, text: str, build):
    """Run `build()`; a `ValueError` or `TypeError` that names no file of the user's gets the
    file and the function's line (a dataset with mismatched lengths fails in ftgui's code, not
    the user's; so does a call of `build(input_shape)` with ftgui's two arguments)."""
    try:
        return build()
    except (ValueError, TypeError) as exc:
        if ".py:" not in text or _user_frame(exc, [_source(text)[0]]):
            _tag(exc, name)
            raise
        path, function = _source(text)
        message = str(exc)
        if isinstance(exc, TypeError):  # e.g. a signature other than the one ftgui calls
            called = "(input_shape, num_classes)" if name == "model" else "()"
            message += f" (ftgui calls {function}{called})"
        # a module attribute ftgui reads (its `loss`): that line, not the function's
        line = _function_line(path, getattr(exc, "module_attribute", None) or function)
        raise Refusal(path, line, message) from exc
    except Exception as exc:
        _tag(exc, name)
        raise


STAGE_ATTRIBUTE = "ftgui_check_stage"  # on an exception: the `_stage` that raised it


def _tag(exc: BaseException, stage: str) -> None:
    try:
        setattr(exc, STAGE_ATTRIBUTE, stage)
    except (AttributeError, TypeError):  # an exception type without a __dict__
        pass


def _strategy(config):
    from ftgui.training.strategies import configure_devices, make_strategy

    if config.strategy == "parameter-server":
        import tensorflow as tf

        return tf.distribute.get_strategy()
    configure_devices(config)
    return make_strategy(config)  # multi-worker without TF_CONFIG: one local worker


def _where(config, text: str | None = None) -> tuple[Path, int]:
    """The user's model file (or the source `text` names) and its function's line (0 for a
    saved `.keras` model, or a function not found)."""
    text = config.model if text is None else text
    if ".py:" in text:
        path, function = _source(text)
        return path, _function_line(path, function)
    return Path(text), 0


def _check_outputs(config, state, dataset) -> np.ndarray:
    """The model's outputs for up to 4 training rows (rows, num_classes); raises `Refusal`
    when their shape or dtype is not what the run needs."""
    rows = dataset.x_train[: min(4, len(dataset.x_train))]
    outputs = np.asarray(state.model(rows, training=False))
    want = (len(rows), dataset.num_classes)
    if outputs.shape != want or not np.issubdtype(outputs.dtype, np.floating):
        what = ("logits (batch, num_classes)" if config.task == "classification"
                else "(batch, k) targets")
        raise Refusal(*_where(config), f"model outputs {outputs.dtype} {tuple(outputs.shape)} for "
                              f"{len(rows)} examples of shape {tuple(rows.shape[1:])}; the run "
                              f"needs {what} = {want} "
                              f"({dataset.name}: {dataset.num_classes} "
                              f"{'classes' if config.task == 'classification' else 'targets'})")
    return outputs


def _advice(config, model, outputs: np.ndarray) -> list[str]:
    """Lines for a model that trains but not as its author meant: outputs that are already
    probabilities (each row >= 0 and summing to 1, as after a final softmax) fed to a loss
    that takes logits (ftgui's own, when the module defines no `loss` or `--loop fit` runs),
    a model compiled with a loss and optimizer that the run does not use, and a model's
    own `train_step` that the custom loop does not run."""
    from ftgui.training.models import user_loss

    path, line = _where(config)
    where = f"{path}:{line}" if line else str(path)
    advice = []
    probabilities = (outputs.shape[1] > 1 and bool(np.all(outputs >= 0))
                     and bool(np.allclose(outputs.sum(axis=1), 1.0, atol=1e-4)))
    if (config.task == "classification" and probabilities
            and (config.loop == "fit" or ".py:" not in config.model
                 or user_loss(config.model) is None)):
        fix = ("drop the final softmax (--loop fit trains with softmax cross-entropy on "
               "logits, whatever the module's `loss`)" if config.loop == "fit" else
               "drop the final softmax, or define "
               "loss = keras.losses.SparseCategoricalCrossentropy() in the module")
        advice.append(f"{where}: the model's outputs are probabilities (each row sums to 1, "
                      f"as after a softmax), but the run's loss takes logits, so it trains "
                      f"slowly: {fix}")
    if getattr(model, "compiled", False):
        used = ("--loop fit compiles it again with Adam at --lr, softmax cross-entropy on "
                "logits and accuracy" if config.loop == "fit" else
                "the run trains with Adam at --lr and the module's `loss` and `metrics` when "
                "it defines them")
        advice.append(f"{where}: the model was compiled, but compile()'s loss, optimizer and "
                      f"metrics are not used: {used}")
    return advice + _own_train_step_advice(config, model, where)


_FIT_HOOKS = {  # Keras' hooks that model.fit calls and the custom loop does not
    "train_step": "the custom loop trains with ftgui's own step (the model's forward pass, "
                  "the run's loss, Adam at --lr)",
    "compute_loss": "the custom loop's loss is the module's `loss` (else softmax "
                    "cross-entropy on logits) plus the model's losses"}


def _own_train_step_advice(config, model, where: str) -> list[str]:
    """A line for each of Keras' hooks that `model.fit` calls (`train_step`,
    `compute_loss`) that the model's class defines itself, when the custom loop runs: that
    loop never calls them."""
    import inspect

    import keras

    if config.loop != "custom":
        return []
    advice = []
    for hook, instead in _FIT_HOOKS.items():
        own = getattr(type(model), hook, None)
        if own is None or own is getattr(keras.Model, hook, None):
            continue
        function = inspect.unwrap(getattr(own, "python_function", own))  # a tf.function's
        try:
            at = f"{inspect.getsourcefile(function)}:{inspect.getsourcelines(function)[1]}"
        except (OSError, TypeError):  # a class without source (a saved model's): the file
            at = where
        advice.append(f"{at}: {type(model).__name__}.{hook} is not run: {instead}; "
                      f"--loop fit runs the model's {hook}")
    return advice


def _step_twice(state, dataset, config) -> tuple[bool, list[str], str]:
    """Step, save (checkpoint, background save, snapshot), restore, step again and compare
    (`resume_probe.probe`); (bitwise equal, stateful random ops of the traced step when the
    step itself differed, the reason in a sentence or '')."""
    from ftgui.training.resume_probe import probe

    reason, step_differs = probe(state, dataset, config)
    if not reason:
        return True, [], ""
    ops = _random_ops(state) if step_differs else []
    return False, ops, (_reason(ops) if ops else reason)


def _random_ops(state) -> list[str]:
    """`OpType (node name)` of each stateful random op in the traced training step."""
    from ftgui.training.state_variables import traced_graphs

    found = []
    for traced in traced_graphs([state._plain_step, state._train_step]):
        graph = traced.as_graph_def()
        nodes = list(graph.node)
        for library_function in graph.library.function:
            nodes.extend(library_function.node_def)
        found += [f"{n.op} ({n.name})" for n in nodes if n.op in STATEFUL_RANDOM_OPS]
    return sorted(set(found))


def _reason(ops: list[str]) -> str:
    if ops:
        return (f"one training step run twice from the same state gave different results; "
                f"stateful random ops keep state no checkpoint holds: {', '.join(ops)}")
    return ("one training step run twice from the same state gave different results; "
            "TensorFlow names no op for it")


def _summary(model, dataset, strategy) -> dict:
    layers = [[layer.name, type(layer).__name__, str(_output_shape(layer)),
               int(layer.count_params()) if layer.built else 0] for layer in model.layers]
    trainable = int(sum(int(np.prod(v.shape)) for v in model.trainable_variables))
    return {"name": model.name, "layers": layers, "parameters": int(model.count_params()),
            "trainable_parameters": trainable, "train": len(dataset.x_train),
            "val": len(dataset.x_val), "input_shape": list(dataset.input_shape),
            "num_classes": dataset.num_classes, "task": dataset.task,
            "strategy": type(strategy).__name__}


def _output_shape(layer):
    try:
        return tuple(layer.output.shape)
    except (AttributeError, ValueError):
        return "?"


def one_line(exc: BaseException, config) -> str:
    """`FILE:LINE: Type: message` for the last traceback frame in the user's files (the model
    and dataset files and their own modules, `local_imports.module_files`), else the line of
    the function of the stage that failed (`_stage`: the dataset's or the model's; the file
    alone when there is no line), or `field: message` for ftgui's own refusals."""
    from ftgui.core.settings.local_imports import module_files

    named = [_source(text)[0] for text in (config.model, config.dataset)
             if _source(text)[0] is not None]
    files = named + [module for path in named for module in module_files(path)]
    message = cause_line(exc)
    if "unknown TensorShape" in _ANSI.sub("", str(exc)):
        message += f" ({_UNKNOWN_SHAPE_HINT})"
    if isinstance(exc, Refusal):
        where = f"{exc.path}:{exc.line}" if exc.line else str(exc.path)
        return f"{where}: {message}"
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename) in files:
        return f"{exc.filename}:{exc.lineno}: SyntaxError: {exc.msg}"
    frame = _user_frame(exc, files)
    if frame is not None:
        return f"{frame.filename}:{frame.lineno}: {type(exc).__name__}: {message}"
    if isinstance(exc, ValueError) and _OWN_FIELD.match(message):
        return message  # ftgui's own "field: …" line
    if any(str(f) in message for f in named):
        return message  # already names the file (e.g. "… defines no function 'build'")
    # no frame of the user's (Keras drops its own): the failing stage's function
    text = config.dataset if getattr(exc, STAGE_ATTRIBUTE, "") == "dataset" else config.model
    if ".py:" not in text:
        text = next((t for t in (config.model, config.dataset) if ".py:" in t), text)
    if ".py:" in text:
        path, line = _where(config, text)
        return f"{path}:{line}: {type(exc).__name__}: {message}" if line else \
            f"{path}: {type(exc).__name__}: {message}"
    return f"{named[0] if named else 'user code'}: {type(exc).__name__}: {message}"


def cause_line(exc: BaseException) -> str:
    """The line of `exc`'s message that says what went wrong (the type's name when it has
    none). Usually the first; but a TensorFlow error raised in traced code starts "in user
    code:" and gives the cause after the traced frames (e.g. `ConcatV2 … float16`), and
    Keras' "could not be deserialized" gives it after "Exception encountered:" (e.g. "Could
    not locate class 'GaussNoise'"): then that cause, without a repeated type name."""
    text = _ANSI.sub("", str(exc)).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    at = 0
    if "Exception encountered:" in text:
        rest = text.rsplit("Exception encountered:", 1)[1].strip()
        sentences = rest.split(". ")
        return _without_type(exc, ". ".join(sentences[:2]).splitlines()[0].rstrip(".") + ".")
    if lines[0] == "in user code:" and len(lines) > 1:
        at = next((k for k in reversed(range(len(lines))) if _NAMED_ERROR.match(lines[k])),
                  len(lines) - 1)
    line = _without_type(exc, lines[at])
    wrapper = "Exception encountered when calling "
    if wrapper in line and at + 1 < len(lines) \
            and not lines[at + 1].startswith("Arguments received"):
        # Keras' wrapper of an error in a layer's call(): the cause is its next paragraph,
        # or the one after its "Could not automatically infer the output shape … Error
        # encountered:" (the real cause: a dtype clash, an unknown shape)
        cause = lines[at + 1]
        if cause.endswith("Error encountered:") and at + 2 < len(lines) \
                and not lines[at + 2].startswith("Arguments received"):
            cause = lines[at + 2]
        line = f"{line.split(wrapper, 1)[1].rstrip('.')}: {cause.split('. ')[0].rstrip('.')}"
        if "singleton tf.Variables" in line:
            line += f" ({_NEW_VARIABLE_HINT})"
    return line


def _without_type(exc: BaseException, line: str) -> str:
    own = f"{type(exc).__name__}: "
    return line[len(own):] if line.startswith(own) else line


_NAMED_ERROR = re.compile(r"^[A-Z]\w*(Error|Exception): ")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Keras makes the cause bold on a terminal
_OWN_FIELD = re.compile(r"^[a-z_]+: ")  # "dataset: …", not Keras' "Functional.call(): …"
_UNKNOWN_SHAPE_HINT = ("a layer's output has no static shape, as a lookup table's or a "
                       "tf.py_function's has: give it one with tf.ensure_shape in call()")
_NEW_VARIABLE_HINT = ("a keras.random op without a seed, or a tf.Variable made in call(), makes "
                      "a new variable at every step: give the op seed=keras.random.SeedGenerator"
                      "(N) made in __init__, or make the variable there")


def _user_frame(exc: BaseException, files: list[Path]):
    """The last traceback frame (over the exception's causes) in one of `files`, or None."""
    wanted = {str(Path(f).resolve()) for f in files if f is not None}
    last = None
    while exc is not None:
        for frame in traceback.extract_tb(exc.__traceback__):
            if str(Path(frame.filename).resolve()) in wanted:
                last = frame
        if last is not None:
            return last
        exc = exc.__cause__ or exc.__context__
    return None


def _source(text: str) -> tuple[Path | None, str]:
    if ".py:" in text:
        path, _, function = text.rpartition(":")
        return Path(path), function
    if text.endswith((".keras", ".npz")):
        return Path(text), ""
    return None, ""


def _function_line(path: Path, function: str) -> int:
    """Line where `function` is defined in `path` (0 when it cannot be found)."""
    import ast

    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return 0
    # the module's own functions: a layer's `def build(self, shape)` is no `build` of ftgui's
    defined = {node.name: node.lineno for node in tree.body
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if function in defined:
        return defined[function]
    for node in tree.body:  # `build = make` (the def's line), `load = partial(…)`, `loss = …`
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == function for t in targets):
            value = node.value
            return defined.get(value.id, node.lineno) if isinstance(value, ast.Name) \
                else node.lineno
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
