"""Your own model and data: the sources a run names, what is recorded, the check in a helper
process (its refusals name the file and line), and exact recovery of the examples."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from ftgui import cli
from ftgui.core.checkpoints import listing
from ftgui.core.record import events
from ftgui.core.settings import config as configmod
from ftgui.core.settings import user_code
from ftgui.core.settings.config import ConfigError, RunConfig

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"
SHORT = ["--steps", "60", "--checkpoint-every", "10", "--snapshot-every", "0"]  # from disk
KILLED = [*SHORT, "--kill-at-step", "35", "--auto-recover", "--restart-backoff", "0"]


# ---------------------------------------------------------------- sources (no TensorFlow)
def test_a_source_names_a_builtin_or_an_existing_file_with_a_function(tmp_path):
    module = tmp_path / "net.py"
    module.write_text("def build(s, n): pass\n")
    parsed = user_code.parse("model", f"{module}:build")
    assert (parsed.kind, parsed.path, parsed.function) == ("python", module, "build")
    assert user_code.parse("model", "cnn").kind == "builtin"
    with pytest.raises(ConfigError, match=r"^model: '2build' in .* is not a Python function"):
        user_code.parse("model", f"{module}:2build")
    with pytest.raises(ConfigError, match=r"^model: .* names no function; use .*net.py:FUNCTION"):
        user_code.parse("model", str(module))
    with pytest.raises(ConfigError, match=r"^dataset: file .*gone.py' does not exist"):
        user_code.parse("dataset", f"{tmp_path / 'gone.py'}:load")
    with pytest.raises(ConfigError, match=r"^model: 'vgg' is not one of mlp, cnn, resnet"):
        RunConfig(model="vgg").validate()


def test_a_misspelt_function_is_refused_at_once_with_the_closest_name(tmp_path, capsys):
    # it was refused after ~4 s of a helper importing TensorFlow, with no hint (a new user)
    model = tmp_path / "net.py"
    model.write_text("import keras\nfrom keras import layers as L\n\n"
                     "def build(input_shape, num_classes):\n    pass\n\n"
                     "try:\n    loader = make()\nexcept NameError:\n    pass\n")
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--model", f"{model}:biuld"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"ftgui: model (--model): {model} defines no function 'biuld'; did you mean 'build'?")
    assert not run_dir.exists()
    assert user_code.bound_names(model) == {"keras", "L", "build", "loader"}
    for name in ("build", "loader", "L"):  # bound somehow: the helper judges it
        assert user_code.parse("model", f"{model}:{name}").function == name
    starred = tmp_path / "star.py"
    starred.write_text("from mylib import *\n")  # binds names no reading can list
    assert user_code.parse("model", f"{starred}:build").function == "build"
    broken = tmp_path / "broken.py"
    broken.write_text("def build(:\n")  # the helper names the syntax error and its line
    assert user_code.parse("model", f"{broken}:build").function == "build"


def test_regression_needs_your_own_model_and_data():
    with pytest.raises(ConfigError, match=r"^task: regression needs your own model"):
        RunConfig(task="regression").validate()
    with pytest.raises(ConfigError, match=r"^task: 'ranking' is not one of classification"):
        RunConfig(task="ranking").validate()


def test_config_toml_names_files_absolutely_and_records_their_hashes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("net.py").write_text("def build(s, n): pass\n")
    config = RunConfig(model="net.py:build")
    configmod.save(tmp_path / "run", config, user_code.record(config, None))
    table = configmod.load_values(tmp_path / "run")
    assert table["model"] == f"{tmp_path / 'net.py'}:build"
    assert "user_code" not in table  # the record is no setting
    assert configmod.load(tmp_path / "run").model == f"{tmp_path / 'net.py'}:build"
    record = configmod.load_record(tmp_path / "run")
    assert record == {"model_source": str(tmp_path / "net.py"),
                      "model_sha256": user_code.sha256(tmp_path / "net.py")}
    configmod.save(tmp_path / "run", config.replace(steps=7))  # a later save keeps the record
    assert configmod.load_record(tmp_path / "run") == record


def test_a_resume_with_a_changed_model_file_is_refused(tmp_path):
    module = tmp_path / "net.py"
    module.write_text("def build(s, n): pass\n")
    config = RunConfig(model=f"{module}:build", strategy="default")
    meta = {"step": 30, **user_code.code_fingerprint(config)}
    assert user_code.resume_problem(config, meta) == ""
    module.write_text("def build(s, n): pass  # a comment is a change too\n")
    problem = user_code.resume_problem(config, meta)
    assert problem.startswith(f"model: {module} changed since checkpoint step 30 was saved")

    class Restore:
        step, meta = 30, {"step": 30, **user_code.code_fingerprint(RunConfig(
            model=f"{module}:build"))}
    module.write_text("def build(s, n): return 1\n")
    with pytest.raises(user_code.UserCodeError, match="changed since checkpoint step 30"):
        user_code.check_start(config, tmp_path / "run", Restore())
    assert not (tmp_path / "run").exists()


def test_a_resume_with_a_changed_module_the_model_imports_is_refused(tmp_path, monkeypatch):
    """The model file is unchanged, a helper module it imports is not (a breaker's finding:
    the resume trained a wider layer while `exact resume: promised` was printed). Its own
    modules are found beside the file or in the working directory, through one another, and
    recorded in config.toml and every checkpoint; installed packages are not."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    module = tmp_path / "models" / "net.py"
    module.write_text("import json\nimport numpy as np\nfrom layers import wide\n"
                      "import blocks.deep\ndef build(s, n): pass\n")
    (tmp_path / "models" / "layers.py").write_text("import sizes\nwide = 16\n")
    (tmp_path / "sizes.py").write_text("WIDTH = 16\n")  # in the working directory
    (tmp_path / "models" / "blocks").mkdir()
    (tmp_path / "models" / "blocks" / "__init__.py").write_text("")
    (tmp_path / "models" / "blocks" / "deep.py").write_text("DEPTH = 2\n")
    config = RunConfig(model=f"{module}:build", strategy="default")
    meta = {"step": 30, **user_code.code_fingerprint(config)}
    assert sorted(meta["model_modules"]) == ["blocks", "layers", "sizes"]
    configmod.save(tmp_path / "run", config, user_code.record(config, None))
    assert configmod.load_record(tmp_path / "run")["model_modules"] == meta["model_modules"]
    assert user_code.resume_problem(config, meta) == ""
    (tmp_path / "sizes.py").write_text("WIDTH = 17\n")
    assert user_code.resume_problem(config, meta) == (
        "model: module 'sizes' that net.py imports changed since checkpoint step 30 was saved; "
        "restore it or start a new run")
    (tmp_path / "sizes.py").write_text("WIDTH = 16\n")
    (tmp_path / "models" / "blocks" / "deep.py").write_text("DEPTH = 3\n")
    assert "module 'blocks' that net.py imports changed" in user_code.resume_problem(config, meta)
    (tmp_path / "models" / "blocks" / "deep.py").write_text("DEPTH = 2\n")
    (tmp_path / "models" / "layers.py").unlink()
    assert "module 'layers' that net.py imports is gone" in user_code.resume_problem(
        config, meta)
    # a checkpoint from before modules were recorded is compared by its file alone
    old = {k: v for k, v in meta.items() if k != "model_modules"}
    assert user_code.resume_problem(config, old) == ""


