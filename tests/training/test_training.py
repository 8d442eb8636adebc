"""Real training: a killed run resumes exactly where it stopped, the loss does not depend on the
replica count, a fork keeps history, and the data position is a pure function of the step."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import psutil
import pytest
from conftest import BASELINE_FLAGS, converted_model, made_once, of_kind, poll_until_done

from ftgui import cli
from ftgui.core.checkpoints import listing
from ftgui.core.record import events
from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision.supervisor import Supervisor
from ftgui.training import data
from ftgui.training.data import StepBatches

# ----------------------------------------------------------------- kill at 35, resume from 30


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory):
    """The baseline run crashed (SIGKILL) right after step 35, then `ftgui train RUN --resume`
    (once per session, whichever xdist worker asks first: `made_once`; what the tests read of
    it is kept in outcome.json)."""
    def crash_and_resume(folder: Path) -> None:
        run_dir = folder / "run"
        with contextlib.redirect_stderr(io.StringIO()) as kill_err:
            kill_status = cli.main(["train", str(run_dir), *BASELINE_FLAGS, "--kill-at-step",
                                    "35", "--quiet"])
        newest_after_kill = listing.newest_valid(run_dir)
        events_after_kill = events.read_all(run_dir)
        resume_status = cli.main(["train", str(run_dir), "--resume", "--quiet"])
        (folder / "outcome.json").write_text(json.dumps({
            "kill_status": kill_status, "kill_err": kill_err.getvalue(),
            "newest_after_kill": newest_after_kill and newest_after_kill.step,
            "events_after_kill": events_after_kill, "resume_status": resume_status}))

    folder = made_once(tmp_path_factory, "killed-at-35-then-resumed", crash_and_resume)
    outcome = json.loads((folder / "outcome.json").read_text())
    return SimpleNamespace(
        run_dir=folder / "run", kill_status=outcome["kill_status"],
        kill_err=outcome["kill_err"],
        newest_after_kill=SimpleNamespace(step=outcome["newest_after_kill"]),
        events_after_kill=outcome["events_after_kill"],
        resume_status=outcome["resume_status"], events=events.read_all(folder / "run"),
    )


@pytest.mark.tf
def test_the_crash_at_step_35_stops_the_run_with_checkpoint_30_newest(killed_run):
    assert killed_run.kill_status == 1
    assert killed_run.kill_err.splitlines()[-1] == (
        f"ftgui: `ftgui train {killed_run.run_dir} --resume` goes on from checkpoint 30")
    assert killed_run.newest_after_kill.step == 30
    logged = [e["step"] for e in of_kind(killed_run.events_after_kill, "step")]
    assert logged == list(range(1, 36))
    [exited] = of_kind(killed_run.events_after_kill, "process_exited")
    assert (exited["signal"], exited["last_step"]) == (9, 35)
    [fault] = of_kind(killed_run.events_after_kill, "fault_injected")
    assert (fault["kind"], fault["step"], fault["source"]) == ("kill", 35, "schedule")


@pytest.mark.tf
def test_a_resumed_run_has_the_losses_of_a_run_never_killed_to_the_bit(
    killed_run, baseline_losses
):
    assert killed_run.resume_status == 0
    losses = events.final_losses(killed_run.events)
    assert sorted(losses) == list(range(1, 61))
    after_checkpoint = {step: losses[step] for step in range(31, 61)}
    assert after_checkpoint == {step: baseline_losses[step] for step in range(31, 61)}
    assert losses == baseline_losses
    assert of_kind(killed_run.events, "fault_injected", attempt=1) == []  # not crashed again


@pytest.mark.tf
def test_the_resumed_event_names_the_checkpoint_step_and_training_goes_on_after_it(killed_run):
    [resumed] = of_kind(killed_run.events, "resumed")
    assert resumed["attempt"] == 1
    assert resumed["checkpoint"] == "checkpoints/ckpt-30"
    assert resumed["from_step"] == killed_run.newest_after_kill.step == 30
    assert resumed["optimizer_iterations"] == 30
    [started] = of_kind(killed_run.events, "process_started", attempt=1)
    assert started["restore"] == "checkpoints/ckpt-30"
    resumed_steps = [e["step"] for e in of_kind(killed_run.events, "step", attempt=1)]
    assert resumed_steps == list(range(31, 61))


@pytest.mark.tf
def test_every_logged_step_is_in_the_epoch_the_step_counter_says(killed_run):
    digits = data.load("digits")
    batches = StepBatches(len(digits.x_train), 64, seed=42)
    logged = [(e["step"], e["epoch"]) for e in of_kind(killed_run.events, "step")]
    assert logged == [(step, batches.epoch_of(step)) for step, _ in logged]
    assert batches.steps_per_epoch == 22
    assert {epoch for _, epoch in logged} == {0, 1, 2}


@pytest.mark.tf
def test_automatic_recovery_finishes_a_crashed_run_in_one_command(
    tmp_path, baseline_losses, capsys
):
    run_dir = tmp_path / "run"
    status = cli.main(["train", str(run_dir), *BASELINE_FLAGS, "--kill-at-step", "35",
                       "--auto-recover", "--restart-backoff", "0.1", "--quiet"])

    assert status == 0
    final_loss = baseline_losses[60]
    assert capsys.readouterr().out == f"finished: step 60 of 60, final loss {final_loss}\n"
    all_events = events.read_all(run_dir)
    assert [(e["attempt"], e.get("signal"), e.get("exit_code"))
            for e in of_kind(all_events, "process_exited")] == [(0, 9, None), (1, None, 0)]
    [scheduled] = of_kind(all_events, "recovery_scheduled")
    assert (scheduled["delay"], scheduled["restart"]) == (0.1, 1)
    [resumed] = of_kind(all_events, "resumed")
    assert (resumed["attempt"], resumed["from_step"]) == (1, 30)
    assert events.final_losses(all_events) == baseline_losses
    [finished] = of_kind(all_events, "run_finished")
    assert (finished["step"], finished["loss"]) == (60, final_loss)


@pytest.mark.tf
def test_a_paced_run_crashed_and_recovered_has_the_losses_of_a_full_speed_run(
    tmp_path, baseline_losses
):
    """`--pace 20`: the trainer waits between steps (29 steps take at least 29/20 s) and every
    loss, the redone steps' too, equals the unpaced baseline's to the bit."""
    run_dir = tmp_path / "run"
    status = cli.main(["train", str(run_dir), *BASELINE_FLAGS, "--kill-at-step", "35",
                       "--auto-recover", "--restart-backoff", "0.1", "--pace", "20",
                       "--quiet"])
    assert status == 0
    all_events = events.read_all(run_dir)
    assert events.final_losses(all_events) == baseline_losses
    redone = {e["step"]: e["loss"] for e in of_kind(all_events, "step", attempt=1)}
    assert redone == {step: baseline_losses[step] for step in range(31, 61)}
    mono = {e["step"]: e["mono"] for e in of_kind(all_events, "step", attempt=1)}
    assert mono[60] - mono[31] >= 29 / 20


# ----------------------------------------------------------------- replicas


@pytest.mark.tf
def test_the_first_loss_is_the_same_for_1_2_and_4_replicas(tmp_path, baseline_losses):
    first_loss = {2: baseline_losses[1]}  # the baseline: 2 replicas, global batch 64
    supervisors = {}
    for replicas in (1, 4):  # two trainers at once
        supervisors[replicas] = Supervisor(tmp_path / f"replicas-{replicas}")
        supervisors[replicas].start(
            RunConfig(replicas=replicas, global_batch_size=64, steps=1, checkpoint_every=100)
        )
    for replicas, supervisor in supervisors.items():
        seen = poll_until_done(supervisor)
        assert supervisor.state == "finished"
        [started] = of_kind(seen, "training_started")
        assert started["replicas"] == replicas
        assert len(started["devices"]) == replicas
        [step] = of_kind(seen, "step")
        first_loss[replicas] = step["loss"]

    assert abs(first_loss[1] - first_loss[2]) <= 1e-6
    assert abs(first_loss[4] - first_loss[2]) <= 1e-6
    assert 2.0 < first_loss[1] < 2.6  # about ln(10): an untrained 10-class model


# ----------------------------------------------------------------- fork


@pytest.fixture(scope="module")
def forked_at_20(tmp_path_factory, baseline_run):
    """A copy of the baseline run forked at step 20 (`ftgui train RUN --resume --from-step
    20`): its folder and the fork's exit status. Made once per session (`made_once`); tests
    only read it."""
    def fork(folder: Path) -> None:
        shutil.copytree(baseline_run, folder / "run")
        status = cli.main(["train", str(folder / "run"), "--resume", "--from-step", "20",
                           "--quiet"])
        (folder / "status").write_text(str(status))

    folder = made_once(tmp_path_factory, "baseline-forked-at-20", fork)
    return folder / "run", int((folder / "status").read_text())


@pytest.mark.tf
def test_a_fork_from_step_20_archives_newer_checkpoints_and_replays_the_same_losses(
    forked_at_20, baseline_run, baseline_losses
):
    run_dir, status = forked_at_20
    # the copy's newer checkpoints before the fork: the baseline's (copied byte for byte)
    newer_files = {p.name: p.read_bytes()
                   for p in (baseline_run / "checkpoints").glob("ckpt-[3456]0.*")}
    assert len(newer_files) == 4 * 3  # index, one data shard, metadata

    assert status == 0
    archive = run_dir / "history" / "fork-1"
    assert {p.name: p.read_bytes() for p in (archive / "checkpoints").iterdir()} == newer_files
    assert [(c.step, c.valid) for c in listing.list_checkpoints(archive)] == [
        (30, True), (40, True), (50, True), (60, True)
    ]
    all_events = events.read_all(run_dir)
    [forked] = of_kind(all_events, "forked")
    assert (forked["attempt"], forked["from_step"], forked["archived_steps"]) == (
        1, 20, [30, 40, 50, 60]
    )
    assert forked["archive"] == "history/fork-1/checkpoints"
    [resumed] = of_kind(all_events, "resumed")
    assert (resumed["from_step"], resumed["checkpoint"]) == (20, "checkpoints/ckpt-20")
    branch = {e["step"]: e["loss"] for e in of_kind(all_events, "step", attempt=1)}
    assert branch == {step: baseline_losses[step] for step in range(21, 61)}
    # The branch wrote its own checkpoints; the run's checkpoints are whole again.
    assert [(c.step, c.valid) for c in listing.list_checkpoints(run_dir)] == [
        (20, True), (30, True), (40, True), (50, True), (60, True)
    ]


# ----------------------------------------------------------------- data position (no TF)


def test_the_batch_of_a_step_is_the_same_whatever_came_before():
    walked = StepBatches(n_train=1438, global_batch_size=64, seed=42)
    visited = {step: walked.indices(step).copy() for step in [1, 2, 23, 24, 31, 60, 5, 31]}
    for step, indices in visited.items():
        fresh = StepBatches(n_train=1438, global_batch_size=64, seed=42)
        assert np.array_equal(fresh.indices(step), indices), step
    other_seed = StepBatches(n_train=1438, global_batch_size=64, seed=43)
    assert not np.array_equal(other_seed.indices(1), visited[1])


def test_an_epoch_sees_each_example_at_most_once_and_the_next_epoch_reshuffles():
    batches = StepBatches(n_train=100, global_batch_size=32, seed=7)
    assert batches.steps_per_epoch == 3
    assert [batches.epoch_of(step) for step in range(1, 8)] == [0, 0, 0, 1, 1, 1, 2]
    epoch_0 = np.concatenate([batches.indices(step) for step in (1, 2, 3)])
    epoch_1 = np.concatenate([batches.indices(step) for step in (4, 5, 6)])
    for epoch in (epoch_0, epoch_1):
        assert len(epoch) == 96 and len(set(epoch.tolist())) == 96  # 4 examples dropped
        assert set(epoch.tolist()) <= set(range(100))
    assert not np.array_equal(epoch_0, epoch_1)
    assert [len(batches.indices(step)) for step in range(1, 8)] == [32] * 7


@pytest.mark.parametrize("replicas", [1, 2, 4])
def test_replica_slices_partition_the_global_batch_in_order(replicas):
    indices = StepBatches(n_train=1438, global_batch_size=64, seed=42).indices(31)
    slices = [StepBatches.replica_slice(indices, r, replicas) for r in range(replicas)]
    assert [len(s) for s in slices] == [64 // replicas] * replicas
    assert np.array_equal(np.concatenate(slices), indices)


def test_a_global_batch_larger_than_the_training_split_is_refused():
    with pytest.raises(ValueError) as caught:
        StepBatches(n_train=100, global_batch_size=128, seed=0)
    assert str(caught.value) == (
        "global_batch_size: 128 is larger than the 100 training examples"
    )


def test_digits_are_split_into_fixed_training_and_validation_sets():
    digits = data.load("digits")
    assert (len(digits.x_train), len(digits.x_val)) == (1438, 359)
    assert digits.input_shape == (8, 8) and digits.num_classes == 10
    assert digits.x_train.dtype == np.float32 and digits.y_train.dtype == np.int32
    assert 0.0 <= digits.x_train.min() and digits.x_train.max() == 1.0
    assert np.array_equal(data.load("digits").y_val, digits.y_val)


def test_digits_are_read_from_scikit_learns_file_as_load_digits_gives_them():
    from sklearn.datasets import load_digits

    images, target = data.digits()
    expected = load_digits()
    assert images.dtype == expected.images.dtype and target.dtype == expected.target.dtype
    assert np.array_equal(images, expected.images) and np.array_equal(target, expected.target)


@pytest.mark.tf
def test_a_trainer_imports_keras_without_scikit_learn_and_ipython_and_a_user_still_can():
    """Keras imports both only for extras no trainer uses (`ftgui.training._NotForKeras`)."""
    script = ("import sys, ftgui.training, keras, keras.src.wrappers.fixes as fixes\n"
              "print(sorted({'sklearn', 'IPython'} & set(sys.modules)), fixes.sklearn)\n"
              "import sklearn.datasets\n"
              "print(len(sklearn.datasets.load_digits().target))\n")
    assert printed_by(script) == ["[] None", "1797"]


@pytest.mark.tf
def test_tensorflow_is_imported_with_the_collector_paused_then_frozen_and_left_as_found():
    """`import_tensorflow` freezes what the import made, restores the collector's state, and
    does nothing the second time."""
    script = ("import gc, sys\n"
              "from ftgui.training.imports import import_tensorflow\n"
              "gc.disable()\n"
              "import_tensorflow()\n"
              "frozen = gc.get_freeze_count()\n"
              "both = {'tensorflow', 'keras'} <= set(sys.modules)\n"
              "print(gc.isenabled(), frozen > 100_000, both)\n"
              "gc.enable()\n"
              "import_tensorflow()\n"
              "print(gc.isenabled(), gc.get_freeze_count() == frozen)\n")
    assert printed_by(script) == ["False True True", "True True"]


def printed_by(script: str) -> list[str]:
    """The lines `script` prints, run by a new Python process that must exit 0."""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_a_users_npz_is_scaled_and_split(tmp_path):
    path = tmp_path / "mine.npz"
    x = np.arange(50 * 4, dtype=np.uint8).reshape(50, 2, 2)
    np.savez(path, x=x, y=np.arange(50) % 3)
    mine = data.load(str(path))
    assert (mine.name, len(mine.x_train), len(mine.x_val), mine.num_classes) == (
        "mine.npz", 40, 10, 3
    )
    assert mine.x_train.dtype == np.float32 and mine.x_train.max() <= 199 / 255
    assert sorted(np.concatenate([mine.y_train, mine.y_val]).tolist()) == sorted(
        (np.arange(50) % 3).tolist()
    )


def test_float_targets_of_a_classification_say_how_to_train_a_regression():
    with pytest.raises(ValueError) as caught:
        data._arrays("mine.py:load", "train", np.zeros((4, 2)), np.zeros((4, 2)),
                     "classification")
    assert str(caught.value) == (
        "dataset: mine.py:load: y_train must be 1-D integer class ids from 0, not float64 "
        "(4, 2); for numeric targets give --task regression")


@pytest.mark.parametrize(
    ("arrays", "problem"),
    [
        ({"x": np.zeros((4, 2))}, " has no array 'y' (needs x and y)"),
        ({"y": np.zeros(4, dtype=int)}, " has no array 'x' (needs x and y)"),
        ({"x": np.zeros((4, 2)), "y": np.zeros(3, dtype=int)},
         ": y must be 1-D with one label per row of x"),
        ({"x": np.zeros((4, 2)), "y": np.zeros(4)}, ": y must hold integer class ids from 0"),
        ({"x": np.zeros((4, 2)), "y": np.array([0, 1, -1, 2])},
         ": y must hold integer class ids from 0"),
    ],
)
def test_an_npz_that_does_not_fit_names_the_problem(tmp_path, arrays, problem):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(ValueError) as caught:
        data.load(str(path))
    assert str(caught.value) == f"dataset: {path}{problem}"


@pytest.mark.tf
@pytest.mark.parametrize("flags", [["--replicas", "4"], ["--strategy", "one-device"],
                                   ["--strategy", "default"]])
def test_a_copied_two_replica_run_resumes_on_other_devices_at_the_same_data_position(
    tmp_path, baseline_run, baseline_losses, flags
):
    copy = tmp_path / "moved-run"
    shutil.copytree(baseline_run, copy)  # nothing inside may point at the old folder
    assert cli.main(["train", str(copy), "--resume", "--from-step", "30", *flags,
                     "--quiet"]) == 0
    seen = events.read_all(copy)
    [resumed] = of_kind(seen, "resumed")
    assert (resumed["from_step"], resumed["checkpoint"]) == (30, "checkpoints/ckpt-30")
    [started] = [e for e in of_kind(seen, "training_started") if e["attempt"] == 1]
    assert started["replicas"] == (4 if "--replicas" in flags else 1)
    resumed_losses = {e["step"]: e["loss"] for e in of_kind(seen, "step") if e["attempt"] == 1}
    assert min(resumed_losses) == 31
    assert abs(resumed_losses[31] - baseline_losses[31]) <= 1e-5


@pytest.mark.tf
def test_tensorboard_shows_the_same_losses_as_the_events(baseline_run, baseline_losses):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    board = EventAccumulator(str(baseline_run / "tensorboard"), size_guidance={"scalars": 0})
    board.Reload()
    assert {"loss", "val_loss", "val_accuracy"} <= set(board.Tags()["scalars"])
    losses = {e.step: e.value for e in board.Scalars("loss")}
    # TensorBoard keeps scalars as float32; the trainer's losses are float32 values too
    assert losses == baseline_losses
    val_steps = [e.step for e in board.Scalars("val_loss")]
    assert val_steps == [10, 20, 30, 40, 50, 60]


@pytest.mark.tf
def test_a_checkpoint_with_flipped_bytes_is_marked_damaged_and_recovery_takes_the_one_before(
    tmp_path, baseline_run, baseline_losses
):
    run_dir = tmp_path / "run"
    shutil.copytree(baseline_run, run_dir)
    data_file = run_dir / "checkpoints" / "ckpt-60.data-00000-of-00001"
    damaged = bytearray(data_file.read_bytes())
    damaged[len(damaged) // 2: len(damaged) // 2 + 100] = bytes(100)  # same size, other bytes
    data_file.write_bytes(bytes(damaged))
    assert listing.newest_valid(run_dir).step == 60  # sizes alone cannot tell

    # without automatic recovery too: resuming promises the newest valid checkpoint
    assert cli.main(["train", str(run_dir), "--resume", "--steps", "70",
                     "--restart-backoff", "0", "--quiet"]) == 0
    seen = events.read_all(run_dir)
    [failed] = [e for e in of_kind(seen, "process_exited") if e.get("exit_code") == 4]
    assert "ckpt-60 is damaged" in failed["reason"]
    [resumed] = of_kind(seen, "resumed")
    assert resumed["from_step"] == 50
    marked = [e for e in seen if e["event"] == "training_error"][0]["error"]
    assert "DataLossError" in marked
    resaved = [c for c in listing.list_checkpoints(run_dir) if c.step == 60][0]
    assert resaved.valid  # saved again by the resumed attempt, the old verdict gone
    losses = {e["step"]: e["loss"] for e in of_kind(seen, "step") if e["attempt"] == 2}
    assert losses[51] == baseline_losses[51]


@pytest.mark.tf
def test_checkpoints_are_written_off_the_step_path_and_tensorflow_finds_the_kept_ones(
    baseline_run,
):
    import tensorflow as tf

    saved = of_kind(events.read_all(baseline_run), "checkpoint_saved")
    assert [e["step"] for e in saved] == [10, 20, 30, 40, 50, 60]
    assert all(e["background"] for e in saved)  # mirrored: a shadow copy, a writer thread
    assert all(0 < e["stall_seconds"] for e in saved)
    kept = [c.step for c in listing.list_checkpoints(baseline_run) if c.valid]
    assert kept == [20, 30, 40, 50, 60]  # keep = 5
    directory = str(baseline_run / "checkpoints")
    state = tf.train.get_checkpoint_state(directory)  # the state file the clerk wrote
    assert state.model_checkpoint_path.endswith("ckpt-60")
    assert [p.rsplit("/", 1)[-1] for p in state.all_model_checkpoint_paths] == [
        f"ckpt-{s}" for s in kept]
    assert list(state.all_model_checkpoint_timestamps) == [
        c.time for c in listing.list_checkpoints(baseline_run) if c.valid]
    assert tf.train.latest_checkpoint(directory) == f"{directory}/ckpt-60"
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(), directory, max_to_keep=5)
    assert manager.checkpoints == [f"{directory}/ckpt-{s}" for s in kept]
    # no checkpoint clerk of the run is left (it runs as `… checkpoints.clerk DIRECTORY KEEP`)
    assert not [p for p in psutil.process_iter(["cmdline"])
                if directory in (p.info["cmdline"] or [])]


@pytest.mark.tf
def test_tensorboard_shows_each_step_once_after_a_fork(forked_at_20, baseline_losses):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir, status = forked_at_20  # the fork of the test above, trained once for both
    assert status == 0
    board = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"scalars": 0})
    board.Reload()
    losses = [(e.step, e.value) for e in board.Scalars("loss")]
    assert [step for step, _ in losses] == list(range(1, 61))  # 21-60 once, not twice
    assert dict(losses) == baseline_losses
    assert [e.step for e in board.Scalars("val_loss")] == [10, 20, 30, 40, 50, 60]


def test_a_failed_background_save_stops_training_at_the_next_step_and_names_the_checkpoint():
    import time

    from ftgui.training.checkpoint_writer import CheckpointWriteError, OneWriter, write_error

    prefix = Path("/r/checkpoints/ckpt-200")
    tf_message = ("Graph execution error:\n\nDetected at node SaveV2 defined at ...\n"
                  "/r/checkpoints/ckpt-200_temp/part-00000-of-00001; Operation not permitted\n"
                  "\t [[{{node SaveV2}}]] [Op:__inference__write_on_one_device_42]")

    def failing_save():
        raise write_error(prefix, RuntimeError(tf_message))

    writer = OneWriter()
    writer.check()  # nothing in flight: nothing to say
    writer.submit(failing_save)
    while not writer._future.done():
        time.sleep(0.01)
    with pytest.raises(CheckpointWriteError) as caught:
        writer.check()  # the step after: not at the next checkpoint
    assert str(caught.value) == (
        "checkpoint ckpt-200 was not written: "
        "/r/checkpoints/ckpt-200_temp/part-00000-of-00001; Operation not permitted")
    writer.close()


@pytest.mark.tf
def test_a_trainer_leaves_no_autograph_files_in_the_temporary_folder(tmp_path, monkeypatch):
    """TensorFlow deletes its autograph files at interpreter exit, which the trainer's fast
    exit (`os._exit`) skips: the trainer deletes them itself (a user's `@tf.function` is
    converted; ftgui's own step is not)."""
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))  # the trainer's; this process's is cached
    assert cli.main(["train", str(tmp_path / "run"), "--model", converted_model(tmp_path),
                     "--strategy", "default", "--steps", "3", "--quiet"]) == 0
    assert list(private.glob("__autograph_generated_file*")) == []
    assert list(private.glob("ftgui-autograph-*")) == []  # nor its own folder of them
    assert (tmp_path / "run" / "checkpoints").is_dir()  # it did train


