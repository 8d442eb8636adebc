"""The supervisor through the launcher seam: a fake launcher records every call the supervisor
makes, and its "processes" write the events a trainer writes (no TensorFlow, no process)."""

from __future__ import annotations

import dataclasses
import json
import signal
import time

from conftest import fake_checkpoint

from ftgui.core.record import events
from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision import peer_notice
from ftgui.core.supervision.launcher import Launcher, TaskHandle, TaskStart
from ftgui.core.supervision.local_launcher import LocalLauncher
from ftgui.core.supervision.supervisor import Supervisor

CONFIG = RunConfig(steps=6, checkpoint_every=2, auto_recover=True, restart_backoff=0.0,
                   max_restarts=2)


class FakeTrainer:
    """A task's "process": each `poll()` while it lives is one training step of the chief,
    written as a trainer writes it (a `training_started` and, restored, a `resumed` before the
    first; a
    checkpoint every `checkpoint_every` steps; `run_finished` and exit 0 at the last step)."""

    def __init__(self, launcher: FakeLauncher, request: TaskStart, pid: int):
        self.launcher, self.request = launcher, request
        self.pid, self.ident, self.log_path = pid, f"fake {pid}", request.log_path
        self.address, self.standby, self.standby_warm, self.standby_age = None, False, None, None
        self.code: int | None = None
        args = request.args
        restore = args[args.index("--restore") + 1] if "--restore" in args else None
        self.step = int(restore.rsplit("-", 1)[1]) if restore else 0
        self.run_dir, self.restore, self.began = launcher.run_dir, restore, False

    def _writer(self) -> events.EventWriter:
        return events.EventWriter(self.run_dir, self.request.attempt)

    def poll(self) -> int | None:
        if self.code is None and self.request.task.is_chief:  # the others only take part
            self._train_one_step()
        return self.code

    def _train_one_step(self) -> None:
        with self._writer() as writer:
            if not self.began:
                self.began = True
                task = self.request.task
                writer.emit("training_started", role=task.role, index=task.index, pid=self.pid,
                            start_step=self.step, strategy="default")
                if self.restore:
                    writer.emit("resumed", from_step=self.step, checkpoint=self.restore)
            self.step += 1
            writer.emit("step", step=self.step, loss=1.0 / self.step, epoch=0)
            if self.step % CONFIG.checkpoint_every == 0:
                fake_checkpoint(self.run_dir, self.step)
                writer.emit("checkpoint_saved", step=self.step,
                            path=f"checkpoints/ckpt-{self.step}", loss=1.0 / self.step)
            if self.step == CONFIG.steps:
                writer.emit("run_finished", step=self.step, loss=1.0 / self.step)
                self.code = 0

    def wait(self, timeout: float) -> int | None:
        self.launcher.calls.append(("wait", self.pid))
        return self.code

    def signal(self, sig: int, tree: bool = True) -> bool:
        self.launcher.calls.append(("signal", self.pid, signal.Signals(sig).name, tree))
        if self.code is not None:
            return False
        if sig in (signal.SIGKILL, signal.SIGTERM):
            self.code = -sig
        return True

    def kill(self, timeout: float = 10.0) -> int | None:
        self.launcher.calls.append(("kill", self.pid))
        self.code = -signal.SIGKILL if self.code is None else self.code
        return self.code

    @property
    def frozen(self) -> bool:
        return False


class FakeLauncher:
    """Records each call of the supervisor (polls aside) in `calls`; keeps no standbys."""

    standbys: list = []
    isolated = False

    def __init__(self, run_dir):
        self.run_dir = run_dir
        self.calls: list[tuple] = []
        self.handles: list[FakeTrainer] = []

    def hold_namespace(self) -> None:
        self.calls.append(("hold_namespace",))

    def release_namespace(self) -> None:
        self.calls.append(("release_namespace",))

    def free_port(self) -> int:
        self.calls.append(("free_port",))
        return 20000 + len(self.calls)

    def begin_attempt(self, config, starts: list[TaskStart]) -> None:
        self.calls.append(("begin_attempt", [(s.attempt, s.task.name) for s in starts]))

    def start(self, request: TaskStart) -> FakeTrainer:
        self.calls.append(("start", request.task.name, request.args, request.env,
                           request.log_path.relative_to(self.run_dir).as_posix(),
                           request.rejoins))
        handle = FakeTrainer(self, request, pid=1000 + len(self.handles))
        self.handles.append(handle)
        return handle

    def end_attempt(self) -> None:
        self.calls.append(("end_attempt",))

    def keep_standbys(self, config, tasks: int) -> None:
        self.calls.append(("keep_standbys", tasks))

    def standbys_ready(self, config, tasks: int) -> bool:
        return True

    def mark_standby_ready(self, pid, prepared_for=None) -> None:
        self.calls.append(("mark_standby_ready", pid))

    def dismiss_standbys(self) -> None:
        self.calls.append(("dismiss_standbys",))


