"""Process counters, the kill step, restarts while an old attempt is still exiting, and durations
measured with a monotonic clock.

The supervisor tests put a stand-in trainer (no TensorFlow) behind the supervisor; what each
process does is a plan keyed by `role:index:attempt`: steps, heartbeats, a restore, an exit.
"""

from __future__ import annotations

import json
import textwrap
import time

import pytest
from conftest import fake_checkpoint, of_kind, poll_until, poll_until_done, stand_in_python

from ftgui.core.record import event_history, events
from ftgui.core.record.events import EventWriter
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision.supervisor import Supervisor

PLANNED_TRAINER = textwrap.dedent(
    """
    # Stands in for the trainer (conftest.STAND_IN_PRELUDE reads its arguments and plan).
    for action, value in plan:
        if action == "step":
            writer.emit("step", step=value, loss=1.0 / value, epoch=0)
        elif action == "heartbeat":
            writer.emit("heartbeat", role=role, index=index, step=value)
        elif action == "resumed":
            writer.emit("resumed", from_step=value, checkpoint=f"checkpoints/ckpt-{value}")
        elif action == "sleep":
            time.sleep(value)
        elif action == "exit":
            sys.exit(value)
    time.sleep(600)
    """
)


@pytest.fixture
def planned_python(tmp_path, monkeypatch):
    """A stand-in for Python running PLANNED_TRAINER; call it with the plan (a dict)."""
    return stand_in_python(tmp_path, monkeypatch, PLANNED_TRAINER)


# ------------------------------------------------------------------------ counters


def test_restarted_processes_count_their_restarts(tmp_path, planned_python):
    python = planned_python({f"chief:0:{n}": [["exit", 1]] for n in range(3)})
    supervisor = Supervisor(tmp_path / "run", python=python)
    supervisor.start(RunConfig(auto_recover=True, max_restarts=2, restart_backoff=0))
    seen = poll_until_done(supervisor)
    assert [(e["attempt"], e["restarts"]) for e in of_kind(seen, "process_started")] == [
        (0, 0), (1, 1), (2, 2)]


def test_a_process_killed_before_its_first_step_reports_the_step_it_restored(
        tmp_path, planned_python):
    run_dir = tmp_path / "run"
    configmod.save(run_dir, RunConfig(steps=60, checkpoint_every=10))
    fake_checkpoint(run_dir, 30)
    supervisor = Supervisor(run_dir, python=planned_python({"chief:0:0": [["resumed", 30]]}))
    supervisor.start(resume=True)
    seen = poll_until(supervisor, lambda ev: of_kind(ev, "resumed"))
    assert supervisor.processes[0].last_step == 30
    assert supervisor.kill() is True
    seen += poll_until_done(supervisor)
    [exited] = of_kind(seen, "process_exited")
    assert (exited["signal"], exited["last_step"]) == (9, 30)
    [fault] = of_kind(seen, "fault_injected")
    assert fault["step"] == 30


def test_the_kill_names_the_step_the_trainer_reached_not_the_last_poll(
        tmp_path, planned_python):
    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir, python=planned_python({"chief:0:0": [["step", 1]]}))
    supervisor.start(RunConfig(steps=100))
    poll_until(supervisor, lambda ev: of_kind(ev, "step"))
    with EventWriter(run_dir, 0) as trainer:  # the trainer went on between two polls
        for step in range(2, 8):
            trainer.emit("step", step=step, loss=0.5, epoch=0)
    assert supervisor.kill() is True
    seen = poll_until_done(supervisor)
    [fault] = of_kind(events.read_all(run_dir), "fault_injected")
    assert fault["step"] == 7
    [exited] = of_kind(seen, "process_exited")
    assert exited["last_step"] == 7


def test_a_restart_waits_for_and_records_every_process_of_the_old_attempt(
        tmp_path, planned_python):
    # Multi-worker, restart backoff 0: the chief is preempted at step 5 while worker 1 (its
    # heartbeat at step 2) takes a while to exit; the next attempt starts only after it.
    plan = {
        "worker:0:0": [["step", s] for s in range(1, 6)] + [["exit", 42]],
        "worker:1:0": [["heartbeat", 2], ["sleep", 1.0], ["exit", 0]],
        "worker:0:1": [["exit", 0]],
        "worker:1:1": [["exit", 0]],
    }
    supervisor = Supervisor(tmp_path / "run", python=planned_python(plan))
    supervisor.start(RunConfig(strategy="multi-worker", workers=2, auto_recover=True,
                               max_restarts=1, restart_backoff=0))
    seen = poll_until_done(supervisor)
    exits = [(e["attempt"], e["role"], e["index"]) for e in of_kind(seen, "process_exited")]
    assert sorted(exits) == [(0, "worker", 0), (0, "worker", 1), (1, "worker", 0),
                             (1, "worker", 1)]
    kinds = [(e["event"], e["attempt"], e.get("index")) for e in seen]
    worker_one_exit = kinds.index(("process_exited", 0, 1))
    assert worker_one_exit < kinds.index(("process_started", 1, 0))
    [late] = of_kind(seen, "process_exited", attempt=0, index=1)
    assert (late["exit_code"], late["last_step"]) == (0, 5)  # the chief's step, no lag
    assert [e["restarts"] for e in of_kind(seen, "process_started")] == [0, 0, 1, 1]


