"""Acting on one checkpoint: inspect, evaluate and export it (helper process), delete it."""

from __future__ import annotations

import json
import shutil

import pytest

from ftgui.core.checkpoints import listing, tools


def test_delete_removes_every_file_of_one_checkpoint(tmp_path):
    directory = tmp_path / "checkpoints"
    directory.mkdir()
    for step in (10, 20):
        for suffix in (".index", ".data-00000-of-00001", ".meta.json"):
            (directory / f"ckpt-{step}{suffix}").write_text("x")
    assert tools.delete(tmp_path, 20) == [
        "ckpt-20.data-00000-of-00001", "ckpt-20.index", "ckpt-20.meta.json",
    ]
    assert sorted(p.name for p in directory.iterdir()) == [
        "ckpt-10.data-00000-of-00001", "ckpt-10.index", "ckpt-10.meta.json",
    ]
    with pytest.raises(LookupError, match="no checkpoint of step 20"):
        tools.delete(tmp_path, 20)


def test_a_failed_helper_answer_becomes_an_error():
    with pytest.raises(RuntimeError, match="^no checkpoint of step 7"):
        tools.parse_result('noise\n{"error": "no checkpoint of step 7"}\n')
    with pytest.raises(RuntimeError, match="printed no answer"):
        tools.parse_result("Traceback ...\n")


@pytest.mark.tf
def test_inspect_evaluates_and_exports_a_real_checkpoint(tmp_path, baseline_run):
    run_dir = tmp_path / "run"
    shutil.copytree(baseline_run, run_dir)
    export = tmp_path / "model.keras"
    result = tools.inspect(run_dir, 40, evaluate=True, export=export)
    names = {v["name"]: v for v in result["variables"]}
    assert result["size"] == listing.find(run_dir, 40).size  # the dialog's "Files" figure
    # the MLP's first kernel (64 inputs × 64 units) and Adam's two slots for it
    kernels = [v for v in result["variables"] if v["shape"] == [64, 64]]
    assert [(v["dtype"], v["bytes"]) for v in kernels] == [("float32", 64 * 64 * 4)] * 3
    assert names["step/.ATTRIBUTES/VARIABLE_VALUE"]["dtype"] == "int64"
    meta = json.loads(listing.meta_path(run_dir / "checkpoints" / "ckpt-40").read_text())
    # the helper's evaluation is the trainer's validation at that checkpoint, to the bit
    assert result["evaluation"]["val_loss"] == meta["val_loss"]
    assert result["evaluation"]["val_accuracy"] == meta["val_accuracy"]
    assert export.stat().st_size > 0 and result["exported"] == str(export)
    with pytest.raises(LookupError, match="no checkpoint of step 41"):
        tools.inspect(run_dir, 41)


@pytest.mark.tf
def test_a_checkpoint_is_evaluated_as_the_trainer_scores_its_task():
    """Regression: mean squared error and no accuracy (the Evaluate button assumed
    classification: softmax cross-entropy of regression outputs, then a crash on the format)."""
    from types import SimpleNamespace

    import numpy as np

    from ftgui.qt.panes.checkpoint_dialog import validation_line
    from ftgui.training.helpers.inspect_checkpoint import evaluate

    outputs = np.array([[1.0], [3.0]], np.float32)
    data = SimpleNamespace(x_val=outputs, y_val=np.array([[0.0], [1.0]], np.float32))
    regression = evaluate(lambda x, training: x, data, SimpleNamespace(model="mlp",
                                                                        task="regression"))
    assert regression == {"val_loss": 2.5, "val_accuracy": None, "examples": 2}
    assert validation_line(regression) == "Validation: loss <b>2.5000</b> on 2 examples"

    logits = np.array([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0]], np.float32)
    data = SimpleNamespace(x_val=logits, y_val=np.array([0, 1, 1]))
    scored = evaluate(lambda x, training: x, data, SimpleNamespace(model="mlp",
                                                                    task="classification"))
    expected = float(np.mean([np.log1p(np.exp(-2.0))] * 2 + [np.log1p(np.exp(2.0))]))
    assert scored["val_accuracy"] == 2 / 3 and abs(scored["val_loss"] - expected) < 1e-6
    assert validation_line({**scored, "metrics": {"auc": 0.75}}) == (
        f"Validation: loss <b>{scored['val_loss']:.4f}</b>, accuracy <b>66.7 %</b>, "
        "auc <b>0.75</b> on 3 examples")


# ------------------------------------------------- issue 25, case 4: the files it trained with
MODEL = '''import keras


def build(input_shape, num_classes):
    return keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(),
                             keras.layers.Dense(16, activation="relu"),
                             keras.layers.Dense(num_classes)])
'''


