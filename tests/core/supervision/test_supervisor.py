"""The supervisor: one owner per run directory; kill, preempt, shutdown and automatic recovery.

The first tests put a stand-in trainer (a small Python script, no TensorFlow) behind the
supervisor, so a test chooses the process tree and the exit status exactly; the tests marked `tf`
run the real trainer.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time

import psutil
import pytest
from conftest import converted_model, of_kind, poll_until, poll_until_done, processes_of

from ftgui.core.record import events, exitcodes, run_lock
from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.supervision import trainer_command
from ftgui.core.supervision.cluster import Task
from ftgui.core.supervision.fault_schedule import FaultSchedule
from ftgui.core.supervision.processes import autograph_folder
from ftgui.core.supervision.supervisor import RunBusyError, StartError, Supervisor

FAKE_TRAINER = textwrap.dedent(
    """
    # Stands in for `python -m ftgui.training RUN --attempt N ...`; behaviour from FAKE_TRAINER.
    import os, subprocess, sys, time
    from ftgui.core.record.events import EventWriter

    run_dir = sys.argv[sys.argv.index("ftgui.training") + 1]
    attempt = int(sys.argv[sys.argv.index("--attempt") + 1])
    events = EventWriter(run_dir, attempt)
    mode = os.environ.get("FAKE_TRAINER", "tree")
    if mode.startswith("exit:"):
        events.emit("training_error", role="chief", index=0, error="stand-in failure")
        sys.exit(int(mode[5:]))
    if mode == "survivor":  # a multi-worker process that ends when told a peer is gone
        from ftgui.core.supervision import peer_notice
        index = int(sys.argv[sys.argv.index("--index") + 1])
        events.emit("step", step=1, loss=2.0)
        for _ in range(6000):
            notice = peer_notice.read(run_dir, attempt)
            if notice is not None:
                events.emit("training_error", role="worker", index=index,
                            error="told: " + notice["reason"])
                sys.exit(1)
            time.sleep(0.01)
        sys.exit(3)
    if mode == "swallows-sigterm":  # a cluster strategy's notifier holds SIGTERM while built
        import signal
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open(os.path.join(run_dir, "building"), "w").close()
        while not os.path.exists(os.path.join(run_dir, "preempt-sent")):
            time.sleep(0.01)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(42))  # taken back, as the trainer does
        events.emit("training_started", role="chief", index=0, pid=os.getpid(), start_step=0)
        for step in range(1, 6000):
            events.emit("step", step=step, loss=1.0)
            time.sleep(0.01)
        sys.exit(0)
    if mode.startswith("late:"):  # a trainer that takes this long to import and build
        time.sleep(float(mode[5:]))
    if mode.startswith("crash-then-late:"):  # attempt 0 trains, then fails; later ones start late
        trains, starts = map(float, mode.split(":")[1].split(","))
        if attempt == 0:
            events.emit("step", step=1, loss=2.0)
            time.sleep(trains)
            sys.exit(1)
        time.sleep(starts)
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    child = subprocess.Popen(sleeper)  # stays in the trainer's process group
    escaped = subprocess.Popen(sleeper, start_new_session=True)  # left the group
    with open(os.path.join(run_dir, f"children-{attempt}.txt"), "w") as handle:
        handle.write(f"{child.pid} {escaped.pid}")
    events.emit("step", step=1, loss=2.0)
    time.sleep(600)
    """
)


@pytest.fixture
def fake_python(tmp_path):
    """An executable that the supervisor runs in place of Python: it runs the stand-in trainer."""
    script = tmp_path / "fake_trainer.py"
    script.write_text(FAKE_TRAINER)
    launcher = tmp_path / "fake-python"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    return str(launcher)


def gone(pid: int) -> bool:
    """True when `pid` runs nothing any more (vanished, or a zombie nobody has reaped yet)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_gone(pids: list[int]) -> list[int]:
    """Wait (bounded) for `pids` to end; returns those still running."""
    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=30)
    return [pid for pid in pids if not gone(pid)]


def started_pids(all_events: list[dict]) -> list[int]:
    return [e["pid"] for e in of_kind(all_events, "process_started")]


# --------------------------------------------------------------- stand-in trainer (no TF)


