"""Safe resume (issue 11, cases 1, 2, 3, 5): each checkpoint records the settings and data it was
made with; a resume that asks for a model, dataset, seed or loop other than the checkpoint's is
refused before TensorFlow starts and changes nothing on disk; a new learning rate or global batch
size applies from the resume step, is recorded, and the data position continues; an empty
config.toml is rebuilt from the run's own record."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import fake_checkpoint, of_kind

from ftgui import cli
from ftgui.core.checkpoints import listing, resume_check
from ftgui.core.record import events
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.settings.schema import SETTINGS
from ftgui.training import data
from ftgui.training.data import DataPosition, StepBatches, position_of_checkpoint

SETTINGS_PAGE = Path(__file__).resolve().parents[3] / "docs" / "settings.md"
DIGITS_TRAIN = 1437  # training split of the built-in digits
DIGITS_INFO = {"x_shape": [1797, 8, 8], "y_shape": [1797], "num_classes": 10,
               "fingerprint": "b637863f70f86e919b5f9f28613a5e7f"}


def _listing(run_dir, capsys) -> list[dict]:
    capsys.readouterr()
    assert cli.main(["checkpoints", str(run_dir), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _recorded_run(run_dir: Path, **meta) -> Path:
    """A finished 60-step run (no TensorFlow): config.toml, its run_started event, and
    checkpoints 40-60 whose metadata records `meta` (as a trainer of this version writes it)."""
    config = RunConfig(steps=60, checkpoint_every=10)
    configmod.save(run_dir, config)
    with events.EventWriter(run_dir, attempt=0) as writer:
        writer.emit("run_started", config=config.to_dict())
        writer.emit("run_finished", step=60, loss=0.125)
    for step in (40, 50, 60):
        prefix = fake_checkpoint(run_dir, step, metadata=False)
        listing.write_metadata(prefix, loss=1.0 / step, time=1e6 + step, **{
            "model": "mlp", "dataset": "digits", "seed": 42, "loop": "custom",
            "learning_rate": 0.01, "global_batch_size": 64, "strategy": "mirrored",
            "replicas": 2, **meta})
    return run_dir


def _snapshot(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes()
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------ case 1: refused settings
@pytest.mark.parametrize("flags, line", [
    (["--model", "cnn"], "model: checkpoint ckpt-60 was saved by model mlp; this run asks for "
     "cnn (resume with model mlp, or start a new run)"),
    (["--seed", "7"], "seed: checkpoint ckpt-60 was saved with seed 42; this run asks for 7 "
     "(resume with seed 42, or start a new run)"),
    (["--loop", "fit"], "loop: checkpoint ckpt-60 was saved with loop custom; this run asks "
     "for fit (resume with loop custom, or start a new run)"),
])
def test_a_refused_setting_is_named_before_any_process_starts_and_nothing_changes(
    tmp_path, capsys, flags, line
):
    run_dir = _recorded_run(tmp_path / "run")
    before, files = _listing(run_dir, capsys), _snapshot(run_dir)
    assert cli.main(["train", str(run_dir), "--resume", "--steps", "80", *flags,
                     "--auto-recover", "--restart-backoff", "0"]) == 2
    assert capsys.readouterr().err == f"ftgui: {line}\n"
    assert _snapshot(run_dir) == files  # no event, no marker, config.toml untouched
    assert _listing(run_dir, capsys) == before
    assert [r["valid"] for r in before] == [True, True, True]


@pytest.mark.parametrize("flags, line", [
    (["--seed", "7"], "seed: the run's first start (no checkpoint yet) trained with seed 42; "
     "this run asks for 7 (resume with seed 42, or start a new run)"),
    (["--dataset", "synthetic"], "dataset: the run's first start (no checkpoint yet) trained "
     "with dataset digits; this run asks for synthetic (resume with dataset digits, or start "
     "a new run)"),
])
def test_a_refused_setting_is_refused_before_the_runs_first_checkpoint_too(
    tmp_path, capsys, flags, line
):
    """A breaker's find: killed at step 10, before its first checkpoint, a run resumed with
    another seed (model, data, loop) trained from step 0 under the first start's run_started,
    two trainings in one history, and dropped its in-memory snapshot without a word."""
    run_dir = tmp_path / "run"
    config = RunConfig(steps=60, checkpoint_every=25)
    configmod.save(run_dir, config)
    with events.EventWriter(run_dir, attempt=0) as writer:
        writer.emit("run_started", config=config.to_dict())
        for step in range(1, 11):
            writer.emit("step", step=step, loss=1.0 / step)
    files = _snapshot(run_dir)
    assert cli.main(["train", str(run_dir), "--resume", *flags]) == 2
    assert capsys.readouterr().err == f"ftgui: {line}\n"
    assert _snapshot(run_dir) == files


def test_a_fork_is_checked_against_its_own_checkpoint(tmp_path, capsys):
    run_dir = _recorded_run(tmp_path / "run")
    listing.write_metadata(listing.checkpoint_dir(run_dir) / "ckpt-40", model="cnn")
    assert cli.main(["train", str(run_dir), "--resume", "--from-step", "40"]) == 2
    assert capsys.readouterr().err.startswith(
        "ftgui: model: checkpoint ckpt-40 was saved by model cnn; this run asks for mlp")
    assert not (run_dir / "history").exists()  # nothing archived


def test_an_old_checkpoint_without_these_fields_is_checked_against_the_runs_first_config(
    tmp_path
):
    run_dir = tmp_path / "run"
    configmod.save(run_dir, RunConfig())
    with events.EventWriter(run_dir, attempt=0) as writer:
        writer.emit("run_started", config=RunConfig(model="mlp", seed=3).to_dict())
    fake_checkpoint(run_dir, 30)  # metadata of an older ftgui: loss, time, strategy only
    [info] = listing.list_checkpoints(run_dir)
    with pytest.raises(ConfigError, match="^model: checkpoint ckpt-30 was saved by model mlp; "
                       "this run asks for cnn"):
        resume_check.check(run_dir, RunConfig(model="cnn", seed=3), info)
    assert resume_check.check(run_dir, RunConfig(seed=3, learning_rate=0.5), info) == [
        resume_check.Change("learning_rate", 0.01, 0.5, 30)]
    (run_dir / "events.jsonl").unlink()  # no record at all: nothing to compare
    assert resume_check.check(run_dir, RunConfig(model="cnn"), info) == []


def test_a_dataset_is_the_same_when_its_content_is(tmp_path):
    x, y = np.arange(40.0).reshape(20, 2), np.arange(20) % 2
    first = tmp_path / "a.npz"
    np.savez(first, x=x, y=y)
    recorded = resume_check.file_fingerprint(first)
    assert recorded == resume_check.dataset_fingerprint(x, y)
    run_dir = _recorded_run(tmp_path / "run", dataset=str(first), global_batch_size=4,
                            dataset_info={"fingerprint": recorded})
    info = listing.newest_valid(run_dir)
    moved = tmp_path / "moved.npz"
    shutil.copy(first, moved)
    config = RunConfig(dataset=str(moved), global_batch_size=4)
    assert resume_check.check(run_dir, config, info) == []  # same bytes, another path
    np.savez(first, x=x + 1, y=y)  # the file itself changed
    with pytest.raises(ConfigError) as raised:
        resume_check.check(run_dir, config.replace(dataset=str(first)), info)
    assert str(raised.value) == (
        f"dataset: checkpoint ckpt-60 was saved with other data in {first} (fingerprint "
        f"{recorded[:12]}, now {resume_check.file_fingerprint(first)[:12]}); restore that "
        "file, or start a new run")
    with pytest.raises(ConfigError, match="^dataset: checkpoint ckpt-60 was saved with dataset "):
        resume_check.check(run_dir, RunConfig(global_batch_size=4), info)


def test_learning_rate_and_batch_size_apply_and_are_listed_as_changes(tmp_path):
    run_dir = _recorded_run(tmp_path / "run")
    info = listing.newest_valid(run_dir)
    config = RunConfig(learning_rate=0.0001, global_batch_size=32, strategy="default")
    assert [c.fields() for c in resume_check.check(run_dir, config, info)] == [
        {"setting": "global_batch_size", "old": 64, "new": 32, "step": 60},
        {"setting": "learning_rate", "old": 0.01, "new": 0.0001, "step": 60},
    ]


def test_the_window_resume_from_a_checkpoint_shows_the_one_line_refusal(qtbot, tmp_path):
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QLabel

    from ftgui.qt.window.main_window import MainWindow

    run_dir = _recorded_run(tmp_path / "run")
    files = _snapshot(run_dir)
    window = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    try:
        window.open_run(run_dir)
        window.panel.set_config(RunConfig(steps=80, checkpoint_every=10, model="cnn"))
        window.table.resumeRequested.emit(50)  # the checkpoint table's "Resume from this…"
        assert window.findChild(QLabel, "configError").text() == (
            "model: checkpoint ckpt-50 was saved by model mlp; this run asks for cnn "
            "(resume with model mlp, or start a new run)")
        assert window.controller.supervisor.processes == []
        assert _snapshot(run_dir) == files
    finally:
        window.controller.shutdown()


# ------------------------------------------------------------------ case 3: data position
def test_one_batch_size_from_step_0_gives_the_batches_it_always_gave():
    batches = StepBatches(DIGITS_TRAIN, 64, 42)
    for step in range(1, 100):
        epoch = (step - 1) // 22
        order = np.random.Generator(np.random.PCG64([42, epoch])).permutation(DIGITS_TRAIN)
        start = ((step - 1) % 22) * 64
        assert batches.epoch_of(step) == epoch
        assert np.array_equal(batches.indices(step), order[start:start + 64])
    assert batches.position_after(60) == DataPosition(60, 2, 1024, 3840)


def test_a_smaller_batch_after_step_60_continues_epoch_2_where_step_60_left_it():
    at_60 = StepBatches(DIGITS_TRAIN, 64, 42).position_after(60)
    resumed = StepBatches(DIGITS_TRAIN, 32, 42, start=at_60)
    epoch_2 = np.random.Generator(np.random.PCG64([42, 2])).permutation(DIGITS_TRAIN)
    assert resumed.epoch_of(61) == 2
    assert np.array_equal(resumed.indices(61), epoch_2[1024:1056])
    # 1,437 - 1,024 = 413 rows left: 12 more batches of 32 (steps 61-72), then epoch 3
    assert [resumed.epoch_of(s) for s in (72, 73)] == [2, 3]
    epoch_3 = np.random.Generator(np.random.PCG64([42, 3])).permutation(DIGITS_TRAIN)
    assert np.array_equal(resumed.indices(73), epoch_3[:32])
    assert resumed.position_after(80).examples_seen == 3840 + 20 * 32
    # a resume from any later checkpoint of that run gives the same batches: it stays exact
    for checkpoint in (65, 72, 73, 80):
        again = StepBatches(DIGITS_TRAIN, 32, 42, start=resumed.position_after(checkpoint))
        for step in range(checkpoint + 1, checkpoint + 120):
            assert np.array_equal(again.indices(step), resumed.indices(step)), step


def test_an_old_checkpoint_gets_the_position_of_its_own_batch_size():
    old = {"global_batch_size": 64}  # metadata without data_position
    assert position_of_checkpoint(old, 60, DIGITS_TRAIN, 32) == DataPosition(60, 2, 1024, 3840)
    new = {"data_position": {"epoch": 3, "offset": 96, "examples_seen": 4800}}
    assert position_of_checkpoint(new, 70, DIGITS_TRAIN, 64) == DataPosition(70, 3, 96, 4800)


def test_the_training_data_carries_what_a_checkpoint_records_of_it():
    from sklearn.datasets import load_digits

    digits = load_digits()
    assert DIGITS_INFO["fingerprint"] == resume_check.dataset_fingerprint(digits.images,
                                                                          digits.target)
    assert data.load("digits").info == DIGITS_INFO


# ------------------------------------------------------------------ case 5: empty config.toml
def test_an_empty_config_toml_is_rebuilt_from_the_runs_record(tmp_path, capsys):
    run_dir = _recorded_run(tmp_path / "run", learning_rate=0.005)
    first = RunConfig(steps=40, global_batch_size=32, learning_rate=0.01, seed=7)
    (run_dir / "events.jsonl").unlink()
    with events.EventWriter(run_dir, attempt=0) as writer:
        writer.emit("run_started", config=first.to_dict())
    (run_dir / "config.toml").write_text("")
    values = cli._resume_base(run_dir, None)
    assert capsys.readouterr().out == (
        f"{run_dir / 'config.toml'} is empty; settings rebuilt from the run's own record "
        "(the run_started event and checkpoint ckpt-60)\n")
    # the first configuration, with what the checkpoint recorded over it
    assert values == {**first.to_dict(), "model": "mlp", "dataset": "digits", "seed": 42,
                      "loop": "custom", "learning_rate": 0.005, "global_batch_size": 64}
    (run_dir / "events.jsonl").unlink()
    with pytest.raises(ConfigError) as raised:
        cli._resume_base(run_dir, None)
    assert str(raised.value) == (
        f"run_dir: {run_dir / 'config.toml'} is empty and the run has no record of its "
        "settings (no run_started event); write its settings there to resume")


# ------------------------------------------------------------------ docs
def test_the_docs_table_of_settings_on_resume_matches_the_schema():
    text = SETTINGS_PAGE.read_text()  # the README's table moved to docs/settings.md
    assert resume_check.readme_table() in text
    rows = re.findall(r"^\| `(\w+)` \|", resume_check.readme_table(), re.M)
    assert rows == list(SETTINGS)


# ================================================================== with TensorFlow
@pytest.mark.tf
def test_a_new_learning_rate_applies_from_the_resume_step(tmp_path, capsys):
    import tensorflow as tf

    from ftgui.training import data as datamod
    from ftgui.training.step import SyncSteps, TrainState

    run_dir = tmp_path / "lr"
    flags = ["--strategy", "default", "--steps", "40", "--checkpoint-every", "10", "--quiet"]
    assert cli.main(["train", str(run_dir), *flags]) == 0
    original = events.final_losses(events.read_all(run_dir))
    fork = tmp_path / "fork"
    shutil.copytree(run_dir, fork)
    assert cli.main(["train", str(fork), "--resume", "--from-step", "30", "--lr", "0.0001",
                     "--quiet"]) == 0
    seen = events.read_all(fork)
    [changed] = of_kind(seen, "setting_changed")
    assert {k: changed[k] for k in ("setting", "old", "new", "step", "attempt")} == {
        "setting": "learning_rate", "old": 0.01, "new": 0.0001, "step": 30, "attempt": 1}
    resumed = {e["step"]: e["loss"] for e in of_kind(seen, "step", attempt=1)}
    assert sorted(resumed) == list(range(31, 41))
    assert all(resumed[s] != original[s] for s in range(32, 41))  # step 31's update is new
    assert listing.newest_valid(fork).meta["learning_rate"] == 0.0001
    # the same steps trained here, from ckpt-30, with the new rate
    tf.config.experimental.enable_op_determinism()
    digits = datamod.load("digits")
    config = RunConfig(strategy="default", learning_rate=0.0001)
    state = TrainState(tf.distribute.get_strategy(), config, digits)
    assert state.restore(run_dir / "checkpoints" / "ckpt-30") == 30
    assert float(state.optimizer.learning_rate.numpy()) == pytest.approx(0.0001)
    batches = StepBatches(len(digits.x_train), 64, 42, start=StepBatches(
        len(digits.x_train), 64, 42).position_after(30))
    losses, _ = SyncSteps(state, digits).run([batches.indices(s) for s in range(31, 41)],
                                             (False, False), [False] * 10)
    assert dict(zip(range(31, 41), losses, strict=True)) == resumed


@pytest.mark.tf
def test_a_smaller_batch_on_resume_continues_the_epoch_and_resumes_exactly(
    tmp_path, baseline_run
):
    run_dir = tmp_path / "bs"
    shutil.copytree(baseline_run, run_dir)
    assert cli.main(["train", str(run_dir), "--resume", "--batch-size", "32", "--steps", "80",
                     "--quiet"]) == 0
    seen = events.read_all(run_dir)
    epochs = {e["step"]: e["epoch"] for e in of_kind(seen, "step", attempt=1)}
    assert [epochs[s] for s in (61, 72, 73, 80)] == [2, 2, 3, 3]
    [changed] = of_kind(seen, "setting_changed")
    assert (changed["setting"], changed["old"], changed["new"], changed["step"]) == (
        "global_batch_size", 64, 32, 60)
    meta = listing.newest_valid(run_dir).meta
    assert (meta["step"], meta["global_batch_size"], meta["data_position"]) == (
        80, 32, {"epoch": 3, "offset": 8 * 32, "examples_seen": 60 * 64 + 20 * 32})
    assert {k: meta[k] for k in ("model", "variables", "dataset", "dataset_info", "strategy",
                                 "replicas", "learning_rate", "seed", "loop")} == {
        "model": "mlp", "variables": {"dense/kernel": [64, 64], "dense/bias": [64],
                                      "dense_1/kernel": [64, 10], "dense_1/bias": [10]},
        "dataset": "digits", "dataset_info": DIGITS_INFO, "strategy": "mirrored",
        "replicas": 2, "learning_rate": 0.01, "seed": 42, "loop": "custom"}
    first_time = events.final_losses(seen)
    assert cli.main(["train", str(run_dir), "--resume", "--from-step", "70", "--quiet"]) == 0
    again = events.final_losses(events.read_all(run_dir))
    assert again == first_time  # steps 71-80 to the bit
    assert of_kind(events.read_all(run_dir), "setting_changed") == [changed]  # no change at 70


@pytest.mark.tf
def test_a_resume_with_an_emptied_config_toml_keeps_the_runs_settings(tmp_path, capsys):
    run_dir = tmp_path / "c"
    assert cli.main(["train", str(run_dir), "--strategy", "default", "--steps", "20",
                     "--checkpoint-every", "10", "--batch-size", "32", "--lr", "0.005",
                     "--seed", "7", "--quiet"]) == 0
    (run_dir / "config.toml").write_text("")
    capsys.readouterr()
    assert cli.main(["train", str(run_dir), "--resume", "--steps", "30", "--quiet"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"{run_dir / 'config.toml'} is empty; settings rebuilt from the run's own record "
        "(the run_started event and checkpoint ckpt-20)")
    config = configmod.load(run_dir)
    assert (config.global_batch_size, config.learning_rate, config.seed, config.steps) == (
        32, 0.005, 7, 30)
    seen = events.read_all(run_dir)
    assert of_kind(seen, "setting_changed") == []
    assert [e["step"] for e in of_kind(seen, "step", attempt=1)] == list(range(21, 31))


def test_a_snapshot_a_resume_cannot_use_is_named_with_the_steps_it_costs():
    """A breaker's find: `--resume --lr 0.02` restored checkpoint 25 past a snapshot of step
    30 and said only "resumed from checkpoint 25"; 5 steps were redone without a word."""
    old, new = RunConfig(), RunConfig(learning_rate=0.02)
    checkpoint = type("Checkpoint", (), {"step": 25})()
    assert resume_check.unused_snapshot_line(30, checkpoint, old, new) == (
        "the in-memory snapshot of step 30 is not used: learning_rate changes on this resume "
        "and applies from a checkpoint's step; restoring checkpoint 25 (steps 26–30 redone)")
    both = RunConfig(learning_rate=0.02, global_batch_size=32)
    assert resume_check.unused_snapshot_line(1, None, old, both) == (
        "the in-memory snapshot of step 1 is not used: global_batch_size, learning_rate change "
        "on this resume and apply from a checkpoint's step; restoring step 0 (nothing "
        "saved) (step 1 redone)")
