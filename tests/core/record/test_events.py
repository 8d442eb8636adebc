"""RUN/events.jsonl: what a writer appends and what a reader (the GUI, the CLI) gets back."""

from __future__ import annotations

import json
import math

from ftgui.core.record import events
from ftgui.core.record.events import EventReader, EventWriter


def lines_of(run_dir) -> list[str]:
    return (run_dir / "events.jsonl").read_text().splitlines()


def test_every_event_carries_its_type_time_and_attempt(tmp_path):
    with EventWriter(tmp_path, attempt=2) as writer:
        written = writer.emit("checkpoint_saved", step=30, path="checkpoints/ckpt-30")
    [line] = lines_of(tmp_path)
    assert json.loads(line) == written
    assert written["event"] == "checkpoint_saved"
    assert written["attempt"] == 2
    assert isinstance(written["time"], float)
    assert (written["step"], written["path"]) == (30, "checkpoints/ckpt-30")


def test_a_reader_gets_each_event_once_in_file_order(tmp_path):
    reader = EventReader(tmp_path)
    assert reader.read_new() == []  # no file yet
    with EventWriter(tmp_path, attempt=0) as writer:
        writer.emit("run_started")
        writer.emit("step", step=1, loss=2.5)
        assert [e["event"] for e in reader.read_new()] == ["run_started", "step"]
        assert reader.read_new() == []
        writer.emit("step", step=2, loss=2.25)
    events.emit(tmp_path, "process_exited", attempt=0, role="chief", exit_code=0)
    new = reader.read_new()
    assert [(e["event"], e.get("step")) for e in new] == [("step", 2), ("process_exited", None)]
    assert [e["event"] for e in events.read_all(tmp_path)] == [
        "run_started", "step", "step", "process_exited"
    ]


def test_a_torn_last_line_is_held_back_until_it_is_complete(tmp_path):
    events.emit(tmp_path, "step", attempt=0, step=1, loss=2.5)
    line = json.dumps({"event": "step", "time": 1.0, "attempt": 0, "step": 2, "loss": 2.25})
    with open(tmp_path / "events.jsonl", "a") as handle:
        handle.write(line[:20])  # a writer caught mid-line
    reader = EventReader(tmp_path)
    assert [e["step"] for e in reader.read_new()] == [1]
    assert [e["step"] for e in events.read_all(tmp_path)] == [1]
    with open(tmp_path / "events.jsonl", "a") as handle:
        handle.write(line[20:] + "\n")
    assert [e["step"] for e in reader.read_new()] == [2]
    assert reader.read_new() == []


def test_a_line_cut_by_a_killed_writer_does_not_swallow_the_next_writers_event(tmp_path):
    """A tester cut the last line of a finished run (as a power cut or a full disk would) and
    resumed it: the resume's first event was glued to the cut line and lost with it."""
    events.emit(tmp_path, "step", attempt=0, step=1, loss=2.5)
    line = json.dumps({"event": "process_exited", "time": 1.0, "attempt": 0, "exit_code": 0})
    with open(tmp_path / "events.jsonl", "a") as handle:
        handle.write(line[:30])  # the writer died here
    with EventWriter(tmp_path, attempt=1) as writer:
        writer.emit("process_started", pid=7)
    assert [(e["event"], e["attempt"]) for e in events.read_all(tmp_path)] == [
        ("step", 0), ("process_started", 1)]
    assert lines_of(tmp_path)[1] == line[:30]  # kept as it was, for whoever looks


def test_a_nan_loss_is_written_as_null(tmp_path):
    events.emit(tmp_path, "step", attempt=0, step=7, loss=math.nan, grad=math.inf)
    [line] = lines_of(tmp_path)
    assert '"loss":null' in line and '"grad":null' in line
    [event] = events.read_all(tmp_path)
    assert event["loss"] is None and event["grad"] is None


def test_lines_that_are_not_events_are_skipped(tmp_path):
    events.emit(tmp_path, "step", attempt=0, step=1, loss=2.5)
    with open(tmp_path / "events.jsonl", "a") as handle:
        handle.write('{"event": "step", "step": 2, \n')  # broken JSON
        handle.write("[1, 2, 3]\n")  # JSON, but not an event object
        handle.write('{"step": 3}\n')  # an object without a type
        handle.write("\n")
    with open(tmp_path / "events.jsonl", "ab") as handle:
        handle.write(b"\xff\xfe not text\n")
    events.emit(tmp_path, "step", attempt=0, step=4, loss=1.5)
    assert [e["step"] for e in events.read_all(tmp_path)] == [1, 4]


