"""The checkpoint clerk: metadata, retention and the state file of each background save, done
in a helper process, or in the caller's thread when the helper is gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import psutil
import pytest

from ftgui.core.checkpoints import clerk as checkpoint_clerk
from ftgui.core.checkpoints import listing
from ftgui.core.checkpoints.clerk import Clerk, ClerkError, serve
from ftgui.core.checkpoints.state_file import point_state_file, state_text

RECORD = {"model": "mlp", "strategy": "mirrored", "replicas": 2}


def tf_files(directory, step: int) -> dict[str, int]:
    """A checkpoint's TensorFlow files as a trainer leaves them before its bookkeeping."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {f"ckpt-{step}.index": 100 + step, f"ckpt-{step}.data-00000-of-00001": 1000}
    for name, size in files.items():
        (directory / name).write_bytes(b"x" * size)
    return files


def save(clerk: Clerk, directory, step: int) -> dict[str, int]:
    return clerk.finish(step, tf_files(directory, step),
                        {"loss": 1.0 / step, "time": 1_000_000.0 + step,
                         "data_position": {"epoch": 0, "offset": step, "examples_seen": step}})


def state_lines(directory) -> list[str]:
    return (directory / "checkpoint").read_text().splitlines()


@pytest.fixture
def clerk(tmp_path):
    directory = listing.checkpoint_dir(tmp_path)
    clerk = Clerk(directory, keep=2, record=RECORD)
    clerk.start()
    yield clerk
    clerk.close()


def test_the_clerk_makes_each_checkpoint_valid_keeps_the_newest_and_points_tensorflow_at_them(
        tmp_path, clerk):
    directory = listing.checkpoint_dir(tmp_path)
    for step in (10, 20, 30):
        files = save(clerk, directory, step)
        assert clerk.running
        assert files[f"ckpt-{step}.meta.json"] == listing.meta_path(
            directory / f"ckpt-{step}").stat().st_size
    listed = listing.list_checkpoints(tmp_path)
    assert [(c.step, c.valid) for c in listed] == [(20, True), (30, True)]  # keep = 2
    meta = listed[-1].meta
    assert {k: meta[k] for k in RECORD} == RECORD
    assert (meta["step"], meta["loss"], meta["time"]) == (30, 1.0 / 30, 1_000_030.0)
    assert meta["data_position"] == {"epoch": 0, "offset": 30, "examples_seen": 30}
    assert state_lines(directory) == [
        'model_checkpoint_path: "ckpt-30"',
        'all_model_checkpoint_paths: "ckpt-20"', 'all_model_checkpoint_paths: "ckpt-30"',
        "all_model_checkpoint_timestamps: 1000020.0",
        "all_model_checkpoint_timestamps: 1000030.0"]


def test_the_clerk_runs_at_the_lowest_priority_and_ignores_the_signals_sent_to_the_trainer(
        tmp_path, clerk):
    directory = listing.checkpoint_dir(tmp_path)
    save(clerk, directory, 10)  # the helper has started and read its first message
    process = psutil.Process(clerk._process.pid)
    assert process.nice() == 19
    assert process.cmdline()[-4:] == ["ftgui.core.checkpoints.clerk", str(directory), "2",
                                      str(os.getpid())]
    for sig in (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT):
        os.kill(process.pid, sig)  # a preemption or a save request to the trainer's group
    save(clerk, directory, 20)
    assert clerk.running and process.is_running()


def test_a_clerk_whose_trainer_is_gone_exits(tmp_path, clerk):
    save(clerk, listing.checkpoint_dir(tmp_path), 10)
    process = clerk._process
    process.stdin.close()  # what a SIGKILLed trainer's pipe does
    assert process.wait(timeout=10) == 0


def test_close_ends_the_clerk(tmp_path, clerk):
    save(clerk, listing.checkpoint_dir(tmp_path), 10)
    process = clerk._process
    clerk.close()
    assert process.poll() == 0 and not clerk.running


def test_a_dead_clerk_hands_the_work_back_and_nothing_is_lost(tmp_path, clerk, capfd):
    directory = listing.checkpoint_dir(tmp_path)
    save(clerk, directory, 10)
    clerk._process.kill()
    clerk._process.wait()
    save(clerk, directory, 20)
    save(clerk, directory, 30)
    assert not clerk.running
    assert [(c.step, c.valid) for c in listing.list_checkpoints(tmp_path)] == [
        (20, True), (30, True)]
    assert state_lines(directory)[0] == 'model_checkpoint_path: "ckpt-30"'
    assert "checkpoint clerk exited" in capfd.readouterr().out


def test_a_clerk_that_cannot_write_says_which_checkpoint_and_why(tmp_path, clerk):
    directory = listing.checkpoint_dir(tmp_path)
    files = tf_files(directory, 10)
    listing.meta_path(directory / "ckpt-10").with_name("ckpt-10.meta.json.tmp").mkdir()
    with pytest.raises(ClerkError, match=r"^checkpoint ckpt-10 was not saved: its metadata "
                       r"could not be written: Is a directory \(.*ckpt-10\.meta\.json\.tmp\)$"
                       ) as caught:
        clerk.finish(10, files, {"loss": 0.1, "time": 1.0})
    assert caught.value.files is None
    assert clerk.running  # the next save is tried again
    assert not listing.list_checkpoints(tmp_path)[0].valid