def test_kill_ends_the_trainer_and_every_process_it_started(tmp_path, fake_python):
    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir, python=fake_python)
    supervisor.start(RunConfig(steps=10))
    seen = poll_until(supervisor, lambda ev: of_kind(ev, "step"))
    child, escaped = map(int, (run_dir / "children-0.txt").read_text().split())
    assert not gone(child) and not gone(escaped)

    assert supervisor.kill() is True
    seen += poll_until_done(supervisor)

    assert wait_gone([*started_pids(seen), child, escaped]) == []
    [exited] = of_kind(seen, "process_exited")
    assert (exited["signal"], exited["signal_name"]) == (9, "SIGKILL")
    assert (supervisor.state, supervisor.reason) == ("killed", "ended by SIGKILL")
    [fault] = of_kind(seen, "fault_injected")
    assert (fault["kind"], fault["target"], fault["source"], fault["step"]) == (
        "kill", "chief", "user", 1
    )
    assert supervisor.kill() is False  # nothing left to kill


def test_a_chief_killed_while_it_restores_a_snapshot_exits_at_the_snapshot_s_step(
        tmp_path, fake_python, monkeypatch):
    """Killed again while it restored step 151 from memory: its `process_exited` said
    `last_step` 100 (the checkpoint it did not restore) beside the story's "at step 151"
    (a breaker's finding)."""
    from ftgui.core.checkpoints import snapshots

    monkeypatch.setenv("FAKE_TRAINER", "late:30")  # still restoring when the kill comes
    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir, python=fake_python)
    supervisor.start(RunConfig(steps=400))
    poll_until(supervisor, lambda ev: of_kind(ev, "process_started"))
    supervisor.shutdown()
    made = snapshots.SnapshotFile.create(snapshots.snapshot_path(run_dir), 7, 64, run_dir)
    try:
        made.write(0, 151, 0.5, (151).to_bytes(8, sys.byteorder) * 8)
        again = Supervisor(run_dir, python=fake_python)  # `ftgui train RUN --resume`
        again.resume()
        seen = poll_until(again, lambda ev: of_kind(ev, "process_started", attempt=1))
        assert of_kind(seen, "process_started", attempt=1)[0]["snapshot"] == 151
        assert again.kill() is True
        seen += poll_until_done(again)
        [exited] = of_kind(seen, "process_exited", attempt=1)
        assert exited["last_step"] == 151
    finally:
        made.close()
        snapshots.discard(run_dir)


def test_the_kill_timer_counts_from_the_first_step_not_the_launch(
    tmp_path, fake_python, monkeypatch
):
    # Importing TensorFlow takes 2-10 s: a timer from the launch killed slow starters untrained.
    monkeypatch.setenv("FAKE_TRAINER", "late:1.0")
    supervisor = Supervisor(tmp_path / "run", python=fake_python)
    supervisor.start(RunConfig(steps=10, kill_after_seconds=0.5))
    seen = poll_until_done(supervisor)

    kinds = [event["event"] for event in seen]
    assert kinds.index("step") < kinds.index("fault_injected")
    [step] = of_kind(seen, "step")
    [fault] = of_kind(seen, "fault_injected")
    assert (fault["kind"], fault["source"], fault["step"]) == ("kill", "timer", 1)
    assert fault["time"] - step["time"] >= 0.5
    assert supervisor.state == "killed"


def test_the_kill_timer_pauses_while_a_restarted_trainer_starts(tmp_path, fake_python,
                                                                monkeypatch):
    # 0.5 s of training in attempt 0, then 1.5 s of start-up: a timer that ran on killed the
    # new process before its first step (a breaker's finding)
    monkeypatch.setenv("FAKE_TRAINER", "crash-then-late:0.5,1.5")
    supervisor = Supervisor(tmp_path / "run", python=fake_python)
    supervisor.start(RunConfig(steps=10, kill_after_seconds=1.0, auto_recover=True,
                               restart_backoff=0))
    seen = poll_until(supervisor, lambda ev: of_kind(ev, "fault_injected"))
    supervisor.shutdown()
    [fault] = of_kind(seen, "fault_injected")
    [step] = of_kind(seen, "step", attempt=1)
    assert (fault["source"], fault["attempt"], fault["step"]) == ("timer", 1, 1)
    # 1.0 s in all: about 0.5 s in attempt 0 and the rest from attempt 1's first step
    assert fault["time"] - step["time"] >= 0.3


