"""In-memory snapshots: the double-buffered format never gives a torn state, the supervisor
restores from memory when it is newer than the newest checkpoint, and the resumed curve equals,
to the bit, the run never killed."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from conftest import fake_checkpoint, made_once, of_kind, poll_until, poll_until_done

from ftgui import cli
from ftgui.core.checkpoints import listing, restore_point, snapshots
from ftgui.core.record import events
from ftgui.core.settings.config import RunConfig
from ftgui.core.settings.schema import SETTINGS
from ftgui.core.supervision.supervisor import StartError, Supervisor
from ftgui.core.supervision.trainer_command import trainer_args


def _payload(step: int, size: int) -> bytes:
    return np.random.default_rng(step).integers(0, 256, size, dtype=np.uint8).tobytes()


@pytest.fixture
def snapshot_file(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()  # else any run started meanwhile (another xdist worker) sweeps the file
    made = snapshots.SnapshotFile.create(snapshots.snapshot_path(run_dir), 7, 4096, run_dir)
    yield run_dir, made
    made.close()
    snapshots.discard(run_dir)


def test_the_newest_consistent_slot_wins_and_a_bad_checksum_falls_back(snapshot_file):
    run_dir, made = snapshot_file
    assert snapshots.newest(run_dir) is None  # both slots empty
    made.write(0, 5, 0.5, _payload(5, 4000))
    made.write(1, 6, 0.25, _payload(6, 4000))
    newest = snapshots.newest(run_dir)
    assert (newest.index, newest.step, newest.loss, newest.length) == (1, 6, 0.25, 4000)
    reopened = snapshots.SnapshotFile.open(snapshots.snapshot_path(run_dir))
    assert bytes(reopened.payload(newest)) == _payload(6, 4000)

    made.corrupt(1)
    assert snapshots.newest(run_dir).step == 5
    slot = snapshots.SnapshotFile.open(snapshots.snapshot_path(run_dir)).slot(1)
    assert slot.reason == "checksum mismatch (torn write)"
    made.corrupt(0)
    assert snapshots.newest(run_dir) is None


def test_a_snapshot_file_records_its_run_and_the_sweep_deletes_what_no_resume_can_use(
        tmp_path):
    """Shared memory is freed only by deleting the file: a file whose run directory is gone,
    one of the old format (no run path) and a create killed long ago are deleted; a live
    run's file and a create under way stay."""
    shm = tmp_path / "shm"
    shm.mkdir()
    kept, gone = tmp_path / "kept run", tmp_path / "deleted run"
    kept.mkdir()
    for run_dir in (kept, gone):
        made = snapshots.SnapshotFile.create(shm / f"ftgui-{run_dir.name[:4]}.snapshot", 3, 64,
                                             run_dir)
        made.write(0, 9, 0.5, _payload(9, 64))
        made.close()
    opened = snapshots.SnapshotFile.open(shm / "ftgui-kept.snapshot")
    assert opened.run_dir == kept and opened.newest().step == 9
    old_format = shm / "ftgui-old.snapshot"
    old_format.write_bytes(b"FTGSNAP1" + bytes(200))
    killed_create, fresh_create = shm / "ftgui-a.snapshot.tmp", shm / "ftgui-b.snapshot.tmp"
    killed_create.write_bytes(bytes(10))
    fresh_create.write_bytes(bytes(10))
    long_ago = time.time() - snapshots.STALE_TEMP_SECONDS - 1
    os.utime(killed_create, (long_ago, long_ago))
    (shm / "other.snapshot").write_bytes(bytes(10))  # not ftgui's
    os.mkfifo(shm / "ftgui-fifo.snapshot")  # opening it would block the start for good
    huge = snapshots.FILE_HEADER.pack(snapshots.MAGIC, 0, 5, 2**62)  # a seek past any file
    (shm / "ftgui-huge.snapshot").write_bytes(huge)
    cut = shm / "ftgui-cut.snapshot"  # the kept run's file cut before its run path
    cut.write_bytes((shm / "ftgui-kept.snapshot").read_bytes()[:-3])
    (shm / "ftgui-link.snapshot").symlink_to(old_format)
    (shm / "ftgui-folder.snapshot").mkdir()

    removed = snapshots.sweep(shm)

    assert removed == sorted([shm / "ftgui-dele.snapshot", old_format, killed_create,
                              shm / "ftgui-huge.snapshot", cut])
    assert sorted(p.name for p in shm.iterdir()) == [
        "ftgui-b.snapshot.tmp", "ftgui-fifo.snapshot", "ftgui-folder.snapshot",
        "ftgui-kept.snapshot", "ftgui-link.snapshot", "other.snapshot"]
    assert snapshots.SnapshotFile.open(old_format) is None
    assert snapshots.SnapshotFile.open(shm / "ftgui-fifo.snapshot") is None  # no wait


