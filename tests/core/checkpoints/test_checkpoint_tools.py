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
        f"Validation: loss <b>{scored['val_loss']:.4f}</b>, accuracy <b>66.7%</b>, "
        "auc <b>0.75</b> on 3 examples")