def test_final_losses_keep_the_curve_of_the_attempt_that_survived():
    history = [
        {"event": "step", "attempt": 0, "step": 1, "loss": 3.0},
        {"event": "step", "attempt": 0, "step": 2, "loss": 2.0},
        {"event": "checkpoint_saved", "attempt": 0, "step": 2},
        {"event": "step", "attempt": 0, "step": 3, "loss": 1.0},  # lost in the crash
        {"event": "resumed", "attempt": 1, "from_step": 2},
        {"event": "step", "attempt": 1, "step": 3, "loss": 1.5},
        {"event": "step", "attempt": 1, "step": 4, "loss": None},
        {"event": "step", "attempt": 1, "step": 4, "role": "worker", "index": 1, "loss": 9.0},
    ]
    assert events.final_losses(history) == {1: 3.0, 2: 2.0, 3: 1.5, 4: None}
    assert events.final_losses(history, role="worker") == {4: 9.0}


def test_an_event_appended_to_a_killed_writers_fragment_is_kept(tmp_path):
    path = tmp_path / events.EVENTS_FILE
    path.write_bytes(b'{"event":"step","time":1.0,"attempt":0,"st')  # killed mid-line
    events.emit(tmp_path, "process_exited", 0, signal=9)
    [event] = events.read_all(tmp_path)
    assert (event["event"], event["signal"]) == ("process_exited", 9)


def test_reader_goes_on_after_a_chunk_without_events(tmp_path):
    path = tmp_path / events.EVENTS_FILE
    path.write_bytes(b"x" * 100 + b"\n")
    events.emit(tmp_path, "run_finished", 0, step=3)
    reader = events.EventReader(tmp_path)
    assert reader.read_new(max_bytes=50) == []  # a chunk of junk, no event yet
    assert [e["step"] for e in reader.read_new()] == [3]
    assert [e["event"] for e in events.read_all(tmp_path)] == ["run_finished"]


def test_lines_with_wrong_field_types_are_skipped(tmp_path):
    path = tmp_path / events.EVENTS_FILE
    path.write_text(
        '{"event":"step","time":1,"attempt":0}\n'  # no step, no loss
        '{"event":"step","time":1,"attempt":"x","step":1,"loss":1.0}\n'
        '{"event":"step","time":1,"attempt":0,"step":true,"loss":1.0}\n'
        '{"event":7,"time":1,"attempt":0}\n'
        '{"event":"step","time":1.5,"attempt":0,"step":2,"loss":null}\n'
    )
    assert [(e["event"], e["step"]) for e in events.read_all(tmp_path)] == [("step", 2)]


# ------------------------------------------------------------------------------ vocabulary
def written_kinds() -> set[str]:
    """Every event type the code writes: the first argument of each `emit(` in ftgui/."""
    import re
    from pathlib import Path

    root = Path(events.__file__).resolve().parents[2]  # ftgui/
    pattern = re.compile(r"""\b_?emit\(\s*(?:[\w.]+,\s*)?["'](\w+)["']""")
    return {kind for path in root.rglob("*.py") for kind in pattern.findall(path.read_text())}


def test_every_event_type_the_code_writes_is_in_the_vocabulary():
    kinds = written_kinds()
    assert {"step", "process_exited", "fault_injected", "standby_ready"} <= kinds  # found
    # setting_changed: read and shown already; written once a resume may change a setting
    assert kinds | {"setting_changed"} == {kind.value for kind in events.EventKind}


def test_notable_kinds_get_a_line_and_the_stream_does_not():
    quiet = {kind.value for kind in events.EventKind if not kind.notable}
    assert quiet == {"step", "heartbeat", "validation", "snapshot_stats"}  # a figure, not news
    assert events.NOTABLE == {kind.value for kind in events.EventKind} - quiet
    assert events.is_notable("fault_injected") and not events.is_notable("step")
    assert events.is_notable("something_new")  # an unknown type is news


def test_a_kill_inside_a_save_or_a_snapshot_reads_as_one_sentence():
    describe = events.describe
    assert describe({"event": "fault_injected", "kind": "kill-in-save", "target": "chief",
                     "step": 100, "source": "schedule"}).startswith(
        "kill of chief inside a checkpoint save")
    assert describe({"event": "fault_injected", "kind": "kill-in-snapshot", "target": "chief",
                     "step": 90, "source": "schedule"}).startswith(
        "kill of chief inside a snapshot")


