"""A run folder removed or replaced under a running trainer (issue 25, case 6): `rm -rf RUN`
during `ftgui train RUN --steps 4000` ended with exit 0, "finished: step 230 of 4000", and the
trainer went on into a re-created folder. Now training stops at once with one line naming the
folder, a non-zero exit, and nothing is written into a re-created folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from ftgui.core.record import events, exitcodes
from ftgui.core.record.run_folder import RunFolder, RunFolderGone

FLAGS = ["--steps", "4000", "--strategy", "default", "--checkpoint-every", "50", "--quiet"]


def _removed(run_dir) -> str:
    return (f"run folder {run_dir} was removed or moved away while the run trained; training "
            "stopped and nothing more is written there")


def _replaced(run_dir) -> str:
    return (f"run folder {run_dir} was replaced by another folder while the run trained; "
            "training stopped and nothing is written into the new one")


def test_a_guarded_writer_never_re_creates_a_removed_folder(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    writer = events.EventWriter(run_dir, 0, folder=RunFolder(run_dir))
    writer.emit_step(1, 0.5, 0)
    shutil.rmtree(run_dir)
    with pytest.raises(RunFolderGone) as raised:
        writer.emit("validation", step=1, val_loss=0.4, val_accuracy=0.9)
    assert str(raised.value) == _removed(run_dir)
    with pytest.raises(RunFolderGone):  # a new writer neither
        events.EventWriter(run_dir, 0, folder=writer.folder)
    assert not run_dir.exists()
    writer.close()


def test_a_guarded_writer_writes_nothing_into_a_replacing_folder(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    writer = events.EventWriter(run_dir, 0, folder=RunFolder(run_dir))
    run_dir.rename(tmp_path / "old")
    run_dir.mkdir()
    with pytest.raises(RunFolderGone) as raised:
        writer.emit("step", step=2, loss=0.4)
    assert str(raised.value) == _replaced(run_dir)
    assert list(run_dir.iterdir()) == []
    assert (tmp_path / "old" / "events.jsonl").read_bytes().count(b"\n") == 0
    writer.close()


def test_a_step_event_looks_at_the_folder_once_its_check_interval_has_passed(
        tmp_path, monkeypatch):
    mono = [1000.0]
    monkeypatch.setattr(events.time, "monotonic", lambda: mono[0])
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    writer = events.EventWriter(run_dir, 0, folder=RunFolder(run_dir))
    writer.emit_step(1, 0.5, 0)  # looked: the folder is there
    run_dir.rename(tmp_path / "old")
    run_dir.mkdir()
    mono[0] += events.EventWriter.STEP_CHECK_SECONDS / 2
    writer.emit_step(2, 0.4, 0)  # not looked yet: its line goes to the file it opened
    mono[0] += events.EventWriter.STEP_CHECK_SECONDS / 2
    with pytest.raises(RunFolderGone) as raised:
        writer.emit_step(3, 0.3, 0)
    assert str(raised.value) == _replaced(run_dir)
    assert list(run_dir.iterdir()) == []  # nothing in the new folder
    assert [e["step"] for e in events.read_all(tmp_path / "old")] == [1, 2]
    writer.close()


def _wait_for_steps(run_dir, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(e["event"] == "step" for e in events.read_all(run_dir)):
            return
        time.sleep(0.1)
    raise AssertionError("the trainer never reached its first step")


@pytest.mark.tf
def test_rm_rf_of_a_training_run_stops_it_with_one_line(tmp_path):
    run_dir = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cli = subprocess.Popen([sys.executable, "-m", "ftgui", "train", str(run_dir), *FLAGS],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    _wait_for_steps(run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)  # the trainer may be writing meanwhile
    shutil.rmtree(run_dir, ignore_errors=True)
    out, err = cli.communicate(timeout=120)
    assert cli.returncode == 1
    assert err == f"ftgui: run failed: {_removed(run_dir)}\n"
    assert "finished" not in out
    assert not run_dir.exists()  # nothing re-created it


@pytest.mark.tf
def test_a_replaced_folder_stops_the_trainer_on_its_own_and_stays_empty(tmp_path):
    """Without the supervisor's poll (a window busy elsewhere) the trainer stops itself."""
    from ftgui.core.settings.config import RunConfig
    from ftgui.core.supervision.supervisor import Supervisor

    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir)
    supervisor.start(RunConfig(steps=4000, strategy="default", checkpoint_every=50))
    try:
        _wait_for_steps(run_dir)
        run_dir.rename(tmp_path / "moved")
        run_dir.mkdir()
        [chief] = supervisor.processes
        assert chief.handle.wait(60) == exitcodes.RUN_FOLDER_GONE
        assert list(run_dir.iterdir()) == []  # no event, checkpoint or log in the new folder
        log = (tmp_path / "moved" / "logs" / "chief-0.attempt-0.log").read_text()
        assert f"error: {_replaced(run_dir)}" in log.splitlines()
        supervisor.poll()
        assert (supervisor.state, supervisor.reason) == ("failed", _replaced(run_dir))
        assert not supervisor.live and list(run_dir.iterdir()) == []
    finally:
        supervisor.shutdown()
    assert list(run_dir.iterdir()) == []