def test_every_module_of_a_long_chain_of_imports_is_recorded(tmp_path):
    """A walk capped at 200 modules left the 212th out, silently (a breaker's finding): a
    change there resumed on other code."""
    from ftgui.core.settings.local_imports import module_hashes

    (tmp_path / "net.py").write_text("import m000\n")
    for k in range(250):
        (tmp_path / f"m{k:03d}.py").write_text(f"import m{k + 1:03d}\n" if k < 249 else "W = 4\n")
    assert len(module_hashes(tmp_path / "net.py", cwd=tmp_path)) == 250


def test_a_folder_without_init_is_a_module_and_preloaded_names_are_not(tmp_path):
    """`from blocks.res import ACT` with `blocks/` lacking `__init__.py` (a namespace
    package, which Python imports) is the user's module; a `keras.py` or `numpy/` in the
    folder is not: every trainer has imported the installed ones before the user's code
    (a breaker's findings: the first went untracked, the second refused a resume over a file
    never imported)."""
    from ftgui.core.settings.local_imports import module_hashes
    (tmp_path / "blocks").mkdir()
    (tmp_path / "blocks" / "res.py").write_text("ACT = 'relu'\n")
    (tmp_path / "keras.py").write_text("raise ImportError\n")
    (tmp_path / "numpy").mkdir()
    (tmp_path / "numpy" / "__init__.py").write_text("raise ImportError\n")
    (tmp_path / "net.py").write_text("import keras\nimport numpy\nfrom blocks.res import ACT\n")
    hashes = module_hashes(tmp_path / "net.py", cwd=tmp_path)
    assert list(hashes) == ["blocks"]
    (tmp_path / "blocks" / "res.py").write_text("ACT = 'tanh'\n")
    assert module_hashes(tmp_path / "net.py", cwd=tmp_path)["blocks"] != hashes["blocks"]


def test_a_refusal_names_the_users_file_that_a_standard_module_hides(tmp_path, monkeypatch):
    """`import code` with the user's `code.py` beside the model: Python's `code` is imported
    (the standard library comes first), so a refusal says so (a breaker's finding: only
    "module 'code' has no attribute 'WIDTH'"). A standard-named file the model does not
    import is not named."""
    (tmp_path / "code.py").write_text("WIDTH = 16\n")
    (tmp_path / "random.py").write_text("")
    (tmp_path / "net.py").write_text("import code\nimport helpers\n\n\ndef build(): pass\n")
    monkeypatch.chdir(tmp_path)
    assert user_code._hidden_hint(RunConfig(model=f"{tmp_path / 'net.py'}:build")) == (
        f" (note: {tmp_path / 'code.py'} is not imported: Python's standard module of that "
        f"name comes first; rename it)")
    (tmp_path / "net.py").write_text("import helpers\n\n\ndef build(): pass\n")
    assert user_code._hidden_hint(RunConfig(model=f"{tmp_path / 'net.py'}:build")) == ""


def test_a_files_hash_is_read_once_until_the_file_changes(tmp_path, monkeypatch):
    import hashlib
    import os

    path = tmp_path / "data.npz"
    path.write_bytes(b"a" * 1000)
    reads = []
    real = hashlib.sha256
    monkeypatch.setattr(user_code.hashlib, "sha256", lambda: reads.append(1) or real())
    first = user_code.sha256(path)
    assert user_code.sha256(path) == first == real(b"a" * 1000).hexdigest()
    assert len(reads) == 1
    path.write_bytes(b"b" * 1000)  # the same size: the modification time tells
    os.utime(path, ns=(1, 2))
    assert user_code.sha256(path) == real(b"b" * 1000).hexdigest() and len(reads) == 2