def test_a_resumed_run_whose_kill_timer_fired_is_not_killed_again(tmp_path, fake_python):
    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir, python=fake_python)
    supervisor.start(RunConfig(steps=10, kill_after_seconds=0.3))
    seen = poll_until_done(supervisor)
    assert [e["source"] for e in of_kind(seen, "fault_injected")] == ["timer"]
    supervisor.shutdown()

    again = Supervisor(run_dir, python=fake_python)  # `ftgui train RUN --resume`
    again.resume()
    seen = poll_until(again, lambda ev: of_kind(ev, "step", attempt=1))
    deadline = time.time() + 1.0  # over three times the timer
    while time.time() < deadline:
        seen += again.poll()
        time.sleep(0.05)
    again.shutdown()
    assert of_kind(seen, "fault_injected", attempt=1) == []


def test_a_lost_worker_is_announced_to_the_survivors_who_end_within_the_grace(
    tmp_path, fake_python, monkeypatch
):
    """A killed member of a multi-worker cluster: the supervisor writes the notice of its
    attempt (`peer_notice`) before it waits for the survivors, and the next launch removes it."""
    from ftgui.core.supervision import peer_notice
    from ftgui.core.supervision.task_launch import JUST_IN_TIME_GRACE_SECONDS

    monkeypatch.setenv("FAKE_TRAINER", "survivor")
    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir, python=fake_python)
    supervisor.start(RunConfig(strategy="multi-worker", workers=3, global_batch_size=63,
                               steps=10, auto_recover=True, restart_backoff=30))
    seen = poll_until(supervisor, lambda ev: len(of_kind(ev, "step")) == 3)
    assert supervisor.kill("worker:1")
    seen += poll_until(supervisor, lambda _: supervisor.state == "recovering")
    exits = of_kind(seen, "process_exited", attempt=0)
    assert [(e["index"], e.get("signal"), e.get("exit_code")) for e in exits] == [
        (1, 9, None), (0, None, 1), (2, None, 1)]  # the survivors ended on their own
    assert exits[-1]["time"] - exits[0]["time"] < JUST_IN_TIME_GRACE_SECONDS
    errors = {e["index"]: e["error"] for e in of_kind(seen, "training_error")}
    assert errors == {0: "told: worker 1 ended by SIGKILL", 2: "told: worker 1 ended by SIGKILL"}
    assert supervisor.state == "recovering"
    assert peer_notice.read(run_dir, 0)["reason"] == "worker 1 ended by SIGKILL"
    supervisor._recovery.due = 0  # restart now
    seen += poll_until(supervisor, lambda ev: of_kind(ev, "process_started", attempt=1))
    assert peer_notice.read(run_dir, 0) is None
    supervisor.shutdown()
    assert wait_gone(started_pids(seen)) == []


def test_automatic_recovery_retries_with_doubling_backoff_then_gives_up(
    tmp_path, fake_python, monkeypatch
):
    monkeypatch.setenv("FAKE_TRAINER", "exit:1")
    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir, python=fake_python)
    supervisor.start(RunConfig(auto_recover=True, max_restarts=2, restart_backoff=0.01))
    seen = poll_until_done(supervisor)

    assert [e["attempt"] for e in of_kind(seen, "process_started")] == [0, 1, 2]
    assert [(e["delay"], e["restart"]) for e in of_kind(seen, "recovery_scheduled")] == [
        (0.01, 1), (0.02, 2)
    ]
    assert [e["exit_code"] for e in of_kind(seen, "process_exited")] == [1, 1, 1]
    assert supervisor.state == "failed"
    assert supervisor.reason == "exited with status 1 (error): stand-in failure"


@pytest.mark.parametrize(
    ("exit_code", "state", "reason"),
    [
        (exitcodes.BAD_CONFIG, "failed",
         "exited with status 2 (bad configuration): stand-in failure"),
        (exitcodes.NON_FINITE, "failed",
         "exited with status 3 (non-finite loss): stand-in failure"),
        (exitcodes.FINISHED, "finished", "reached the last step"),
    ],
)
def test_automatic_recovery_does_not_retry_what_a_restart_cannot_fix(
    tmp_path, fake_python, monkeypatch, exit_code, state, reason
):
    monkeypatch.setenv("FAKE_TRAINER", f"exit:{exit_code}")
    supervisor = Supervisor(tmp_path / "run", python=fake_python)
    supervisor.start(RunConfig(auto_recover=True, max_restarts=3, restart_backoff=0))
    seen = poll_until_done(supervisor)
    assert len(of_kind(seen, "process_started")) == 1
    assert of_kind(seen, "recovery_scheduled") == []
    assert (supervisor.state, supervisor.reason) == (state, reason)