def test_a_state_file_that_cannot_be_replaced_is_named_and_the_checkpoint_stays_valid(
        tmp_path, clerk):
    directory = listing.checkpoint_dir(tmp_path)
    (directory / "checkpoint" / "x").mkdir(parents=True)  # rename onto it fails
    with pytest.raises(ClerkError) as caught:
        save(clerk, directory, 10)
    assert str(caught.value) == (
        "checkpoint ckpt-10 is saved, but TensorFlow's state file could not be rewritten: "
        f"Is a directory ({directory / 'checkpoint'})")
    assert sorted(caught.value.files) == [
        "ckpt-10.data-00000-of-00001", "ckpt-10.index", "ckpt-10.meta.json"]
    assert [(c.step, c.valid) for c in listing.list_checkpoints(tmp_path)] == [(10, True)]
    assert not list(directory.glob("checkpoint.tmp*"))


def test_without_the_helper_the_same_work_is_done_here(tmp_path):
    directory = listing.checkpoint_dir(tmp_path)
    clerk = Clerk(directory, keep=1, record=RECORD)  # never started
    save(clerk, directory, 10)
    save(clerk, directory, 20)
    assert [(c.step, c.valid) for c in listing.list_checkpoints(tmp_path)] == [(20, True)]
    files = tf_files(directory, 30)
    listing.meta_path(directory / "ckpt-30").with_name("ckpt-30.meta.json.tmp").mkdir()
    with pytest.raises(ClerkError, match="^checkpoint ckpt-30 was not saved: its metadata "
                                         "could not be written: Is a dir"):
        clerk.finish(30, files, {"time": 1.0})


def test_serve_answers_each_job_in_order(tmp_path):
    directory = listing.checkpoint_dir(tmp_path)
    lines = ['{"record": {"model": "cnn"}}']
    for step in (1, 2):
        tf_files(directory, step)
        lines.append(f'{{"step": {step}, "files": {{"ckpt-{step}.index": {100 + step}, '
                     f'"ckpt-{step}.data-00000-of-00001": 1000}}, '
                     f'"fields": {{"time": {float(step)}, "loss": 0.5}}}}')
    replies = []
    serve(directory, 3, lines, replies.append)
    assert [sorted(json.loads(r)["files"]) for r in replies] == [
        [f"ckpt-{s}.data-00000-of-00001", f"ckpt-{s}.index", f"ckpt-{s}.meta.json"]
        for s in (1, 2)]
    assert listing.list_checkpoints(tmp_path)[0].meta["model"] == "cnn"


def test_the_state_file_goes_when_no_checkpoint_is_left_and_leaves_no_temp_file(tmp_path):
    directory = tmp_path / "checkpoints"
    directory.mkdir()
    info = listing.CheckpointInfo(step=5, prefix=directory / "ckpt-5", valid=True,
                                      time=1.5)
    point_state_file(directory, [info])
    assert state_text([info]) == (directory / "checkpoint").read_text() == (
        'model_checkpoint_path: "ckpt-5"\nall_model_checkpoint_paths: "ckpt-5"\n'
        "all_model_checkpoint_timestamps: 1.5\n")
    point_state_file(directory, [])
    assert list(directory.iterdir()) == []


def test_a_stopped_clerk_is_waited_for_only_so_long(tmp_path, clerk):
    save(clerk, listing.checkpoint_dir(tmp_path), 10)
    process = clerk._process
    process.send_signal(signal.SIGSTOP)
    clerk.close(grace=0.2)
    assert process.returncode == -signal.SIGKILL


@pytest.mark.parametrize("stopped", [False, True])
def test_the_clerk_of_a_trainer_killed_alone_exits(tmp_path, stopped):
    """SIGKILL to the trainer's pid only (not its group): its end of the pipe closes, and
    Linux's parent-death signal kills a clerk even while it is stopped."""
    trainer = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from pathlib import Path\n"
         "from ftgui.core.checkpoints.clerk import Clerk\n"
         "directory = Path(sys.argv[1])\n"
         "directory.mkdir()\n"
         "(directory / 'ckpt-1.index').write_bytes(b'i')\n"
         "clerk = Clerk(directory, 2, {})\n"
         "clerk.start()\n"
         "clerk.finish(1, {'ckpt-1.index': 1}, {'time': 1.0})  # the clerk is up\n"
         "print(clerk._process.pid, flush=True)\n"
         "time.sleep(600)\n", str(tmp_path / "checkpoints")],
        stdout=subprocess.PIPE, text=True)
    clerk = psutil.Process(int(trainer.stdout.readline()))
    if stopped:
        clerk.send_signal(signal.SIGSTOP)
    trainer.kill()
    trainer.wait()
    clerk.wait(timeout=30)  # psutil.TimeoutExpired if it stays (not our child: no code)
    assert not clerk.is_running()


def test_a_clerk_that_does_not_answer_is_killed_and_the_work_done_here(tmp_path, clerk,
                                                                        monkeypatch, capfd):
    directory = listing.checkpoint_dir(tmp_path)
    save(clerk, directory, 10)
    monkeypatch.setattr(checkpoint_clerk, "REPLY_SECONDS", 0.3)
    process = clerk._process
    process.send_signal(signal.SIGSTOP)  # stopped or stuck, say on a hung file system
    save(clerk, directory, 20)
    assert process.returncode == -signal.SIGKILL and not clerk.running
    assert "checkpoint clerk did not answer in 0.3 s and was stopped" in capfd.readouterr().out
    assert [(c.step, c.valid) for c in listing.list_checkpoints(tmp_path)] == [
        (10, True), (20, True)]
