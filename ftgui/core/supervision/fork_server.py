"""Standbys and trainers forked from a process that has imported TensorFlow, instead of
importing it anew.

A standby started as `python -m ftgui.training --standby RUN` spends 3–6 s importing TensorFlow
before it can build anything, so the replacement the pool starts at a restart is not ready for a
second fault soon after (docs/benchmarks.md, the second-kill row); a trainer started cold, when
no standby is left, spends them at every restart. The fork server
(`ftgui/training/fork_server.py`) pays that import once per ftgui process and environment; a
standby or trainer forked from it has only its state to build and trace. `FTGUI_FORK=0` in the
environment turns it off (`enabled`): every process then starts as its own `python`.

`ForkServer` starts and talks to one server. `server_for` keeps one per Python executable
and import-time environment (`import_env`), started on first use and ended when this process
exits (EOF on its socket). `ForkServer.fork` returns a `ForkedProcess`, which stands in for the
`subprocess.Popen` of a spawned standby: `pid`, `stdin`, `poll`, `wait`, `send_signal`,
`kill`, `returncode`. The forked process is the server's child, not this one's, so its exit
status comes from the server's report; its descendants, signals and priority are reached by
pid as a spawned one's are. It dies with this process (its lifeline pipe reads EOF).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

from ftgui.child_python import module_argv
from ftgui.streams import CHILD_ENV

MAX_MESSAGE = 1 << 20  # bytes
# The requests' form (their descriptors, fields) between this module and the server's: a
# server of another version of ftgui (installed while this process ran) is not used.
PROTOCOL = 3
# Seconds a fork request may wait for the server's reply (a few ms; the window asks from its
# GUI thread, so a stuck server must not hold it long): then the standby starts cold.
FORK_TIMEOUT = 2.0
READY_TIMEOUT = 120.0  # seconds a server may take to import (a cold import: 3-14 s here)
IMPORT_ENV_PREFIXES = ("TF_", "CUDA", "XLA", "PYTHON", "OMP", "KMP", "MKL", "LD_", "KERAS")
NOT_AT_IMPORT = ("TF_CONFIG",)  # read when the strategy is made: each cluster task has its own
SWITCH_ENV = "FTGUI_FORK"  # "0": no fork server; every standby and trainer starts cold


def enabled() -> bool:
    """Whether processes may be forked from a fork server: not where `FTGUI_FORK` is "0"
    (nor "false", "no", "off")."""
    return os.environ.get(SWITCH_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def import_env(env: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The part of a child's environment `env` that TensorFlow, Keras or Python read while they
    start or import (names starting with `IMPORT_ENV_PREFIXES`, but `NOT_AT_IMPORT`, sorted):
    a server serves the requests whose children agree with it on these. The rest is set in
    the child after the fork, before the trainer reads it."""
    return tuple(sorted((k, v) for k, v in env.items()
                        if k.startswith(IMPORT_ENV_PREFIXES) and k not in NOT_AT_IMPORT))


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a trainer process: this process's, unbuffered output, `CHILD_ENV`
    and `env` (as `processes.spawn` gives it)."""
    return {**os.environ, "PYTHONUNBUFFERED": "1", **CHILD_ENV, **(env or {})}


class ForkServer:
    """One fork server process and the socket to it (`socket.SOCK_SEQPACKET`: one message a
    request or report). Started with `env` (`child_env`), its output appended to `log_path`,
    at nice `nice` while it imports. Raises `OSError` if the program cannot be started."""

    def __init__(self, python: str, env: dict[str, str], log_path: Path, nice: int = 0):
        from ftgui.core.supervision import priority
        from ftgui.core.supervision.processes import die_with_parent

        def prepare() -> None:  # in the child: it imports for seconds before it reads EOF
            die_with_parent()
            if nice:
                priority.lower(nice)

        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [*module_argv("ftgui.training", python), "--fork-server", str(theirs.fileno())]
        log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(log_path, "ab") as log:
                self.popen = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    env=env, start_new_session=True, pass_fds=(theirs.fileno(),),
                    preexec_fn=prepare)
        except OSError:
            mine.close()
            raise
        finally:
            theirs.close()
        self._sock = mine
        self._lock = threading.Lock()
        self._ready = False
        self._closed = False
        self._forked: dict[int, int] = {}  # request id -> pid
        # pid -> exit status (Popen.returncode terms) of a child not yet handed out as a
        # `ForkedProcess`; those handed out get theirs in `reported`
        self._exits: dict[int, int] = {}
        self._live: dict[int, ForkedProcess] = {}  # pid -> the running child handed out
        self._next_id = 0
        self.started = time.monotonic()
        self.protocol = None  # the protocol it said it speaks when ready

    @property
    def ready(self) -> bool:
        """Whether the server has imported and may be asked to fork (False once it ended)."""
        self.pump()
        return self._ready and not self._closed

    @property
    def was_ready(self) -> bool:
        """Whether the server said it was ready at some time (it may have ended since)."""
        return self._ready

    @property
    def alive(self) -> bool:
        """Whether the server still runs and its socket is open."""
        self.pump()
        return not self._closed

    def fork(self, args: list[str], env: dict[str, str], log_path: Path, nice: int = 0,
             cwd: str | None = None, namespace=None) -> ForkedProcess:
        """Fork a process that runs `python -m ftgui.training ARGS` (`args`: what follows the
        module) with environment `env`, stdin a new pipe (`ForkedProcess.stdin`), stdout and
        stderr appended to `log_path`, at nice `nice`, in `cwd` (default: this one's), inside
        `namespace` (a `loopback_ns.LoopbackNamespace`: the child joins it before anything
        else, as a spawned one does between fork and exec). Raises `OSError` when the server
        is not ready, has ended, or does not answer within `FORK_TIMEOUT` seconds."""
        if not self.ready:
            raise OSError("the fork server is not ready")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        stdin_r, stdin_w = os.pipe()
        life_r, life_w = os.pipe()
        status_r, status_w = os.pipe()
        log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        with self._lock:
            self._next_id += 1
            request = {"id": self._next_id, "args": args, "env": env,
                       "cwd": cwd or os.getcwd(), "nice": nice,
                       "namespace": _namespace_kinds(namespace)}
            try:
                socket.send_fds(self._sock, [json.dumps(request).encode()],
                                [stdin_r, log_fd, life_r, status_w,
                                 *_namespace_fds(namespace)])
                pid = self._await_fork(request["id"])
            except OSError:
                pid = None
            finally:
                for fd in (stdin_r, log_fd, life_r, status_w):
                    os.close(fd)
            if pid is None:
                for fd in (stdin_w, life_w, status_r):
                    os.close(fd)
                raise OSError("the fork server did not fork")
            os.set_blocking(status_r, False)
            child = ForkedProcess(self, pid, os.fdopen(stdin_w, "wb"), life_w, status_r, args)
            child.reported = self._exits.pop(pid, None)  # it ended as the reply came
            if child.reported is None:
                self._live[pid] = child
        return child

    def _await_fork(self, request_id: int) -> int | None:
        deadline = time.monotonic() + FORK_TIMEOUT
        while request_id not in self._forked and not self._closed:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._read(left)
        return self._forked.pop(request_id, None)


    def pump(self, timeout: float = 0.0) -> None:
        """Read the server's reports that have come, waiting up to `timeout` seconds for one."""
        with self._lock:
            self._read(timeout)

    def _read(self, timeout: float) -> None:
        while not self._closed:
            readable, _, _ = select.select([self._sock], [], [], max(timeout, 0.0))
            if not readable:
                return
            try:
                data = self._sock.recv(MAX_MESSAGE)
            except OSError:
                data = b""
            if not data:
                self._closed = True
                return
            message = json.loads(data)
            if "ready" in message:
                self.protocol = message.get("protocol")
                self._ready = self.protocol == PROTOCOL
                if not self._ready:  # another version of ftgui: its children would fail
                    self._closed = True
            elif "forked" in message:
                # an exit kept for this pid was an earlier child's: the kernel gave its pid
                # to this one once the server reaped it (a stale exit 0 ended a new worker at
                # once, and its peer waited for it for ever)
                self._exits.pop(message["forked"], None)
                self._forked[message["id"]] = message["forked"]
            elif "exit" in message:
                child = self._live.pop(message["exit"], None)
                if child is not None:
                    child.reported = message["status"]
                else:
                    self._exits[message["exit"]] = message["status"]
            timeout = 0.0

    def close(self) -> None:
        """Close the socket: the server ends (its children run on); one still importing,
        which reads the socket only once it is ready, is killed instead of outliving this
        process by seconds."""
        with self._lock:
            self._closed = True
            self._sock.close()
        if not self._ready and self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()


def _namespace_kinds(namespace) -> list[str]:
    """The namespaces a child joins, in order: its user namespace first (`loopback_ns`)."""
    if namespace is None:
        return []
    return (["user"] if namespace.user_fd is not None else []) + ["net"]


def _namespace_fds(namespace) -> list[int]:
    if namespace is None:
        return []
    return [fd for fd in (namespace.user_fd, namespace.net_fd) if fd is not None]


class ForkedProcess:
    """A process forked by a `ForkServer`, with the part of `subprocess.Popen`'s interface the
    supervisor uses. `stdin`: the write end of its stdin pipe (binary); closing `lifeline` (a
    pipe's only write end) kills it; `status`: the read end of the pipe it writes its exit
    status to as it leaves. When the server ended before reporting the exit, the status comes
    from that pipe, and a process that left without writing it (killed by a signal, or it
    replaced itself with `exec`) reads as killed (`returncode` -9)."""

    def __init__(self, server: ForkServer, pid: int, stdin, lifeline: int, status: int,
                 args: list[str]):
        self._server, self.pid, self.stdin, self._lifeline = server, pid, stdin, lifeline
        self._status, self.args = status, args
        self.returncode: int | None = None
        self.reported: int | None = None  # its exit status as the server reported it

    def poll(self) -> int | None:
        """Its exit status once it ended, else None."""
        if self.returncode is None:
            self._server.pump()
            status = self.reported
            if status is None and not self._server.alive:
                status = self._own_word()
            if status is not None:
                self.returncode = status
                self._close_lifeline()
        return self.returncode

    def _own_word(self) -> int | None:
        try:
            said = os.read(self._status, 32)
        except BlockingIOError:  # the pipe is open: it still runs
            return None
        return int(said) if said.strip().lstrip(b"-").isdigit() else -signal.SIGKILL

    def wait(self, timeout: float | None = None) -> int:
        """Wait for its end; its exit status. Raises `subprocess.TimeoutExpired` after
        `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = 0.05 if deadline is None else min(deadline - time.monotonic(), 0.05)
            if left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            self._server.pump(left)
            if not self._server.alive:
                time.sleep(left)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        """Send `sig` unless it has ended."""
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        """SIGTERM."""
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL."""
        self.send_signal(signal.SIGKILL)

    def _close_lifeline(self) -> None:
        if self._lifeline is not None:
            os.close(self._lifeline)
            os.close(self._status)
            self._lifeline = None


_SERVERS: dict[tuple, ForkServer] = {}
# keys whose server ended before it was ready, not started again -> why, in words
_FAILED: dict[tuple, str] = {}
_SERVERS_LOCK = threading.Lock()


def server_for(python: str, env: dict[str, str], log_dir: Path, nice: int = 0) -> ForkServer | None:
    """This process's fork server for `python` and the import-time part of `env` (a
    `child_env`): started if none runs (its output to `log_dir/fork-server.log`, importing at
    nice `nice`), whether ready or still importing (`ForkServer.ready`). None where a server
    of that key ended before it was ready, was not ready within `READY_TIMEOUT` seconds (it
    is killed), or cannot be started, and where forking is turned off (`enabled`): standbys
    then start cold. A server that ended after it was ready is replaced."""
    if not enabled():
        return None
    key = (python, import_env(env))
    with _SERVERS_LOCK:
        if key in _FAILED:
            return None
        server = _SERVERS.get(key)
        log_path = log_dir / "fork-server.log"
        stuck = server is not None and server.alive and not server.was_ready \
            and time.monotonic() - server.started > READY_TIMEOUT
        if stuck:
            server.popen.kill()  # stuck in its import: the standbys start cold instead
            server.close()
        if server is not None and not server.alive:
            del _SERVERS[key]
            server.close()
            if not server.was_ready:
                _FAILED[key] = _why_not_ready(server, stuck) + f", see {log_path}"
                return None
            server = None
        if server is None:
            try:
                server = _SERVERS[key] = ForkServer(python, env, log_path, nice)
            except OSError as exc:
                _FAILED[key] = f"the fork server could not be started ({exc})"
                return None
    return server


def importing(python: str, env: dict[str, str]) -> ForkServer | None:
    """This process's fork server for `python` and the import-time part of `env` (a
    `child_env`) while it imports (alive, not ready yet); None where there is none, it is
    ready, or it ended. Starts nothing."""
    with _SERVERS_LOCK:
        server = _SERVERS.get((python, import_env(env)))
    if server is None or not server.alive or server.ready:
        return None
    return server


def failure(python: str, env: dict[str, str]) -> str | None:
    """Why this process has no fork server for `python` and the import-time part of `env` (a
    `child_env`), in words ("the fork server ended before it was ready (exit code 1), see
    LOG"); None where one runs, is importing, or was never asked for."""
    with _SERVERS_LOCK:
        return _FAILED.get((python, import_env(env)))


def _why_not_ready(server: ForkServer, stuck: bool) -> str:
    """Why `server`, ended, was never ready, in words."""
    if stuck:
        return f"the fork server was not ready in {READY_TIMEOUT:.0f} s"
    if server.protocol is not None:
        return (f"the fork server is another version of ftgui (protocol {server.protocol}, "
                f"this one {PROTOCOL})")
    return f"the fork server ended before it was ready ({_status_words(server.popen.wait())})"


def _status_words(status: int) -> str:
    """A `Popen.returncode` in words: "exit code 1", "killed by SIGKILL"."""
    if status < 0:
        try:
            return f"killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"killed by signal {-status}"
    return f"exit code {status}"


def close_all(python: str | None = None) -> None:
    """End every fork server of this process (of `python` only, if given); their forked
    processes run on."""
    with _SERVERS_LOCK:
        for key in [k for k in _SERVERS if python is None or k[0] == python]:
            _SERVERS.pop(key).close()


atexit.register(close_all)