def test_parameter_server_processes_show_the_chief_step_and_their_liveness(
        tmp_path, planned_python):
    plan = {"chief:0:0": [["step", 1], ["step", 2], ["step", 3]]}
    supervisor = Supervisor(tmp_path / "run", python=planned_python(plan))
    supervisor.start(RunConfig(strategy="parameter-server", workers=2, ps=1))
    try:
        poll_until(supervisor, lambda ev: of_kind(ev, "step", step=3))
        before = time.time()
        supervisor.poll()
        servers = [p for p in supervisor.processes if not p.is_chief]
        assert [(p.name, p.last_step) for p in servers] == [
            ("worker:0", 3), ("worker:1", 3), ("ps:0", 3)]
        assert all(p.last_heartbeat >= before for p in servers)
        assert supervisor.freeze("ps:0") is True
        ps = servers[-1]
        while not ps.frozen:
            time.sleep(0.01)
        frozen_at = time.time()
        supervisor.poll()
        assert ps.last_heartbeat < frozen_at  # a frozen server is not alive to the table
        assert servers[0].last_heartbeat >= frozen_at
    finally:
        supervisor.shutdown()


# ------------------------------------------------------------------------ durations


def case_6_events(stamped: bool) -> list[dict]:
    """Issue 11 case 6: a kill at step 40 and a recovery from checkpoint 30, whose wall times
    after the crash are 600 s earlier (the clock set back by NTP or a VM resume). `stamped`:
    the events carry `mono` and `clock` as EventWriter writes them; else as older runs did."""
    rows = [("run_started", 1000.0, 50.0, {"config": {}})]
    rows += [("step", 1000.1 + 0.1 * (s - 1), 50.1 + 0.1 * (s - 1),
              {"step": s, "loss": 1.0 / s, "epoch": 0}) for s in range(1, 41)]
    rows += [
        ("fault_injected", 1004.05, 54.05, {"kind": "kill", "target": "chief", "step": 40,
                                            "source": "user"}),
        ("process_exited", 1004.1, 54.1, {"role": "chief", "index": 0, "signal": 9,
                                          "decisive": True, "chief": True}),
        # the wall clock is set back by 600 s here
        ("recovery_scheduled", 404.2, 54.2, {"delay": 0.0, "restart": 1}),
        ("process_started", 405.0, 55.0, {"role": "chief", "index": 0, "pid": 2}),
        ("resumed", 406.0, 56.0, {"from_step": 30, "checkpoint": "checkpoints/ckpt-30"}),
    ]
    rows += [("step", 406.5 + 0.1 * (s - 31), 56.5 + 0.1 * (s - 31),
              {"step": s, "loss": 1.0 / s, "epoch": 0}) for s in range(31, 61)]
    rows += [("run_finished", 409.5, 59.5, {"step": 60, "loss": 1.0 / 60})]
    found, named = [], set()  # as EventWriter does: only a writer's first step names its clock
    for kind, when, mono, fields in rows:
        attempt = 1 if when < 1000 else 0
        event = {"event": kind, "time": when, "attempt": attempt, **fields}
        if stamped:
            event["mono"] = mono
            if kind != "step" or attempt not in named:
                event["clock"] = "5e1f00aa"
                if kind == "step":
                    named.add(attempt)
        found.append(event)
    return found


def write_run(run_dir, all_events) -> None:
    run_dir.mkdir(parents=True)
    lines = [json.dumps(e, separators=(",", ":")) for e in all_events]
    (run_dir / "events.jsonl").write_text("\n".join(lines) + "\n")


def timeline_of(run_events: list[dict], tmp_path, opened: bool):
    """The Timeline of `run_events` fed live, or (`opened`) of the run written and reopened."""
    from ftgui.core.timeline import run_figures
    from ftgui.core.timeline.model import Timeline

    if opened:
        write_run(tmp_path / "run", run_events)
        return run_figures.read_run(tmp_path / "run")[0]
    timeline = Timeline()
    timeline.feed(run_events)
    return timeline