def test_a_run_reached_through_a_link_or_with_any_bytes_in_its_name_has_one_file(tmp_path):
    real = tmp_path / os.fsdecode(b"run \xff\xc3\xa9")  # not UTF-8: surrogate escapes
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert snapshots.snapshot_path(link) == snapshots.snapshot_path(real)
    made = snapshots.SnapshotFile.create(tmp_path / "file.snapshot", 1, 8, link)
    assert made.run_dir == real and snapshots.SnapshotFile.open(made.path).run_dir == real
    made.close()


def test_starting_a_run_sweeps_the_snapshots_of_deleted_runs(tmp_path, monkeypatch):
    shm = tmp_path / "shm"
    shm.mkdir()
    monkeypatch.setattr(snapshots, "snapshot_dir", lambda: shm)
    gone = tmp_path / "deleted run"
    snapshots.SnapshotFile.create(snapshots.snapshot_path(gone), 3, 64, gone).close()
    with pytest.raises(StartError, match="has no config.toml"):  # refused after the sweep
        Supervisor(tmp_path / "run").start()
    assert list(shm.iterdir()) == []


def test_the_resume_hint_names_what_a_resume_goes_on_from(tmp_path, monkeypatch):
    """`ftgui train`'s last line after a kill: the snapshot when it is newer than every valid
    checkpoint, else the newest checkpoint, else step 0."""
    monkeypatch.setattr(snapshots, "snapshot_dir", lambda: tmp_path / "shm")
    (tmp_path / "shm").mkdir()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert restore_point.resume_words(run_dir) == "step 0: nothing was saved"
    made = snapshots.SnapshotFile.create(snapshots.snapshot_path(run_dir), 7, 64, run_dir)
    made.write(0, 37, 0.5, _payload(37, 64))
    assert restore_point.resume_words(run_dir) == "the in-memory snapshot of step 37"
    fake_checkpoint(run_dir, 30)
    assert restore_point.resume_words(run_dir) == "the in-memory snapshot of step 37"
    fake_checkpoint(run_dir, 40)
    assert restore_point.resume_words(run_dir) == "checkpoint 40"
    made.close()


@pytest.mark.parametrize("cut", ["invalidated", "half copied", "header without checksum"])
def test_a_write_cut_short_at_any_point_leaves_the_other_slot(snapshot_file, cut):
    run_dir, made = snapshot_file
    made.write(0, 10, 1.0, _payload(10, 4000))
    made.write(1, 11, 1.0, _payload(11, 4000))
    # What a kill leaves in slot 0 while it is being overwritten with step 12.
    offset = snapshots.FILE_HEADER.size
    start = offset + snapshots.SLOT_HEADER.size
    new = _payload(12, 4000)
    if cut == "invalidated":
        made._data[offset:offset + 8] = (-1).to_bytes(8, "little", signed=True)
    elif cut == "half copied":
        made._data[start:start + 2000] = new[:2000]
    else:
        made._data[start:start + 4000] = new
        old_crc = snapshots.SLOT_HEADER.unpack_from(made._data, offset)[3]
        snapshots.SLOT_HEADER.pack_into(made._data, offset, 12, 4000, 1.0, old_crc)
    newest = snapshots.newest(run_dir)
    assert (newest.index, newest.step) == (1, 11)


def test_random_kills_of_a_writer_never_leave_a_torn_snapshot(tmp_path):
    """A process writing 4 MB snapshots in turn is SIGKILLed at random moments; the newest
    consistent slot always holds exactly the bytes of its step."""
    run_dir, size = tmp_path / "run", 4_000_000
    run_dir.mkdir()  # else any run started meanwhile (another xdist worker) sweeps the file
    writer = textwrap.dedent(f"""
        import sys
        import numpy as np
        from ftgui.core.checkpoints import snapshots
        made = snapshots.SnapshotFile.create(snapshots.snapshot_path({str(run_dir)!r}), 1, {size},
                                               {str(run_dir)!r})
        print("ready", flush=True)
        step = 0
        while True:
            step += 1
            payload = np.random.default_rng(step).integers(0, 256, {size}, dtype=np.uint8)
            for _ in range(10):  # a write (~1 ms) takes far less than making its payload
                made.write(step % 2, step, float(step), payload)
    """)
    rng, torn_seen = random.Random(14), 0
    try:
        kills = 0
        while kills < 8 or (not torn_seen and kills < 80):  # until a kill lands in a write
            kills += 1
            proc = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE)
            assert proc.stdout.readline() == b"ready\n"
            time.sleep(rng.uniform(0.05, 0.4))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            found = snapshots.SnapshotFile.open(snapshots.snapshot_path(run_dir))
            slots = [found.slot(i) for i in range(2)]
            torn_seen += any(not s.consistent and s.step != 0 for s in slots)
            newest = found.newest()
            if newest is not None:
                assert bytes(found.payload(newest)) == _payload(newest.step, size)
    finally:
        snapshots.discard(run_dir)
    assert torn_seen >= 1  # some kill did land inside a write


