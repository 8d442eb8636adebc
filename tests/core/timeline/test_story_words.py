"""Words that match the process state (issue 24), from events alone: a fault after the end, a
freeze and its thaw, an in-process rollback, a warm standby still getting ready, a
synchronous cluster's just-in-time recovery and a parameter-server worker replaced."""

from __future__ import annotations

import pytest
from recorded import CHIEF, ev, steps

from ftgui.core.formatting import percent
from ftgui.core.record.incidents import from_events
from ftgui.core.timeline.model import Timeline
from ftgui.core.timeline.story import frozen, source_words, story


def told(events: list[dict]) -> tuple[Timeline, str]:
    timeline = Timeline()
    timeline.feed(events)
    return timeline, story(timeline)


def finished_run() -> list[dict]:
    return [ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 40, 1.0),
            ev("run_finished", 11.0, step=40, loss=0.025)]


def test_a_kill_written_after_the_end_is_no_incident():
    """Runs recorded before the supervisor refused it: a K pressed after `run_finished`."""
    stray = [ev("fault_injected", 11.2, kind="kill", target="chief", step=40, source="user"),
             ev("process_exited", 11.25, pid=10, last_step=40, signal=9,
                signal_name="SIGKILL", decisive=True, shutdown=False, **CHIEF)]
    timeline, said = told(finished_run() + stray)
    assert timeline.incidents == []
    assert said == "Finished at step 40"
    assert timeline.notes[-2].text == ("kill of chief at step 40 (user): ignored, the run had "
                                       "finished")
    assert from_events(finished_run() + stray).incidents == []  # the Runs view's count


def test_a_freeze_is_told_as_frozen_and_a_thaw_closes_it_before_a_later_kill():
    timeline = Timeline()
    timeline.feed([ev("run_started", 0.0, config={"watchdog_seconds": 0}),
                   ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 20, 1.0),
                   ev("fault_injected", 6.0, kind="hang", target="chief", step=20,
                      source="user")])
    assert story(timeline) == "Froze at step 20 → no progress until Thaw or Kill"
    assert frozen(timeline)
    timeline.feed([ev("thawed", 10.0, target="chief", step=20)])
    assert not frozen(timeline)
    assert story(timeline) == "Froze at step 20 → thawed → waiting for the next step"
    timeline.feed(steps(21, 30, 10.5))
    # lost: the 4.5 s from the freeze to the first step after the thaw; nothing redone
    assert story(timeline) == ("Froze at step 20 → thawed → resumed: 0 steps redone, 4.5 s "
                               "lost · goodput 62 %")  # (11.75 − 4.5) / 11.75 from step 1
    timeline.feed([ev("fault_injected", 13.0, kind="kill", target="chief", step=30,
                      source="user")])
    assert story(timeline) == "Killed at step 30 → waiting for the process to end"
    freeze, kill = timeline.incidents
    assert (freeze.kind, freeze.steps_lost, freeze.time_lost, freeze.thawed) == (
        "hang", 0, 4.5, True)
    assert (kill.kind, kill.step) == ("kill", 30)


def test_the_state_label_says_frozen_while_frozen(qtbot):
    from ftgui.qt.window.top_bar import TopBar

    bar = TopBar()
    qtbot.addWidget(bar)
    events = [ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 20, 1.0),
              ev("fault_injected", 6.0, kind="hang", target="chief", step=20, source="user")]
    timeline, _ = told(events)
    bar.show_run(timeline, "running", "")  # the supervisor: its process is alive
    assert bar.state_label.text() == "frozen — no progress until Thaw or Kill"
    timeline.feed([ev("thawed", 8.0, target="chief", step=20), *steps(21, 22, 8.5)])
    bar.show_run(timeline, "running", "")
    assert bar.state_label.text() == "running"
    timeline.config = {**timeline.config, "watchdog_seconds": 3.0}  # the chaos demo's
    timeline.feed([ev("fault_injected", 9.0, kind="hang", target="chief", step=22,
                      source="schedule")])
    bar.show_run(timeline, "running", "")
    assert bar.state_label.text() == (  # not "until Thaw or Kill": the watchdog will
        "frozen — the watchdog ends it after 3 s without progress")
    bar.show_run(timeline, "running", "", watchdog_due_in=2.4)  # the window's countdown
    assert bar.state_label.text() == "frozen — the watchdog ends it in 3 s"
    assert bar.story_banner.text() == "Froze at step 22 → the watchdog ends it in 3 s"


