"""Process counters, the kill step, restarts while an old attempt is still exiting, and durations
measured with a monotonic clock.

The supervisor tests put a stand-in trainer (no TensorFlow) behind the supervisor; what each
process does is a plan keyed by `role:index:attempt`: steps, heartbeats, a restore, an exit.
"""

from __future__ import annotations

import json
import stat
import sys
import textwrap
import time

import pytest
from conftest import fake_checkpoint, of_kind, poll_until, poll_until_done

from ftgui.core import config as configmod
from ftgui.core import events
from ftgui.core.config import RunConfig
from ftgui.core.events import EventWriter
from ftgui.core.supervisor import Supervisor

PLANNED_TRAINER = textwrap.dedent(
    """
    # Stands in for `python -m ftgui.training RUN --role R --index I --attempt N ...`.
    import json, os, sys, time
    from ftgui.core.events import EventWriter

    argv = sys.argv
    run_dir = argv[3]
    role, index = argv[argv.index("--role") + 1], int(argv[argv.index("--index") + 1])
    attempt = int(argv[argv.index("--attempt") + 1])
    plan = json.loads(os.environ["FAKE_PLAN"]).get(f"{role}:{index}:{attempt}", [])
    writer = EventWriter(run_dir, attempt)
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
    script = tmp_path / "planned_trainer.py"
    script.write_text(PLANNED_TRAINER)
    launcher = tmp_path / "fake-python"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)

    def with_plan(plan: dict) -> str:
        monkeypatch.setenv("FAKE_PLAN", json.dumps(plan))
        return str(launcher)

    return with_plan


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
