"""A fork server that cannot serve is not used: one of another version of ftgui, and one whose
children die before they are ready (a pool then starts its standbys cold instead of forking in
a loop). No TensorFlow: the "python" is a script that plays the server, or a standby."""

from __future__ import annotations

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