def test_the_restore_point_takes_memory_only_when_newer_and_never_for_a_fork(snapshot_file):
    run_dir, made = snapshot_file
    made.write(0, 250, 0.1, b"x" * 10)
    older, newer = listing.CheckpointInfo(200, run_dir, True), listing.CheckpointInfo(
        250, run_dir, True)
    assert restore_point.memory_point(run_dir, older, fresh=False).step == 250
    assert restore_point.memory_point(run_dir, None, fresh=False).step == 250
    assert restore_point.memory_point(run_dir, newer, fresh=False) is None  # disk has it
    assert restore_point.memory_point(run_dir, older, fresh=True) is None  # new run / fork
    assert not snapshots.snapshot_path(run_dir).exists()


def test_the_setting_and_the_trainer_flag():
    setting = SETTINGS["snapshot_every"]
    assert (setting.flag, setting.object_name, setting.group, setting.on_resume) == (
        "--snapshot-every", "snapshotEverySpin", "recovery", "free")
    assert RunConfig().snapshot_every == setting.default > 0
    assert trainer_args("RUN", restore="checkpoints/ckpt-200", restore_snapshot=True)[-3:] == [
        "--restore", "checkpoints/ckpt-200", "--restore-snapshot"]
    assert "--restore-snapshot" not in trainer_args("RUN")


# --------------------------------------------------------------- the real trainer
FLAGS = ["--strategy", "mirrored", "--replicas", "2", "--steps", "400",
         "--checkpoint-every", "100"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> dict[int, float]:
    """The losses of the run never killed, trained once per session (`made_once`)."""
    def train(folder):
        run_dir = folder / "run"
        assert cli.main(["train", str(run_dir), *FLAGS, "--quiet"]) == 0
        assert not snapshots.snapshot_path(run_dir).exists()  # a finished run frees its memory

    run_dir = made_once(tmp_path_factory, "snapshots-uninterrupted", train) / "run"
    return events.final_losses(events.read_all(run_dir))


@pytest.mark.tf
def test_a_kill_at_250_resumes_from_memory_and_every_loss_equals_the_run_never_killed(
        tmp_path, uninterrupted):
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), *FLAGS, "--kill-at-step", "250", "--auto-recover",
                     "--restart-backoff", "0", "--quiet"]) == 0
    seen = events.read_all(run_dir)
    [resumed] = of_kind(seen, "resumed")
    assert (resumed["source"], resumed["from_step"]) == ("memory", 250)
    first = min(e["step"] for e in of_kind(seen, "step") if e["attempt"] == 1)
    assert first == 251
    assert listing.find(run_dir, 250).meta["source"] == "memory"
    losses = events.final_losses(seen)
    assert [losses[s] for s in range(1, 401)] == [uninterrupted[s] for s in range(1, 401)]

    # TensorBoard: 201-250 were queued, not yet written, when the kill came; the resumed
    # trainer logs them again from the run's events, each step once
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    board = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"scalars": 0})
    board.Reload()
    logged = [(e.step, e.value) for e in board.Scalars("loss")]
    assert [step for step, _ in logged] == list(range(1, 401))
    assert [value for _, value in logged] == [float(np.float32(losses[s]))
                                              for s in range(1, 401)]