def _user_model_run(tmp_path):
    """A recorded run (no TensorFlow) whose checkpoint 40 was trained with `m.py:build`."""
    from ftgui.core.record import events
    from ftgui.core.settings import config as configmod
    from ftgui.core.settings import user_code
    from ftgui.core.settings.config import RunConfig

    model = tmp_path / "m.py"
    model.write_text(MODEL)
    run_dir = tmp_path / "run"
    config = RunConfig(model=f"{model}:build", steps=40, checkpoint_every=20)
    configmod.save(run_dir, config, user_code.record(config, None))
    with events.EventWriter(run_dir, attempt=0) as writer:
        writer.emit("run_started", config=config.to_dict())
    from conftest import fake_checkpoint

    prefix = fake_checkpoint(run_dir, 40, metadata=False)
    listing.write_metadata(prefix, loss=0.5, time=1e6, model=config.model,
                               dataset="digits", **user_code.code_fingerprint(config))
    return run_dir, model


def test_an_edited_model_file_refuses_evaluate_and_export_in_one_line(tmp_path):
    run_dir, model = _user_model_run(tmp_path)
    tools.check_files(run_dir, 40)  # unchanged: nothing to say
    model.write_text(MODEL.replace('"relu"', '"tanh"'))
    line = (f"model: {model} changed since checkpoint ckpt-40 was saved (content hash "
            "differs); restore the file to evaluate or export this checkpoint")
    for kwargs in ({"evaluate": True}, {"export": tmp_path / "m.keras"}):
        with pytest.raises(RuntimeError) as raised:  # before any helper process starts
            tools.inspect(run_dir, 40, **kwargs)
        assert str(raised.value) == line
    assert not (tmp_path / "m.keras").exists()
    # the helper itself refuses too (the window starts it directly), before TensorFlow
    import subprocess

    done = subprocess.run(tools.inspect_command(run_dir, 40, evaluate=True),
                          capture_output=True, text=True)
    assert done.returncode == 2 and json.loads(done.stdout) == {"error": line}
    model.unlink()
    with pytest.raises(RuntimeError) as raised:
        tools.check_files(run_dir, 40)
    assert str(raised.value) == (f"model: file {str(model)!r} does not exist; checkpoint "
                                 "ckpt-40 was trained with it")


def test_the_checkpoints_own_model_is_evaluated_not_config_tomls(tmp_path):
    """config.toml edited to name another model: the checkpoint's metadata names its own."""
    from ftgui.core.settings import config as configmod

    run_dir, model = _user_model_run(tmp_path)
    configmod.save(run_dir, configmod.load(run_dir).replace(model="cnn"))
    info = listing.find(run_dir, 40)
    assert tools.checkpoint_config(run_dir, info).model == f"{model}:build"


def test_a_helper_that_crashed_without_an_answer_gives_one_line():
    stderr = "Traceback (most recent call last):\n  File ...\nValueError: Layer count 3 != 4\n"
    with pytest.raises(RuntimeError) as raised:
        tools.parse_result("", stderr, 1)
    assert str(raised.value) == ("the checkpoint helper printed no answer (exit status 1): "
                                 "ValueError: Layer count 3 != 4")


def test_the_window_refuses_an_edited_model_without_starting_the_helper(tmp_path, qtbot):
    from ftgui.qt.panes.checkpoint_dialog import CheckpointJob

    run_dir, model = _user_model_run(tmp_path)
    model.write_text(MODEL + "\n# edited\n")
    job = CheckpointJob(run_dir, 40, evaluate=True)
    reasons = []
    job.failed.connect(reasons.append)
    job.start()
    assert reasons == [f"model: {model} changed since checkpoint ckpt-40 was saved (content "
                       "hash differs); restore the file to evaluate or export this checkpoint"]
    assert job.process.state() == job.process.ProcessState.NotRunning


@pytest.mark.tf
def test_a_helper_error_is_one_json_line_not_a_traceback(tmp_path, baseline_run):
    """Regression: a model that does not fit the checkpoint made the helper exit 1 with a
    traceback and no answer. (An older checkpoint records no model: config.toml's is built.)"""
    from ftgui.core.settings import config as configmod

    run_dir = tmp_path / "run"
    shutil.copytree(baseline_run, run_dir)
    meta_file = listing.meta_path(run_dir / "checkpoints" / "ckpt-40")
    meta = json.loads(meta_file.read_text())
    del meta["model"]
    meta_file.write_text(json.dumps(meta))
    configmod.save(run_dir, configmod.load(run_dir).replace(model="cnn"))
    with pytest.raises(RuntimeError) as raised:
        tools.inspect(run_dir, 40, evaluate=True)
    line = str(raised.value)
    assert "\n" not in line and line.startswith("ValueError: ") and "shape" in line