def _poll_until(supervisor, condition, limit: int = 50) -> list[dict]:
    """Poll (each poll is one step of the live fake trainer) until `condition(seen)`."""
    seen: list[dict] = []
    for _ in range(limit):
        seen += supervisor.poll()
        if condition(seen):
            return seen
    raise AssertionError(f"not reached after {limit} polls: {[e['event'] for e in seen]}")


def _of(seen, kind):
    return [e for e in seen if e["event"] == kind]


def test_a_run_killed_and_recovered_through_a_fake_launcher(tmp_path):
    run_dir = tmp_path / "run"
    fake = FakeLauncher(run_dir.absolute())
    supervisor = Supervisor(run_dir, launcher=fake)
    supervisor.start(CONFIG)
    run = str(run_dir.absolute())
    cpu_only = {"PYTHONHASHSEED": "0", "CUDA_VISIBLE_DEVICES": "-1"}
    assert fake.calls == [
        ("end_attempt",),
        ("release_namespace",),
        ("begin_attempt", [(0, "chief")]),
        ("start", "chief", [run, "--role", "chief", "--index", "0", "--attempt", "0"],
         cpu_only, "logs/chief-0.attempt-0.log", 0),
    ]
    assert (supervisor.state, supervisor.attempt) == ("running", 0)
    assert [p.pid for p in supervisor.processes] == [1000]
    assert isinstance(supervisor.processes[0].handle, TaskHandle)
    assert supervisor.processes[0].log_path == run_dir.absolute() / "logs/chief-0.attempt-0.log"

    seen = _poll_until(supervisor, lambda seen: _of(seen, "step")[-1:] and
                       _of(seen, "step")[-1]["step"] == 3)
    [started] = _of(seen, "process_started")
    assert (started["pid"], started["attempt"], started["restore"], started["standby"]) == (
        1000, 0, None, False)
    assert supervisor.last_step == 3
    del fake.calls[:]

    assert supervisor.kill("chief")
    assert fake.calls == [("signal", 1000, "SIGKILL", True)]
    seen = supervisor.poll()  # the exit, and the restart due at once (backoff 0)
    assert [e["event"] for e in seen] == [
        "fault_injected", "process_exited", "recovery_scheduled", "process_started"]
    [exited] = _of(seen, "process_exited")
    assert (exited["pid"], exited["signal"], exited["decisive"], exited["attempt"]) == (
        1000, 9, True, 0)
    [restarted] = _of(seen, "process_started")
    assert (restarted["pid"], restarted["attempt"], restarted["restore"]) == (
        1001, 1, "checkpoints/ckpt-2")
    assert fake.calls[1:] == [
        ("end_attempt",),
        ("release_namespace",),
        ("begin_attempt", [(1, "chief")]),
        ("start", "chief", [run, "--role", "chief", "--index", "0", "--attempt", "1",
                            "--restore", "checkpoints/ckpt-2"],
         cpu_only, "logs/chief-0.attempt-1.log", 0),
    ]
    assert fake.calls[0] == ("signal", 1000, "SIGKILL", True)
    assert (supervisor.state, supervisor.attempt, supervisor.restarts) == ("running", 1, 1)
    del fake.calls[:]

    seen = _poll_until(supervisor, lambda seen: _of(seen, "process_exited"))
    assert [e["event"] for e in seen][:3] == ["training_started", "resumed", "step"]
    assert _of(seen, "resumed")[0]["from_step"] == 2
    assert [e["step"] for e in _of(seen, "step")] == [3, 4, 5, 6]
    [exited] = _of(seen, "process_exited")
    assert (exited["pid"], exited["exit_code"], exited["attempt"]) == (1001, 0, 1)
    assert (supervisor.state, supervisor.reason) == ("finished", "reached the last step")
    assert fake.calls == [("dismiss_standbys",)]
    supervisor.shutdown()
    assert fake.calls[1:] == [("end_attempt",), ("dismiss_standbys",), ("release_namespace",)]
    assert not supervisor.live