# ---------------------------------------------------------------- passed checks are kept
FAKE_CHECK = """import json, sys
from pathlib import Path
calls = Path(sys.argv[0]).with_name("calls")
calls.write_text(calls.read_text() + "x" if calls.exists() else "x")
config = json.loads(sys.argv[-1])
if config["learning_rate"] == 0.5:
    print(json.dumps({"ok": False, "error": "model: refused by the stand-in"}))
    sys.exit(2)
print(json.dumps({"ok": True, "summary": {"name": "net"}, "deterministic": True,
                  "nondeterministic_ops": [], "reason": ""}))
"""


def test_a_passed_check_is_kept_until_a_setting_it_reads_or_a_file_changes(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv(user_code.CACHE_DIR_ENV, str(tmp_path / "cache"))
    helper = tmp_path / "fake" / "python"  # run as `python -m ... CONFIG`: counts its calls
    helper.parent.mkdir()
    helper.write_text(f"#!/bin/sh\nexec {sys.executable} {tmp_path / 'fake' / 'check.py'} "
                      '"$@"\n')
    helper.chmod(0o755)
    (tmp_path / "fake" / "check.py").write_text(FAKE_CHECK)
    module = tmp_path / "net.py"
    module.write_text("def build(s, n): pass\n")
    config = RunConfig(model=f"{module}:build", steps=60)

    def calls_after(cfg) -> int:
        user_code.check(cfg, tmp_path / "run", python=str(helper))
        return len((tmp_path / "fake" / "calls").read_text())

    assert calls_after(config) == 1
    assert user_code.cached(config, str(helper)).summary == {"name": "net"}
    # what the check does not read: the run's length, faults, recovery, the launcher
    assert calls_after(config.replace(steps=500, kill_at_step=35, auto_recover=True,
                                      launcher="slurm")) == 1
    assert calls_after(config.replace(learning_rate=0.02)) == 2  # a setting it reads
    module.write_text("def build(s, n): return None\n")
    assert calls_after(config) == 3  # the model file changed
    assert calls_after(config) == 3
    refused = config.replace(learning_rate=0.5)
    for expected in (4, 5):  # a refusal is never kept
        with pytest.raises(user_code.UserCodeError, match="refused by the stand-in"):
            calls_after(refused)
        assert len((tmp_path / "fake" / "calls").read_text()) == expected
    assert user_code.cached(refused, str(helper)) is None


# ---------------------------------------------------------------- the check's refusals
REFUSALS = {
    "syntax": ("bad.py", "import keras\n\ndef build(input_shape, num_classes)\n    return 1\n",
               "build", "digits", r"bad\.py:3: SyntaxError: expected ':'"),
    "raises": ("bad.py", "import keras\n\n\ndef build(input_shape, num_classes):\n"
               "    raise RuntimeError('no GPU here')\n", "build", "digits",
               r"bad\.py:5: RuntimeError: no GPU here"),
    "wrong_output": ("bad.py", "import keras\n\n\ndef build(input_shape, num_classes):\n"
                     "    inputs = keras.Input(shape=input_shape)\n"
                     "    x = keras.layers.Flatten()(inputs)\n"
                     "    return keras.Model(inputs, keras.layers.Dense(3)(x))\n",
                     "build", "digits",
                     r"bad\.py:4: model outputs float32 \(4, 3\) for 4 examples of shape \(8, 8\); "
                     r"the run needs "
                     r"logits \(batch, num_classes\) = \(4, 10\)"),
    "wrong_signature": ("sig.py", "import keras\n\n\ndef build(input_shape):\n"
                        "    return keras.Sequential([keras.layers.Dense(10)])\n",
                        "build", "digits",
                        r"sig\.py:4: build\(\) takes 1 positional argument but 2 were given "
                        r"\(ftgui calls build\(input_shape, num_classes\)\)"),
    "mismatched_lengths": ("data.py", "import numpy as np\n\n\ndef load():\n"
                           "    return np.zeros((100, 4), np.float32), np.zeros(99, np.int64)\n",
                           None, "load", r"data\.py:4: dataset: data\.py:load: x_train has 100 "
                           r"rows but y_train has 99"),
    # the error is in Keras' frames only (after the user's call returned): the function's line
    "unknown_shape": ("table.py", "import keras\nimport tensorflow as tf\n\n\n"
                      "class Lookup(keras.layers.Layer):\n"
                      "    def __init__(self):\n        super().__init__()\n"
                      "        self.table = tf.lookup.experimental.MutableHashTable(\n"
                      "            tf.int64, tf.float32, 0.0)\n\n"
                      "    def compute_output_shape(self, shape):\n        return shape\n\n"
                      "    def call(self, x):\n"
                      "        keys = tf.cast(tf.reduce_sum(x, axis=-1), tf.int64)\n"
                      "        return tf.expand_dims(self.table.lookup(keys), -1) + x\n\n\n"
                      "def build(input_shape, num_classes):\n"
                      "    inputs = keras.Input(input_shape)\n"
                      "    x = Lookup()(keras.layers.Dense(16)(keras.layers.Flatten()(inputs)))\n"
                      "    return keras.Model(inputs, keras.layers.Dense(num_classes)(x))\n",
                      "build", "digits",
                      r"table\.py:19: ValueError: Functional\.call\(\): as_list\(\) is not "
                      r"defined on an unknown TensorShape \(a layer's output has no static "
                      r"shape, as a lookup table's or a tf\.py_function's has: give it one with "
                      r"tf\.ensure_shape in call\(\)\)"),
}


@pytest.mark.tf
@pytest.mark.parametrize("case", list(REFUSALS))
def test_bad_user_code_is_refused_before_any_training_process(case, tmp_path, capsys):
    name, text, function, dataset, line = REFUSALS[case]
    (tmp_path / name).write_text(text)
    model = f"{tmp_path / name}:{function}" if function else "mlp"
    data = f"{tmp_path / name}:{dataset}" if dataset != "digits" else "digits"
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--model", model, "--dataset", data,
                     "--strategy", "default", "--steps", "5", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"ftgui: {tmp_path}/")
    assert _search(line, err[0])
    assert sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*")) == [
        "logs", "logs/check.log"]
    log = (run_dir / "logs" / "check.log").read_text()
    assert "Traceback (most recent call last)" in log and _search(line, log)