@pytest.mark.tf
def test_a_leftover_in_the_way_of_a_restore_from_memory_is_removed_first(
        tmp_path, baseline_losses):
    """A folder named like the metadata temp file of the step a resume restores from memory
    (what a save failed by it leaves, e.g. a folder made there by hand): the resume removes
    the leftover before it writes that step's checkpoint, instead of failing every time."""
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), *BASELINE_FLAGS, "--snapshot-every", "1",
                     "--kill-at-step", "23", "--quiet"]) != 0
    (run_dir / "checkpoints" / "ckpt-23.meta.json.tmp").mkdir()
    supervisor = Supervisor(run_dir)
    supervisor.start(RunConfig(steps=60, checkpoint_every=10, snapshot_every=1), resume=True)
    seen = poll_until_done(supervisor)
    [resumed] = of_kind(seen, "resumed")
    assert (resumed["source"], resumed["from_step"]) == ("memory", 23)
    assert listing.find(run_dir, 23).valid
    assert events.final_losses(seen) == baseline_losses
    assert not (run_dir / "checkpoints" / "ckpt-23.meta.json.tmp").exists()


@pytest.mark.tf
def test_a_checkpoint_whose_state_file_fails_is_still_reported_saved(tmp_path):
    """Retention or the state file failing after the metadata: the checkpoint is valid, so
    `checkpoint_saved` is written before the error stops training."""
    from ftgui.core.checkpoints.clerk import Clerk, ClerkError
    from ftgui.training.actions.checkpoint import CheckpointAction
    from ftgui.training.data import DataPosition

    directory = tmp_path / "checkpoints"
    (directory / "checkpoint" / "x").mkdir(parents=True)  # the state file cannot replace it

    def write_and_evaluate(prefix, x, y):
        for name in (f"{prefix.name}.index", f"{prefix.name}.data-00000-of-00001"):
            (prefix.parent / name).write_bytes(b"x" * 10)
        return ({f"{prefix.name}.index": 10, f"{prefix.name}.data-00000-of-00001": 10},
                0.5, 0.75)

    emitted = []
    action = CheckpointAction.__new__(CheckpointAction)
    action.directory, action.manager = directory, None
    action.shadow = SimpleNamespace(write_and_evaluate=write_and_evaluate)
    action.data = SimpleNamespace(x_val=None, y_val=None)
    action.state = SimpleNamespace()
    action.events = SimpleNamespace(emit=lambda kind, **f: emitted.append((kind, f)))
    action.summaries = SimpleNamespace(scalar=lambda *a: None, flush=lambda: None)
    action.clerk = Clerk(directory, 3, {})  # not started: the same work in this thread
    action.kill_inside = None  # no kill-in-save fault planned
    fields = {"loss": 0.25, "time": 5.0, "epoch": 0, "requested": False,
              "position": DataPosition(epoch=0, offset=40, examples_seen=40)}
    with pytest.raises(ClerkError, match="^checkpoint ckpt-40 is saved, but TensorFlow's "
                                         "state file could not be rewritten: Is a directory"):
        action._complete_save(40, fields, None, 0.001)
    assert [kind for kind, _ in emitted] == ["validation", "checkpoint_saved"]
    assert emitted[1][1]["path"] == "checkpoints/ckpt-40" and emitted[1][1]["step"] == 40
    assert listing.read_info(directory / "ckpt-40").valid
