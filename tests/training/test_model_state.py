"""All of a user's model state saved and every loss term counted (issue 25): a layer's plain
`tf.Variable` counter resumes exactly from disk and from memory, `model.losses` are part of
the training loss, a lazily built model trains, and the refusals name their cause."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from conftest import made_once
from recorded import losses_and_validations

from ftgui import cli
from ftgui.core.record import events
from ftgui.core.settings import config as configmod
from ftgui.training.helpers.check_user_code import cause_line

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"
SHORT = ["--steps", "50", "--checkpoint-every", "10", "--quiet"]
KILLED = ["--kill-at-step", "35", "--auto-recover", "--restart-backoff", "0"]
RUNS = {
    "warmup_counter": ["--model", f"{EXAMPLES}/warmup_counter.py:build"],
    "regularized": ["--model", f"{EXAMPLES}/regularized.py:build"],
}


# ---------------------------------------------------------------- the one line (no TensorFlow)
def test_the_one_line_gives_the_cause_of_a_traced_error_and_of_a_failed_deserialization():
    traced = TypeError("in user code:\n\n    File \"/x/step.py\", line 57, in None  *\n"
                       "        lambda x, y: f(x, y)\n\n    TypeError: Tensors in list passed to "
                       "'values' of 'ConcatV2' Op have types [float32, float16] that don't "
                       "all match.\n")
    assert cause_line(traced) == ("Tensors in list passed to 'values' of 'ConcatV2' Op have "
                                  "types [float32, float16] that don't all match.")
    inner = TypeError("in user code:\n\n    File \"/x/a.py\", line 3\n\n"
                      "    ValueError: the optimizer has 0 variables\n")
    assert cause_line(inner) == "ValueError: the optimizer has 0 variables"
    keras_message = TypeError(
        "<class 'Functional'> could not be deserialized properly. Please ensure that ...\n\n"
        "config={'a': 1}.\n\nException encountered: Could not locate class 'GaussNoise'. Make "
        "sure custom classes are decorated. If they are, import them. Full object config: {}")
    assert cause_line(keras_message) == ("Could not locate class 'GaussNoise'. Make sure "
                                         "custom classes are decorated.")
    # an unseeded keras.random op in call(): Keras' wrapper line, its (bold) cause, and what to
    # do (a breaker saw only "Exception encountered when calling Jitter.call().")
    unseeded = ValueError(
        "in user code:\n\n    File \"/x/step.py\", line 57\n\n    ValueError: Exception "
        "encountered when calling Jitter.call().\n    \n    \x1b[1mtf.function only supports "
        "singleton tf.Variables created on the first call. Make sure the tf.Variable is only "
        "created once.\x1b[0m\n    \n    Arguments received by Jitter.call():\n      • x=t\n")
    assert cause_line(unseeded) == (
        "Jitter.call(): tf.function only supports singleton tf.Variables created on the first "
        "call (a keras.random op without a seed, or a tf.Variable made in call(), makes a new "
        "variable at every step: give the op seed=keras.random.SeedGenerator(N) made in "
        "__init__, or make the variable there)")
    assert cause_line(ValueError("Exception encountered when calling Foo.call().\n\nbad shape "
                                 "(3,). More.\n\nArguments received by Foo.call():")) == (
        "Foo.call(): bad shape (3,)")
    assert cause_line(ValueError("first line\nsecond")) == "first line"
    assert cause_line(ValueError()) == "ValueError"
    # Keras' "could not infer the output shape … Error encountered:": the cause after it
    # (a breaker saw "Bad.call(): Could not automatically infer …", not the dtype clash)
    assert cause_line(TypeError(
        "Exception encountered when calling Bad.call().\n\n\x1b[1mCould not automatically "
        "infer the output shape / dtype of 'bad' (of type Bad). Either the `Bad.call()` method "
        "is incorrect, or you need to implement it. Error encountered:\n\nTensors in list "
        "passed to 'values' of 'ConcatV2' Op have types [float32, float16] that don't all "
        "match.\x1b[0m\n\nArguments received by Bad.call():\n  • args=()")) == (
        "Bad.call(): Tensors in list passed to 'values' of 'ConcatV2' Op have types "
        "[float32, float16] that don't all match")


def _raised(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001 (the refusal's input)
        return exc
    raise AssertionError("nothing raised")


def test_a_refusal_names_the_users_line_in_a_module_of_theirs_or_the_failing_stage(
        tmp_path, monkeypatch):
    """Breakers' refusals that named the wrong file or line: a dataset's error blamed on
    the model file, an error in the user's own module named at its call site, `build =
    make` at line 0, and a bad `loss` at the build function's line."""
    import importlib.util

    from ftgui.core.settings.config import RunConfig
    from ftgui.training.helpers.check_user_code import Refusal, _stage, one_line

    monkeypatch.chdir(tmp_path)
    (tmp_path / "loaders.py").write_text("def load():\n    with open('/no/such.npz') as f:\n"
                                         "        return f\n")
    data = tmp_path / "data.py"
    data.write_text("from loaders import load  # noqa: F401\n")
    model = tmp_path / "net.py"
    model.write_text("import keras\n\n\nloss: str = 'no_such_loss'\n\n\ndef make(shape, n):\n"
                     "    pass\n\n\nclass Gain(keras.layers.Layer):\n    def build(self, shape):\n"
                     "        pass\n\n\nbuild = make\n")
    config = RunConfig(model=f"{model}:build", dataset=f"{data}:load")
    spec = importlib.util.spec_from_file_location("loaders", tmp_path / "loaders.py")
    loaders = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaders)
    missing = _raised(lambda: _stage("dataset", config.dataset, loaders.load))
    assert one_line(missing, config) == (
        f"{tmp_path / 'loaders.py'}:2: FileNotFoundError: [Errno 2] No such file or "
        f"directory: '/no/such.npz'")

    def not_the_users():  # raised in no file of the user's, in the dataset stage
        raise OSError("/no/such.csv not found.")

    failed = _raised(lambda: _stage("dataset", config.dataset, not_the_users))
    assert one_line(failed, config) == f"{data}: OSError: /no/such.csv not found."
    data.write_text("import functools\n\nimport numpy as np\n\n"
                    "load = functools.partial(np.loadtxt, '/no/such.csv')\n")
    assert one_line(failed, config) == f"{data}:5: OSError: /no/such.csv not found."
    # `build = make`: the line of `def make`, not a layer's `def build` (a breaker's model);
    # the model stage's error, no frame of the user's
    shapeless = _raised(lambda: _stage("model", config.model, lambda: (_ for _ in ()).throw(
        RuntimeError("Functional.call(): as_list() is not defined on an unknown TensorShape"))))
    assert one_line(shapeless, config).startswith(
        f"{model}:7: RuntimeError: Functional.call(): as_list() is not defined on an unknown "
        f"TensorShape (a layer's output has no static shape")

    def bad_loss():
        error = ValueError("Could not interpret loss identifier: no_such_loss")
        error.module_attribute = "loss"  # as `models.per_example_loss` marks it
        raise error

    refused = _raised(lambda: _stage("model", config.model, bad_loss))
    assert isinstance(refused, Refusal) and one_line(refused, config) == (
        f"{model}:4: Could not interpret loss identifier: no_such_loss")


# ---------------------------------------------------------------- exact resume of the examples
@pytest.fixture(scope="module")
def never_killed(tmp_path_factory):
    """(example, strategy) -> ({step: loss}, {step: (val_loss, val_accuracy)}) of a run never
    killed, validated every 5 steps (every step a killed run validates at; the checkpoint
    interval changes no value). Each trained once per session, whichever xdist worker asks
    first (`made_once`)."""
    cache: dict = {}

    def train(example: str, strategy: str, folder: Path) -> None:
        assert cli.main(["train", str(folder / "run"), *RUNS[example], "--strategy", strategy,
                         *SHORT, "--checkpoint-every", "5"]) == 0

    def run(example: str, strategy: str):
        if (example, strategy) not in cache:
            run_dir = made_once(tmp_path_factory, f"never-killed-{example}-{strategy}",
                                functools.partial(train, example, strategy)) / "run"
            steps, validations = losses_and_validations(events.read_all(run_dir))
            cache[example, strategy] = ({s: v for (_, s), v in steps.items()},
                                        {s: v for (_, s), v in validations.items()})
        return cache[example, strategy]
    return run


@pytest.mark.tf
@pytest.mark.parametrize("example, strategy, snapshot_every, source, from_step", [
    ("warmup_counter", "mirrored", 0, "disk", 30),
    ("warmup_counter", "mirrored", 5, "memory", 35),
    ("warmup_counter", "default", 0, "disk", 30),
    ("warmup_counter", "default", 5, "memory", 35),
    ("regularized", "mirrored", 0, "disk", 30),
    ("regularized", "mirrored", 5, "memory", 35),
])
def test_an_example_with_its_own_state_killed_at_35_resumes_equal_to_the_bit(
        example, strategy, snapshot_every, source, from_step, tmp_path, never_killed):
    """Every step loss and validation value of every attempt equals the run never killed:
    the warm-up counter (a plain tf.Variable, not in `model.variables`) comes back as it was
    at the restored step, from the checkpoint files and from the in-memory snapshot."""
    reference_steps, reference_validations = never_killed(example, strategy)
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), *RUNS[example], "--strategy", strategy, *SHORT,
                     "--snapshot-every", str(snapshot_every), *KILLED]) == 0
    seen = events.read_all(run_dir)
    [resumed] = [e for e in seen if e["event"] == "resumed"]
    assert (resumed["source"], resumed["from_step"]) == (source, from_step)
    steps, validations = losses_and_validations(seen)
    assert sorted(s for a, s in steps if a == 0) == list(range(1, 36))
    assert sorted(s for a, s in steps if a == 1) == list(range(from_step + 1, 51))
    assert {key: loss for key, loss in steps.items()} == {
        (a, s): reference_steps[s] for a, s in steps}
    assert {(a, s) for a, s in validations} >= {(0, 10), (0, 20), (0, 30), (1, 40), (1, 50)}
    assert validations == {(a, s): reference_validations[s] for a, s in validations}
    assert configmod.load_record(run_dir)["exact_resume"] is True


# ---------------------------------------------------------------- regularization losses
CONSTANT_PENALTY = """
import keras
from keras import layers


class Penalty(layers.Layer):
    def call(self, x):
        self.add_loss(keras.ops.convert_to_tensor(5.0))
        return x


def build(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = layers.Dense(32, activation="relu"{regularizer})(layers.Flatten()(inputs))
    x = {penalty}
    return keras.Model(inputs, layers.Dense(num_classes{regularizer})(x))
"""


def _model_file(directory: Path, name: str, regularizer: str = "", penalty: bool = False):
    path = directory / f"{name}.py"
    path.write_text(CONSTANT_PENALTY.format(
        regularizer=regularizer, penalty="Penalty()(x)" if penalty else "x"))
    return f"{path}:build"


def _losses(run_dir: Path, model: str, strategy: str = "default") -> dict[int, float]:
    assert cli.main(["train", str(run_dir), "--model", model, "--strategy", strategy,
                     "--steps", "6", "--checkpoint-every", "6", "--quiet"]) == 0
    return events.final_losses(events.read_all(run_dir))


@pytest.mark.tf
def test_regularization_losses_are_part_of_the_training_loss(tmp_path):
    """An `add_loss` of 5 (no gradient) adds exactly 5 to every step's loss, in float32; a
    strong L2 kernel regularizer trains another loss than the same model without it."""
    import numpy as np

    plain = _losses(tmp_path / "plain", _model_file(tmp_path, "plain"))
    penalty = _losses(tmp_path / "penalty", _model_file(tmp_path, "penalty", penalty=True))
    assert penalty == {s: float(np.float32(plain[s]) + np.float32(5.0)) for s in plain}
    l2 = _losses(tmp_path / "l2", _model_file(
        tmp_path, "l2", regularizer=", kernel_regularizer=keras.regularizers.l2(1.0)"))
    assert l2[1] > plain[1] + 10  # the initial kernels' squares, tens for these layers
    assert all(l2[s] != plain[s] for s in plain)


@pytest.mark.tf
def test_under_two_replicas_the_penalty_is_counted_once(tmp_path):
    """Each replica adds its share (`scale_regularization_loss`): 2 replicas log plain + 5."""
    plain = _losses(tmp_path / "plain", _model_file(tmp_path, "plain"), "mirrored")
    penalty = _losses(tmp_path / "penalty", _model_file(tmp_path, "penalty", penalty=True),
                      "mirrored")
    assert all(abs(penalty[s] - plain[s] - 5.0) < 1e-5 for s in plain)


# ---------------------------------------------------------------- the check
GLOBAL_COUNTER = """
import keras
import tensorflow as tf
from keras import layers

COUNTER = tf.Variable(0.0, trainable=False, name="module_counter")


class Warm(layers.Layer):
    def call(self, x, training=False):
        if training:
            COUNTER.assign_add(1.0)
        return x * tf.minimum(1.0, (COUNTER + 1.0) / 50.0)


def build(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = Warm()(layers.Dense(16, activation="relu")(layers.Flatten()(inputs)))
    return keras.Model(inputs, layers.Dense(num_classes)(x))
"""

LAZY = """
import keras
from keras import layers


class Lazy(keras.Model):
    def __init__(self, num_classes):
        super().__init__()
        self.flatten = layers.Flatten()
        self.hidden = layers.Dense(32, activation="relu")
        self.out = layers.Dense(num_classes)

    def call(self, x, training=False):
        return self.out(self.hidden(self.flatten(x)))


def build(input_shape, num_classes):
    return Lazy(num_classes)
"""

HALF = """
import keras
from keras import layers


def build(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = layers.Dense(32, activation="relu", dtype="float16")(layers.Flatten()(inputs))
    return keras.Model(inputs, layers.Dense(num_classes, dtype="float32")(x))
"""


@pytest.mark.tf
def test_a_variable_outside_the_object_graph_is_named_and_exact_resume_not_promised(
        tmp_path, capsys):
    model = tmp_path / "global_counter.py"
    model.write_text(GLOBAL_COUNTER)
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--model", f"{model}:build", "--steps", "2",
                     "--checkpoint-every", "2"]) == 0
    record = configmod.load_record(run_dir)
    assert record["exact_resume"] is False
    assert record["determinism_reason"] == (
        "the training step uses variables that no checkpoint or snapshot holds (outside the "
        "model's and optimizer's object graph): module_counter")
    assert "exact resume is not guaranteed" in capsys.readouterr().out


GENERATOR_NOISE = """
import keras
import tensorflow as tf


class GenNoise(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.generator = tf.random.Generator.from_seed(7)

    def call(self, x, training=False):
        return x + 0.01 * self.generator.normal(tf.shape(x)) if training else x


def build(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = GenNoise(name="gen_noise")(keras.layers.Flatten()(inputs))
    x = keras.layers.Dense(16, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(num_classes)(x))
"""


@pytest.mark.tf
def test_a_random_generator_in_a_layer_under_mirrored_is_saved_and_resumes_exactly(tmp_path):
    """A `tf.random.Generator` a layer keeps is a mirrored variable under `mirrored`, which
    the traced step names whole, not by replica: the check no longer calls it unsaved
    (a breaker's false alarm, 'StateVar', while the resume was exact), and it is exact."""
    model = tmp_path / "generator_noise.py"
    model.write_text(GENERATOR_NOISE)
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--model", f"{model}:build", "--strategy",
                     "mirrored", "--steps", "8", "--checkpoint-every", "4", "--snapshot-every",
                     "0", "--kill-at-step", "6", "--auto-recover", "--restart-backoff", "0",
                     "--quiet"]) == 0
    record = configmod.load_record(run_dir)
    assert (record["exact_resume"], record["determinism_reason"]) == (True, "")
    seen = events.read_all(run_dir)
    by_attempt = [{e["step"]: e["loss"] for e in seen
                   if e["event"] == "step" and e["attempt"] == attempt} for attempt in (0, 1)]
    assert [by_attempt[1][s] for s in (5, 6)] == [by_attempt[0][s] for s in (5, 6)]


@pytest.mark.tf
def test_a_lazily_built_subclassed_model_trains_and_resumes_exactly(tmp_path):
    model = tmp_path / "lazy.py"
    model.write_text(LAZY)
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--model", f"{model}:build", "--steps", "4",
                     "--checkpoint-every", "2", "--quiet"]) == 0
    assert sorted(events.final_losses(events.read_all(run_dir))) == [1, 2, 3, 4]
    assert configmod.load_record(run_dir)["exact_resume"] is True


@pytest.mark.tf
def test_a_float16_layer_under_mirrored_is_refused_with_its_cause(tmp_path, capsys):
    model = tmp_path / "half.py"
    model.write_text(HALF)
    assert cli.main(["train", str(tmp_path / "run"), "--model", f"{model}:build",
                     "--strategy", "mirrored", "--steps", "2"]) != 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    # no frame of the file's in the traced step's error: the build function's line
    assert re.fullmatch(
        rf"ftgui: {re.escape(str(model))}:6: TypeError: Tensors in list passed to 'values' of "
        r"'ConcatV2' Op have types \[[a-z0-9, ]*float16[a-z0-9, ]*\] that don't all match\.",
        line), line


@pytest.mark.tf
def test_a_saved_model_with_a_custom_layer_is_refused_naming_the_class(tmp_path, capsys):
    import keras
    from keras import layers

    class GaussNoise(layers.Layer):
        def call(self, x, training=False):
            return x

    inputs = keras.Input(shape=(8, 8))
    x = GaussNoise()(layers.Flatten()(inputs))
    keras.Model(inputs, layers.Dense(10)(x)).save(tmp_path / "noise.keras")
    assert cli.main(["train", str(tmp_path / "run"), "--model", str(tmp_path / "noise.keras"),
                     "--steps", "2"]) != 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line == (f"ftgui: {tmp_path / 'noise.keras'}: TypeError: Could not locate class "
                    "'GaussNoise'. Make sure custom classes and functions are decorated with "
                    "`@keras.saving.register_keras_serializable()`.")


@pytest.mark.tf
def test_the_check_finds_a_save_that_misses_a_variable(monkeypatch):
    """The probe steps, saves, restores and steps again: a snapshot that copied only
    `model.variables` (the bug of issue 25) is caught and named."""
    import tensorflow as tf

    from ftgui.core.settings.config import RunConfig
    from ftgui.training import data as datamod
    from ftgui.training import resume_probe
    from ftgui.training.actions import snapshot
    from ftgui.training.step import TrainState

    tf.keras.utils.set_random_seed(0)
    config = RunConfig(strategy="default", model=f"{EXAMPLES}/warmup_counter.py:build")
    dataset = datamod.load(config.dataset, config.task)
    state = TrainState(tf.distribute.get_strategy(), config, dataset)
    assert resume_probe.probe(state, dataset, config) == ("", False)
    monkeypatch.setattr(snapshot, "state_variables", lambda s: [
        *s.model.variables, *s.optimizer.variables, s.step])
    assert resume_probe.probe(state, dataset, config) == (
        "a restore from the in-memory snapshot does not bring back warmup/warmup_steps: "
        "that save misses them", False)


MIXED_STATE = """
import keras
import tensorflow as tf
from keras import layers


class Counters(layers.Layer):
    def build(self, input_shape):
        self.seen = tf.Variable(False, trainable=False)
        self.small = tf.Variable(0, dtype=tf.int8, trainable=False)
        self.big = tf.Variable(0, dtype=tf.int64, trainable=False)

    def call(self, x, training=False):
        if training:
            self.seen.assign(True)
            self.small.assign_add(1)
            self.big.assign_add(3)
        return x * tf.cast(self.small, x.dtype)


def build(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = Counters(name="counters")(layers.Dense(8)(layers.Flatten()(inputs)))
    return keras.Model(inputs, layers.Dense(num_classes)(x))
"""


@pytest.mark.tf
def test_bool_int8_and_int64_variables_of_a_layer_are_snapshotted_and_restored(tmp_path):
    import numpy as np
    import tensorflow as tf

    from ftgui.core.settings.config import RunConfig
    from ftgui.training import data as datamod
    from ftgui.training import resume_probe
    from ftgui.training.actions.snapshot import StateBytes
    from ftgui.training.step import TrainState

    model = tmp_path / "mixed.py"
    model.write_text(MIXED_STATE)
    tf.keras.utils.set_random_seed(0)
    config = RunConfig(strategy="default", model=f"{model}:build")
    dataset = datamod.load(config.dataset, config.task)
    state = TrainState(tf.distribute.get_strategy(), config, dataset)
    assert resume_probe.probe(state, dataset, config) == ("", False)
    layer = state.model.get_layer("counters")
    snapshot = StateBytes(state)
    payload = snapshot.read()
    held = (bool(layer.seen.numpy()), int(layer.small.numpy()), int(layer.big.numpy()))
    assert held == (True, 2, 6)  # after steps 1 and 2 (the probe restores before each 2)
    layer.seen.assign(False), layer.small.assign(-7), layer.big.assign(2 ** 40)
    snapshot.load(payload)
    assert (bool(layer.seen.numpy()), int(layer.small.numpy()), int(layer.big.numpy())) == held
    assert np.array_equal(snapshot.read(), payload)


HELD = """
import types
import keras
import tensorflow as tf
from keras import layers


class Holder(layers.Layer):
    def build(self, input_shape):
        self.in_list = [tf.Variable(0.0, trainable=False, name="in_list")]
        self.in_dict = {"c": tf.Variable(0.0, trainable=False, name="in_dict")}
        self.elsewhere = types.SimpleNamespace(c=tf.Variable(0.0, trainable=False,
                                                             name="in_namespace"))

    def call(self, x, training=False):
        counters = [self.in_list[0], self.in_dict["c"]{namespace}]
        if training:
            for counter in counters:
                counter.assign_add(1.0)
        return x * tf.minimum(1.0, (tf.add_n(counters) + 1.0) / 50.0)


def build(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = Holder(name="holder")(layers.Dense(8)(layers.Flatten()(inputs)))
    return keras.Model(inputs, layers.Dense(num_classes)(x))
"""


@pytest.mark.tf
def test_variables_a_layer_keeps_in_a_list_or_dict_are_saved_and_one_elsewhere_is_named(
        tmp_path):
    """Keras wraps a layer's list and dict attributes in containers TensorFlow's checkpoint
    does not follow: ftgui adds their variables to the checkpoint (the probe's save, restore
    and step is exact); a variable in any other object is named."""
    import tensorflow as tf

    from ftgui.core.settings.config import RunConfig
    from ftgui.training import data as datamod
    from ftgui.training import resume_probe
    from ftgui.training.state_variables import name_of, state_variables
    from ftgui.training.step import TrainState

    answers = []
    for namespace in ("", ", self.elsewhere.c"):
        model = tmp_path / f"held{len(answers)}.py"
        model.write_text(HELD.replace("{namespace}", namespace))
        tf.keras.utils.set_random_seed(0)
        config = RunConfig(strategy="default", model=f"{model}:build")
        dataset = datamod.load(config.dataset, config.task)
        state = TrainState(tf.distribute.get_strategy(), config, dataset)
        assert {"holder/in_list", "holder/in_dict"} <= {name_of(v)
                                                        for v in state_variables(state)}
        answers.append(resume_probe.probe(state, dataset, config))
    assert answers == [("", False), (
        "the training step uses variables that no checkpoint or snapshot holds (outside the "
        "model's and optimizer's object graph): holder/in_namespace", False)]


METRIC_IN_A_LAYER = """
import keras
import tensorflow as tf
from keras import layers


class Tracked(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen = keras.metrics.Sum(name="seen")

    def call(self, x, training=False):
        if training:
            self.seen.update_state(1.0)
        return x * tf.minimum(1.0, (self.seen.result() + 1.0) / 50.0)


def build(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = Tracked(name="tracked")(layers.Dense(8)(layers.Flatten()(inputs)))
    return keras.Model(inputs, layers.Dense(num_classes)(x))
"""


@pytest.mark.tf
def test_a_keras_metric_a_layer_updates_in_training_is_saved(tmp_path):
    """A `keras.metrics.Sum` kept by a layer is in neither `model.variables` nor TensorFlow's
    object graph of the model; ftgui saves it (the probe is exact, the variable is listed)."""
    import tensorflow as tf

    from ftgui.core.settings.config import RunConfig
    from ftgui.training import data as datamod
    from ftgui.training import resume_probe
    from ftgui.training.state_variables import name_of, state_variables
    from ftgui.training.step import TrainState

    model = tmp_path / "metric_layer.py"
    model.write_text(METRIC_IN_A_LAYER)
    tf.keras.utils.set_random_seed(0)
    config = RunConfig(strategy="default", model=f"{model}:build")
    dataset = datamod.load(config.dataset, config.task)
    state = TrainState(tf.distribute.get_strategy(), config, dataset)
    assert "seen/total" in [name_of(v) for v in state_variables(state)]
    assert resume_probe.probe(state, dataset, config) == ("", False)


@pytest.mark.tf  # background_save imports TensorFlow
def test_a_model_built_differently_the_second_time_is_told_by_its_first_differing_variable():
    """The background save builds the model a second time; a build() that draws its width
    from an unseeded generator made another one, refused as 'the variables do not match the
    model's' (a breaker's finding). Now the first differing variable is named."""
    from types import SimpleNamespace

    from ftgui.training.background_save import _first_difference

    def var(path, shape, dtype="float32"):
        return SimpleNamespace(path=path, name=path, shape=shape, dtype=dtype)

    first = [var("dense/kernel", (64, 16)), var("dense/bias", (16,))]
    assert _first_difference(first, list(first)) == ""
    assert _first_difference(first, [var("dense/kernel", (64, 17)), var("dense/bias", (17,))]) \
        == "variable 1 dense/kernel (64, 16) float32, then dense/kernel (64, 17) float32"
    assert _first_difference(first, first[:1]) == "2 variables, then 1"


@pytest.mark.tf
def test_a_modules_metric_names_resolve_as_compile_would_or_name_the_line(tmp_path):
    """`metrics = ["accuracy"]` passed the check, then failed the run's first checkpoint: the
    plain `Accuracy` compared (n,) labels with (n, classes) logits. A bogus name was no
    refusal; now it names the `metrics` line (a breaker's models)."""
    import numpy as np

    from ftgui.core.settings.config import RunConfig
    from ftgui.training import models
    from ftgui.training.helpers.check_user_code import Refusal, _stage, one_line

    logits = np.array([[2.0, 0.0, 0.0], [0.0, 1.0, 3.0], [0.0, 5.0, 1.0], [1.0, 0.0, 0.0]],
                      dtype=np.float32)
    labels = np.array([0, 2, 0, 1])
    resolved = models.resolve_metrics(["accuracy", "mean_absolute_error"], "classification")
    values = models.evaluate_metrics(resolved[:1], logits, labels)
    assert values == {"accuracy": models.loss_and_accuracy(logits, labels)[1]} == {
        "accuracy": 0.5}
    model = tmp_path / "net.py"
    model.write_text("import keras\n\nmetrics = ['bogus_metric']\n\n\n"
                     "def build(input_shape, num_classes):\n    pass\n")
    config = RunConfig(model=f"{model}:build")
    with pytest.raises(Refusal) as refused:
        _stage("model", config.model,
               lambda: models.resolve_metrics(["bogus_metric"], "classification"))
    assert one_line(refused.value, config) == (
        f"{model}:3: Could not interpret metric identifier: bogus_metric")