def test_a_lost_worker_ends_its_cluster_through_the_handles(tmp_path):
    run_dir = tmp_path / "run"
    fake = FakeLauncher(run_dir.absolute())
    supervisor = Supervisor(run_dir, launcher=fake)
    supervisor.start(dataclasses.replace(CONFIG, strategy="multi-worker", workers=2,
                                         auto_recover=False))
    ports = [call[0] for call in fake.calls].count("free_port")
    assert [c[0] for c in fake.calls] == [
        "hold_namespace", "end_attempt", "hold_namespace", *["free_port"] * ports,
        "hold_namespace", "begin_attempt", "start", "start"]
    assert ports == 2  # one per worker, from the launcher (inside its namespace)
    begin, first, second = fake.calls[-3:]
    assert begin == ("begin_attempt", [(0, "worker:0"), (0, "worker:1")])
    assert [(c[1], c[2][1:7], c[4]) for c in (first, second)] == [
        ("worker:0", ["--role", "worker", "--index", "0", "--attempt", "0"],
         "logs/worker-0.attempt-0.log"),
        ("worker:1", ["--role", "worker", "--index", "1", "--attempt", "0"],
         "logs/worker-1.attempt-0.log")]
    tf_config = [json.loads(c[3]["TF_CONFIG"]) for c in (first, second)]
    assert [t["task"] for t in tf_config] == [{"type": "worker", "index": 0},
                                              {"type": "worker", "index": 1}]
    _poll_until(supervisor, lambda seen: _of(seen, "step"))
    del fake.calls[:]

    assert supervisor.kill("worker:1")
    seen = supervisor.poll()
    # worker 1 is gone: worker 0 is told and given the grace to save, then killed
    assert fake.calls == [("signal", 1001, "SIGKILL", True), ("wait", 1000), ("kill", 1000)]
    exits = _of(seen, "process_exited")
    assert [(e["index"], e["signal"], e["decisive"]) for e in exits] == [
        (1, 9, True), (0, 9, False)]
    assert (supervisor.state, supervisor.reason) == ("killed", "worker 1 ended by SIGKILL")
    assert peer_notice.read(run_dir, 0)["reason"] == "worker 1 ended by SIGKILL"
    supervisor.shutdown()


class LateExit(FakeTrainer):
    """A task whose end its launcher reports only when waited for (Slurm's exits come by
    polling the cluster)."""

    def signal(self, sig: int, tree: bool = True) -> bool:
        self.launcher.calls.append(("signal", self.pid, signal.Signals(sig).name, tree))
        self.late = -sig
        return True

    def wait(self, timeout: float) -> int | None:
        self.launcher.calls.append(("wait", self.pid))
        self.code = getattr(self, "late", None)
        return self.code


def test_a_killed_worker_whose_exit_is_seen_late_still_decides_the_attempt(tmp_path):
    """The survivor fails (lost contact) in the poll before the killed worker's exit is
    reported: the killed worker's exit is recorded first and is the decisive one."""
    run_dir = tmp_path / "run"
    fake = FakeLauncher(run_dir.absolute())
    supervisor = Supervisor(run_dir, launcher=fake)
    supervisor.start(dataclasses.replace(CONFIG, strategy="multi-worker", workers=2,
                                         auto_recover=False))
    fake.handles[1].__class__ = LateExit
    _poll_until(supervisor, lambda seen: _of(seen, "step"))

    assert supervisor.kill("worker:1")
    fake.handles[0].code = 1  # worker 0 lost contact with worker 1 and failed
    seen = supervisor.poll()
    exits = _of(seen, "process_exited")
    assert [(e["index"], e.get("signal"), e.get("exit_code"), e["decisive"])
            for e in exits] == [(1, 9, None, True), (0, None, 1, False)]
    assert (supervisor.state, supervisor.reason) == ("killed", "worker 1 ended by SIGKILL")
    supervisor.shutdown()


def test_preempt_freeze_thaw_and_checkpoint_now_are_signals_to_the_handle(tmp_path):
    run_dir = tmp_path / "run"
    fake = FakeLauncher(run_dir.absolute())
    supervisor = Supervisor(run_dir, launcher=fake)
    supervisor.start(dataclasses.replace(CONFIG, auto_recover=False))
    supervisor.poll()
    del fake.calls[:]
    assert supervisor.checkpoint_now() and supervisor.freeze() and supervisor.thaw()
    assert supervisor.preempt()
    assert fake.calls == [("signal", 1000, "SIGUSR1", False), ("signal", 1000, "SIGSTOP", True),
                          ("signal", 1000, "SIGCONT", True), ("signal", 1000, "SIGTERM", True)]
    seen = supervisor.poll()
    assert [e["event"] for e in seen] == ["checkpoint_requested", "fault_injected", "thawed",
                                          "fault_injected", "process_exited"]
    assert (supervisor.state, supervisor.live) == ("preempted", False)
    assert fake.calls[4:] == []  # nothing started again
    supervisor.shutdown()


