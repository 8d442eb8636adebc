"""The models a run trains: the three built-ins (a small MLP, a small CNN and a ResNet-style
CNN of 1.2 M parameters, all ending in logits), the user's `PATH.py:FUNCTION` or saved
`PATH.keras`, and the loss each is trained with.
"""

from __future__ import annotations

import random

import keras
import numpy as np
import tensorflow as tf
from keras import layers

from ftgui.core.settings import user_code


def build(name: str, input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """`mlp`: Flatten → Dense(64, relu) → Dense(num_classes).
    `cnn`: Conv(16, 3×3) → MaxPool(2) → Conv(32, 3×3) → global average → Dense(num_classes).
    `resnet`: `resnet` below (1,211,514 parameters on 32×32×3 inputs and 10 classes).
    `PATH.py:FUNCTION`: `FUNCTION(input_shape, num_classes)`, the user's uncompiled model
    (built on one zero example when it builds lazily, `build_lazily`).
    `PATH.keras`: the saved model with its weights (uncompiled).

    Create it inside `strategy.scope()`. Raises `ValueError` for an unknown name, a CNN on
    inputs that are not images (h, w) or (h, w, c), or a function that returns no Keras model;
    whatever the user's code raises passes through.
    """
    if name not in user_code.BUILTIN_MODELS:
        return _user_model(user_code.parse("model", name), input_shape, num_classes)
    inputs = keras.Input(shape=input_shape)
    if name == "mlp":
        x = layers.Flatten()(inputs)
        x = layers.Dense(64, activation="relu")(x)
    elif name == "cnn":
        x = _images(name, inputs, input_shape)
        x = layers.Conv2D(16, 3, padding="same", activation="relu")(x)
        x = layers.MaxPooling2D(2)(x)
        x = layers.Conv2D(32, 3, padding="same", activation="relu")(x)
        x = layers.GlobalAveragePooling2D()(x)
    else:
        x = resnet(_images(name, inputs, input_shape))
    outputs = layers.Dense(num_classes)(x)
    return keras.Model(inputs, outputs, name=name)


def random_states() -> tuple:
    """Where Python's and NumPy's global random generators stand (`random.getstate()`,
    `np.random.get_state()`), for `build_at`."""
    return random.getstate(), np.random.get_state()


def build_at(states: tuple | None, name: str, input_shape: tuple[int, ...],
             num_classes: int) -> keras.Model:
    """`build`, with Python's and NumPy's global random generators set to `states` (what
    `random_states` gave just before the model this one copies was built), then put back
    where they were. A constant `build` draws from them that is no weight (a fixed random
    projection, `np.random.normal` in a layer's constructor) is then the same in the copy,
    whose weights are copied from the model: the background save's copy drew its own, and
    the validation loss it reported was another model's (a user's finding). `states` None:
    `build` as it is. Raises what `build` raises."""
    if states is None:
        return build(name, input_shape, num_classes)
    now = random_states()
    random.setstate(states[0])
    np.random.set_state(states[1])
    try:
        return build(name, input_shape, num_classes)
    finally:
        random.setstate(now[0])
        np.random.set_state(now[1])


def _images(name: str, inputs, input_shape: tuple[int, ...]):
    """`inputs` as images (batch, h, w, c): a channel axis added to (h, w) inputs."""
    if len(input_shape) == 2:
        return layers.Reshape((*input_shape, 1))(inputs)
    if len(input_shape) == 3:
        return inputs
    raise ValueError(f"model: {name} needs images (h, w) or (h, w, c), got {input_shape}")


RESNET_WIDTHS = (16, 32, 64, 320)  # channels of the four stages


def resnet(images):
    """The features (batch, 320) of the built-in ResNet-style CNN (He et al. 2016's basic
    blocks): a 3×3 stride-2 stem of 16 channels, then one residual block per stage of
    `RESNET_WIDTHS` channels, each stage after the first halving the resolution (32×32 inputs:
    16×16, 8×8, 4×4, 2×2), then global average pooling. Batch normalization after every
    convolution: its moving mean and variance are non-trainable variables the training step
    updates, which checkpoints and snapshots must hold. Most of its 1.2 M parameters sit in the
    last, 2×2 stage, so a step of global batch 64 takes tens of milliseconds on two CPU cores."""
    x = layers.Conv2D(RESNET_WIDTHS[0], 3, strides=2, padding="same", use_bias=False)(images)
    x = layers.ReLU()(layers.BatchNormalization()(x))
    for stage, width in enumerate(RESNET_WIDTHS):
        x = _residual_block(x, width, stride=1 if stage == 0 else 2)
    return layers.GlobalAveragePooling2D()(x)


def _residual_block(x, width: int, stride: int):
    """conv 3×3 → BN → ReLU → conv 3×3 → BN, plus the shortcut (a 1×1 conv + BN where the
    shape changes), then ReLU."""
    shortcut = x
    y = layers.Conv2D(width, 3, strides=stride, padding="same", use_bias=False)(x)
    y = layers.ReLU()(layers.BatchNormalization()(y))
    y = layers.Conv2D(width, 3, padding="same", use_bias=False)(y)
    y = layers.BatchNormalization()(y)
    if stride != 1 or x.shape[-1] != width:
        shortcut = layers.Conv2D(width, 1, strides=stride, use_bias=False)(x)
        shortcut = layers.BatchNormalization()(shortcut)
    return layers.ReLU()(layers.Add()([y, shortcut]))


def _user_model(source: user_code.Source, input_shape, num_classes: int) -> keras.Model:
    if source.kind == "keras":
        return keras.models.load_model(source.path, compile=False)
    _, function = user_code.user_function(source)
    model = function(tuple(input_shape), num_classes)
    if not isinstance(model, keras.Model):
        raise ValueError(f"model: {source.path}:{source.function} returned "
                         f"{type(model).__name__}, not a keras.Model")
    if not model.built or not model.variables:
        build_lazily(model, input_shape)
    return model


def build_lazily(model: keras.Model, input_shape) -> None:
    """Create the variables of a model that builds on its first call (a subclassed
    `keras.Model` given no input shape) by calling it on one zero example (1, *input_shape)
    float32, in inference mode, so that the optimizer is built on them. Raises
    `ValueError` naming the model when it still has no trainable variables."""
    model(np.zeros((1, *input_shape), dtype=np.float32), training=False)
    if not model.trainable_variables:
        raise ValueError(f"model: {model.name} has no trainable variables after a call on one "
                         f"example of shape {tuple(input_shape)}; create its layers in "
                         f"__init__ or build()")


def user_loss(name: str):
    """The `loss` a model module defines (a Keras loss object or function), else None."""
    if ".py:" not in name:
        return None
    module = user_code.import_module(user_code.parse("model", name).path)
    return getattr(module, "loss", None)


def user_metrics(name: str) -> list:
    """The `metrics` a model module defines (Keras metric objects or names), else []."""
    if ".py:" not in name:
        return []
    module = user_code.import_module(user_code.parse("model", name).path)
    return list(getattr(module, "metrics", None) or [])


def per_example_loss(model_name: str, task: str):
    """`f(y, outputs)` → per-example loss (batch,) float32: the module's own `loss` when it
    defines one, else softmax cross-entropy on logits (classification) or mean squared error
    over the k outputs (regression)."""
    loss = user_loss(model_name)
    if loss is None:
        if task == "regression":
            return lambda y, outputs: tf.reduce_mean(tf.square(outputs - y), axis=-1)
        return lambda y, logits: tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits)
    if isinstance(loss, str):
        try:
            loss = keras.losses.get(loss)
        except ValueError as exc:  # the user-code check names the module's `loss` line
            exc.module_attribute = "loss"
            raise
    if isinstance(loss, keras.losses.Loss):
        return loss.call  # unreduced: one value per example
    return loss