def _search(pattern: str, text: str) -> bool:
    import re

    return re.search(pattern, text) is not None


# ---------------------------------------------------------------- exact recovery of the examples
EXAMPLE_RUNS = {
    "cnn": ["--model", "digits_cnn.py:build", "--dataset", "digits_data.py:load"],
    "functional_dropout": ["--model", "functional_dropout.py:build",
                           "--dataset", "digits_data.py:load"],
    "regression": ["--task", "regression", "--model", "regression.py:build",
                   "--dataset", "regression.py:load"],
}


@pytest.mark.tf
@pytest.mark.parametrize("example", list(EXAMPLE_RUNS))
def test_an_example_killed_at_step_35_recovers_to_the_same_losses_to_the_bit(
        example, tmp_path, monkeypatch):
    """Every example redoes steps 31-35 with the losses it had, to the bit (the restored
    weights, optimizer slots, random state and data position are those of step 30); the CNN's
    whole curve also equals a run never killed (one reference run: each costs a TensorFlow
    start)."""
    monkeypatch.chdir(EXAMPLES)
    flags = EXAMPLE_RUNS[example]
    assert cli.main(["train", str(tmp_path / "killed"), *flags, *KILLED, "--quiet"]) == 0
    killed_events = events.read_all(tmp_path / "killed")
    assert [e["from_step"] for e in killed_events if e["event"] == "resumed"] == [30]
    by_attempt = [{e["step"]: e["loss"] for e in killed_events
                   if e["event"] == "step" and e["attempt"] == attempt} for attempt in (0, 1)]
    assert sorted(by_attempt[0]) == list(range(1, 36))
    assert sorted(by_attempt[1]) == list(range(31, 61))
    assert [by_attempt[1][s] for s in range(31, 36)] == [by_attempt[0][s] for s in range(31, 36)]
    if example == "cnn":
        assert cli.main(["train", str(tmp_path / "plain"), *flags, *SHORT, "--quiet"]) == 0
        plain = events.final_losses(events.read_all(tmp_path / "plain"))
        assert events.final_losses(killed_events) == plain  # floats round-trip JSON exactly
    record = configmod.load_record(tmp_path / "killed")
    model_file = EXAMPLES / flags[flags.index("--model") + 1].split(":")[0]
    assert record["model_sha256"] == user_code.sha256(model_file)
    assert record["exact_resume"] is True
    meta = listing.newest_valid(tmp_path / "killed").meta
    assert meta["model_sha256"] == record["model_sha256"]
    assert meta["dataset_sha256"] == record["dataset_sha256"]
    validations = [e for e in killed_events if e["event"] == "validation"]
    if example == "regression":  # the module's `metrics`, no accuracy
        assert all(e["val_accuracy"] is None for e in validations)
        assert all(e["metrics"]["mean_absolute_error"] > 0 for e in validations)


SET_ORDER_DATA = """
import numpy as np

WORDS = "the cat sat on a mat while the dog ran to the red ball near one old tree".split()


def load():
    vocab = list(set(WORDS))  # in set order: Python's string hashing decides it
    ids = {word: i for i, word in enumerate(vocab)}
    rows = np.random.default_rng(0).integers(len(WORDS), size=(400, 3))
    x = np.zeros((400, len(vocab)), np.float32)
    for r, picks in enumerate(rows):
        for k in picks:
            x[r, ids[WORDS[k]]] += 1.0
    return x, np.array([ids[WORDS[p[0]]] % 3 for p in rows], np.int64)
"""


@pytest.mark.tf
def test_a_vocabulary_in_set_order_is_the_same_in_every_attempt(tmp_path):
    """A dataset function that numbers words in `set` order: every trainer starts with the same
    PYTHONHASHSEED, so the restarted attempt redoes steps 31-35 on the same ids, to the bit (a
    breaker's finding: with Python's random hash seed the restart trained on other ids while
    `exact resume: promised` was printed)."""
    (tmp_path / "words.py").write_text(SET_ORDER_DATA)
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--dataset", f"{tmp_path / 'words.py'}:load",
                     *KILLED, "--quiet"]) == 0
    seen = events.read_all(run_dir)
    by_attempt = [{e["step"]: e["loss"] for e in seen
                   if e["event"] == "step" and e["attempt"] == attempt} for attempt in (0, 1)]
    assert [by_attempt[1][s] for s in range(31, 36)] == [by_attempt[0][s] for s in range(31, 36)]


READS_A_FILE = """
from pathlib import Path

import numpy as np


def load():
    x = np.load(Path(__file__).with_name("x.npy"))
    return x, (x[:, 0] > 0).astype(np.int64)
"""