def test_the_local_and_the_fake_launcher_are_launchers():
    assert isinstance(LocalLauncher("/tmp/run", "/tmp/run/logs"), Launcher)
    assert isinstance(FakeLauncher("/tmp/run"), Launcher)


def test_a_freeze_s_event_names_the_step_the_trainer_stopped_at(tmp_path):
    """The supervisor reads the step after the SIGSTOP: a trainer that logs one more step
    before the signal lands (the race between the drain and the signal) is marked where it
    stopped, not a step early."""
    run_dir = tmp_path / "run"
    fake = FakeLauncher(run_dir.absolute())
    supervisor = Supervisor(run_dir, launcher=fake)
    supervisor.start(dataclasses.replace(CONFIG, auto_recover=False))
    for _ in range(3):
        supervisor.poll()
    chief = fake.handles[0]
    reached = chief.step
    stop = chief.signal

    def one_more_step_then_stop(sig, tree=True):
        if sig == signal.SIGSTOP:
            chief._train_one_step()
            chief.poll = lambda: chief.code  # stopped: no more steps
        return stop(sig, tree)

    chief.signal = one_more_step_then_stop
    assert supervisor.freeze()
    frozen = [e for e in events.read_all(run_dir) if e["event"] == "fault_injected"]
    assert [(e["kind"], e["step"]) for e in frozen] == [("hang", reached + 1)]
    supervisor.shutdown()


def test_a_fault_before_a_restarted_attempt_s_first_step_is_at_the_step_it_restores(tmp_path):
    """Killed at 3 and restarted from checkpoint 2: a freeze of the new chief before its first
    step is at step 2, not at the 3 the attempt before reached."""
    run_dir = tmp_path / "run"
    fake = FakeLauncher(run_dir.absolute())
    supervisor = Supervisor(run_dir, launcher=fake)
    supervisor.start(CONFIG)
    _poll_until(supervisor, lambda seen: _of(seen, "step")[-1:] and
                _of(seen, "step")[-1]["step"] == 3)
    assert supervisor.kill("chief")
    supervisor.poll()  # the exit and the restart (backoff 0)
    assert supervisor.attempt == 1 and supervisor.last_step == 2
    assert supervisor.freeze()
    frozen = [e for e in events.read_all(run_dir) if e["event"] == "fault_injected"]
    assert [(e["kind"], e["attempt"], e["step"]) for e in frozen] == [
        ("kill", 0, 3), ("hang", 1, 2)]
    supervisor.shutdown()


class Stoppable(FakeTrainer):
    """A fake chief that stays stopped after SIGSTOP, as a real one does."""

    stopped = False

    def signal(self, sig: int, tree: bool = True) -> bool:
        self.stopped = {signal.SIGSTOP: True, signal.SIGCONT: False}.get(sig, self.stopped)
        return super().signal(sig, tree)

    @property
    def frozen(self) -> bool:
        return self.stopped


def test_a_frozen_chief_is_not_frozen_again_and_a_missing_one_is_said(tmp_path):
    run_dir = tmp_path / "run"
    fake = FakeLauncher(run_dir.absolute())
    supervisor = Supervisor(run_dir, launcher=fake)
    supervisor.start(dataclasses.replace(CONFIG, auto_recover=False))
    fake.handles[0].__class__ = Stoppable
    supervisor.poll()
    assert supervisor.freeze()
    assert not supervisor.freeze()  # one freeze, one marker: not a second "frozen @"
    assert supervisor.refusal == "Freeze ignored: chief is frozen already"
    assert [e["kind"] for e in events.read_all(run_dir) if e["event"] == "fault_injected"] == [
        "hang"]
    assert not supervisor.freeze("worker:3")
    assert supervisor.refusal == "Freeze ignored: no worker 3 process is running now"
    supervisor.shutdown()


class WaitingLauncher(FakeLauncher):
    """A fake launcher whose restarts wait for `waits_for` (words) while it is set."""

    waits_for: str | None = None

    def start_waits_for(self, config, tasks: int) -> str | None:
        self.calls.append(("start_waits_for", tasks))
        return self.waits_for


