"""Holding training for the presenter and pacing it, without TensorFlow: the trainer's `Hold`
waits at a step boundary (heartbeats on) until the supervisor's release or a preemption, once
per step; `Pace` spaces steps and never races to catch up; the fault plan gives every process
that counts steps the run's holds, once per run, and a parameter-server coordinator a hold at
the step of a worker's fault."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

from ftgui.core.record import events
from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision import fault_plan, holds
from ftgui.core.supervision.cluster import tasks
from ftgui.core.supervision.fault_plan import parse_arg
from ftgui.core.supervision.fault_schedule import FaultSchedule
from ftgui.training.actions import StepOutput
from ftgui.training.actions.hold import Hold, planned_holds
from ftgui.training.actions.pace import Pace
from ftgui.training.signals import Requests


class FakeClock:
    """A monotonic clock that moves only when the code under test sleeps."""

    def __init__(self):
        self.now = 100.0
        self.slept: list[float] = []
        self.on_sleep = None  # called after each sleep (e.g. to release a hold)

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep(self.now)


def test_a_held_trainer_waits_with_heartbeats_until_the_supervisor_lets_it_go(tmp_path):
    clock, requests = FakeClock(), Requests()
    clock.on_sleep = lambda now: now >= 103.5 and holds.release(tmp_path, 2, 650, "presenter")
    with events.EventWriter(tmp_path, attempt=2) as writer:
        hold = Hold({650: "presenter"}, tmp_path, writer, requests, clock=clock,
                    sleep=clock.sleep)
        assert hold(StepOutput(649, 0.5)) is None and clock.slept == []
        hold(StepOutput(650, 0.5))
        hold(StepOutput(650, 0.5))  # the same step again (a replay): no second hold
    seen = events.read_all(tmp_path)
    assert [e["event"] for e in seen] == ["held", "heartbeat", "heartbeat", "heartbeat",
                                          "hold_released"]
    assert {e["step"] for e in seen} == {650}
    assert (seen[0]["why"], seen[0]["role"], seen[0]["index"]) == ("presenter", "chief", 0)
    assert all(e["held"] for e in seen[1:4])
    assert seen[-1]["by"] == "presenter" and seen[-1]["seconds"] >= 3.0
    assert events.describe(seen[0]) == "chief held after step 650 for the presenter"


def test_a_preemption_ends_a_hold_so_the_trainer_saves_the_held_step(tmp_path):
    clock, requests = FakeClock(), Requests()
    clock.on_sleep = lambda now: setattr(requests, "stop", now >= 100.5)
    with events.EventWriter(tmp_path, attempt=0) as writer:
        Hold({730: "presenter"}, tmp_path, writer, requests, clock=clock,
             sleep=clock.sleep)(StepOutput(730, 0.5))
    released = events.read_all(tmp_path)[-1]
    assert (released["event"], released["by"], released["step"]) == (
        "hold_released", "preemption", 730)


def test_a_release_names_its_attempt_and_step_and_a_launch_clears_them(tmp_path):
    assert holds.released_by(tmp_path, 0, 650) is None
    holds.release(tmp_path, 0, 650, "fault")
    assert holds.released_by(tmp_path, 0, 650) == "fault"
    assert holds.released_by(tmp_path, 1, 650) is None  # another attempt's hold
    assert holds.released_by(tmp_path, 0, 651) is None
    holds.clear(tmp_path)
    assert holds.released_by(tmp_path, 0, 650) is None


def test_pace_spaces_the_steps_and_starts_afresh_after_a_late_step():
    clock = FakeClock()
    pace = Pace(4.0, clock=clock, sleep=clock.sleep)  # 4 steps a second: 0.25 s each
    for step in range(1, 4):
        pace(StepOutput(step, 1.0))
    assert clock.slept == [0.25, 0.25, 0.25]
    clock.now += 0.1  # the step itself took 0.1 s: only the rest is waited
    pace(StepOutput(4, 1.0))
    assert abs(clock.slept[-1] - 0.15) < 1e-9
    clock.now += 10.0  # held for the presenter: no burst of steps afterwards
    pace(StepOutput(5, 1.0))
    assert clock.slept[-1] == 0.25


def test_every_process_that_counts_steps_holds_once_per_run():
    config = RunConfig(strategy="multi-worker", workers=2, steps=400)
    schedule = FaultSchedule()
    schedule.holds[250] = "presenter"
    names = [task.name for task in tasks(config)]
    args = [schedule.args_for(config, task, names) for task in tasks(config)]
    assert args == [["hold@250:presenter"], ["hold@250:presenter"]]
    schedule.observe({"event": "held", "step": 250, "role": "worker", "index": 0})
    assert [schedule.args_for(config, task, names) for task in tasks(config)] == [[], []]


def test_a_standby_hold_is_due_again_while_one_of_its_faults_has_not_fired():
    # a kill at 15 and a preemption at 16 both hold after step 15: once per run, the
    # preemption's restart found its standby still importing (a breaker's run)
    config = RunConfig(steps=40, kill_at_step=15, preempt_at_step=16, warm_standby=True)
    schedule = FaultSchedule()
    schedule.hold_faults = fault_plan.standby_hold_faults(config, ["chief"])
    schedule.holds = {step: "standby" for step in schedule.hold_faults}
    assert schedule.hold_faults == {15: ["kill@15:chief", "preempt@16:chief"]}
    [chief] = tasks(config)

    def hold_args():
        return [arg for arg in schedule.args_for(config, chief, ["chief"])
                if arg.startswith("hold@")]

    assert hold_args() == ["hold@15:standby"]
    schedule.observe({"event": "held", "step": 15, "role": "chief", "index": 0})
    schedule.observe({"event": "fault_injected", "kind": "kill", "step": 15,
                      "target": "chief", "source": "schedule"})
    assert hold_args() == ["hold@15:standby"]  # the replay of 11-15 holds for the preemption
    schedule.observe({"event": "fault_injected", "kind": "preempt", "step": 16,
                      "target": "chief", "source": "schedule"})
    assert hold_args() == []


def test_a_parameter_server_coordinator_holds_at_the_step_of_a_workers_fault():
    config = RunConfig(strategy="parameter-server", workers=2, ps=1, steps=400,
                       kill_at_step=250, fault_target="worker:1")
    schedule = FaultSchedule()
    names = [task.name for task in tasks(config)]
    by_task = {task.name: schedule.args_for(config, task, names) for task in tasks(config)}
    assert by_task == {"chief": ["hold@250:worker:1"], "worker:0": [], "worker:1": [],
                       "ps:0": []}
    assert [f.key for f in schedule.armed] == ["kill@250:worker:1"]
    assert schedule.due(250) == []  # reached, but the coordinator's save may be in flight
    assert [f.key for f in schedule.due(250, held=True)] == ["kill@250:worker:1"]
    assert schedule.due(251) == []  # fired once
    chief = tasks(config)[0]
    assert schedule.args_for(config, chief, names) == []  # fired: no hold on a restart


def test_the_trainer_reads_a_hold_from_its_command_line():
    assert parse_arg("hold@650") == ("hold", 650)
    assert planned_holds([("kill", 650, "chief"), ("hold", 650, "presenter"),
                          ("hold", 250, "worker:1")]) == {650: "presenter", 250: "worker:1"}


def test_the_state_label_says_held_for_the_presenter_until_the_run_goes_on(qtbot):
    """From the events alone (live, reopened or replayed): `held` → the label says so;
    `hold_released` → running again."""
    from ftgui.core.timeline.model import Timeline
    from ftgui.qt.window.top_bar import TopBar

    bar = TopBar()
    qtbot.addWidget(bar)
    timeline = Timeline()
    timeline.feed([{"event": "run_started", "time": 1.0, "attempt": 0},
                   {"event": "process_started", "time": 1.0, "attempt": 0, "role": "chief"},
                   {"event": "step", "time": 2.0, "attempt": 0, "step": 650, "loss": 0.3},
                   {"event": "held", "time": 2.0, "attempt": 0, "step": 650,
                    "why": "presenter", "role": "chief", "index": 0}])
    bar.show_run(timeline, "running", "")
    # short enough to fit beside the buttons with the demo dock at 1280 px (it was cut off)
    assert bar.state_label.text() == "held — at step 650 for the presenter"
    assert bar.story_banner.text() == "Held for the presenter at step 650 (press K) · loss 0.3000"
    timeline.feed([{"event": "hold_released", "time": 9.0, "attempt": 0, "step": 650,
                    "by": "fault", "seconds": 7.0, "role": "chief", "index": 0}])
    bar.show_run(timeline, "running", "")
    assert bar.state_label.text() == "running"