@pytest.mark.tf
def test_a_torn_newest_snapshot_restores_the_other_buffer_then_disk(tmp_path, uninterrupted):
    run_dir = tmp_path / "run"
    # snapshots every 10 steps: the buffers hold 240 and 250 (every step: 249 and 250)
    assert cli.main(["train", str(run_dir), *FLAGS, "--snapshot-every", "10",
                     "--kill-at-step", "250", "--quiet"]) != 0
    path = snapshots.snapshot_path(run_dir)
    found = snapshots.SnapshotFile.open(path)
    newest = found.newest()
    assert newest.step == 250
    data = bytearray(path.read_bytes())
    data[_payload_start(newest.index, found.capacity)] ^= 0xFF  # one flipped byte: bad checksum
    path.write_bytes(bytes(data))
    assert snapshots.newest(run_dir).step == 240

    supervisor = Supervisor(run_dir)
    supervisor.start(RunConfig(steps=400, checkpoint_every=100, snapshot_every=10,
                               kill_at_step=290), resume=True)
    seen = poll_until_done(supervisor)
    [resumed] = of_kind(seen, "resumed")
    assert (resumed["source"], resumed["from_step"]) == ("memory", 240)
    found = snapshots.SnapshotFile.open(path)
    assert sorted(found.slot(i).step for i in range(2)) == [280, 290]
    data = bytearray(path.read_bytes())  # now both buffers torn: the disk checkpoint it is
    for index in range(2):
        data[_payload_start(index, found.capacity)] ^= 0xFF
    path.write_bytes(bytes(data))
    supervisor.start(RunConfig(steps=400, checkpoint_every=100, snapshot_every=10),
                     resume=True)
    seen = poll_until_done(supervisor)
    [resumed] = of_kind(seen, "resumed")
    assert (resumed["source"], resumed["from_step"]) == ("disk", 240)  # persisted from memory
    losses = events.final_losses(events.read_all(run_dir))
    assert [losses[s] for s in range(1, 401)] == [uninterrupted[s] for s in range(1, 401)]


def _payload_start(index: int, capacity: int) -> int:
    return (snapshots.FILE_HEADER.size + index * (snapshots.SLOT_HEADER.size + capacity)
            + snapshots.SLOT_HEADER.size)


@pytest.mark.tf
def test_kills_at_random_moments_always_resume_exactly(tmp_path, uninterrupted):
    run_dir = tmp_path / "run"
    # A warm standby keeps the restarts short (no TensorFlow import on the critical path).
    config = RunConfig(steps=400, checkpoint_every=100, snapshot_every=1, auto_recover=True,
                       restart_backoff=0, max_restarts=10, warm_standby=True)
    supervisor = Supervisor(run_dir)
    supervisor.start(config)
    rng = random.Random(250)
    for attempt in range(3):
        # An attempt may reach the last step before its kill (400 steps take ~0.5 s): the
        # kill then lands in the final save, and the next attempt restores step 400 and
        # finishes without a step of its own.
        poll_until(supervisor, lambda ev, a=attempt: of_kind(ev, "step", attempt=a)
                   or supervisor.state == "finished")
        time.sleep(rng.uniform(0.0, 0.6))
        if supervisor.state == "finished" or not supervisor.kill("chief"):
            break
    poll_until_done(supervisor)
    seen = events.read_all(run_dir)
    assert supervisor.state == "finished"
    kills = of_kind(seen, "fault_injected")
    for resumed in of_kind(seen, "resumed"):
        # memory, or disk when a checkpoint of the snapshot's own step was already written
        assert resumed["source"] in ("memory", "disk")
        killed_at = [k["step"] for k in kills if k["attempt"] == resumed["attempt"] - 1][0]
        assert resumed["from_step"] >= killed_at - 1  # at most one step redone
    losses = events.final_losses(seen)
    assert [losses[s] for s in range(1, 401)] == [uninterrupted[s] for s in range(1, 401)]


def test_the_incident_and_the_story_say_the_state_came_from_memory():
    from ftgui.core.record.incidents import from_events
    from ftgui.core.timeline.model import Timeline
    from ftgui.core.timeline.story import story

    run = [
        {"event": "run_started", "time": 0.0, "attempt": 0},
        *({"event": "step", "time": s / 100, "attempt": 0, "step": s, "loss": 1.0}
          for s in range(1, 251)),
        {"event": "fault_injected", "time": 2.6, "attempt": 0, "kind": "kill",
         "target": "chief", "step": 250, "source": "schedule"},
        {"event": "process_exited", "time": 2.7, "attempt": 0, "role": "chief", "index": 0,
         "signal": 9, "decisive": True},
        {"event": "resumed", "time": 4.0, "attempt": 1, "from_step": 250,
         "checkpoint": "checkpoints/ckpt-250", "source": "memory"},
        {"event": "step", "time": 4.1, "attempt": 1, "step": 251, "loss": 1.0},
    ]
    [incident] = from_events(run).incidents
    assert (incident.restore_source, incident.steps_lost) == ("memory", 0)
    timeline = Timeline()
    timeline.feed(run)
    assert "restored step 250 from memory" in story(timeline)