@pytest.mark.tf
def test_a_resume_whose_dataset_function_returns_other_data_is_refused(tmp_path, capsys):
    """The dataset file is unchanged but what it reads is not: the resume is refused with the
    fingerprints, and goes on once the data is back (a breaker's finding: the resume trained
    on the new data while `exact resume: promised` was printed)."""
    (tmp_path / "reads.py").write_text(READS_A_FILE)

    def write_x(seed):
        x = np.random.default_rng(seed).normal(size=(200, 4)).astype(np.float32)
        np.save(tmp_path / "x.npy", x)

    write_x(0)
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--dataset", f"{tmp_path / 'reads.py'}:load",
                     "--steps", "20", "--checkpoint-every", "10", "--quiet"]) == 0
    write_x(1)
    capsys.readouterr()
    assert cli.main(["train", str(run_dir), "--resume", "--steps", "30", "--quiet"]) == 1
    assert re.search(r"dataset: .*reads\.py:load returned other data than checkpoint step 20 "
                     r"was trained on \(fingerprint [0-9a-f]{12}, now [0-9a-f]{12}\); restore "
                     r"what it reads, or start a new run", capsys.readouterr().err)
    # a fork is refused before it moves any checkpoint aside (a breaker's finding: the trainer
    # refused, after checkpoint 20 had gone to history/, so a plain resume went on from 10)
    assert cli.main(["train", str(run_dir), "--resume", "--from-step", "10", "--quiet"]) == 2
    assert "returned other data than checkpoint step 10" in capsys.readouterr().err
    assert listing.newest_valid(run_dir).step == 20
    assert not (run_dir / "history").exists()
    write_x(0)
    assert cli.main(["train", str(run_dir), "--resume", "--steps", "30", "--quiet"]) == 0
    assert [e["from_step"] for e in events.read_all(run_dir) if e["event"] == "resumed"] == [20]


@pytest.mark.tf
def test_a_helper_beside_the_model_file_imports_from_any_working_directory(tmp_path,
                                                                           monkeypatch):
    """`import helpers` beside the model file, the run started from another folder: the file's
    folder is on the trainer's `sys.path`, as with `python net.py` (a breaker's finding: the
    helper was hashed as 'beside the file' but could not be imported, ModuleNotFoundError)."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "helpers.py").write_text("WIDTH = 8\n")
    (tmp_path / "models" / "net.py").write_text(
        "import keras\n\nimport helpers\n\n\ndef build(input_shape, num_classes):\n"
        "    inputs = keras.Input(shape=input_shape)\n"
        "    x = keras.layers.Dense(helpers.WIDTH)(keras.layers.Flatten()(inputs))\n"
        "    return keras.Model(inputs, keras.layers.Dense(num_classes)(x))\n")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--model", f"{tmp_path / 'models' / 'net.py'}:build",
                     "--steps", "2", "--checkpoint-every", "2", "--quiet"]) == 0
    assert list(configmod.load_record(run_dir)["model_modules"]) == ["helpers"]


@pytest.mark.tf
def test_a_file_named_like_a_standard_module_in_the_working_directory_breaks_nothing(
        tmp_path, monkeypatch):
    """A user's `json.py` and `random.py` in the working directory: the check helper and the
    trainer import the standard modules, not them (`python -m` put the working directory
    first: 'module json has no attribute loads'), their own `helpers.py` still imports, and
    a standard module's name is not recorded as one of the user's own."""
    (tmp_path / "json.py").write_text("RAISED = True\n")
    (tmp_path / "random.py").write_text("raise ImportError('the user random.py')\n")
    (tmp_path / "helpers.py").write_text("WIDTH = 8\n")
    (tmp_path / "net.py").write_text(
        "import json\n\nimport keras\n\nimport helpers\n\n\n"
        "def build(input_shape, num_classes):\n"
        "    assert hasattr(json, 'loads')\n"
        "    inputs = keras.Input(shape=input_shape)\n"
        "    x = keras.layers.Dense(helpers.WIDTH)(keras.layers.Flatten()(inputs))\n"
        "    return keras.Model(inputs, keras.layers.Dense(num_classes)(x))\n")
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--model", "net.py:build", "--steps", "2",
                     "--checkpoint-every", "2", "--quiet"]) == 0
    assert list(configmod.load_record(run_dir)["model_modules"]) == ["helpers"]


def test_the_users_folders_go_after_the_standard_library_on_sys_path(tmp_path, monkeypatch):
    """`user_folders_on_path`: the working directory, then the file's folder, after the last
    standard-library entry and before site-packages; a folder already there is not added."""
    import sysconfig
    stdlib = sysconfig.get_path("stdlib")
    site = sysconfig.get_path("purelib")
    monkeypatch.setattr(sys, "path", [f"{stdlib}.zip", stdlib, site])
    monkeypatch.setattr(user_code, "_ADDED", set())
    monkeypatch.chdir(tmp_path)
    user_code.user_folders_on_path(tmp_path / "models")
    assert sys.path == [f"{stdlib}.zip", stdlib, str(tmp_path), str(tmp_path / "models"), site]
    user_code.user_folders_on_path(tmp_path)
    assert sys.path == [f"{stdlib}.zip", stdlib, str(tmp_path), str(tmp_path / "models"), site]
    # the dataset's folder after them: the working directory still comes first (a breaker's
    # finding: each folder went in at the same place, the model's ahead of the working
    # directory, and a changed helpers.py there was trained on though not the one recorded)
    user_code.user_folders_on_path(tmp_path / "data")
    assert sys.path == [f"{stdlib}.zip", stdlib, str(tmp_path), str(tmp_path / "models"),
                        str(tmp_path / "data"), site]


@pytest.mark.tf
def test_a_model_with_a_stateful_random_op_trains_but_exact_resume_is_not_promised(
        tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--model", f"{EXAMPLES}/noisy_model.py:build",
                     "--strategy", "default", "--steps", "10",
                     "--checkpoint-every", "5"]) == 0
    out = capsys.readouterr().out
    assert "exact resume is not guaranteed" in out and "RandomStandardNormal" in out
    warnings = [e for e in events.read_all(run_dir) if e["event"] == "determinism_warning"]
    assert len(warnings) == 1
    assert any(op.startswith("RandomStandardNormal (") for op in warnings[0]["ops"])
    record = configmod.load_record(run_dir)
    assert record["exact_resume"] is False and record["nondeterministic_ops"]
    assert listing.newest_valid(run_dir).meta["exact_resume"] is False


SOFTMAX_MODEL = """
import keras