def test_automatic_recovery_restarts_a_preempted_run(tmp_path, fake_python, monkeypatch):
    # Preemption is how clusters take machines back; the job is expected to come back.
    monkeypatch.setenv("FAKE_TRAINER", f"exit:{exitcodes.PREEMPTED}")
    supervisor = Supervisor(tmp_path / "run", python=fake_python)
    supervisor.start(RunConfig(auto_recover=True, max_restarts=1, restart_backoff=0))
    seen = poll_until_done(supervisor)
    assert [e["attempt"] for e in of_kind(seen, "process_started")] == [0, 1]
    assert [e["restart"] for e in of_kind(seen, "recovery_scheduled")] == [1]
    assert (supervisor.state, supervisor.reason) == (
        "preempted", "saved at the current step and stopped"
    )


def test_a_preemption_swallowed_while_the_trainer_built_its_strategy_is_sent_again(
        tmp_path, fake_python, monkeypatch):
    # a Ctrl-C of `ftgui train` during a forked multi-worker restart: the SIGTERM came while
    # TensorFlow's coordination service held the signal, and the run trained to its last step
    monkeypatch.setenv("FAKE_TRAINER", "swallows-sigterm")
    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir, python=fake_python)
    supervisor.start(RunConfig(steps=10_000))
    poll_until(supervisor, lambda ev: (run_dir / "building").exists())
    assert supervisor.preempt() is True  # swallowed
    (run_dir / "preempt-sent").touch()
    seen = poll_until_done(supervisor)
    [exited] = of_kind(seen, "process_exited")
    assert exited.get("exit_code") == exitcodes.PREEMPTED  # sent again at its start
    assert max(e["step"] for e in of_kind(seen, "step")) < 5999


def test_a_new_run_is_refused_in_a_directory_that_holds_one(tmp_path, fake_python, monkeypatch):
    monkeypatch.setenv("FAKE_TRAINER", "exit:0")
    run_dir = tmp_path / "run"
    first = Supervisor(run_dir, python=fake_python)
    first.start(RunConfig())
    poll_until_done(first)
    before = (run_dir / "events.jsonl").read_bytes()
    with pytest.raises(StartError, match="already holds a run; resume it"):
        Supervisor(run_dir, python=fake_python).start(RunConfig())
    assert (run_dir / "events.jsonl").read_bytes() == before


def test_a_bad_config_is_refused_before_anything_is_written(tmp_path, fake_python):
    run_dir = tmp_path / "run"
    with pytest.raises(ConfigError, match="^global_batch_size: 63 is not divisible"):
        Supervisor(run_dir, python=fake_python).start(RunConfig(global_batch_size=63))
    assert not run_dir.exists()


def test_resume_from_a_step_without_a_checkpoint_is_refused(tmp_path, fake_python, monkeypatch):
    monkeypatch.setenv("FAKE_TRAINER", "exit:0")
    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir, python=fake_python)
    supervisor.start(RunConfig())
    poll_until_done(supervisor)
    with pytest.raises(StartError, match="^no checkpoint of step 20; valid steps: none$"):
        supervisor.resume(from_step=20)


# --------------------------------------------------------------- the run lock (no TF)

HOLD_LOCK = textwrap.dedent(
    """
    import sys, time
    from ftgui.core.record.run_lock import RunLock

    RunLock(sys.argv[1]).acquire()
    print("held", flush=True)
    time.sleep(600)
    """
)


def test_a_run_locked_by_another_process_is_refused_until_that_process_is_killed(tmp_path):
    run_dir = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(run_dir)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        supervisor = Supervisor(run_dir)
        assert supervisor.is_busy_elsewhere() is True
        assert run_lock.is_busy(run_dir) is True
        with pytest.raises(RunBusyError, match=f"^{run_dir} is in use by pid {holder.pid}; "):
            supervisor.start(RunConfig())
        assert supervisor.processes == [] and not (run_dir / "config.toml").exists()
    finally:
        holder.kill()  # SIGKILL: no chance to release anything
        holder.wait()
        holder.stdout.close()
    assert supervisor.is_busy_elsewhere() is False  # the kernel freed the dead holder's lock
    lock = run_lock.RunLock(run_dir)
    lock.acquire()
    assert (run_dir / ".lock").read_text() == str(os.getpid())
    assert lock.is_busy_elsewhere() is False  # its own holder is not "elsewhere"
    assert Supervisor(run_dir).is_busy_elsewhere() is True  # another holder in this process is
    lock.release()
    assert run_lock.is_busy(run_dir) is False


