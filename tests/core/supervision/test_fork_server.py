"""Standbys forked from the fork server: they start without importing TensorFlow, train to the
bit as a cold start, and the supervisor sees their exit status, signals, folder, session
and end as it does for a process it started itself."""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import psutil
import pytest
from conftest import of_kind

from ftgui.core.record import events
from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision import fork_server
from ftgui.core.supervision.standby import StandbyPool
from ftgui.core.supervision.trainer_command import standby_args, trainer_args

pytestmark = pytest.mark.tf


def _ready_server(folder) -> fork_server.ForkServer:
    """A ready fork server of this test's own (not the process-wide one)."""
    made = fork_server.ForkServer(sys.executable, fork_server.child_env(),
                                  folder / "fork-server.log")
    deadline = time.monotonic() + 300
    while not made.ready:
        assert made.alive and time.monotonic() < deadline, "the fork server never got ready"
        made.pump(0.2)
    return made


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    made = _ready_server(tmp_path_factory.mktemp("server"))
    yield made
    made.close()
    made.popen.wait(timeout=30)


@pytest.fixture
def run_dir(fresh_copy_of_baseline):
    return fresh_copy_of_baseline


def _await_ready(process, run_dir, log_path) -> dict:
    reader = events.EventReader(run_dir)
    while True:
        ready = of_kind(reader.read_new(), "standby_ready")
        if ready:
            return ready[0]
        assert process.poll() is None, log_path.read_text()
        time.sleep(0.05)


def test_a_forked_standby_takes_the_requests_folder_and_log_and_trains_to_the_bit(
        server, run_dir, tmp_path, baseline_losses):
    log_path = tmp_path / "standby.log"
    env = fork_server.child_env()
    # a relative run folder: it is found only in the request's working folder
    process = server.fork(standby_args("run"), env, log_path, cwd=str(tmp_path))
    assert psutil.Process(process.pid).ppid() == server.popen.pid
    ready = _await_ready(process, run_dir, log_path)
    assert (ready["pid"], ready["forked"], ready["prepared"]) == (process.pid, True, True)
    assert ready["import_seconds"] < 0.5  # the server's import, not its own
    assert os.getsid(process.pid) == process.pid  # its own session, as a spawned one

    order = {"argv": trainer_args(run_dir, attempt=1), "env": {}}
    process.stdin.write((json.dumps(order) + "\n").encode())
    process.stdin.close()
    assert process.wait(timeout=300) == 0, log_path.read_text()
    seen = events.read_all(run_dir)
    assert of_kind(seen, "training_started")[0]["pid"] == process.pid
    assert events.final_losses(seen) == baseline_losses
    assert "standby: activated" in log_path.read_text()


def test_the_exit_status_of_a_forked_process_comes_from_the_server(server, run_dir, tmp_path):
    quits = server.fork(standby_args(run_dir), fork_server.child_env(), tmp_path / "a.log")
    quits.stdin.close()  # EOF before any order: it ends quietly
    assert quits.wait(timeout=120) == 0 and quits.poll() == 0

    bad = server.fork([str(run_dir), "--index", "first"], fork_server.child_env(),
                      tmp_path / "b.log")
    assert bad.wait(timeout=120) == 2  # argparse's status for a bad argument
    assert "invalid int value: 'first'" in (tmp_path / "b.log").read_text()

    killed = server.fork(standby_args(run_dir), fork_server.child_env(), tmp_path / "c.log")
    deadline = time.monotonic() + 60  # it shows its own command line, not the server's
    while psutil.Process(killed.pid).cmdline()[-2:] != ["--standby", str(run_dir)]:
        assert time.monotonic() < deadline, psutil.Process(killed.pid).cmdline()
        time.sleep(0.05)
    with pytest.raises(Exception, match="timed out"):
        killed.wait(timeout=0.2)
    killed.kill()
    assert killed.wait(timeout=60) == -signal.SIGKILL


