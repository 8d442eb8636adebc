"""A demo that waits for the presenter holds training at the fault's step (real TensorFlow
runs): while held the run's step does not advance (over a few seconds of wall time, its
heartbeats on), and the fault fired after the release lands at exactly that step, for one
process (MirroredStrategy, the Crash-and-recover demo) and for a multi-worker cluster, whose
workers all hold at the same step."""

from __future__ import annotations

import time

import pytest
from conftest import of_kind

from ftgui.core.demos import definitions, results
from ftgui.core.demos.session import DemoSession
from ftgui.core.record import events
from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision.supervisor import Supervisor

pytestmark = pytest.mark.tf
WATCH_SECONDS = 3.0  # wall time a held run is watched for an advancing step


def poll_until(supervisor: Supervisor, done, seen: list[dict], session=None,
               timeout: float = 240.0) -> None:
    """Poll like `ftgui train` until `done()`, collecting the events into `seen`."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "the run did not get there"
        new = supervisor.poll()
        seen.extend(new)
        if session is not None:
            session.feed(new)
        time.sleep(0.05)


def watch_held(supervisor: Supervisor, seen: list[dict], step: int) -> list[dict]:
    """The events of `WATCH_SECONDS` of wall time while held at `step`."""
    began, start = time.monotonic(), len(seen)
    poll_until(supervisor, lambda: time.monotonic() - began > WATCH_SECONDS, seen)
    watched = seen[start:]
    assert supervisor.held == (step, supervisor.held[1])
    return watched


def test_crash_and_recover_holds_for_the_presenter_and_kills_at_650(tmp_path):
    demo = definitions.load(definitions.BUILTIN_DIR / "crash-and-recover.toml")
    session = DemoSession(demo, tmp_path, presenter=True)
    run_dir, config = session.next_run()
    assert config.kill_at_step == 0  # the presenter's fault is not on the schedule
    supervisor = Supervisor(run_dir)
    for step, why in session.holds_of(1).items():
        supervisor.plan_hold(step, why)
    supervisor.start(config.replace(pace=0.0))  # full speed to the hold: the hold is tested
    seen: list[dict] = []
    try:
        poll_until(supervisor, lambda: supervisor.held is not None, seen, session)
        assert supervisor.held == (650, "presenter")
        assert session.press() is not None  # the waiting stage is on: K
        watched = watch_held(supervisor, seen, 650)
        assert [e["step"] for e in of_kind(seen, "step")][-1] == 650
        assert of_kind(watched, "step") == []  # the step did not advance
        assert len(of_kind(watched, "heartbeat", role="chief")) >= 2  # alive meanwhile
        assert supervisor.state == "running"
        poll_until(supervisor, lambda: session.to_fire(650, supervisor.standby_ready())
                   is not None, seen, session)
        fault = session.to_fire(650, True)
        assert supervisor.kill(fault.target)
        session.mark_fired(fault)
        poll_until(supervisor, lambda: not supervisor.live, seen, session)
    finally:
        supervisor.shutdown()
    seen = events.read_all(run_dir)
    [injected] = of_kind(seen, "fault_injected")
    assert (injected["kind"], injected["step"], injected["source"]) == ("kill", 650, "user")
    assert max(e["step"] for e in of_kind(seen, "step") if e["attempt"] == 0) == 650
    [resumed] = of_kind(seen, "resumed")
    assert resumed["from_step"] == 600  # 50 steps redone, as the room is told
    assert [e["step"] for e in of_kind(seen, "step") if e["attempt"] == 1][0] == 601
    assert len(of_kind(seen, "held")) == 1  # the replay of 650 does not hold again
    assert of_kind(seen, "run_finished")[0]["step"] == 1200
    claims = results.check(demo, [run_dir])
    assert all(claim.holds for claim in claims), results.summary(claims)


def test_every_worker_holds_at_the_same_step_and_a_killed_worker_costs_nothing(tmp_path):
    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir)
    supervisor.plan_hold(150)
    supervisor.start(RunConfig(strategy="multi-worker", workers=2, steps=300,
                               checkpoint_every=100, auto_recover=True, restart_backoff=0.0,
                               snapshot_every=0))
    seen: list[dict] = []
    try:
        poll_until(supervisor, lambda: len(of_kind(seen, "held")) == 2, seen)
        assert {(e["role"], e["index"], e["step"]) for e in of_kind(seen, "held")} == {
            ("worker", 0, 150), ("worker", 1, 150)}
        watched = watch_held(supervisor, seen, 150)
        assert of_kind(watched, "step") == []
        assert {e["index"] for e in of_kind(watched, "heartbeat")} == {0, 1}
        assert supervisor.kill("worker:1")
        poll_until(supervisor, lambda: not supervisor.live, seen)
    finally:
        supervisor.shutdown()
    seen = events.read_all(run_dir)
    [injected] = of_kind(seen, "fault_injected")
    assert (injected["target"], injected["step"]) == ("worker:1", 150)
    assert max(e["step"] for e in of_kind(seen, "step") if e["attempt"] == 0) == 150
    [resumed] = of_kind(seen, "resumed")
    assert resumed["from_step"] == 150  # the survivor saved the held step just in time
    assert of_kind(seen, "run_finished")[0]["step"] == 300


def test_a_preemption_pressed_while_held_saves_exactly_the_held_step(tmp_path):
    demo = definitions.load(definitions.BUILTIN_DIR / "preemption.toml")
    session = DemoSession(demo, tmp_path, presenter=True)
    run_dir, config = session.next_run()
    supervisor = Supervisor(run_dir)
    for step, why in session.holds_of(1).items():
        supervisor.plan_hold(step, why)
    supervisor.start(config.replace(pace=0.0))
    seen: list[dict] = []
    try:
        poll_until(supervisor, lambda: supervisor.held is not None, seen, session)
        assert supervisor.held == (730, "presenter")
        fault = session.press()
        poll_until(supervisor, lambda: session.to_fire(730, supervisor.standby_ready())
                   is not None, seen, session)
        assert supervisor.preempt(fault.target)
        session.mark_fired(fault)
        poll_until(supervisor, lambda: not supervisor.live, seen, session)
    finally:
        supervisor.shutdown()
    seen = events.read_all(run_dir)
    [preempted] = of_kind(seen, "preempted")
    assert preempted["step"] == 730
    [released] = of_kind(seen, "hold_released")
    assert released["step"] == 730
    assert [e["step"] for e in of_kind(seen, "step") if e["attempt"] == 1][0] == 731
    claims = results.check(demo, [run_dir])
    assert all(claim.holds for claim in claims), results.summary(claims)
