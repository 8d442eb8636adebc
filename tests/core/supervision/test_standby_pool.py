"""The warm-standby pool is ready as early as possible and bounded: standbys from the attempt's
start at a low CPU priority (raised once it trains), a replacement as soon as one is used, at
most `max_standbys` of them (no TensorFlow: the standbys are a script that waits for its order,
the launcher of the supervisor-level test is test_fake_launcher's recording one)."""

from __future__ import annotations

import dataclasses
import os
import stat
import sys
from pathlib import Path

import psutil
import pytest
from test_fake_launcher import CONFIG, FakeLauncher, _of, _poll_until

from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision import local_launcher, priority
from ftgui.core.supervision.local_launcher import LocalLauncher
from ftgui.core.supervision.processes import spawn
from ftgui.core.supervision.supervisor import Supervisor

ROOT = os.geteuid() == 0


def _autogroup_nice(pid: int) -> int | None:
    """The nice value of `pid`'s autogroup (None on a kernel without autogroups)."""
    try:
        return int(Path(f"/proc/{pid}/autogroup").read_text().split()[-1])
    except FileNotFoundError:
        return None


@pytest.fixture
def launcher(tmp_path):
    """A local launcher whose 'python' is a script that waits for its order (EOF ends it)."""
    fake = tmp_path / "fake-python"
    fake.write_text("#!/usr/bin/env python3\nimport sys\nsys.stdin.readline()\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    made = LocalLauncher(tmp_path / "run", tmp_path / "logs", python=str(fake), fork=False)
    yield made
    made.dismiss_standbys()


def _pids(launcher) -> list[int]:
    return [popen.pid for popen, _ in launcher.standbys]


def _logs(launcher) -> list[str]:
    return [log.name for _, log in launcher.standbys]


def test_a_replacement_is_started_as_soon_as_the_standby_is_used(launcher):
    config = RunConfig(warm_standby=True)
    launcher.keep_standbys(config, 1)
    [first] = _pids(launcher)
    popen, log = launcher._pool.hand_order(["RUN"], {})
    assert (popen.pid, log.name, launcher.standbys) == (first, "standby-1.log", [])
    launcher.keep_standbys(config, 1)
    assert _logs(launcher) == ["standby-2.log"] and _pids(launcher) != [first]


def test_the_pool_keeps_at_most_max_standbys_and_ends_the_newest_beyond(launcher):
    three_tasks = RunConfig(strategy="parameter-server", workers=1, ps=1, warm_standby=True)
    for _ in range(3):  # one standby started per call
        launcher.keep_standbys(three_tasks.replace(max_standbys=2), 3)
    assert _logs(launcher) == ["standby-1.log", "standby-2.log"]
    oldest, newest = (popen for popen, _ in launcher.standbys)
    launcher.keep_standbys(three_tasks.replace(max_standbys=1), 3)
    assert _pids(launcher) == [oldest.pid] and newest.wait(timeout=10) is not None
    assert not launcher.standbys_ready(three_tasks.replace(max_standbys=1), 3)
    launcher.mark_standby_ready(oldest.pid)
    assert launcher.standbys_ready(three_tasks.replace(max_standbys=1), 3)
    assert not launcher.standbys_ready(three_tasks.replace(max_standbys=2), 3)
    launcher.keep_standbys(three_tasks.replace(max_standbys=0), 3)
    assert launcher.standbys == [] and oldest.wait(timeout=10) is not None
    assert launcher.standbys_ready(three_tasks.replace(max_standbys=0), 3)


def test_standbys_per_task_keeps_a_spare_under_the_cap(launcher):
    config = RunConfig(warm_standby=True, standbys_per_task=2)
    for _ in range(3):
        launcher.keep_standbys(config, 1)
    assert _logs(launcher) == ["standby-1.log", "standby-2.log"]
    first, spare = _pids(launcher)
    launcher.mark_standby_ready(spare)
    popen, _ = launcher._pool.hand_order(["RUN"], {})  # the ready one goes first
    assert popen.pid == spare and _pids(launcher) == [first]
    launcher.keep_standbys(config.replace(max_standbys=1), 1)
    assert _pids(launcher) == [first]


def test_a_standby_cluster_is_kept_only_when_all_its_workers_fit_under_the_cap(launcher):
    config = RunConfig(strategy="multi-worker", workers=2, warm_standby=True, max_standbys=1)
    launcher.keep_standbys(config, 2)
    assert launcher._pool.members == [] and launcher.standbys_ready(config, 2)
    launcher.keep_standbys(config.replace(max_standbys=2), 2)
    assert [m.index for m in launcher._pool.members] == [0, 1]
    assert not launcher.standbys_ready(config.replace(max_standbys=2), 2)


@pytest.mark.skipif(not ROOT, reason="raising a priority back needs root (CAP_SYS_NICE)")
def test_a_prestarted_standby_runs_at_nice_10_until_the_attempt_trains(launcher):
    config = RunConfig(warm_standby=True)
    launcher.prestart_standbys(config, 1)
    [pid] = _pids(launcher)
    process = psutil.Process(pid)
    assert process.nice() == priority.STANDBY_NICE
    assert _autogroup_nice(pid) in (priority.STANDBY_NICE, None)
    launcher.prestart_standbys(config, 1)  # still one
    launcher.keep_standbys(config, 1)  # the attempt trains
    assert _pids(launcher) == [pid] and process.nice() == 0
    assert _autogroup_nice(pid) in (0, None)
    launcher.keep_standbys(config, 1)
    assert _pids(launcher) == [pid]


def test_no_standby_is_prestarted_where_its_priority_could_not_be_raised_back(
        tmp_path, monkeypatch, launcher):
    monkeypatch.setattr(local_launcher.priority, "restorable", lambda: False)
    fake = launcher.python
    unprivileged = LocalLauncher(tmp_path / "run", tmp_path / "logs2", python=fake, fork=False)
    unprivileged.prestart_standbys(RunConfig(warm_standby=True), 1)
    assert unprivileged.standbys == []
    unprivileged.keep_standbys(RunConfig(warm_standby=True), 1)
    [(popen, _)] = unprivileged.standbys
    assert psutil.Process(popen.pid).nice() == 0
    unprivileged.dismiss_standbys()


@pytest.mark.parametrize("euid, rlimit, expected", [
    (0, (0, 0), True), (1000, (0, 0), False), (1000, (19, 19), False), (1000, (20, 20), True)])
def test_restorable_is_root_or_an_rlimit_nice_that_allows_nice_0(
        monkeypatch, euid, rlimit, expected):
    monkeypatch.setattr(priority.os, "geteuid", lambda: euid)
    monkeypatch.setattr(priority.resource, "getrlimit", lambda which: rlimit)
    assert priority.restorable() is expected


@pytest.mark.skipif(not ROOT, reason="raising a priority back needs root (CAP_SYS_NICE)")
def test_a_standby_given_its_order_takes_nice_0_back_for_itself_and_its_threads(tmp_path):
    code = ("import os, threading, time\n"
            "from ftgui.core.supervision import priority\n"
            "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
            "tids = sorted(int(t) for t in os.listdir('/proc/self/task'))\n"
            "before = [os.getpriority(os.PRIO_PROCESS, t) for t in tids]\n"
            "done = priority.restore()\n"
            "after = [os.getpriority(os.PRIO_PROCESS, t) for t in tids]\n"
            "print(before, done, after, open('/proc/self/autogroup').read().split()[-1])\n")
    log = tmp_path / "out.log"
    popen = spawn([sys.executable, "-c", code], log, nice=priority.STANDBY_NICE)
    assert popen.wait(timeout=60) == 0, log.read_text()
    assert log.read_text().strip() == "[10, 10] True [0, 0] 0"


class StandbyLauncher(FakeLauncher):
    """The recording launcher, with `prestart_standbys`; a restart's task is a warm standby."""

    def prestart_standbys(self, config, tasks: int) -> None:
        self.calls.append(("prestart_standbys", tasks))

    def start(self, request):
        handle = super().start(request)
        if request.attempt > 0:
            handle.standby, handle.standby_warm, handle.standby_age = True, True, 4.0
        return handle


def test_standbys_are_asked_for_from_the_start_and_again_at_once_after_a_warm_restart(
        tmp_path):
    run_dir = tmp_path / "run"
    fake = StandbyLauncher(run_dir.absolute())
    supervisor = Supervisor(run_dir, launcher=fake)
    supervisor.start(dataclasses.replace(CONFIG, warm_standby=True))
    del fake.calls[:]
    supervisor.poll()  # the trainer writes step 1 after the events were read
    supervisor.poll()  # step 1 is read: the attempt trains
    assert fake.calls == [("prestart_standbys", 1), ("keep_standbys", 1)]
    del fake.calls[:]
    assert supervisor.kill("chief")
    seen = supervisor.poll()  # the exit, and the restart (backoff 0), taken by a standby
    [started] = _of(seen, "process_started")
    assert (started["attempt"], started["standby"], started["standby_warm"]) == (1, True, True)
    assert [c[0] for c in fake.calls] == [
        "signal", "end_attempt", "release_namespace", "begin_attempt", "start"]  # settled: none
    del fake.calls[:]
    supervisor.poll()  # before the restart's first step is read: its replacement at once
    assert fake.calls == [("keep_standbys", 1)]
    seen = _poll_until(supervisor, lambda seen: _of(seen, "process_exited"))
    assert [c for c in fake.calls if c[0] == "prestart_standbys"] == []
    supervisor.shutdown()


def test_a_cold_restart_asks_for_standbys_from_its_start_again(tmp_path):
    run_dir = tmp_path / "run"
    fake = FakeLauncher(run_dir.absolute())
    fake.prestart_standbys = lambda config, tasks: fake.calls.append(("prestart", tasks))
    supervisor = Supervisor(run_dir, launcher=fake)
    supervisor.start(dataclasses.replace(CONFIG, warm_standby=True))
    _poll_until(supervisor, lambda seen: _of(seen, "step"))
    assert supervisor.kill("chief")
    supervisor.poll()
    del fake.calls[:]
    supervisor.poll()  # the cold restart has not trained yet
    assert fake.calls == [("prestart", 1)]
    supervisor.shutdown()


def test_max_standbys_is_checked_with_one_line_naming_it():
    with pytest.raises(ValueError, match=r"^max_standbys: 14 is not a whole number from 0 to "
                                         r"13$"):
        RunConfig(max_standbys=14).validate()
    assert RunConfig().max_standbys == 13  # one per task of the largest run: no cap by default


def _events_until(supervisor, done, limit_polls: int = 30_000) -> list[dict]:
    import time

    seen: list[dict] = []
    for _ in range(limit_polls):
        seen += supervisor.poll()
        if done(seen):
            return seen
        time.sleep(0.02)
    raise AssertionError(f"not reached: {[e['event'] for e in seen][-20:]}")


@pytest.mark.tf
def test_a_second_kill_right_after_a_restart_resumes_from_a_ready_spare(tmp_path):
    config = RunConfig(steps=100_000, checkpoint_every=10, auto_recover=True,
                       restart_backoff=0.0, warm_standby=True, standbys_per_task=2)
    supervisor = Supervisor(tmp_path / "run")
    supervisor.start(config)
    try:
        seen = _events_until(supervisor, lambda seen: len(
            [e for e in seen if e["event"] == "standby_ready" and e["prepared"]]) >= 2
            and _of(seen, "step"))
        prepared = {e["pid"] for e in _of(seen, "standby_ready") if e["prepared"]}
        assert supervisor.kill("chief")
        seen = _events_until(supervisor, lambda seen: [
            e for e in _of(seen, "step") if e["attempt"] == 1])
        assert supervisor.kill("chief")  # at once: its replacement cannot have imported yet
        seen += _events_until(supervisor, lambda seen: [
            e for e in _of(seen, "step") if e["attempt"] == 2])
    finally:
        supervisor.shutdown()
    restarts = {e["attempt"]: e for e in _of(seen, "process_started") if e["attempt"] > 0}
    assert [(r["standby"], r["standby_warm"]) for r in restarts.values()] == [(True, True)] * 2
    assert {r["pid"] for r in restarts.values()} == prepared