def test_the_state_label_says_finished_with_the_story_before_the_supervisor_does(qtbot):
    from ftgui.qt.window.top_bar import TopBar

    bar = TopBar()
    qtbot.addWidget(bar)
    timeline, _ = told(finished_run())
    bar.show_run(timeline, "running", "")  # the chief's exit not reaped yet
    assert bar.story_banner.text() == "Finished at step 40"
    assert bar.state_label.text() == "finished — reached the last step"


def test_a_freeze_under_a_watchdog_says_the_watchdog_will_end_it():
    _, said = told([ev("run_started", 0.0, config={"watchdog_seconds": 10.0}),
                    ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 20, 1.0),
                    ev("fault_injected", 6.0, kind="hang", target="chief", step=20,
                       source="user")])
    assert said == "Froze at step 20 → the watchdog ends it after 10 s without progress"


def test_a_freeze_counts_the_watchdog_down_in_whole_seconds():
    timeline, _ = told([ev("run_started", 0.0, config={"watchdog_seconds": 4.0}),
                        ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 20, 1.0),
                        ev("fault_injected", 6.0, kind="hang", target="chief", step=20,
                           source="schedule")])
    assert story(timeline, watchdog_due_in=118.2) == (
        "Froze at step 20 → the watchdog ends it in 119 s (its start-up grace: no step yet)")
    said = [story(timeline, watchdog_due_in=due) for due in (3.7, 1.0, 0.2, 0.0, -0.3)]
    assert said == [f"Froze at step 20 → the watchdog {words}" for words in (
        "ends it in 4 s", "ends it in 1 s", "ends it in 1 s", "is ending it",
        "is ending it")]


def test_the_supervisor_s_watchdog_due_in_is_its_own_deadline(tmp_path, monkeypatch):
    """The countdown and `check_watchdog` read one limit: `watchdog_seconds` once the chief has
    stepped, the start-up grace before."""
    import time as clock
    from types import SimpleNamespace

    from ftgui.core.settings.config import RunConfig
    from ftgui.core.supervision import fault_injection
    from ftgui.core.supervision.supervisor import Supervisor

    supervisor = Supervisor(tmp_path / "run")
    faults = supervisor.faults
    assert faults.watchdog_due_in() is None  # no run
    config = RunConfig(watchdog_seconds=4.0)
    monkeypatch.setattr(faults, "config", lambda: config)
    chief = SimpleNamespace(last_heartbeat=0.0)  # the chief's handle: only its heartbeat
    monkeypatch.setattr(faults.state, "chief", lambda: chief)
    monkeypatch.setattr(clock, "time", lambda: 1000.0)
    chief.last_heartbeat = 999.0
    faults.state.progress_seen = True
    assert faults.watchdog_due_in() == 3.0
    faults.state.progress_seen = False
    assert faults.watchdog_due_in() == fault_injection.STARTUP_GRACE_SECONDS - 1.0
    monkeypatch.setattr(faults, "config", lambda: RunConfig(watchdog_seconds=0))
    assert faults.watchdog_due_in() is None


def test_an_in_process_rollback_has_its_own_phrase():
    _, said = told([ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 24, 1.0),
                    ev("fault_injected", 7.0, kind="nan", target="chief", step=25,
                       source="schedule")])
    assert said == "NaN loss at step 25 → rolling back in the process"


def crashed() -> list[dict]:
    return [ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 230, 10.25),
            ev("fault_injected", 67.5, kind="kill", target="chief", step=230, source="user"),
            ev("process_exited", 67.75, pid=10, last_step=230, signal=9,
               signal_name="SIGKILL", decisive=True, shutdown=False, **CHIEF),
            ev("recovery_scheduled", 67.75, delay=0.0, restart=1)]


def test_a_warm_standby_still_getting_ready_is_said_so():
    timeline = Timeline()
    timeline.feed([*crashed(),
                   ev("process_started", 68.0, 1, pid=11, restore="checkpoints/ckpt-200",
                      standby=True, standby_warm=False, standby_age=3.2, **CHIEF)])
    assert story(timeline) == ("Killed at step 230 → restarting: the warm standby is still "
                               "getting ready (3.2 s) to restore checkpoint 200")
    timeline.feed([{"event": "standby_ready", "time": 1_700_000_071.0, "attempt": -1,
                    "pid": 11, "import_seconds": 6.1}])
    assert story(timeline) == ("Killed at step 230 → restarting: the warm standby has "
                               "imported TensorFlow to restore checkpoint 200")


