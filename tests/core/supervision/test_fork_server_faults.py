"""A fork server that cannot serve is not used: one of another version of ftgui, and one whose
children die before they are ready (a pool then starts its standbys cold instead of forking in
a loop). No TensorFlow: the "python" is a script that plays the server, or a standby."""

from __future__ import annotations

import json
import stat
import sys
import time

import pytest

from ftgui.core.supervision import fork_server
from ftgui.core.supervision.standby import FORK_FAILURES, StandbyPool

FAKE = """#!{python}
import json, os, socket, sys, time
if "--fork-server" not in sys.argv:  # a standby started cold: waits for its order
    sys.stdin.readline()
    sys.exit(0)
conn = socket.socket(fileno=int(sys.argv[-1]))
if {protocol} < 0:  # stuck in its import
    time.sleep(600)
conn.send(json.dumps({{"ready": True, "protocol": {protocol}}}).encode())
while True:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 4)
    if not data:
        sys.exit(0)
    pid = os.fork()
    if pid == 0:
        os._exit(1)  # a child that dies at once
    for fd in fds:
        os.close(fd)
    conn.send(json.dumps({{"forked": pid, "id": json.loads(data)["id"]}}).encode())
    _, status = os.waitpid(pid, 0)
    conn.send(json.dumps({{"exit": pid, "status": os.waitstatus_to_exitcode(status)}}).encode())
"""


def _fake_python(tmp_path, protocol: int) -> str:
    path = tmp_path / f"fake-python-{protocol}"
    path.write_text(FAKE.format(python=sys.executable, protocol=protocol))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def _settle(server: fork_server.ForkServer) -> None:
    deadline = time.monotonic() + 30
    while server.alive and not server.was_ready:
        assert time.monotonic() < deadline
        server.pump(0.1)


def test_a_server_of_another_version_is_not_used(tmp_path):
    server = fork_server.ForkServer(_fake_python(tmp_path, fork_server.PROTOCOL + 1),
                                    fork_server.child_env(), tmp_path / "fork-server.log")
    try:
        _settle(server)
        assert not server.ready and not server.alive
        with pytest.raises(OSError, match="not ready"):
            server.fork(["--standby", "RUN"], fork_server.child_env(), tmp_path / "s.log")
    finally:
        server.close()
        server.popen.wait(timeout=10)


def test_a_pool_whose_forked_standbys_die_at_once_starts_them_cold(tmp_path):
    python = _fake_python(tmp_path, fork_server.PROTOCOL)
    pool = StandbyPool(tmp_path / "run", tmp_path / "logs", python=python)
    try:
        forked: set[int] = set()
        deadline = time.monotonic() + 60
        while pool.fork:
            pool.keep(1)
            forked |= {p.pid for p, _ in pool.standbys
                       if isinstance(p, fork_server.ForkedProcess)}
            assert time.monotonic() < deadline, "the pool forks on"
            time.sleep(0.05)
        assert len(forked) == FORK_FAILURES
        pool.keep(1)
        [(process, _)] = pool.standbys
        assert not isinstance(process, fork_server.ForkedProcess)  # started cold
        assert process.poll() is None  # waiting for its order
    finally:
        pool.dismiss()
        fork_server.close_all(python)


def test_a_server_stuck_in_its_import_is_killed_and_the_standbys_start_cold(
        tmp_path, monkeypatch):
    monkeypatch.setattr(fork_server, "READY_TIMEOUT", 0.5)
    python = _fake_python(tmp_path, -1)
    pool = StandbyPool(tmp_path / "run", tmp_path / "logs", python=python)
    try:
        pool.keep(1)
        assert pool.standbys == []  # waits for the server
        stuck = fork_server._SERVERS[(python, fork_server.import_env(
            fork_server.child_env()))].popen
        time.sleep(0.6)
        pool.keep(1)
        assert stuck.wait(timeout=10) == -9
        [(process, _)] = pool.standbys
        assert not isinstance(process, fork_server.ForkedProcess)  # started cold
    finally:
        pool.dismiss()
        fork_server.close_all(python)


