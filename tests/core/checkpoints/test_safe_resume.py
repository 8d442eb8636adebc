"""Safe resume (issue 11, first part): any path works for save and restore, only a checkpoint's
own files mark it damaged, bad datasets and devices are refused before any process starts,
leftovers of interrupted saves are removed, fit runs list their epoch files."""

from __future__ import annotations

import json
import os
import shutil
import socket

import numpy as np
import pytest
from conftest import BASELINE_FLAGS, fake_checkpoint, of_kind

from ftgui import cli
from ftgui.core.checkpoints import fit_checkpoints, listing, tools
from ftgui.core.record import events
from ftgui.core.settings import config as configmod
from ftgui.core.settings import datasets, devices
from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.supervision import cluster

GLOBBY = "exp[lr=0.01] a+b ü"  # brackets, a space, a plus and a non-ASCII letter


def _listing(run_dir, capsys) -> list[dict]:
    capsys.readouterr()
    assert cli.main(["checkpoints", str(run_dir), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------ paths TensorFlow globs
def test_a_path_with_glob_characters_is_reached_through_a_link_tensorflow_does_not_glob(
    tmp_path,
):
    folder = tmp_path / GLOBBY / "checkpoints"
    folder.mkdir(parents=True)
    (folder / "ckpt-30.index").write_bytes(b"index")
    path = listing.tf_path(folder / "ckpt-30")
    assert not set(str(path)) & set("*?[\\")
    assert path.name == "ckpt-30"
    assert (path.parent / "ckpt-30.index").read_bytes() == b"index"
    assert path.parent.resolve() == folder.resolve()
    # one link per run; the folders below it stay real and may come and go
    scratch = listing.tf_path(tmp_path / GLOBBY / "scratch" / "worker-1")
    assert scratch == path.parent.parent / "scratch" / "worker-1"
    plain = tmp_path / "plain" / "ckpt-30"
    assert listing.tf_path(plain) == plain
    # a run folder whose own name is a pattern, not made yet
    odd = tmp_path / "run*?"
    linked = listing.tf_path(odd)
    assert not set(str(linked)) & set("*?[\\") and linked.resolve() == odd.resolve()


# ------------------------------------------------------------------ leftovers of saves
def test_leftovers_of_interrupted_saves_are_removed_and_valid_checkpoints_kept(tmp_path, capsys):
    run_dir = tmp_path / "run"
    for step in (20, 30):
        fake_checkpoint(run_dir, step)
    directory = listing.checkpoint_dir(run_dir)
    (directory / "ckpt-40_temp").mkdir()
    (directory / "ckpt-40_temp" / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"x")
    (directory / "checkpoint.tmp9f3a0c").write_bytes(b"")  # full disk: TF's state-file temp
    (directory / "ckpt-30.meta.json.tmp").write_text("{")
    (directory / "checkpoint").write_text('model_checkpoint_path: "ckpt-30"\n')
    before = _listing(run_dir, capsys)
    assert listing.remove_leftovers(run_dir) == [
        "checkpoint.tmp9f3a0c", "ckpt-30.meta.json.tmp", "ckpt-40_temp",
    ]
    assert sorted(p.name for p in directory.iterdir()) == [
        "checkpoint", "ckpt-20.data-00000-of-00001", "ckpt-20.index", "ckpt-20.meta.json",
        "ckpt-30.data-00000-of-00001", "ckpt-30.index", "ckpt-30.meta.json",
    ]
    assert _listing(run_dir, capsys) == before
    assert [(r["step"], r["valid"]) for r in before] == [(20, True), (30, True)]
    assert listing.remove_leftovers(tmp_path / "no-run") == []


# ------------------------------------------------------------------ datasets (case 9)
def test_a_dataset_with_nan_rows_is_refused_before_any_process_starts(tmp_path, capsys):
    x = np.random.RandomState(0).rand(100, 4)
    x[[5, 17, 60], 2] = np.nan
    x[60, 0] = np.inf  # the same row twice: counted once
    x[71, 3] = -np.inf
    path = tmp_path / "bad.npz"
    np.savez(path, x=x, y=np.arange(100) % 3)
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--dataset", str(path), "--batch-size", "8"]) == 2
    assert capsys.readouterr().err == (
        f"ftgui: dataset: {path}: x holds NaN or infinity in 4 of 100 rows "
        "(the first is row 5); remove or fix them\n"
    )
    assert not run_dir.exists()


def test_a_wrong_label_is_named_with_its_index(tmp_path):
    cases = {
        "negative": (np.array([0, 1, -1, 2, -5]), "y[2] is -1 (int64)"),
        "fraction": (np.array([0.0, 2.5, 1.0, 0.5]), "y[1] is 2.5 (float64)"),
        "nan": (np.array([0.0, 1.0, np.nan]), "y[2] is nan (float64)"),
        "whole floats": (np.array([0.0, 1.0, 1.0]), "y[0] is 0.0 (float64)"),
        "text": (np.array(["cat", "dog"]), "y[0] is 'cat' (<U3)"),
    }
    for name, (y, named) in cases.items():
        path = tmp_path / f"{name}.npz"
        np.savez(path, x=np.zeros((len(y), 2)), y=y)
        with pytest.raises(ConfigError) as raised:
            datasets.check(RunConfig(dataset=str(path), global_batch_size=1))
        assert str(raised.value) == (
            f"dataset: {path}: y must hold integer class ids from 0; {named}"
        ), name


# ------------------------------------------------------------------ resume without a checkpoint
def test_a_resume_without_a_valid_checkpoint_says_it_starts_from_step_0(tmp_path):
    run_dir = tmp_path / "run"
    fake_checkpoint(run_dir, 10, metadata=False)  # cut short: never valid
    assert listing.resume_point(run_dir) == (
        None, f"no valid checkpoint in {run_dir}; starting from step 0"
    )
    fake_checkpoint(run_dir, 20)
    info, line = listing.resume_point(run_dir)
    assert (info.step, line) == (20, "")


# ------------------------------------------------------------------ devices and ports
def test_more_gpus_than_the_machine_has_are_refused_from_the_device_list():
    cpu_only = [{"name": "/physical_device:CPU:0", "device_type": "CPU"}]
    with pytest.raises(ConfigError) as raised:
        devices.check_gpus(1, cpu_only)
    assert str(raised.value) == ("gpus (--gpus): 1 asked for, this machine has 0 (see ftgui "
                                 "devices); give --gpus 0 to train on the CPU")
    two = cpu_only + [{"name": f"/physical_device:GPU:{i}", "device_type": "GPU"}
                      for i in range(2)]
    devices.check_gpus(2, two)
    devices.check_gpus(0, [])  # nothing asked: not even listed


def test_a_cluster_port_in_use_is_named_before_any_process_starts(tmp_path, capsys):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        spec = f"worker=localhost:{port},localhost:0"
        with pytest.raises(ConfigError) as raised:
            cluster.check_ports(RunConfig(strategy="multi-worker", workers=2, cluster=spec))
        assert str(raised.value) == (
            f"cluster: localhost:{port}: port {port} on localhost is in use (Address already "
            "in use); pick a free port, or port 0 to let ftgui pick one"
        )
        run_dir = tmp_path / "run"
        assert cli.main(["train", str(run_dir), "--strategy", "multi-worker",
                         "--cluster", spec]) == 2
        assert capsys.readouterr().err.startswith(f"ftgui: cluster: localhost:{port}: port ")
        assert not (run_dir / "config.toml").exists()
    free = cluster.free_port()
    cluster.check_ports(RunConfig(strategy="multi-worker", workers=2,
                                  cluster=f"worker=localhost:{free},otherhost:{port}"))


# ------------------------------------------------------------------ fit runs
def test_fit_epoch_files_are_listed_with_what_restoring_them_means(tmp_path, capsys):
    run_dir = tmp_path / "run"
    configmod.save(run_dir, RunConfig(loop="fit"))
    folder = run_dir / fit_checkpoints.FIT_DIR
    folder.mkdir(parents=True)
    for epoch in (1, 2, 3):
        (folder / f"epoch-{epoch:03d}.weights.h5").write_bytes(b"h" * (100 * epoch))
    for epoch in (1, 2):
        fit_checkpoints.write_fit_metadata(folder / f"epoch-{epoch:03d}.weights.h5",
                                       step=22 * epoch, epoch=epoch - 1, loss=1.0 / epoch,
                                       val_loss=0.5, time=1000.0 + epoch)
    (folder / "epoch-002.weights.h5").write_bytes(b"h" * 150)  # cut short after its metadata
    rows = _listing(run_dir, capsys)
    assert [(r["step"], r["valid"], r["reason"], r["path"], r["restores"], r["size"])
            for r in rows] == [
        (0, False, "no metadata: the save did not finish", "fit-checkpoints/epoch-003.weights.h5",
         "fit: restores the epoch start", 300),
        (22, True, "", "fit-checkpoints/epoch-001.weights.h5",
         "fit: restores the epoch start", 100),
        (44, False, "epoch-002.weights.h5 has 150 bytes, expected 200",
         "fit-checkpoints/epoch-002.weights.h5", "fit: restores the epoch start", 150),
    ]
    assert rows[1]["loss"] == 1.0 and rows[1]["time"] == 1001.0
    assert listing.list_checkpoints(run_dir) == []  # ftgui's resume never takes them
    assert cli.main(["checkpoints", str(run_dir)]) == 0
    assert "yes (fit: restores the epoch start)" in capsys.readouterr().out


# ================================================================== with TensorFlow
@pytest.mark.tf
def test_kill_and_recovery_in_a_bracketed_path_match_an_uninterrupted_run(
    tmp_path, baseline_losses
):
    run_dir = tmp_path / "runs" / GLOBBY
    assert cli.main(["train", str(run_dir), *BASELINE_FLAGS, "--kill-at-step", "35",
                     "--auto-recover", "--restart-backoff", "0", "--quiet"]) == 0
    seen = events.read_all(run_dir)
    [resumed] = of_kind(seen, "resumed")
    assert (resumed["attempt"], resumed["from_step"], resumed["checkpoint"]) == (
        1, 30, "checkpoints/ckpt-30")
    assert of_kind(seen, "training_error") == []
    assert list(listing.checkpoint_dir(run_dir).glob("*.damaged")) == []
    assert events.final_losses(seen) == baseline_losses  # steps 31-60 to the bit
    [newest] = [c for c in listing.list_checkpoints(run_dir) if c.step == 60]
    inspected = tools.inspect(run_dir, 60, evaluate=True)  # a helper process
    assert inspected["evaluation"]["val_loss"] == pytest.approx(newest.meta["val_loss"])
    assert [c.step for c in listing.list_checkpoints(run_dir) if c.valid] == [
        20, 30, 40, 50, 60]


@pytest.mark.tf
def test_a_multi_worker_run_in_a_bracketed_path_recovers_and_keeps_its_retention(
    tmp_path, baseline_losses
):
    # The chief saves through CheckpointManager (whose retention globs), worker 1 into scratch.
    run_dir = tmp_path / "runs" / GLOBBY
    assert cli.main(["train", str(run_dir), "--strategy", "multi-worker", "--workers", "2",
                     "--steps", "40", "--checkpoint-every", "10", "--keep", "2",
                     "--kill-at-step", "25", "--auto-recover", "--restart-backoff", "0",
                     "--quiet"]) == 0
    seen = events.read_all(run_dir)
    [resumed] = of_kind(seen, "resumed")
    # worker 1 saved the last completed step just in time, through the same glob-free paths
    assert (resumed["attempt"], resumed["from_step"], resumed["source"]) == (
        1, 25, "just_in_time")
    # worker 1 may report losing its killed chief before ftgui ends it; no other error (a
    # path TensorFlow globbed would give NotFoundError)
    assert {e["error"].split(":")[0] for e in of_kind(seen, "training_error")} <= {
        "UnavailableError"}
    assert sorted(p.name for p in listing.checkpoint_dir(run_dir).iterdir()) == [
        "checkpoint", "ckpt-30.data-00000-of-00001", "ckpt-30.index", "ckpt-30.meta.json",
        "ckpt-40.data-00000-of-00001", "ckpt-40.index", "ckpt-40.meta.json",
    ]
    final = events.final_losses(seen)
    assert final == {step: baseline_losses[step] for step in range(1, 41)}
    assert not (run_dir / "scratch").exists()


@pytest.mark.tf
def test_a_good_checkpoint_that_does_not_fit_the_model_is_never_marked_damaged(
    tmp_path, baseline_run, capsys
):
    run_dir = tmp_path / "run"
    shutil.copytree(baseline_run, run_dir)
    before = _listing(run_dir, capsys)
    assert cli.main(["train", str(run_dir), "--resume", "--model", "cnn", "--steps", "80",
                     "--auto-recover", "--restart-backoff", "0", "--quiet"]) == 2
    err = capsys.readouterr().err
    # refused before TensorFlow starts, from what the checkpoint recorded (resume_check)
    assert err == ("ftgui: model: checkpoint ckpt-60 was saved by model mlp; this run asks "
                   "for cnn (resume with model mlp, or start a new run)\n")
    seen = events.read_all(run_dir)
    # refused, not retried on older checkpoints: no attempt after the baseline's own
    assert [e["attempt"] for e in of_kind(seen, "process_started")] == [0]
    assert list(listing.checkpoint_dir(run_dir).glob("*.damaged")) == []
    assert _listing(run_dir, capsys) == before
    # A checkpoint that records nothing to compare (an older ftgui, no run_started): the
    # trainer finds it intact, refuses, and marks nothing.
    prefix = listing.checkpoint_dir(run_dir) / "ckpt-60"
    meta = json.loads(listing.meta_path(prefix).read_text())
    listing.write_metadata(prefix, loss=meta["loss"], val_loss=meta["val_loss"],
                               time=meta["time"], strategy=meta["strategy"])
    lines = (run_dir / "events.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "events.jsonl").write_text("".join(
        line for line in lines if '"run_started"' not in line))
    before = _listing(run_dir, capsys)
    assert cli.main(["train", str(run_dir), "--resume", "--model", "cnn", "--steps", "80",
                     "--auto-recover", "--restart-backoff", "0", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ftgui: run failed: exited with status 2 (bad configuration): "
                          "checkpoint checkpoints/ckpt-60 is intact but does not restore here (")
    seen = events.read_all(run_dir)
    assert [e["attempt"] for e in of_kind(seen, "process_started")] == [0, 1]
    assert list(listing.checkpoint_dir(run_dir).glob("*.damaged")) == []
    assert _listing(run_dir, capsys) == before


@pytest.mark.tf
def test_a_resume_of_a_run_killed_before_its_first_checkpoint_says_so_and_cleans_up(
    tmp_path, baseline_losses, capsys
):
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), *BASELINE_FLAGS, "--kill-at-step", "5",
                     "--quiet"]) == 1
    directory = listing.checkpoint_dir(run_dir)
    directory.mkdir(exist_ok=True)
    (directory / "ckpt-10_temp").mkdir()  # as a kill during the first save leaves it
    (directory / "checkpoint.tmp0b1c").write_bytes(b"")
    capsys.readouterr()
    assert cli.main(["train", str(run_dir), "--resume", "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"no valid checkpoint in {run_dir}; starting from step 0",
                   f"finished: step 60 of 60, final loss {baseline_losses[60]!r}"]
    assert not (directory / "ckpt-10_temp").exists()
    assert not (directory / "checkpoint.tmp0b1c").exists()
    log = (run_dir / "logs" / "chief-0.attempt-1.log").read_text()
    assert "removed leftovers of interrupted saves: checkpoint.tmp0b1c, ckpt-10_temp" in log
    assert events.final_losses(events.read_all(run_dir)) == baseline_losses


@pytest.mark.tf
def test_a_gpu_run_on_a_machine_without_one_is_refused_and_leaves_no_folder(tmp_path, capsys):
    if devices.gpu_count(devices.list_devices()):
        pytest.skip("this machine has a GPU")
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--gpus", "1", "--steps", "5"]) == 2
    assert capsys.readouterr().err == (
        "ftgui: gpus (--gpus): 1 asked for, this machine has 0 (see ftgui devices); "
        "give --gpus 0 to train on the CPU\n"
    )
    assert not run_dir.exists()


@pytest.mark.tf
def test_a_fit_run_lists_its_epoch_files_and_writes_tensorboard_summaries(tmp_path, capsys):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = tmp_path / "run"
    # digits: 1,437 training examples / 64 = 22 steps per epoch
    assert cli.main(["train", str(run_dir), "--loop", "fit", "--steps", "44",
                     "--checkpoint-every", "10", "--quiet"]) == 0
    rows = _listing(run_dir, capsys)
    assert [(r["step"], r["valid"], r["path"], r["restores"]) for r in rows] == [
        (22, True, "fit-checkpoints/epoch-001.weights.h5", "fit: restores the epoch start"),
        (44, True, "fit-checkpoints/epoch-002.weights.h5", "fit: restores the epoch start"),
    ]
    validation = {e["step"]: e["val_loss"] for e in of_kind(events.read_all(run_dir),
                                                             "validation")}
    assert {r["step"]: r["val_loss"] for r in rows} == validation
    accumulator = EventAccumulator(str(run_dir / "tensorboard")).Reload()
    assert [s.step for s in accumulator.Scalars("loss")] == list(range(1, 45))
    assert [s.step for s in accumulator.Scalars("val_loss")] == [22, 44]
    assert sorted(os.listdir(run_dir / "fit-metadata")) == [
        "epoch-001.meta.json", "epoch-002.meta.json"]  # Keras' folder holds only its files