def test_a_standby_ready_before_the_handover_is_woken():
    timeline = Timeline()
    timeline.feed([{"event": "standby_ready", "time": 1_700_000_030.0, "attempt": -1,
                    "pid": 11, "import_seconds": 5.0}, *crashed(),
                   ev("process_started", 68.0, 1, pid=11, restore="checkpoints/ckpt-200",
                      standby=True, standby_warm=True, standby_age=38.0, **CHIEF)])
    assert story(timeline).endswith("restarting: waking the warm standby (TensorFlow already "
                                    "imported) to restore checkpoint 200")


WORKER_0 = {"role": "worker", "index": 0, "chief": True}
WORKER_1 = {"role": "worker", "index": 1, "chief": False}


def test_a_synchronous_cluster_recovered_just_in_time_says_so_and_never_trains_on():
    timeline = Timeline()
    said = []

    def feed(*events):
        timeline.feed(list(events))
        said.append(story(timeline))

    feed(ev("process_started", 0.0, pid=10, **WORKER_0),
         ev("process_started", 0.0, pid=11, **WORKER_1), *steps(1, 250, 1.0))
    feed(ev("fault_injected", 63.5, kind="kill", target="worker:1", step=250, source="user"))
    feed(ev("process_exited", 63.6, pid=11, last_step=250, signal=9, signal_name="SIGKILL",
            decisive=True, shutdown=False, **WORKER_1),
         ev("checkpoint_saved", 63.9, step=250, path="checkpoints/ckpt-250", just_in_time=True),
         ev("process_exited", 64.0, pid=10, last_step=250, exit_code=1, decisive=False,
            shutdown=False, **WORKER_0),
         ev("recovery_scheduled", 64.0, delay=0.0, restart=1))
    feed(ev("process_started", 64.5, 1, pid=12, restore="checkpoints/ckpt-250", **WORKER_0),
         ev("process_started", 64.5, 1, pid=13, restore="checkpoints/ckpt-250", **WORKER_1))
    feed(ev("training_started", 70.0, 1, start_step=250, strategy="multi-worker", replicas=2,
            **WORKER_0),
         ev("resumed", 70.1, 1, from_step=250, checkpoint="checkpoints/ckpt-250",
            source="just_in_time"),
         ev("training_started", 70.2, 1, start_step=250, strategy="multi-worker", replicas=2,
            **WORKER_1))
    feed(*steps(251, 260, 70.5, attempt=1))
    assert said[1:] == [
        "Worker 1 killed at step 250 → waiting for the process to end",
        "Worker 1 killed at step 250 → restarting",
        "Worker 1 killed at step 250 → restarting: importing TensorFlow to restore checkpoint 250",
        # not "the others train on", not "back after": nothing trains until the first step
        "Worker 1 killed at step 250 → restored step 250 just in time → waiting for the first "
        "step",
        # lost: 63.5 → 70.5 s; wall 72.75 s
        "Worker 1 killed at step 250 → restored step 250 just in time → resumed: 0 steps "
        "redone, 7.0 s lost · goodput 90 %",
    ]
    assert source_words(timeline.incidents[0]) == "just in time"


def _worker_1_lost_at_300() -> list[dict]:
    """A parameter-server run's events: steps 1-300 every 0.25 s (step 300 at 75.75), then
    worker 1 killed at 76.0 and its exit at 76.1 (not decisive: the coordinator trains on)."""
    return [ev("process_started", 0.0, pid=10, **CHIEF),
            ev("process_started", 0.0, pid=11, role="worker", index=1, chief=False),
            *steps(1, 300, 1.0),
            ev("fault_injected", 76.0, kind="kill", target="worker:1", step=300, source="user"),
            ev("process_exited", 76.1, pid=11, role="worker", index=1, chief=False,
               last_step=300, signal=9, signal_name="SIGKILL", decisive=False, shutdown=False)]


def test_a_parameter_server_worker_replaced_is_charged_the_coordinators_stall_only():
    # the room saw "0.0 s lost" while the coordinator stalled ~19 steps' time at the loss; and
    # "worker 1 restarted" beside the stage's "No restart" (a presenter's findings)
    timeline = Timeline()
    timeline.feed(_worker_1_lost_at_300())
    assert story(timeline) == ("Worker 1 killed at step 300 → the coordinator trains on with "
                               "the other workers; starting a replacement worker 1")
    # step 301 came at 77.0, due at 76.0 by the cadence: 1.0 s lost
    timeline.feed([*steps(301, 310, 77.0),
                   ev("training_started", 79.5, pid=12, role="worker", index=1, chief=False,
                      strategy="parameter-server")])
    [incident] = timeline.incidents
    assert (incident.lone, incident.steps_lost, incident.time_lost) == (True, 0, 1.0)
    goodput = percent(timeline.totals().goodput)
    assert goodput == "99 %"  # (79.5 - 1.0) / 79.5
    assert story(timeline) == ("Worker 1 killed at step 300 → the coordinator trained on with "
                               "the other workers; a replacement worker 1 joined: 0 steps "
                               f"redone, 1.0 s lost · goodput {goodput}")
    assert source_words(incident) == ""