def test_each_event_reads_as_one_sentence():
    describe = events.describe
    assert describe({"event": "checkpoint_saved", "step": 600, "size": 412_000}) == (
        "checkpoint 600 saved (412.0 kB)")
    assert describe({"event": "checkpoint_saved", "step": 25, "size": 61_074,
                     "requested": True}) == "checkpoint 25 saved (61.1 kB) on request"
    assert describe({"event": "resumed", "from_step": 500}) == "resumed from checkpoint 500"
    assert describe({"event": "setting_changed", "setting": "learning_rate", "old": 0.01,
                     "new": 0.001, "step": 500}) == (
        "learning rate changed from 0.01 to 0.001 at step 500")
    lost = {"event": "process_exited", "role": "worker", "index": 1, "chief": False,
            "signal": 9, "decisive": False, "last_step": 340}
    assert describe(lost, step=352) == "worker 1 lost (killed) at step 352"
    assert describe(lost) == "worker 1 lost (killed) at step 340"  # no timeline: its own
    assert describe(lost, step=352, settled=True) == "worker 1 ended (ended by signal 9)"
    kill = {"event": "fault_injected", "kind": "kill", "target": "chief", "step": 587,
            "source": "user"}
    assert describe(kill, step=606) == "kill of chief at step 606 (user)"
    planned = {**kill, "target": "ps:0", "step": 60, "source": "schedule"}
    assert describe(planned, step=100) == "kill of ps:0 at step 100 (schedule: step 60)"
    assert describe(planned, step=60) == "kill of ps:0 at step 60 (schedule)"
    survivor = {"event": "training_error", "role": "worker", "index": 0,
                "error": "UnavailableError: lost contact with another task of the cluster"}
    assert describe(survivor) == "worker 0 lost contact with a peer (UnavailableError)"
    assert describe({**survivor, "error": "ValueError: bad input"}) == (
        "worker 0 error: ValueError: bad input")
    assert describe({"event": "recovery_scheduled", "delay": 0.5, "restart": 1}) == (
        "restarting in 0.5 s")
    assert describe({"event": "recovery_scheduled", "delay": 1.0, "restart": 2}) == (
        "restart 2 in a row, in 1.0 s")
    assert describe({"event": "recovery_waiting", "seconds": 10.0,
                     "waits_for": "the fork server's import of TensorFlow"}) == (
        "restart waits up to 10 s for the fork server's import of TensorFlow")
    assert describe({"event": "training_started", "role": "ps", "index": 0,
                     "start_step": None, "strategy": "parameter-server"}) == (
        "ps 0 serving (parameter-server)")
    # model.fit's chief trains (it said "serving"), from where BackupAndRestore put it
    assert describe({"event": "training_started", "role": "chief", "index": 0,
                     "start_step": None, "strategy": "mirrored", "loop": "fit",
                     "replicas": 2}) == "chief training with model.fit (mirrored, 2 replicas)"
    assert describe({"event": "resumed", "from_step": 0, "source": "none"}) == (
        "restarted from step 0 (no checkpoint yet)")
    assert describe({"event": "brand_new", "time": 1.0, "attempt": 0, "x": 1.5}) == (
        "brand_new: x=1.5")


def test_a_chief_started_on_a_standby_still_importing_says_how_long_ago_it_began():
    """The standby's age, not "so far": its own "TensorFlow imported in 2.5 s" comes later and
    counts from the interpreter's start (a new user read 3.7 s so far, then 2.5 s, as a
    contradiction)."""
    from ftgui.core.record.events import describe

    line = describe({"event": "process_started", "pid": 7, "role": "chief", "index": 0,
                     "chief": True, "label": "chief", "standby": True, "standby_warm": False,
                     "standby_age": 3.7, "time": 0.0, "attempt": 1})
    assert line.endswith("from a warm standby still getting ready (started 3.7 s ago)")


def test_a_step_line_written_directly_is_the_line_emit_writes(tmp_path, monkeypatch):
    clock = {"time": 1796398834.0497117, "mono": 12345.678951}
    monkeypatch.setattr(events.time, "time", lambda: clock["time"])
    monkeypatch.setattr(events.time, "monotonic", lambda: clock["mono"])
    steps = [(1, 2.302585092994046, 0), (2, 0.1, 0), (3, math.nan, 0), (4, math.inf, 1),
             (5, -math.inf, 1), (6, 1e-300, 2), (7, 3.0, 2), (123456789, 7.0, 40000)]
    with EventWriter(tmp_path / "emit", attempt=3) as slow, \
            EventWriter(tmp_path / "direct", attempt=3) as fast:
        for step, loss, epoch in steps:
            clock["time"] += 0.0012345
            clock["mono"] += 0.00123
            slow.emit("step", step=step, loss=loss, epoch=epoch)
            fast.emit_step(step, loss, epoch)
    written = lines_of(tmp_path / "direct")
    assert written == lines_of(tmp_path / "emit")
    assert '"clock"' in written[0] and not any('"clock"' in line for line in written[1:])
    assert [json.loads(line)["loss"] for line in written[2:5]] == [None, None, None]


def test_a_checkpoint_persisted_from_a_snapshot_says_so():
    """"checkpoint 35 saved" after a resume, off the every-10 interval, puzzled a new user."""
    from ftgui.core.record.events import describe

    assert describe({"event": "checkpoint_saved", "step": 35, "size": 61100,
                     "source": "memory"}) == (
        "checkpoint 35 saved (61.1 kB) from the restored in-memory snapshot")


def test_a_start_line_gives_the_reason_a_process_started_cold():
    from ftgui.core.record.events import describe

    said = describe({"event": "process_started", "role": "chief", "index": 0, "pid": 42,
                     "forked": False, "cold_reason": "the fork server was not ready yet"})
    assert said.endswith("started (pid 42), importing TensorFlow: the fork server was not "
                         "ready yet")