def test_exit_statuses_still_come_when_the_server_was_killed_first(run_dir, tmp_path):
    own = _ready_server(tmp_path)
    quits = own.fork(standby_args(run_dir), fork_server.child_env(), tmp_path / "a.log")
    killed = own.fork(standby_args(run_dir), fork_server.child_env(), tmp_path / "b.log")
    own.popen.kill()
    own.popen.wait(timeout=30)
    assert quits.poll() is None and killed.poll() is None  # both run on without it
    quits.stdin.close()  # EOF: it leaves with status 0, which it writes itself
    assert quits.wait(timeout=120) == 0
    killed.kill()  # a signal: nothing written
    assert killed.wait(timeout=60) == -signal.SIGKILL
    own.close()


def test_a_forked_standby_joins_the_runs_network_namespace(server, run_dir, tmp_path):
    """A local cluster's standbys run in its loopback-only namespace, forked as spawned."""
    from ftgui.core.supervision.loopback_ns import LoopbackNamespace

    namespace = LoopbackNamespace.create()
    try:
        process = server.fork(standby_args(run_dir), fork_server.child_env(),
                              tmp_path / "a.log", namespace=namespace)
        wanted = os.readlink(f"/proc/self/fd/{namespace.net_fd}")
        assert wanted != os.readlink("/proc/self/ns/net")
        deadline = time.monotonic() + 60  # it joins right after the fork
        while os.readlink(f"/proc/{process.pid}/ns/net") != wanted:
            assert process.poll() is None, (tmp_path / "a.log").read_text()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        process.kill()
        assert process.wait(timeout=60) == -signal.SIGKILL
    finally:
        namespace.close()


def test_a_forked_process_dies_when_its_lifeline_closes(server, run_dir, tmp_path):
    """The lifeline's only writer is the supervisor: EOF means its process ended."""
    process = server.fork(standby_args(run_dir), fork_server.child_env(), tmp_path / "a.log")
    process._close_lifeline()
    assert process.wait(timeout=60) == -signal.SIGKILL


def test_the_pool_forks_its_standbys_once_the_process_wide_server_is_ready(tmp_path, run_dir):
    pool = StandbyPool(run_dir, tmp_path / "logs")
    config = RunConfig()
    deadline = time.monotonic() + 300
    try:
        while not pool.standbys:  # none started cold while the server imports
            pool.keep(1, env={})
            assert time.monotonic() < deadline
            time.sleep(0.1)
        [(process, log_path)] = pool.standbys
        assert isinstance(process, fork_server.ForkedProcess)
        ready = _await_ready(process, run_dir, log_path)
        assert ready["forked"] is True
        pool.mark_ready(ready["pid"], ready["prepared_for"])
        assert pool.ready_for(config, 1)
    finally:
        pool.dismiss()
    assert process.poll() == -signal.SIGKILL


def test_a_cold_restart_with_no_standby_is_forked_and_trains_to_the_bit(
        tmp_path, baseline_run, baseline_losses):
    # warm standby off: the attempt's start has the fork server started, and the restart
    # after the kill is forked from it instead of importing TensorFlow (the worker-loss
    # demo's restarts, a second fault before a standby is rebuilt)
    from conftest import poll_until_done

    from ftgui.core.settings import config as configmod
    from ftgui.core.supervision.standby import device_env
    from ftgui.core.supervision.supervisor import Supervisor

    config = configmod.load(baseline_run)
    config.warm_standby, config.auto_recover, config.restart_backoff = False, True, 0.0
    config.kill_at_step = 35
    server = fork_server.server_for(sys.executable, fork_server.child_env(device_env(config)),
                                    tmp_path)
    deadline = time.monotonic() + 300
    while not server.ready:  # the process-wide server, as a run that trained a while has
        assert server.alive and time.monotonic() < deadline, "the fork server never got ready"
        server.pump(0.2)
    supervisor = Supervisor(tmp_path / "run")
    supervisor.start(config)
    seen = poll_until_done(supervisor)
    starts = of_kind(seen, "process_started")
    assert [(e["attempt"], e["standby"], e["forked"]) for e in starts] == [
        (0, False, True), (1, False, True)]
    assert supervisor.state == "finished"
    assert events.final_losses(events.read_all(tmp_path / "run")) == baseline_losses