def test_a_replacement_joining_before_the_coordinators_next_step_tells_no_cost_yet():
    """The replacement served again while the coordinator still stalled: the banner said
    "… 0.0 s lost · goodput 100 %", and "0.6 s lost · goodput 97 %" a moment later (a
    presenter's finding). Until its next step the stall is being measured."""
    timeline = Timeline()
    timeline.feed([*_worker_1_lost_at_300(),
                   ev("training_started", 76.5, pid=12, role="worker", index=1, chief=False,
                      strategy="parameter-server")])
    assert story(timeline) == ("Worker 1 killed at step 300 → the coordinator trains on with "
                               "the other workers; a replacement worker 1 joined; measuring "
                               "the coordinator's stall")
    timeline.feed(steps(301, 310, 77.0))  # due at 76.0: 1.0 s lost
    assert story(timeline).endswith("a replacement worker 1 joined: 0 steps redone, 1.0 s "
                                    "lost · goodput 99 %")


def test_a_parameter_server_worker_lost_without_a_stall_costs_nothing():
    timeline = Timeline()
    timeline.feed([ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 40, 1.0),
                   ev("fault_injected", 10.8, kind="kill", target="worker:1", step=40,
                      source="user"),
                   *steps(41, 44, 11.0),  # step 41 due at 11.0 (40 at 10.75): on time
                   ev("process_exited", 11.1, pid=11, role="worker", index=1, chief=False,
                      last_step=42, signal=9, signal_name="SIGKILL", decisive=False,
                      shutdown=False),
                   ev("training_started", 12.0, pid=12, role="worker", index=1, chief=False,
                      strategy="parameter-server")])
    [incident] = timeline.incidents
    assert (incident.lone, incident.time_lost) == (True, 0.0)


@pytest.mark.parametrize("kind", ["kill", "preempt", "hang"])
def test_every_fault_command_after_the_end_does_nothing(tmp_path, monkeypatch, kind):
    """The trainer wrote `run_finished` and has not exited yet: a K then is refused, says
    why, and writes no `fault_injected`."""
    from conftest import poll_until, stand_in_python

    from ftgui.core.record import events
    from ftgui.core.settings.config import RunConfig
    from ftgui.core.supervision.supervisor import Supervisor

    source = ("for action, value in plan:\n"
              "    if action == 'step': writer.emit('step', step=value, loss=1.0 / value)\n"
              "    elif action == 'finish': writer.emit('run_finished', step=value, loss=0.2)\n"
              "time.sleep(600)\n")
    python = stand_in_python(tmp_path, monkeypatch, source)(
        {"chief:0:0": [["step", 1], ["step", 2], ["finish", 2]]})
    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir, python=python)
    supervisor.start(RunConfig(steps=2, watchdog_seconds=30))
    try:
        poll_until(supervisor, lambda seen: any(e["event"] == "run_finished" for e in seen))
        assert supervisor.processes[0].alive  # still exiting: a signal could reach it
        command = {"kill": supervisor.kill, "preempt": supervisor.preempt,
                   "hang": supervisor.freeze}[kind]
        assert command("chief") is False
        name = {"kill": "Kill", "preempt": "Preempt", "hang": "Freeze"}[kind]
        assert supervisor.refusal == f"{name} ignored: the run has finished (step 2)"
        assert supervisor.checkpoint_now() is False
        assert supervisor.refusal == "Checkpoint now ignored: the run has finished (step 2)"
    finally:
        supervisor.shutdown()
    assert [e for e in events.read_all(run_dir) if e["event"] == "fault_injected"] == []


def test_the_window_says_why_a_kill_did_nothing(qtbot):
    from types import SimpleNamespace

    from ftgui.qt.window.controller import RunController

    controller = RunController()
    refused = "Kill ignored: the run has finished (step 2)"
    controller.supervisor = SimpleNamespace(kill=lambda target: False, refusal=refused,
                                            reaches_job=lambda: False)  # its own run
    with qtbot.waitSignal(controller.logLine) as said:
        assert controller.kill("chief") is False
    assert said.args[0].endswith(f" {refused}")