RECORDING = """#!{python}
import json, os, socket, sys
if "--fork-server" not in sys.argv:  # a trainer started cold: says how, and ends
    with open(os.environ["RECORD"], "a") as out:
        out.write(json.dumps({{"cold": sys.argv[sys.argv.index("ftgui.training") + 1:]}}) + "\\n")
    sys.exit(0)
conn = socket.socket(fileno=int(sys.argv[-1]))
conn.send(json.dumps({{"ready": True, "protocol": {protocol}}}).encode())
while True:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 4)
    if not data:
        sys.exit(0)
    request = json.loads(data)
    pid = os.fork()
    if pid == 0:  # a forked trainer: records its request's arguments and ends
        with open(request["env"]["RECORD"], "a") as out:
            out.write(json.dumps({{"forked": request["args"]}}) + "\\n")
        os._exit(0)
    for fd in fds:
        os.close(fd)
    conn.send(json.dumps({{"forked": pid, "id": request["id"]}}).encode())
    _, status = os.waitpid(pid, 0)
    conn.send(json.dumps({{"exit": pid, "status": os.waitstatus_to_exitcode(status)}}).encode())
"""


def _recording_python(tmp_path) -> str:
    path = tmp_path / "recording-python"
    path.write_text(RECORDING.format(python=sys.executable, protocol=fork_server.PROTOCOL))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.mark.parametrize("switch, forked", [(None, True), ("0", False)])
def test_a_cold_start_is_forked_once_the_server_is_ready_unless_turned_off(
        tmp_path, monkeypatch, switch, forked):
    # no standby left: the trainer is forked from the server that the attempt's start had
    # started (it imports nothing), or, with FTGUI_FORK=0, started as a process of its own
    from ftgui.core.settings.config import RunConfig
    from ftgui.core.supervision.cluster import Task
    from ftgui.core.supervision.launcher import TaskStart
    from ftgui.core.supervision.local_launcher import LocalLauncher
    from ftgui.core.supervision.standby import device_env

    if switch is not None:
        monkeypatch.setenv(fork_server.SWITCH_ENV, switch)
    record = tmp_path / "record.jsonl"
    python = _recording_python(tmp_path)
    launcher = LocalLauncher(tmp_path / "run", tmp_path / "logs")
    launcher.python = python  # as `Supervisor.python` sets it: the server's python too
    config = RunConfig(warm_standby=False)
    args = [str(tmp_path / "run"), "--role", "chief", "--attempt", "1"]
    env = {**device_env(config), "RECORD": str(record)}  # as `AttemptTasks.task_env` gives
    request = TaskStart(Task("chief", 0, True), args, env,
                        tmp_path / "logs" / "chief-0.attempt-1.log", 1)
    try:
        launcher.begin_attempt(config, [request])
        key = (python, fork_server.import_env(fork_server.child_env(device_env(config))))
        server = fork_server._SERVERS.get(key)
        assert (server is not None) == forked
        deadline = time.monotonic() + 30
        while server is not None and not server.ready:
            assert server.alive and time.monotonic() < deadline
            server.pump(0.1)
        handle = launcher.start(request)
        assert handle.wait(30) == 0
        assert handle.forked is forked and not handle.standby
        assert isinstance(handle.popen, fork_server.ForkedProcess) is forked
        [said] = [json.loads(line) for line in record.read_text().splitlines()]
        assert said == {"forked" if forked else "cold": args}
    finally:
        fork_server.close_all(python)