def test_asking_whether_a_run_is_busy_creates_nothing(tmp_path):
    assert run_lock.is_busy(tmp_path) is False
    assert Supervisor(tmp_path).is_busy_elsewhere() is False
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------- command lines (no TF)


def test_the_trainer_command_line_has_one_form():
    args = trainer_command.trainer_args("/runs/a", "worker", 1, 2, "checkpoints/ckpt-30",
                                        ["kill@40:worker:1", "nan@50:worker:1"])
    assert args == ["/runs/a", "--role", "worker", "--index", "1", "--attempt", "2",
                    "--restore", "checkpoints/ckpt-30",
                    "--fault", "kill@40:worker:1", "--fault", "nan@50:worker:1"]
    assert trainer_command.trainer_args("/runs/a") == [
        "/runs/a", "--role", "chief", "--index", "0", "--attempt", "0"]
    safe = ["-P"] if sys.version_info >= (3, 11) else []  # the working directory not first
    assert trainer_command.trainer_argv(["/runs/a"], "py") == ["py", *safe, "-m",
                                                                "ftgui.training", "/runs/a"]
    assert trainer_command.standby_argv("/runs/a", "py") == [
        "py", *safe, "-m", "ftgui.training", "--standby", "/runs/a"]
    tf_config = {"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}}
    assert trainer_command.remote_command(["/runs/my run", "--role", "worker"], tf_config) == (
        """PYTHONHASHSEED=0 TF_CONFIG='{"cluster":{"worker":["h:1"]},"task":{"type":"worker","""
        """"index":0}}' """
        """ftgui worker '/runs/my run' --role worker"""
    )


PARSE_TRAINER_ARGS = textwrap.dedent(
    """
    import json, sys
    from ftgui.training.__main__ import parse_args, planned_faults  # argparse only, no TF

    args = parse_args(json.loads(sys.argv[1]))
    print(json.dumps([str(args.run_dir), args.role, args.index, args.attempt, args.restore,
                      planned_faults(args)]))
    """
)


def test_the_trainer_parses_the_command_line_the_supervisor_builds():
    built = trainer_command.trainer_args("/runs/a", "worker", 1, 2, "checkpoints/ckpt-30",
                                         ["kill@40:worker:1"])
    # in a process of its own: importing the trainer's entry point installs its signal handlers
    out = subprocess.run([sys.executable, "-c", PARSE_TRAINER_ARGS, json.dumps(built)],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == ["/runs/a", "worker", 1, 2, "checkpoints/ckpt-30",
                               [["kill", 40, "worker:1"]]]


def test_faults_go_on_the_command_line_of_a_process_that_counts_steps():
    config = RunConfig(strategy="parameter-server", workers=2, ps=1, kill_at_step=5,
                       fault_target="chief", hang_at_step=7)
    chief, worker = Task("chief", 0, True), Task("worker", 1, False)
    schedule = FaultSchedule()
    assert schedule.args_for(config, chief, ["chief", "worker:0", "worker:1", "ps:0"]) == [
        "kill@5:chief", "hang@7:chief"]
    schedule.fired.add("kill@5:chief")  # fired in an earlier attempt: not again
    assert schedule.args_for(config, chief, ["chief"]) == ["hang@7:chief"]
    on_worker = config.replace(fault_target="worker:1")
    assert schedule.args_for(on_worker, worker, ["chief", "worker:1"]) == []  # counts no steps
    assert [f.key for f in schedule.armed] == ["kill@5:worker:1", "hang@7:worker:1"]
    assert [f.key for f in schedule.due(6)] == ["kill@5:worker:1"]  # the chief reached step 6
    assert [f.key for f in schedule.armed] == ["hang@7:worker:1"]
    assert "kill@5:worker:1" in schedule.fired


# --------------------------------------------------------------- the real trainer


@pytest.mark.tf
def test_a_second_supervisor_cannot_take_a_live_run(tmp_path):
    run_dir = tmp_path / "run"
    config = RunConfig(steps=20000, checkpoint_every=1000)
    owner = Supervisor(run_dir)
    owner.start(config)
    try:
        intruder = Supervisor(run_dir)
        assert intruder.is_busy_elsewhere()
        with pytest.raises(RunBusyError, match=f"in use by pid {os.getpid()}"):
            intruder.start(config, resume=True)
        with pytest.raises(RunBusyError):
            intruder.start(config)
        assert intruder.processes == []
    finally:
        owner.shutdown()
    all_events = events.read_all(run_dir)
    assert len(of_kind(all_events, "process_started")) == 1
    assert not Supervisor(run_dir).is_busy_elsewhere()


@pytest.mark.tf
def test_kill_crashes_the_trainer_and_leaves_nothing_running(tmp_path):
    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir)
    supervisor.start(RunConfig(steps=20000, checkpoint_every=1000, strategy="default",
                               model=converted_model(tmp_path)))
    seen = poll_until(supervisor, lambda ev: of_kind(ev, "step"))
    [pid] = started_pids(seen)
    converted = list(autograph_folder(pid).glob("__autograph_generated_file*.py"))
    assert converted  # autograph wrote the user function's converted source in its folder

    assert supervisor.kill() is True
    seen += poll_until_done(supervisor)

    assert [gone(pid) for pid in started_pids(seen)] == [True]
    assert not autograph_folder(pid).exists()  # SIGKILLed: the supervisor deleted it
    assert processes_of(run_dir) == []
    [exited] = of_kind(seen, "process_exited")
    assert (exited["role"], exited["signal"], exited["signal_name"]) == ("chief", 9, "SIGKILL")
    assert "exit_code" not in exited
    assert supervisor.state == "killed"
    assert of_kind(seen, "run_finished") == []


@pytest.mark.tf
def test_shutdown_leaves_nothing_running_even_with_automatic_recovery(tmp_path):
    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir)
    supervisor.start(RunConfig(steps=20000, checkpoint_every=1000, auto_recover=True,
                               restart_backoff=0))
    poll_until(supervisor, lambda ev: of_kind(ev, "step"))

    supervisor.shutdown()

    assert not supervisor.live
    assert processes_of(run_dir) == []
    supervisor.poll()  # a later poll (the GUI's timer) must not bring the run back
    all_events = events.read_all(run_dir)
    assert [gone(pid) for pid in started_pids(all_events)] == [True]
    assert of_kind(all_events, "recovery_scheduled") == []
    assert not Supervisor(run_dir).is_busy_elsewhere()