def test_the_status_bar_says_frozen_with_the_state_label_and_no_rate(qtbot):
    from types import SimpleNamespace

    from ftgui.qt.window.controller import RunController

    controller = RunController()
    timeline, _ = told([ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 20, 1.0),
                        ev("fault_injected", 6.0, kind="hang", target="chief", step=20,
                           source="user")])
    controller.timeline = timeline
    controller.supervisor = SimpleNamespace(  # the live supervisor's state, attempt, reason
        attempt=0, state="running", reason="", live=True, config=None, launcher=None,
        is_busy_elsewhere=lambda: False)
    assert controller.status_text() == "frozen · step 20"


def test_a_stopped_run_without_snapshots_promises_only_a_checkpoint():
    _, said = told([ev("run_started", 0.0, config={"snapshot_every": 0}),
                    ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 20, 1.0),
                    ev("checkpoint_saved", 3.6, step=10, path="checkpoints/ckpt-10"),
                    ev("fault_injected", 6.0, kind="kill", target="chief", step=20,
                       source="user"),
                    ev("process_exited", 6.1, pid=10, last_step=20, signal=9,
                       signal_name="SIGKILL", decisive=True, shutdown=False, **CHIEF)])
    assert said == "Killed at step 20 → stopped: Resume restores the newest checkpoint"


def _faulted_at_the_last_step(kind: str) -> list[dict]:
    """A 20-step run whose chief gets `kind` (kill or preempt) after step 20, its final
    checkpoint written: a kill restarts it from checkpoint 20 and the restart, with no step
    left, finishes; a preempted chief finishes by itself (no preemption at the last step)."""
    run = [ev("run_started", 0.0), ev("process_started", 0.5, pid=10, **CHIEF),
           *steps(1, 20, 1.0),
           ev("fault_injected", 6.0, kind=kind, target="chief", step=20, source="schedule")]
    if kind == "preempt":
        return [*run, ev("run_finished", 6.25, step=20, loss=0.05),
                ev("process_exited", 6.5, pid=10, exit_code=0, decisive=True, **CHIEF)]
    return [*run, ev("process_exited", 6.25, pid=10, signal=9, decisive=True, **CHIEF),
            ev("process_started", 6.5, 1, pid=11, restore="checkpoints/ckpt-20", **CHIEF),
            ev("resumed", 9.0, 1, from_step=20, checkpoint="checkpoints/ckpt-20",
               source="disk"),
            ev("run_finished", 9.5, 1, step=20, loss=None),
            ev("process_exited", 9.75, 1, pid=11, exit_code=0, decisive=True, **CHIEF)]


def test_a_kill_after_the_last_step_recovers_when_the_restart_finishes():
    """A breaker's find: the finished run's story line still said "killed at step 200 →
    restored checkpoint 200 → waiting for the first step": the restart had no step to take."""
    timeline = Timeline()
    timeline.feed(_faulted_at_the_last_step("kill"))
    [incident] = timeline.incidents
    assert (incident.steps_lost, incident.time_lost) == (0, 3.5)  # the kill at 6.0, done 9.5
    assert story(timeline).startswith(
        "Finished at step 20 · killed at step 20 → restored checkpoint 20 → resumed: 0 steps "
        "redone, 3.5 s lost · goodput")


def test_a_preemption_at_the_last_step_costs_nothing_and_says_so():
    """It stayed "Preempted at step 200 → saving its step and stopping" after the run had
    finished: a preemption at the last step is none (the trainer simply finishes)."""
    from ftgui.core.timeline.story import incident_line

    timeline = Timeline()
    timeline.feed(_faulted_at_the_last_step("preempt"))
    [incident] = timeline.incidents
    assert (incident.ended_by, incident.steps_lost, incident.time_lost) == ("finished", 0, 0.0)
    assert story(timeline) == ("Finished at step 20 · 1 incident: 0 steps redone, 0.0 s lost · "
                               "goodput 100 %")
    assert incident_line(incident) == ("preempted at step 20 → nothing to recover: it was the "
                                       "run's last step")


def test_a_hold_for_a_workers_fault_names_the_worker_in_words():
    # the state label read "held — at step 250 for the fault of worker:1" (a presenter); the
    # story line said it too
    from ftgui.core.timeline import story as story_module

    assert story_module.held_words(250, "worker:1") == (
        "held at step 250 until the fault of worker 1 is fired")