def test_a_server_still_importing_ends_with_the_process_that_started_it(tmp_path):
    # it read its socket's EOF only once ready: 6-20 s after `ftgui train` had exited, an
    # orphan (a breaker's finding)
    import subprocess

    import psutil

    stuck = _fake_python(tmp_path, -1)
    server = fork_server.ForkServer(stuck, fork_server.child_env(), tmp_path / "a.log")
    server.close()  # closed while it imports: killed
    assert server.popen.poll() == -9
    code = ("import os, sys\nfrom pathlib import Path\n"
            "from ftgui.core.supervision import fork_server\n"
            "s = fork_server.ForkServer(sys.argv[1], fork_server.child_env(), Path(sys.argv[2]))\n"
            "print(s.popen.pid, flush=True)\nos._exit(0)\n")  # no close: a kill -9 of ftgui
    out = subprocess.run([sys.executable, "-c", code, stuck, str(tmp_path / "b.log")],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    orphan = int(out.split()[0])
    deadline = time.monotonic() + 10
    while psutil.pid_exists(orphan) and psutil.Process(orphan).status() != "zombie":
        assert time.monotonic() < deadline, "the fork server outlived its parent"
        time.sleep(0.05)


class _EndsBetweenTwoLooks(fork_server.ForkedProcess):
    """A forked standby that runs at the first look and has ended at every later one."""

    def __init__(self):  # no server: only `poll` and `pid` are used
        self.pid, self.looks = 10**7, 0

    def poll(self):
        self.looks += 1
        return None if self.looks == 1 else 1


def test_a_forked_standby_that_ends_while_the_pool_looks_counts_as_a_fork_failure(tmp_path):
    pool = StandbyPool(tmp_path / "run", tmp_path / "logs", fork=False)
    standby = _EndsBetweenTwoLooks()
    pool.standbys = [(standby, tmp_path / "standby-1.log")]
    try:
        pool.keep(1)  # it still runs at the first look
        pool.keep(0)
        assert pool._fork_failures == 1
    finally:
        pool.dismiss()


DYING = """#!{python}
import sys
if "--fork-server" in sys.argv:  # a server whose import fails
    print("ImportError: no module named tensorflow", flush=True)
    sys.exit(3)
sys.stdin.readline()  # a standby started cold: waits for its order
"""


@pytest.mark.parametrize("server, why", [
    ("dies", "the fork server ended before it was ready (exit code 3), see "),
    ("stuck", "the fork server was not ready in 0 s, see "),
    ("other version", "the fork server is another version of ftgui (protocol "),
])
def test_a_cold_start_says_why_it_was_not_forked(tmp_path, monkeypatch, server, why):
    """Without a fork server every restart imports TensorFlow again: the console said
    "importing TensorFlow" and nothing of why (the reason was only in fork-server.log)."""
    if server == "stuck":  # only there: a loaded machine's dying server takes longer
        monkeypatch.setattr(fork_server, "READY_TIMEOUT", 0.3)
    if server == "dies":
        python = tmp_path / "dying-python"
        python.write_text(DYING.format(python=sys.executable))
        python.chmod(0o755)
        python = str(python)
    else:
        python = _fake_python(tmp_path, -1 if server == "stuck" else fork_server.PROTOCOL + 1)
    pool = StandbyPool(tmp_path / "run", tmp_path / "logs", python=python)
    try:
        pool.start_server(None)
        # started for this very start: it could not be ready, no news (every `ftgui train`
        # said "importing TensorFlow: the fork server was not ready yet")
        assert pool.cold_reason(None) is None
        deadline = time.monotonic() + 30
        while pool.cold_reason(None) in (None, "the fork server was not ready yet"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
            pool.start_server(None)  # as each attempt does: a dead server is looked at
        assert pool.cold_reason(None).startswith(why)
        assert pool.cold_reason(None).endswith(str(tmp_path / "logs" / "fork-server.log"))
        assert pool.fork_trainer(["--run", "RUN"], None, tmp_path / "t.log") is None
    finally:
        pool.dismiss()
        fork_server.close_all(python)
        fork_server._FAILED.pop((python, fork_server.import_env(fork_server.child_env())), None)


RECYCLING = """#!{python}
import json, os, socket, sys
conn = socket.socket(fileno=int(sys.argv[-1]))
conn.send(json.dumps({{"ready": True, "protocol": {protocol}}}).encode())
while True:  # every child gets pid 4242, as the kernel gives a reaped child's pid again
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 6)
    if not data:
        sys.exit(0)
    for fd in fds:
        os.close(fd)
    request = json.loads(data)
    conn.send(json.dumps({{"forked": 4242, "id": request["id"]}}).encode())
    if request["id"] == 1:  # the first ends at once, and is reaped
        conn.send(json.dumps({{"exit": 4242, "status": 0}}).encode())
"""


def test_a_child_given_an_ended_childs_pid_is_not_taken_for_ended(tmp_path):
    """CI hung in a multi-worker test: worker 0, forked, read as "exited 0, reached the last
    step" the moment it started (the exit kept for an earlier child of the same pid), and
    worker 1 waited for its peer for ever."""
    python = tmp_path / "recycling-python"
    python.write_text(RECYCLING.format(python=sys.executable, protocol=fork_server.PROTOCOL))
    python.chmod(0o755)
    server = fork_server.ForkServer(str(python), fork_server.child_env(),
                                    tmp_path / "fork-server.log")
    try:
        _settle(server)
        first = server.fork(["--standby", "RUN"], fork_server.child_env(), tmp_path / "1.log")
        deadline = time.monotonic() + 10
        while first.poll() is None:
            assert time.monotonic() < deadline
            server.pump(0.05)
        assert first.returncode == 0
        second = server.fork(["--standby", "RUN"], fork_server.child_env(), tmp_path / "2.log")
        server.pump(0.2)
        assert second.pid == first.pid and second.poll() is None  # it runs
    finally:
        server.close()
        server.popen.wait(timeout=10)


GATED = """#!{python}
import json, os, socket, sys, time
if "--fork-server" not in sys.argv:  # a standby started cold: waits for its order
    sys.stdin.readline()
    sys.exit(0)
conn = socket.socket(fileno=int(sys.argv[-1]))
while not os.path.exists(os.environ["GATE"]):  # importing until the test opens the gate
    time.sleep(0.02)
conn.send(json.dumps({{"ready": True, "protocol": {protocol}}}).encode())
while conn.recv(1 << 20):
    pass
"""


def _gated_launcher(tmp_path, monkeypatch):
    """A `LocalLauncher` whose fork server imports until `tmp_path/gate` exists: (launcher,
    gate, its python)."""
    from ftgui.core.supervision.local_launcher import LocalLauncher

    gate = tmp_path / "gate"
    monkeypatch.setenv("GATE", str(gate))
    python = tmp_path / "gated-python"
    python.write_text(GATED.format(python=sys.executable, protocol=fork_server.PROTOCOL))
    python.chmod(0o755)
    launcher = LocalLauncher(tmp_path / "run", tmp_path / "logs")
    launcher.python = str(python)
    return launcher, gate, str(python)


def test_a_restart_waits_for_a_server_still_importing_and_hurries_it(tmp_path, monkeypatch):
    """A restart under load started cold beside the importing server: its own import took
    6.6 s where the server's had 1-2 s left (issue 28). The launcher asks to wait, and the
    server, importing at nice 10 beside the attempt, gets nice 0 for it."""
    import os

    from ftgui.core.settings.config import RunConfig
    from ftgui.core.supervision import priority, standby
    from ftgui.core.supervision.standby import device_env

    launcher, gate, python = _gated_launcher(tmp_path, monkeypatch)
    config = RunConfig()
    try:
        assert launcher.start_waits_for(config, 1) is None  # no server yet: nothing to wait for
        launcher.begin_attempt(config, [])
        server = fork_server.importing(python, fork_server.child_env(device_env(config)))
        lowered = priority.restorable()
        if lowered:
            assert os.getpriority(os.PRIO_PROCESS, server.popen.pid) == priority.STANDBY_NICE
        assert launcher.start_waits_for(config, 1) == "the fork server's import of TensorFlow"
        if lowered:
            assert os.getpriority(os.PRIO_PROCESS, server.popen.pid) == 0
        # a start past the wait says it waited (it read as the first attempt's cold start)
        assert launcher._pool.cold_reason(device_env(config)) == (
            "the fork server was still not ready when the restart stopped waiting")
        with monkeypatch.context() as patched:
            patched.setattr(standby, "STUCK_IMPORT_SECONDS", 0.0)
            assert launcher.start_waits_for(config, 1) is None  # importing so long: stuck
        gate.touch()
        deadline = time.monotonic() + 30
        while launcher.start_waits_for(config, 1) is not None:  # ready: start now, forked
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert server.ready
    finally:
        gate.touch()
        launcher.dismiss_standbys()
        fork_server.close_all(python)


def test_a_restart_with_a_standby_for_each_task_does_not_wait_for_the_server(
        tmp_path, monkeypatch):
    from ftgui.core.settings.config import RunConfig

    launcher, _, python = _gated_launcher(tmp_path, monkeypatch)  # the gate stays shut
    config = RunConfig()
    try:
        launcher.begin_attempt(config, [])
        launcher._pool.fork = False  # its standbys start cold, beside the importing server
        launcher._pool.keep(1)
        assert len(launcher.standbys) == 1
        assert launcher.start_waits_for(config, 1) is None  # the standby takes the task
        assert launcher.start_waits_for(config, 2) is None  # a pool that does not fork
        launcher._pool.fork = True
        assert launcher.start_waits_for(config, 2) == "the fork server's import of TensorFlow"
    finally:
        launcher.dismiss_standbys()
        fork_server.close_all(python)