def test_stopping_with_a_restart_pending_records_that_it_was_cancelled(
        tmp_path, fake_python, monkeypatch):
    """Ctrl+C to `ftgui train` (or closing the window) during an automatic restart's backoff:
    the run records `recovery_cancelled`, so the wait until the user resumes is a stopped run's
    and not counted as the incident's time lost (a breaker saw 28.9 s lost, 20 s of it idle)."""
    from ftgui.core.record.incidents import from_events

    monkeypatch.setenv("FAKE_TRAINER", "exit:1")
    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir, python=fake_python)
    supervisor.start(RunConfig(steps=10, auto_recover=True, restart_backoff=30))
    poll_until(supervisor, lambda _: supervisor.state == "recovering")
    supervisor.shutdown()
    seen = events.read_all(run_dir)
    assert [e["event"] for e in seen if e["event"].startswith("recovery_")] == [
        "recovery_scheduled", "recovery_cancelled"]
    assert from_events(seen)._parked
    supervisor.shutdown()  # nothing pending: nothing more written
    assert len(of_kind(events.read_all(run_dir), "recovery_cancelled")) == 1


def test_a_start_plans_the_standby_holds_of_its_own_faults_and_keeps_a_presenters(tmp_path):
    supervisor = Supervisor(tmp_path / "run")
    supervisor.plan_hold(7, "presenter")
    supervisor.plan_hold(20, "presenter")  # a presenter's hold at a fault's step wins
    supervisor._plan_standby_holds(RunConfig(steps=50, kill_at_step=20, hang_at_step=30,
                                             warm_standby=True))
    assert supervisor._faults.holds == {7: "presenter", 20: "presenter", 30: "standby"}
    # a resume whose fault is gone: its hold goes too (a breaker's window resumed with the
    # kill removed and still held at its step)
    supervisor._plan_standby_holds(RunConfig(steps=50, warm_standby=True))
    assert supervisor._faults.holds == {7: "presenter", 20: "presenter"}
