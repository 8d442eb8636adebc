"""Run history, smoothing and CSV export: what a user sees of runs they did not just watch."""

from __future__ import annotations

import fcntl
import json
import math
import os

import numpy as np
import pytest

from ftgui.core.record import event_history, events, runs
from ftgui.core.record.events import EventWriter, parse_line
from ftgui.core.reports import csv_export
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import RunConfig

T0 = 1_700_000_000.0  # the synthetic runs' clock: exact binary fractions added to it stay exact


def make_run(root, name: str, steps: int = 10, strategy: str = "mirrored"):
    run_dir = root / name
    configmod.save(run_dir, RunConfig(steps=steps, strategy=strategy))
    return run_dir


def log(run_dir, attempt: int, event: str, at: float, **fields) -> None:
    """Append one event as EventWriter does, at time T0 + `at` (an explicit `time` wins)."""
    with EventWriter(run_dir, attempt) as writer:
        writer.emit(event, time=T0 + at, **fields)


def train(run_dir, attempt: int, steps, at: float = 1.0, loss=lambda step: 1.0 / step) -> None:
    with EventWriter(run_dir, attempt) as writer:
        for i, step in enumerate(steps):
            writer.emit("step", time=T0 + at + i * 0.25, step=step, loss=loss(step), epoch=0)


def by_name(root) -> dict[str, runs.RunSummary]:
    return {run.name: run for run in runs.list_runs(root)}


# ------------------------------------------------------------------------------ run history
def test_a_finished_run_is_listed_with_its_steps_loss_and_start(tmp_path):
    run_dir = make_run(tmp_path, "done", steps=4, strategy="one-device")
    log(run_dir, 0, "run_started", 0.0, config=RunConfig(steps=4).to_dict())
    train(run_dir, 0, range(1, 5))
    log(run_dir, 0, "run_finished", 3.0, step=4, loss=0.25)
    log(run_dir, 0, "process_exited", 3.5, role="chief", index=0, pid=1, decisive=True,
        exit_code=0)
    [run] = runs.list_runs(tmp_path)
    assert (run.name, run.path, run.status) == ("done", run_dir, "finished")
    assert run.strategy == "one-device"  # config.toml wins over the config run_started recorded
    assert (run.steps_done, run.steps_planned) == (4, 4)
    assert run.final_loss == 0.25
    assert run.started == T0
    assert (run.incidents, run.attempts) == (0, 1)


def test_each_way_a_run_can_end_has_its_status(tmp_path):
    finished = make_run(tmp_path, "finished")
    log(finished, 0, "run_started", 0.0)
    train(finished, 0, range(1, 11))
    log(finished, 0, "run_finished", 5.0, step=10, loss=0.1)

    killed = make_run(tmp_path, "killed")
    log(killed, 0, "run_started", 1.0)
    train(killed, 0, range(1, 6), at=2.0)
    log(killed, 0, "fault_injected", 4.0, kind="kill", target="chief", step=5, source="user")
    log(killed, 0, "process_exited", 4.1, role="chief", index=0, pid=7, decisive=True,
        signal=9, signal_name="SIGKILL")

    preempted = make_run(tmp_path, "preempted")
    log(preempted, 0, "run_started", 2.0)
    train(preempted, 0, range(1, 4), at=3.0)
    log(preempted, 0, "process_exited", 4.0, role="chief", index=0, pid=8, exit_code=42)

    failed = make_run(tmp_path, "failed")
    log(failed, 0, "run_started", 3.0)
    log(failed, 0, "process_exited", 4.0, role="chief", index=0, pid=9, decisive=True,
        exit_code=2, reason="exited with status 2 (bad configuration)")

    interrupted = make_run(tmp_path, "interrupted")  # killed, resumed, then its GUI died
    log(interrupted, 0, "run_started", 4.0)
    train(interrupted, 0, range(1, 6), at=5.0)
    log(interrupted, 0, "process_exited", 7.0, role="chief", index=0, pid=10, decisive=True,
        signal=9, signal_name="SIGKILL")
    log(interrupted, 1, "process_started", 8.0, role="chief", index=0, pid=11)
    log(interrupted, 1, "resumed", 9.0, from_step=3, checkpoint="checkpoints/ckpt-3")

    make_run(tmp_path, "idle")  # configured, never started
    (tmp_path / "not-a-run").mkdir()  # neither config.toml nor events.jsonl
    (tmp_path / "notes.txt").write_text("a file, not a run")

    listed = runs.list_runs(tmp_path)
    assert [run.name for run in listed] == [  # newest start first, never started last
        "interrupted", "failed", "preempted", "killed", "finished", "idle",
    ]
    status = {run.name: (run.status, run.reason) for run in listed}
    assert status == {
        "finished": ("finished", "reached the last step"),
        "killed": ("killed", "ended by SIGKILL"),
        "preempted": ("preempted", "saved at the current step and stopped"),
        "failed": ("failed", "exited with status 2 (bad configuration)"),
        "interrupted": ("interrupted", "attempt 1 ended without a recorded exit"),
        "idle": ("idle", "configured, never started"),
    }
    interrupted_run = by_name(tmp_path)["interrupted"]
    assert interrupted_run.steps_done == 3  # resumed from step 3: that is where it stands
    assert interrupted_run.final_loss == 0.2  # the last loss logged (step 5)
    assert interrupted_run.attempts == 2