def _kill_at_step_3(tmp_path) -> tuple[Supervisor, WaitingLauncher, list[dict]]:
    run_dir = tmp_path / "run"
    fake = WaitingLauncher(run_dir.absolute())
    supervisor = Supervisor(run_dir, launcher=fake)
    supervisor.start(CONFIG)
    _poll_until(supervisor, lambda seen: any(e.get("step") == 3 for e in _of(seen, "step")))
    fake.waits_for = "the fork server's import of TensorFlow"
    assert supervisor.kill("chief")
    return supervisor, fake, supervisor.poll()


def test_a_due_restart_waits_for_what_the_launcher_names_then_starts(tmp_path):
    """Under load a restart started cold beside the fork server still importing: its own
    import took 6.6 s where the server's had 1-2 s left (issue 28)."""
    supervisor, fake, seen = _kill_at_step_3(tmp_path)
    assert [e["event"] for e in seen] == [
        "fault_injected", "process_exited", "recovery_scheduled", "recovery_waiting"]
    [waiting] = _of(seen, "recovery_waiting")
    assert (waiting["waits_for"], waiting["seconds"]) == (
        "the fork server's import of TensorFlow", 10.0)
    assert (supervisor.state, supervisor.reason) == (
        "recovering", "waiting to restart (up to 10 s)")
    for _ in range(3):  # the window's thread polls on meanwhile; said once
        assert supervisor.poll() == []
    assert ("start_waits_for", 1) in fake.calls
    assert not any(call[0] == "start" for call in fake.calls[fake.calls.index(
        ("signal", 1000, "SIGKILL", True)):])
    fake.waits_for = None
    seen = supervisor.poll()
    [started] = _of(seen, "process_started")
    assert (started["attempt"], started["restore"]) == (1, "checkpoints/ckpt-2")
    assert supervisor.state == "running"


def test_a_restart_waits_no_longer_than_its_limit(tmp_path, monkeypatch):
    from ftgui.core.supervision import supervisor as supervisor_module

    monkeypatch.setattr(supervisor_module, "START_WAIT_SECONDS", 0.2)
    supervisor, fake, seen = _kill_at_step_3(tmp_path)
    assert len(_of(seen, "recovery_waiting")) == 1
    assert _of(seen, "process_started") == []
    time.sleep(0.25)
    seen = supervisor.poll()  # still waited for, but no longer
    assert [e["attempt"] for e in _of(seen, "process_started")] == [1]
    assert _of(seen, "recovery_waiting") == []


def test_a_restart_of_a_launcher_that_names_nothing_starts_when_due(tmp_path):
    # a launcher without `start_waits_for` (Slurm's, the fake one) restarts as before
    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir, launcher=FakeLauncher(run_dir.absolute()))
    supervisor.start(CONFIG)
    _poll_until(supervisor, lambda seen: any(e.get("step") == 3 for e in _of(seen, "step")))
    supervisor.kill("chief")
    assert [e["event"] for e in supervisor.poll()][-2:] == ["recovery_scheduled",
                                                            "process_started"]


class NoStandbyLauncher(FakeLauncher):
    """A fake launcher whose warm standby is never ready."""

    def standbys_ready(self, config, tasks: int) -> bool:
        return False


def test_a_hold_for_a_standby_that_never_gets_ready_ends_as_a_timeout(tmp_path, monkeypatch):
    """A breaker's run with its fork server stopped: the chief went on after 60 s with "the
    warm standby is ready", of a standby that never was."""
    from ftgui.core.supervision import fault_injection, holds

    monkeypatch.setattr(fault_injection, "STANDBY_HOLD_SECONDS", 0.0)
    run_dir = tmp_path / "run"
    supervisor = Supervisor(run_dir, launcher=NoStandbyLauncher(run_dir.absolute()))
    supervisor.start(dataclasses.replace(CONFIG, warm_standby=True))
    _poll_until(supervisor, lambda seen: any(e.get("step") == 2 for e in _of(seen, "step")))
    with events.EventWriter(run_dir, 0) as writer:
        writer.emit("held", step=2, role="chief", index=0, why="standby")
    supervisor.poll()  # reads the hold, and starts its clock
    time.sleep(0.01)
    supervisor.poll()
    assert holds.released_by(run_dir, 0, 2) == "standby-timeout"
    assert events.describe({"event": "hold_released", "role": "chief", "index": 0, "step": 2,
                            "by": "standby-timeout", "seconds": 60.0}) == (
        "chief goes on after step 2 (no warm standby was ready in time, held 60.0 s)")
    supervisor.shutdown()