def build(input_shape, num_classes):
    model = keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(),
                              keras.layers.Dense(num_classes, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    return model
"""


@pytest.mark.tf
def test_a_softmax_output_and_an_unused_compile_are_told_before_training(tmp_path, capsys):
    # Both train without an error, but not as the author meant: ftgui's loss takes logits,
    # and it trains with its own optimizer.
    model = tmp_path / "softmax_model.py"
    model.write_text(SOFTMAX_MODEL)
    assert cli.main(["train", str(tmp_path / "run"), "--model", f"{model}:build",
                     "--strategy", "default", "--steps", "2", "--quiet"]) == 0
    warnings = [line for line in capsys.readouterr().out.splitlines()
                if line.startswith("warning: ")]
    assert warnings == [
        f"warning: {model}:4: the model's outputs are probabilities (each row sums to 1, as "
        f"after a softmax), but the run's loss takes logits, so it trains slowly: drop the "
        f"final softmax, or define loss = keras.losses.SparseCategoricalCrossentropy() in the "
        f"module",
        f"warning: {model}:4: the model was compiled, but compile()'s loss, optimizer and "
        f"metrics are not used: the run trains with Adam at --lr and the module's `loss` "
        f"and `metrics` when it defines them"]
    model.write_text(SOFTMAX_MODEL.replace('activation="softmax"', "").replace(
        "    model.compile(optimizer=\"sgd\", loss=\"sparse_categorical_crossentropy\")\n",
        ""))
    # without both: the check (what the warnings come from) has no advice
    fixed = RunConfig(model=f"{model}:build", strategy="default", steps=2)
    assert user_code.check(fixed, tmp_path / "run2").advice == []


TRACE_RANDOM_MODEL = """
import random

import keras


class Jitter(keras.layers.Layer):
    def call(self, x, training=False):  # random.random() runs when TensorFlow traces
        return x * (1.0 + 0.05 * random.random()) if training else x


def build(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = keras.layers.Dense(16, activation="relu")(keras.layers.Flatten()(inputs))
    return keras.Model(inputs, keras.layers.Dense(num_classes)(Jitter()(x)))
"""


@pytest.mark.tf
def test_a_step_that_changes_when_traced_again_resumes_exactly_from_a_warm_standby(
        tmp_path, capsys):
    """Python's random in a layer's call runs at each trace: a cold restart traces as the
    first attempt did, but a warm standby traced its step before its order (twice: the plain
    step, then the one that returns the state), and the steps after its restore differed
    while the check said "exact resume: promised" (a user's finding). The check now finds
    it, and the run's standbys build and trace after their order."""
    model = tmp_path / "jitter.py"
    model.write_text(TRACE_RANDOM_MODEL)
    run_dir = tmp_path / "run"
    # snapshots off: the restart restores checkpoint 40 and redoes 41-45, whose losses must
    # be those of the first attempt; the kill waits at 45 until the standby is ready
    assert cli.main(["train", str(run_dir), "--model", f"{model}:build", "--steps", "50",
                     "--checkpoint-every", "20", "--snapshot-every", "0",
                     "--kill-at-step", "45", "--auto-recover", "--restart-backoff", "0",
                     "--warm-standby"]) == 0
    out = capsys.readouterr().out
    assert (f"warning: {model}:12: the model's Python code gives another training step "
            "each time TensorFlow traces it") in out
    assert configmod.load_record(run_dir)["trace_dependent"] is True
    found = events.read_all(run_dir)
    kill = next(k for k, e in enumerate(found) if e["event"] == "fault_injected")
    # the command line holds a planned fault for the warm standby, as the audit does
    assert [(e["step"], e["why"]) for e in found[:kill] if e["event"] == "held"] == [
        (45, "standby")]
    ready = [e for e in found[:kill] if e["event"] == "standby_ready"]
    assert ready and ready[0]["prepared"] is False  # ready before the kill, not prepared
    [restarted] = [e for e in found if e["event"] == "process_started" and e["attempt"] == 1]
    assert restarted["standby"] is True
    by_attempt = [{e["step"]: e["loss"] for e in found
                   if e["event"] == "step" and e["attempt"] == attempt} for attempt in (0, 1)]
    assert [by_attempt[1][s] for s in range(41, 46)] == [by_attempt[0][s] for s in range(41, 46)]


COUNTER_MODEL = """
import keras

TRACES = [0]


class Warmup(keras.layers.Layer):
    def call(self, x):  # Python: counts the calls and traces, not the steps
        TRACES[0] += 1
        return x * (1.0 if TRACES[0] <= 2 else 1.01)


def build(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    x = keras.layers.Dense(16, activation="relu")(keras.layers.Flatten()(inputs))
    return keras.Model(inputs, keras.layers.Dense(num_classes)(Warmup()(x)))
"""


@pytest.mark.tf
def test_a_counter_of_traces_is_found_where_the_trainer_and_its_standby_trace(tmp_path):
    # the trainer traces its step at the model's 2nd call (the 1st builds it); a prepared
    # standby trains on the 3rd. The check called the model eagerly first, so its own traces
    # were the 3rd and 4th, equal: "exact", and the warm-standby resume was not (a breaker's
    # model)
    model = tmp_path / "warmup.py"
    model.write_text(COUNTER_MODEL)
    found = user_code.check(RunConfig(model=f"{model}:build", strategy="default", steps=2),
                            tmp_path / "run")
    assert (found.deterministic, found.trace_dependent) == (True, True)
    assert [line.split(": ", 1)[1][:60] for line in found.advice] == [
        "the model's Python code gives another training step each tim"]


TF_CONSTANT_MODEL = """
import keras
import numpy as np
import tensorflow as tf


class Projection(keras.layers.Layer):
    def __init__(self, draw, **kwargs):
        super().__init__(**kwargs)
        self.m = draw()  # a constant, no weight

    def call(self, x):
        return tf.matmul(x, self.m)


def build(input_shape, num_classes, draw=lambda: tf.random.normal((64, 64)).numpy()):
    inputs = keras.Input(shape=input_shape)
    x = Projection(draw)(keras.layers.Flatten()(inputs))
    return keras.Model(inputs, keras.layers.Dense(num_classes)(x))


def build_numpy(input_shape, num_classes):
    return build(input_shape, num_classes,
                 lambda: np.random.normal(size=(64, 64)).astype(np.float32))
"""


@pytest.mark.tf
def test_the_copy_that_validates_draws_what_the_model_drew_or_the_check_says_so(tmp_path):
    """A constant drawn in build() that is no weight: the background save's copy of the
    model (a second build, the weights copied), on which each checkpoint's validation pass
    runs, drew its own, and the run reported another model's validation loss as falling
    when it rose (a user's finding). Drawn from NumPy's (or Python's) generator, the copy
    is now built from the random state the model was: no advice. Drawn with TensorFlow's
    random ops, the check says that the validation loss would not be the model's."""
    model = tmp_path / "projection.py"
    model.write_text(TF_CONSTANT_MODEL)
    numpy_drawn = RunConfig(model=f"{model}:build_numpy", strategy="default", steps=2)
    assert user_code.check(numpy_drawn, tmp_path / "run1").advice == []
    tf_drawn = user_code.check(numpy_drawn.replace(model=f"{model}:build"), tmp_path / "run2")
    assert tf_drawn.advice == [
        f"{model}:16: a second call of the build function, with the weights copied, gives "
        "other outputs than the model: it makes state that is no weight (a constant drawn "
        "with TensorFlow's random ops?), so the validation loss of each checkpoint, computed "
        "on that copy, would not be the trained model's; make it a weight "
        "(add_weight(trainable=False)), or draw it with tf.random.stateless_normal and a "
        "fixed seed (tf.random.normal's seed still draws anew in each build)"]
    assert not tf_drawn.trace_dependent

@pytest.mark.tf
def test_under_the_fit_loop_the_advice_names_what_the_fit_loop_uses(tmp_path):
    # --loop fit compiles the model itself: a module's `loss` is no way out there (a new
    # user's finding)
    import types

    import numpy as np

    from ftgui.training.helpers.check_user_code import _advice

    model = tmp_path / "m.py"
    model.write_text("import keras\nloss = keras.losses.SparseCategoricalCrossentropy()\n"
                     "def build(input_shape, num_classes):\n    pass\n")
    probabilities = np.full((4, 10), 0.1, dtype=np.float32)
    compiled = types.SimpleNamespace(compiled=True)
    custom = RunConfig(model=f"{model}:build")
    assert [line.split(": ", 1)[1] for line in _advice(custom, compiled, probabilities)] == [
        "the model was compiled, but compile()'s loss, optimizer and metrics are not used: "
        "the run trains with Adam at --lr and the module's `loss` and `metrics` when it "
        "defines them"]
    fit = custom.replace(loop="fit")
    assert [line.split(": ", 1)[1] for line in _advice(fit, compiled, probabilities)] == [
        "the model's outputs are probabilities (each row sums to 1, as after a softmax), but "
        "the run's loss takes logits, so it trains slowly: drop the final softmax (--loop fit "
        "trains with softmax cross-entropy on logits, whatever the module's `loss`)",
        "the model was compiled, but compile()'s loss, optimizer and metrics are not used: "
        "--loop fit compiles it again with Adam at --lr, softmax cross-entropy on logits and "
        "accuracy"]
    logits = np.linspace(-1, 1, 40, dtype=np.float32).reshape(4, 10)
    assert _advice(fit, types.SimpleNamespace(compiled=False), logits) == []


OWN_TRAIN_STEP = """import keras
import tensorflow as tf


class Net(keras.Model):
    def call(self, x):
        return x

    @tf.function
    def train_step(self, data):
        return super().train_step(data)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return 2.0 * super().compute_loss(x, y, y_pred, sample_weight, training=training)


def build(input_shape, num_classes):
    return Net()
"""


@pytest.mark.tf
def test_a_models_own_train_step_that_the_custom_loop_skips_is_told(tmp_path):
    # The custom loop trains with ftgui's step: a subclass's train_step was silently not run
    # (a user's finding); model.fit, which --loop fit calls, runs it.
    import importlib.util

    import keras
    import numpy as np

    from ftgui.training.helpers.check_user_code import _advice

    path = tmp_path / "own_step.py"
    path.write_text(OWN_TRAIN_STEP)
    spec = importlib.util.spec_from_file_location("own_step", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    logits = np.linspace(-1, 1, 40, dtype=np.float32).reshape(4, 10)
    custom = RunConfig(model=f"{path}:build")
    # (a tf.function's line is its own, not the build function's: a breaker's model)
    assert _advice(custom, module.build((4,), 10), logits) == [
        f"{path}:9: Net.train_step is not run: the custom loop trains with ftgui's own step "
        f"(the model's forward pass, the run's loss, Adam at --lr); --loop fit runs the "
        f"model's train_step",
        f"{path}:13: Net.compute_loss is not run: the custom loop's loss is the module's "
        f"`loss` (else softmax cross-entropy on logits) plus the model's losses; --loop fit "
        f"runs the model's compute_loss"]
    assert _advice(custom.replace(loop="fit"), module.build((4,), 10), logits) == []
    plain = keras.Sequential([keras.Input((4,)), keras.layers.Dense(10)])
    assert _advice(custom, plain, logits) == []


@pytest.mark.tf
@pytest.mark.parametrize("strategy", ["multi-worker", "parameter-server"])
def test_cluster_strategies_train_a_user_model(strategy, tmp_path):
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--strategy", strategy, "--workers", "2",
                     "--model", f"{EXAMPLES}/functional_dropout.py:build",
                     "--dataset", f"{EXAMPLES}/digits_data.py:load",
                     "--steps", "10", "--checkpoint-every", "5", "--quiet"]) == 0
    losses = events.final_losses(events.read_all(run_dir))
    assert sorted(losses) == list(range(1, 11))
    assert listing.newest_valid(run_dir).meta["model_sha256"] == user_code.sha256(
        EXAMPLES / "functional_dropout.py")


def test_the_check_helper_answers_in_one_json_line(tmp_path):
    """The core parses the helper's last JSON line (printing user code may precede it)."""
    stdout = "hello from the user's module\n" + json.dumps({"ok": True, "x": 1}) + "\n"
    assert user_code._last_json(stdout) == {"ok": True, "x": 1}
    assert user_code._last_json("no json at all") is None
    assert shutil.which(sys.executable)


# ---------------------------------------------------------------- the window's pickers
def test_the_panel_picks_a_file_and_shows_the_function_and_the_check(qtbot):
    from PySide6.QtWidgets import QPushButton

    from ftgui.qt.panes.config_panel import ConfigPanel, functions_in

    panel = ConfigPanel()
    qtbot.addWidget(panel)
    assert panel.findChild(QPushButton, "modelBrowseButton") is not None
    assert panel.findChild(QPushButton, "datasetBrowseButton") is not None
    assert functions_in(EXAMPLES / "regression.py") == ["load", "build"]
    assert panel.source_labels["model"].text() == "built in"
    panel.choose_source("model", EXAMPLES / "regression.py", "build")
    panel.choose_source("dataset", EXAMPLES / "regression.py", "load")
    assert panel.source_labels["model"].text() == "function build() in regression.py"
    config = panel.config().replace(task="regression")
    config.validate()
    assert config.model == f"{EXAMPLES / 'regression.py'}:build"
    result = user_code.CheckResult(
        {"name": "sine_regression", "layers": [["dense", "Dense", "(None, 2)", 66]] * 3,
         "parameters": 290, "train": 640, "val": 160, "input_shape": [6]},
        deterministic=False, nondeterministic_ops=["RandomStandardNormal (noise)"],
        reason="stateful random ops: RandomStandardNormal (noise)",
        advice=["regression.py:40: the model was compiled, but …"])
    panel.show_check(result)
    text = panel.check_label.text()
    assert text.startswith("model sine_regression: 3 layers, 290 parameters; data 640 training")
    assert text.splitlines()[1] == "warning: regression.py:40: the model was compiled, but …"
    assert "exact resume is not guaranteed" in text and "RandomStandardNormal" in text


@pytest.mark.tf
def test_a_saved_keras_model_trains_from_its_own_weights(tmp_path):
    import keras
    import numpy as np

    sys.path.insert(0, str(EXAMPLES))
    try:
        import digits_cnn
    finally:
        sys.path.remove(str(EXAMPLES))
    model = digits_cnn.build((8, 8), 10)
    for variable in model.trainable_variables:  # weights no fresh build would have
        variable.assign(np.full(variable.shape, 0.01, dtype=np.float32))
    model.save(tmp_path / "saved.keras")
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--model", str(tmp_path / "saved.keras"),
                     "--strategy", "default", "--steps", "2", "--checkpoint-every", "2",
                     "--lr", "1e-9", "--quiet"]) == 0
    restored = keras.models.load_model(tmp_path / "saved.keras", compile=False)
    import tensorflow as tf

    tf.train.Checkpoint(model=restored).read(
        str(listing.checkpoint_dir(run_dir) / "ckpt-2")).expect_partial()
    kernel = restored.trainable_variables[0].numpy()
    assert np.allclose(kernel, 0.01, atol=1e-6)  # trained 2 steps at lr 1e-9 from 0.01
    assert listing.newest_valid(run_dir).meta["model_sha256"] == user_code.sha256(
        tmp_path / "saved.keras")