def test_a_run_whose_lock_another_process_holds_is_running(tmp_path):
    run_dir = make_run(tmp_path, "live")
    train(run_dir, 0, range(1, 3))
    lock = os.open(run_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a supervisor does
        assert runs.summarize(run_dir).status == "running"
    finally:
        os.close(lock)
    assert runs.summarize(run_dir).status == "interrupted"  # lock gone, no exit recorded


def test_a_restart_only_counts_the_last_attempt_finishing(tmp_path):
    run_dir = make_run(tmp_path, "forked")
    train(run_dir, 0, range(1, 11))
    log(run_dir, 0, "run_finished", 4.0, step=10, loss=0.1)
    log(run_dir, 1, "forked", 5.0, from_step=5, archived_steps=[10], archive="history/fork-1")
    log(run_dir, 1, "resumed", 6.0, from_step=5, checkpoint="checkpoints/ckpt-5")
    train(run_dir, 1, range(6, 8), at=7.0)
    log(run_dir, 1, "process_exited", 8.0, role="chief", index=0, pid=3, decisive=True,
        signal=9, signal_name="SIGKILL")
    run = runs.summarize(run_dir)
    assert (run.status, run.steps_done, run.final_loss) == ("killed", 7, 1 / 7)


def test_a_rollback_after_a_nan_moves_the_run_back_to_its_checkpoint(tmp_path):
    run_dir = make_run(tmp_path, "diverged")
    train(run_dir, 0, range(1, 8))
    log(run_dir, 0, "non_finite_loss", 3.0, step=7)
    log(run_dir, 0, "rolled_back", 3.5, from_step=7, to_step=5)
    assert runs.summarize(run_dir).steps_done == 5
    train(run_dir, 0, [6], at=4.0)
    assert runs.summarize(run_dir).steps_done == 6


def test_incidents_are_injected_faults_plus_crashes_nobody_injected(tmp_path):
    run_dir = make_run(tmp_path, "cluster", strategy="multi-worker")
    # attempt 0: a user kills worker 1; the chief is ended afterwards to clean up (not decisive)
    log(run_dir, 0, "fault_injected", 1.0, kind="kill", target="worker:1", step=4, source="user")
    log(run_dir, 0, "process_exited", 1.1, role="worker", index=1, pid=2, chief=False,
        decisive=True, signal=9, signal_name="SIGKILL")
    log(run_dir, 0, "process_exited", 1.2, role="worker", index=0, pid=1, chief=True,
        decisive=False, signal=9, signal_name="SIGKILL")
    # attempt 1: worker 1 crashes on its own (no fault injected): an incident of its own
    log(run_dir, 1, "process_exited", 2.0, role="worker", index=1, pid=4, chief=False,
        decisive=True, exit_code=1)
    log(run_dir, 1, "process_exited", 2.1, role="worker", index=0, pid=3, chief=True,
        decisive=False, signal=9, signal_name="SIGKILL")
    # attempt 2: a scheduled preemption of the chief, which saves and exits 42
    log(run_dir, 2, "fault_injected", 3.0, kind="preempt", target="chief", step=8,
        source="schedule")
    log(run_dir, 2, "process_exited", 3.1, role="worker", index=0, pid=5, chief=True,
        decisive=True, exit_code=42)
    log(run_dir, 2, "process_exited", 3.2, role="worker", index=1, pid=6, chief=False,
        decisive=False, signal=9, signal_name="SIGKILL")
    run = runs.summarize(run_dir)
    assert run.incidents == 3
    assert (run.status, run.attempts) == ("preempted", 3)


def test_a_worker_exit_names_the_worker_in_the_reason(tmp_path):
    run_dir = make_run(tmp_path, "worker-died", strategy="multi-worker")
    log(run_dir, 0, "process_exited", 1.0, role="worker", index=1, pid=2, chief=False,
        decisive=True, signal=9, signal_name="SIGKILL")
    assert runs.summarize(run_dir).reason == "worker 1 ended by SIGKILL"


def test_a_torn_last_line_is_ignored_until_it_is_complete(tmp_path):
    run_dir = make_run(tmp_path, "torn")
    train(run_dir, 0, range(1, 4))
    with open(run_dir / "events.jsonl", "ab") as handle:
        handle.write(b'{"event":"step","time":1.0,"attempt":0,"step":4,"lo')
    assert runs.summarize(run_dir).steps_done == 3
    with open(run_dir / "events.jsonl", "ab") as handle:
        handle.write(b'ss":0.125,"epoch":0}\n')
    run = runs.summarize(run_dir)
    assert (run.steps_done, run.final_loss) == (4, 0.125)


def test_a_growing_run_is_read_on_from_where_the_last_refresh_stopped(tmp_path):
    run_dir = make_run(tmp_path, "growing", steps=100)
    train(run_dir, 0, range(1, 51))
    assert runs.summarize(run_dir).steps_done == 50
    train(run_dir, 0, range(51, 101), at=20.0)
    log(run_dir, 0, "run_finished", 40.0, step=100, loss=0.01)
    run = runs.summarize(run_dir)
    assert (run.status, run.steps_done, run.final_loss) == ("finished", 100, 0.01)
    (run_dir / "events.jsonl").write_text("")  # replaced by a shorter file: read again
    assert runs.summarize(run_dir).steps_done == 0


def test_step_lines_are_not_json_parsed_for_a_summary(tmp_path, monkeypatch):
    run_dir = make_run(tmp_path, "long", steps=5000)
    log(run_dir, 0, "run_started", 0.0)
    train(run_dir, 0, range(1, 5001))
    log(run_dir, 0, "run_finished", 2000.0, step=5000, loss=0.0002)
    parsed = []
    real_loads = event_history.json.loads
    monkeypatch.setattr(event_history.json, "loads",
                        lambda text: parsed.append(text) or real_loads(text))
    run = runs.summarize(run_dir)
    assert (run.status, run.steps_done, run.final_loss) == ("finished", 5000, 0.0002)
    assert len(parsed) <= 5  # run_started, run_finished, the last step line, the first line


def test_a_missing_runs_root_lists_nothing(tmp_path):
    assert runs.list_runs(tmp_path / "nowhere") == []


def test_new_run_directories_go_under_the_runs_root(tmp_path):
    first = runs.new_run_dir(tmp_path)
    assert first.parent == tmp_path and first.name.startswith("run-")
    first.mkdir()
    assert runs.new_run_dir(tmp_path) != first


# ------------------------------------------------------------------------------ curves
def test_the_surviving_curve_takes_each_step_from_the_latest_attempt(tmp_path):
    run_dir = make_run(tmp_path, "resumed")
    log(run_dir, 0, "run_started", 0.0)
    train(run_dir, 0, [1, 2, 3], loss=lambda step: 4.0 - step)  # 3, 2, 1 at t=1, 1.25, 1.5
    train(run_dir, 1, [3, 4], at=8.0, loss=lambda step: 0.5 * step)  # 1.5, 2 at t=8, 8.25
    curves = event_history.read_curves(run_dir)
    assert curves.origin == T0
    steps, times, losses = curves.surviving_train()
    assert steps.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert (times - T0).tolist() == [1.0, 1.25, 8.0, 8.25]
    assert losses.tolist() == [3.0, 2.0, 1.5, 2.0]


def test_curves_read_column_wise_equal_what_json_reads(tmp_path):
    run_dir = make_run(tmp_path, "odd-values")
    losses = [2.5, None, 1e-06, -0.0, 123456.789, 0.1 + 0.2, 7e22, None]
    with EventWriter(run_dir, 3) as writer:
        for step, loss in enumerate(losses, start=1):
            writer.emit("step", time=T0 + step / 3, step=step, loss=loss, epoch=0)
    with open(run_dir / "events.jsonl", "a") as handle:  # other writers, other layouts
        handle.write('{"event":"step","attempt":4,"step":9,"loss":0.5,"time":1.5}\n')
        handle.write('{"event":"step","time":2.5,"attempt":4,"step":10,"loss":0.25}\n')
    curves = event_history.read_curves(run_dir)
    expected = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    train = curves.train
    assert train.step.tolist() == [e["step"] for e in expected]
    assert train.attempt.tolist() == [e["attempt"] for e in expected]
    assert train.time.tolist() == [e["time"] for e in expected]
    assert [None if math.isnan(x) else x for x in train.loss.tolist()] == [
        e["loss"] for e in expected
    ]
    assert math.copysign(1.0, train.loss[3]) == -1.0  # -0.0 stays -0.0


def test_column_wise_floats_are_the_bits_json_reads(tmp_path):
    run_dir = make_run(tmp_path, "random-floats")
    rng = np.random.default_rng(5)
    losses = np.concatenate([rng.random(3000), rng.random(1000) * 1e-30, rng.random(1000) * 1e30,
                             -rng.random(100), np.float32(rng.random(500)).astype(np.float64)])
    with EventWriter(run_dir, 0) as writer:
        for step, loss in enumerate(losses.tolist(), start=1):
            writer.emit("step", time=T0 + step * 0.001 + loss, step=step, loss=loss, epoch=0)
    expected = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    train = event_history.read_history(run_dir).steps
    assert train.loss.tolist() == [e["loss"] for e in expected]
    assert train.time.tolist() == [e["time"] for e in expected]


@pytest.mark.parametrize(("value", "loss"), [
    ("true", None), ('"0.5"', None), ("[1,2]", None),  # no number: the line is skipped
    ("1x", None),  # no JSON at all: skipped
    ("NaN", math.nan),  # Python's JSON reads NaN (a hand-edited line): a gap, as live
    (" 2", 2.0),  # a whole number after a space is a number
])
def test_a_step_value_that_is_no_json_number_falls_back_to_json(tmp_path, value, loss):
    run_dir = make_run(tmp_path, "odd-value")
    with EventWriter(run_dir, 0) as writer:
        for step in (1, 2):
            writer.emit("step", time=T0 + step, step=step, loss=0.5, epoch=0)
    with open(run_dir / "events.jsonl", "a") as handle:
        handle.write(f'{{"event":"step","time":9.5,"attempt":0,"step":3,"loss":{value}}}\n')
    train = event_history.read_history(run_dir).steps
    assert train.step.tolist()[:2] == [1, 2]
    assert train.loss.tolist()[:2] == [0.5, 0.5]
    event = parse_line((run_dir / "events.jsonl").read_bytes().splitlines()[-1])
    if loss is None:  # what the JSON path refuses is skipped, not read as a number
        assert event is None
        assert len(train) == 2
    else:
        assert event is not None
        assert len(train) == 3
        np.testing.assert_array_equal(train.loss[2], loss)  # NaN equals NaN here
        np.testing.assert_array_equal(train.loss[2], event["loss"])


ODD_STEP_LINES = [  # hand-edited step lines: each must be read as parse_line reads it, or skipped
    '{"event":"step","time":9.5,"attempt":0,"step":null,"loss":0.5,"epoch":0}',
    '{"event":"step","time":9.5,"attempt":null,"step":3,"loss":0.5,"epoch":0}',
    '{"event":"step","time":9.5,"attempt":0,"step":5.1,"loss":0.5,"epoch":0}',
    '{"event":"step","time":9.5,"attempt":0,"step":1e2,"loss":0.5,"epoch":0}',
    '{"event":"step","time":9.5,"attempt":1.0,"step":3,"loss":0.5,"epoch":0}',
    '{"event":"step","time":9.5,"attempt":0,"step":007,"loss":0.5,"epoch":0}',
    '{"event":"step","time":9.5,"attempt":0,"step":3,"loss":nan,"epoch":0}',
    '{"event":"step","time":9.5,"attempt":0,"step":3,"loss":n1.5,"epoch":0}',
    '{"event":"step","time":null,"attempt":0,"step":3,"loss":0.5,"epoch":0}',
    '{"event":"step","time":9.5,"attempt":0,"step":1234567890123456789,"loss":0.5,"epoch":0}',
    '{"event":"step","time":9.5,"attempt":0,"step":9223372036854775808,"loss":0.5,"epoch":0}',
    '{"event":"step","time":9.5,"attempt":0,"step":3,"loss":1.5,garbage}',
    '{"event":"step","time":9.5,"attempt":0,"step":3,"loss":1.5,"epoch":0}xx',
    '{"event":"step","time":9.5,"attempt":0,"step":3,"loss":1.5,"epoch":0,"step":4}',
    '{"event":"step","time":9.5,"attempt":0,"step":3,"loss":1' + "0" * 400 + ',"epoch":0}',
    '{"event":"step", "time":9.5,"attempt":0,"step":3,"loss":' + "9" * 400 + ',"epoch":0}',
    '{"event":"step","time":9.5,"attempt":0,"step":3,"loss":[1,2],"epoch":0}',
    '{"event":"step","time":9.5,"attempt":0,"step":3,"loss":1.5,"epoch":0.5}',
]


@pytest.mark.parametrize("odd", ODD_STEP_LINES)
def test_an_odd_step_line_is_read_as_json_reads_it_or_skipped(tmp_path, odd):
    run_dir = make_run(tmp_path, "odd")
    with EventWriter(run_dir, 0) as writer:
        writer.emit("step", time=T0 + 1, step=1, loss=0.25, epoch=0)
    with open(run_dir / "events.jsonl", "a") as handle:
        handle.write(odd + "\n")
    with EventWriter(run_dir, 0) as writer:
        writer.emit("step", time=T0 + 2, step=2, loss=0.125, epoch=0)
    expected = []
    for line in (run_dir / "events.jsonl").read_bytes().splitlines():
        event = parse_line(line)
        if event is not None and event["event"] == "step":
            expected.append((event.get("attempt", 0), event["step"], float(event["time"]),
                             event_history._nan_if_none(event.get("loss"))))
    for read in (event_history.read_history(run_dir).steps,
                 event_history.read_curves(run_dir).train):
        got = list(zip(read.attempt.tolist(), read.step.tolist(), read.time.tolist(),
                       read.loss.tolist(), strict=True))
        assert len(got) == len(expected)
        for row, want in zip(got, expected, strict=True):
            np.testing.assert_array_equal(row, want)  # NaN equals NaN here


@pytest.mark.parametrize("chunk_bytes", [300, 4 << 20])
def test_chunks_read_column_wise_equal_chunks_read_line_by_line(tmp_path, monkeypatch,
                                                                 chunk_bytes):
    """`read_history` reads a chunk of well-formed lines in columns and falls back to reading
    line by line for a chunk holding an odd line: both give the same rows, clocks and events."""
    run_dir = make_run(tmp_path, "mixed")
    with EventWriter(run_dir, 0) as writer:
        for step in range(1, 40):
            writer.emit("step", step=step, loss=None if step == 7 else 1 / step, epoch=0)
            if step % 10 == 0:
                writer.emit("checkpoint_saved", step=step, path=f"ckpt-{step}")
    with open(run_dir / "events.jsonl", "a") as handle:
        for odd in ODD_STEP_LINES:
            handle.write(odd + "\n")
    with EventWriter(run_dir, 1) as writer:
        for step in range(30, 60):
            writer.emit("step", step=step, loss=2 / step, epoch=1)  # with mono and clock
    monkeypatch.setattr(event_history, "_CHUNK_BYTES", chunk_bytes)
    mixed = event_history.read_history(run_dir)
    monkeypatch.setattr(event_history, "_chunk_columns", lambda *args: None)
    by_line = event_history.read_history(run_dir)
    for name in event_history._COLUMNS:
        np.testing.assert_array_equal(getattr(mixed.steps, name), getattr(by_line.steps, name))
    assert mixed.others == by_line.others
    assert mixed.end_offset == by_line.end_offset
    assert len(mixed.steps) == 39 + 30 + 5  # and the 5 odd lines parse_line reads as steps
    resumed = mixed.steps.attempt == 1
    assert set(mixed.steps.clock[resumed]) == {events.CLOCK}  # named by the first step only
    assert not np.isnan(mixed.steps.mono[resumed]).any()


def test_a_line_of_two_comma_separated_events_is_read_as_the_line_reader_reads_it(tmp_path,
                                                                                monkeypatch):
    """One `[...]` around a chunk would split such a line in two and shift every row after it;
    the chunk is read line by line instead (`parse_line` keeps the event after the last
    `{"event":`)."""
    run_dir = make_run(tmp_path, "comma")
    step = '{{"event":"step","attempt":0,"step":{},"time":1.5,"loss":0.5}}'
    lines = [step.format(1), step.format(2), step.format(4) + "," + step.format(5),
             '{"event":"checkpoint","step":2,"time":1.0}', step.format(3)]
    (run_dir / "events.jsonl").write_text("\n".join(lines) + "\n")
    read = event_history.read_history(run_dir)
    assert read.steps.step.tolist() == [1, 2, 5, 3]
    assert read.steps.line.tolist() == [0, 1, 2, 4]
    assert [(line, e["event"]) for line, e in read.others] == [(3, "checkpoint")]
    monkeypatch.setattr(event_history, "_chunk_columns", lambda *args: None)
    by_line = event_history.read_history(run_dir)
    assert by_line.steps.step.tolist() == [1, 2, 5, 3] and by_line.others == read.others


# ------------------------------------------------------------------------------ export
def test_curves_export_as_csv_with_every_attempt_and_the_validation_points(tmp_path):
    run_dir = make_run(tmp_path, "exported")
    log(run_dir, 0, "run_started", 0.0)
    train(run_dir, 0, [1, 2], loss=lambda step: 1.0 / 3.0 if step == 1 else None)
    log(run_dir, 0, "validation", 1.5, step=2, val_loss=0.75, val_accuracy=0.5)
    log(run_dir, 0, "process_exited", 2.0, role="chief", index=0, pid=1, signal=9)
    train(run_dir, 1, [2, 3], at=10.125, loss=lambda step: step / 8)
    out = tmp_path / "curves.csv"
    assert csv_export.write_curves_csv(run_dir, out) == 5
    assert out.read_text() == (
        "kind,attempt,step,wall_time,loss\n"
        "train,0,1,1.000,0.3333333333333333\n"
        "train,0,2,1.250,\n"  # a NaN loss (logged as null) is an empty field
        "validation,0,2,1.500,0.75\n"
        "train,1,2,10.125,0.25\n"
        "train,1,3,10.375,0.375\n"
    )


def test_exporting_a_run_without_events_says_so(tmp_path):
    run_dir = make_run(tmp_path, "empty")
    with pytest.raises(FileNotFoundError):
        csv_export.write_curves_csv(run_dir, tmp_path / "out.csv")
    assert not (tmp_path / "out.csv").exists()


def test_a_new_run_in_a_folder_of_other_files_is_said_to_go_beside_them(tmp_path):
    """A new user's `ftgui train shots --steps 5` trained among their screenshots without a
    word. Said, not refused: a folder of one's own files (a model) is a fair place."""
    from ftgui.core.record.runs import other_files_note

    shots = tmp_path / "shots"
    assert other_files_note(shots) is None  # not there yet
    shots.mkdir()
    assert other_files_note(shots) is None  # empty
    (shots / ".hidden").write_text("", encoding="utf-8")
    assert other_files_note(shots) is None
    for name in ("a.png", "b.png", "c.png", "d.png"):
        (shots / name).write_bytes(b"")
    assert other_files_note(shots) == (f"run_dir: {shots} already holds 4 entries (a.png, "
                                       "b.png, c.png, …); the run's files go beside them")
    (shots / "config.toml").write_text("steps = 5\n", encoding="utf-8")
    assert other_files_note(shots) is None  # a run's folder