def loss_and_accuracy(logits: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """Mean softmax cross-entropy and accuracy (a fraction) of `logits` (n, classes) against
    integer `labels` (n,), computed in float64 numpy."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = float(-log_probs[np.arange(len(labels)), labels].mean())
    accuracy = float((logits.argmax(axis=1) == labels).mean())
    return loss, accuracy


def evaluate_outputs(outputs: np.ndarray, y: np.ndarray, task: str, loss=None
                     ) -> tuple[float, float | None]:
    """Validation (loss, accuracy) of `outputs` against `y`. Built-in losses are computed in
    float64 numpy (softmax cross-entropy, or mean squared error for regression, whose accuracy
    is None); `loss` (a per-example loss from `per_example_loss` for a module's own) is used
    when given."""
    if loss is not None:
        value = float(np.mean(np.asarray(loss(tf.constant(y), tf.constant(outputs)))))
        accuracy = (None if task == "regression"
                    else float((outputs.argmax(axis=1) == y).mean()))
        return value, accuracy
    if task == "regression":
        error = outputs.astype(np.float64) - y.astype(np.float64)
        return float(np.mean(np.square(error))), None
    return loss_and_accuracy(outputs, y)


def resolve_metrics(metrics: list, task: str) -> list:
    """A model module's `metrics` with names made Keras objects or functions, as `compile()`
    would: "accuracy" / "acc" of a classification is `SparseCategoricalAccuracy` (integer
    labels against logits; `keras.metrics.get` gives the plain `Accuracy`, which compares
    (n,) labels with (n, classes) outputs and failed at the first checkpoint), other names
    through `keras.metrics.get`. Raises `ValueError` naming the metric, marked with
    `module_attribute` "metrics" (the user-code check names that line)."""
    resolved = []
    for metric in metrics:
        if isinstance(metric, str) and metric in ("accuracy", "acc") and \
                task == "classification":
            metric = keras.metrics.SparseCategoricalAccuracy(name=metric)
        elif isinstance(metric, str):
            try:
                metric = keras.metrics.get(metric)
            except ValueError as exc:
                exc.module_attribute = "metrics"
                raise
        resolved.append(metric)
    return resolved


def evaluate_metrics(metrics: list, outputs: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """{name: value} of a model module's `metrics` (`resolve_metrics`) on (outputs, y): Keras
    metric objects are reset and updated once, functions are averaged."""
    values = {}
    for metric in metrics:
        y_true, y_pred = tf.constant(y), tf.constant(outputs)
        if isinstance(metric, keras.metrics.Metric):
            metric.reset_state()
            metric.update_state(y_true, y_pred)
            values[metric.name] = float(metric.result())
        else:
            values[getattr(metric, "__name__", str(metric))] = float(
                np.mean(np.asarray(metric(y_true, y_pred))))
    return values


def checkpointed_state(model: keras.Model) -> dict:
    """Extra objects a `tf.train.Checkpoint` of `model` must hold for exact resume, which
    `tf.train.Checkpoint(model=…)` does not reach in Keras 3.15: the states of its Keras seed
    generators (a seeded `Dropout`'s; only `model.variables` lists them) and the plain
    `tf.Variable`s a layer keeps in a list, tuple or dict attribute (Keras wraps those in its
    own tracked containers, which TensorFlow's object graph does not follow). {} when there are
    none, so the built-in models' checkpoints keep their structure."""
    states = [generator.state for layer in model._flatten_layers()
              for generator in getattr(layer, "_seed_generators", [])]
    held = _held_variables(model)
    return {**({"seed_states": states} if states else {}),
            **({"layer_variables": held} if held else {})}


def _held_variables(model: keras.Model) -> list:
    """The variables of Keras metrics the model's layers keep (`metrics_variables`: a
    `keras.metrics.Sum` counting steps) and the plain `tf.Variable`s in the list, tuple or dict
    attributes of its layers, that neither the model's object graph nor `model.variables`
    reaches; in layer order and attribute order, each once."""
    from ftgui.training.state_variables import graph_variables

    seen = {id(v) for v in (*graph_variables(model), *model.variables)}
    found = [v for v in model.metrics_variables if id(v) not in seen]
    seen.update(id(v) for v in found)
    for layer in model._flatten_layers():
        for name, value in list(vars(layer).items()):
            if name.startswith("_self_"):  # TensorFlow's own tracking of the graph's children
                continue
            if isinstance(value, dict):
                items = list(value.values())
            elif isinstance(value, (list, tuple)):
                items = list(value)
            else:
                continue
            for item in items:
                if isinstance(item, tf.Variable) and id(item) not in seen:
                    seen.add(id(item))
                    found.append(item)
    return found