@pytest.mark.parametrize("opened", [False, True], ids=["live", "reopened"])
def test_case_6_durations_come_from_the_monotonic_clock(tmp_path, opened):
    timeline = timeline_of(case_6_events(stamped=True), tmp_path, opened)
    [kill] = timeline.incidents
    assert (kill.step, kill.resumed_step, kill.steps_lost) == (40, 30, 10)
    assert kill.detect_seconds == pytest.approx(0.05)
    assert kill.recovery_seconds == pytest.approx(56.5 - 54.1)
    assert kill.redo_seconds == pytest.approx(1.0)  # steps 31-40 had taken 1.0 s
    assert kill.time_lost == pytest.approx(56.5 - 54.05 + 1.0)
    assert kill.clock_jumped is False
    totals = timeline.totals()
    assert totals.wall == pytest.approx(59.5 - 50.1)  # from the first step: no training_started
    assert totals.goodput == pytest.approx((9.4 - 3.45) / 9.4)


@pytest.mark.parametrize("opened", [False, True], ids=["live", "reopened"])
def test_case_6_an_old_run_without_monotonic_stamps_is_clamped_and_says_so(tmp_path, opened):
    timeline = timeline_of(case_6_events(stamped=False), tmp_path, opened)
    [kill] = timeline.incidents
    assert kill.detect_seconds == pytest.approx(0.05)
    # the 600 s jump back counts as 0 s: 0.8 + 1.0 + 0.5 s from the exit to the first step
    assert kill.recovery_seconds == pytest.approx(2.3)
    assert kill.time_lost == pytest.approx(0.05 + 2.3 + 1.0)
    assert kill.clock_jumped is True
    totals = timeline.totals()
    assert totals.wall == pytest.approx(4.0 + 2.3 + 3.0)  # from step 1 to the exit: 4.0 s
    assert 0.0 <= totals.goodput <= 1.0
    assert totals.goodput == pytest.approx((9.3 - 3.35) / 9.3)


def test_goodput_stays_within_0_and_100_percent():
    from ftgui.core.record.incidents import Totals

    assert Totals(incidents=1, steps_lost=5, time_lost=-3.0, wall=10.0).goodput == 1.0
    assert Totals(incidents=1, steps_lost=5, time_lost=30.0, wall=10.0).goodput == 0.0


def test_the_event_writer_stamps_the_monotonic_clock(tmp_path):
    before = time.monotonic()
    with EventWriter(tmp_path, 0) as writer:
        step = writer.emit("step", step=1, loss=0.5, epoch=0)
        saved = writer.emit("checkpoint_saved", step=1)
        second = writer.emit("step", step=2, loss=0.25, epoch=0)
        backdated = writer.emit("run_started", time=12.0)
    assert before <= step["mono"] <= second["mono"] <= time.monotonic() + 1e-4
    assert step["clock"] == saved["clock"] == events.CLOCK and len(events.CLOCK) == 8
    assert list(step) == ["event", "time", "attempt", "step", "loss", "epoch", "mono", "clock"]
    assert list(second) == ["event", "time", "attempt", "step", "loss", "epoch", "mono"]
    assert "mono" not in backdated and "clock" not in backdated  # a given time has no instant

    history = event_history.read_history(tmp_path)
    assert history.steps.mono.tolist() == [step["mono"], second["mono"]]
    assert history.steps.clock.tolist() == [events.CLOCK, events.CLOCK]  # carried forward
    assert events.describe({"event": "odd", "time": 1.0, "mono": 2.0, "clock": "x"}) == "odd"


# ------------------------------------------------------------------------ a bad config.toml


def spoil_steps(run_dir) -> None:
    """Issue 11 cases 7 and 8: `steps = "ten"` in the run's config.toml."""
    path = run_dir / configmod.CONFIG_FILE
    lines = [line for line in path.read_text().splitlines() if not line.startswith("steps")]
    path.write_text("\n".join(['steps = "ten"', *lines]) + "\n")


def test_case_8_a_flag_on_resume_overrides_the_bad_value_as_the_hint_says(
        finished_run, planned_python, monkeypatch, capsys):
    from ftgui import cli

    spoil_steps(finished_run)
    assert cli.main(["train", str(finished_run), "--resume", "--quiet"]) == 2
    assert capsys.readouterr().err == (
        "ftgui: steps (--steps): 'ten' is not a whole number (set in "
        f"{finished_run / 'config.toml'}; give --steps to change it)\n")

    python = planned_python({"chief:0:1": [["resumed", 60], ["step", 61], ["exit", 0]]})
    defaults = (python, *Supervisor.__init__.__defaults__[1:])  # python, then the launcher
    monkeypatch.setattr(Supervisor.__init__, "__defaults__", defaults)
    assert cli.main(["train", str(finished_run), "--resume", "--steps", "100", "--quiet"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("finished: step 61 of 100")
    assert configmod.load(finished_run).steps == 100


def test_a_supervisor_on_a_bad_config_polls_and_says_why_once(finished_run, monkeypatch):
    spoil_steps(finished_run)
    reads = []
    real_load = configmod.load
    monkeypatch.setattr(configmod, "load", lambda run_dir: reads.append(1) or real_load(run_dir))
    supervisor = Supervisor(finished_run)
    for _ in range(5):
        supervisor.poll()  # the window's timer: no traceback, the file read once
    assert supervisor.config is None and len(reads) == 1
    assert supervisor.config_error == (
        f"steps: 'ten' is not a whole number (in {finished_run / 'config.toml'})")
    with pytest.raises(configmod.ConfigError, match="^steps: 'ten' is not a whole number"):
        supervisor.start(resume=True)
    supervisor.shutdown()


def test_case_7_the_window_shows_a_bad_config_once_and_closes_cleanly(
        qtbot, tmp_path, finished_run):
    from PySide6.QtCore import QSettings

    from ftgui.qt.window.main_window import MainWindow

    spoil_steps(finished_run)
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings=settings)
    qtbot.addWidget(window)
    window.open_run(finished_run)  # as `ftgui open RUN` does
    window.show()
    qtbot.wait(300)  # several ticks of the poll timer: an exception in one fails the test
    assert window.panel.run_dir_edit.text() == str(finished_run.absolute())
    assert window.panel.error_label.text() == (
        f"steps: 'ten' is not a whole number (in {finished_run / 'config.toml'}); "
        "Resume uses the settings shown here")
    assert window.controller.supervisor.config is None
    assert window.close() is True
    assert not window.controller.supervisor.live


# ------------------------------------------------------------------------ retention


def test_a_retention_cut_short_is_cleaned_up_at_the_next_start_and_nothing_else(tmp_path):
    from ftgui.core.checkpoints import listing

    run_dir = tmp_path / "run"
    for step in (10, 15, 20, 30, 40, 50):
        fake_checkpoint(run_dir, step, shards=2)
    directory = listing.checkpoint_dir(run_dir)
    (directory / "ckpt-10.index").unlink()  # the retention was killed after the index …
    (directory / "ckpt-30.data-00000-of-00002").unlink()  # … or after a shard (multi-worker)
    listing.mark_damaged(directory / "ckpt-15", "would not restore")  # kept: post-mortem
    (directory / "ckpt-20.data-00001-of-00002").write_bytes(b"short")  # kept: not a deletion
    (directory / "ckpt-50.index").unlink()  # newer than every valid one: not a retention's
    before = {info.step: info.valid for info in listing.list_checkpoints(run_dir)}
    assert before == {10: False, 15: False, 20: False, 30: False, 40: True, 50: False}

    assert listing.remove_leftovers(run_dir) == [
        "ckpt-10.data-00000-of-00002", "ckpt-10.data-00001-of-00002", "ckpt-10.meta.json",
        "ckpt-30.data-00001-of-00002", "ckpt-30.index", "ckpt-30.meta.json",
    ]
    after = {info.step: info.valid for info in listing.list_checkpoints(run_dir)}
    assert after == {15: False, 20: False, 40: True, 50: False}
    assert len(listing.tf_files(directory, 40)) == 3  # the valid one is untouched
    assert listing.remove_leftovers(run_dir) == []


# ------------------------------------------------------------------------ the incident table


def test_the_incident_table_says_in_process_and_clock_jumped(qtbot):
    from ftgui.core.timeline.model import Timeline
    from ftgui.qt.panes.incident_table import COLUMNS, IncidentPanel

    nan_run = [{"event": "step", "attempt": 0, "time": 0.1 * s, "step": s, "loss": 1.0}
               for s in range(1, 8)] + [
        {"event": "step", "attempt": 0, "time": 0.8, "step": 8, "loss": None},
        {"event": "non_finite_loss", "attempt": 0, "time": 0.81, "step": 8},
        {"event": "rolled_back", "attempt": 0, "time": 0.9, "from_step": 8, "to_step": 5},
        {"event": "step", "attempt": 0, "time": 1.0, "step": 6, "loss": 1.0},
    ]
    timeline = Timeline()
    timeline.feed(case_6_events(stamped=False) + [
        {**e, "attempt": 1, "time": e["time"] + 410.0} for e in nan_run])
    panel = IncidentPanel()
    qtbot.addWidget(panel)
    panel.show_timeline(timeline)
    model = panel.model_

    def row(number):
        return {name: model.data(model.index(number, column))
                for column, name in enumerate(COLUMNS)}

    kill, nan = row(0), row(1)
    # time lost printed as the banner prints it (issue 24: the tab said 3.35 s, the banner 3.4 s)
    assert (kill["fault"], kill["fired by"], kill["detect"], kill["time lost"]) == (
        "kill", "user", "0.05 s", "3.4 s, clock jumped")
    assert (nan["fault"], nan["detect"], nan["recovery"]) == ("nan", "0.00 s in-process",
                                                              "0.19 s")
    assert "−" not in panel.totals.text() and "-" not in panel.totals.text()
