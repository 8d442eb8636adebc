"""The fork server: one process that has imported TensorFlow, from which standbys are forked.

`python -m ftgui.training --fork-server FD` imports TensorFlow, Keras and the trainer's modules
once (`import_tensorflow`), creates no TensorFlow runtime (no op runs, no device is listed),
says `{"ready": ...}` on the socket `FD` and then serves requests from the supervisor
(`ftgui.core.supervision.fork_server`): each is a JSON message with four file descriptors
attached (`socket.send_fds`): the standby's stdin, its log, its lifeline and its status pipe;
and those of the network namespace it joins (a local cluster's, `loopback_ns`), if any.
The server forks; the child becomes that process (its own session, the first two descriptors
as stdin, stdout and stderr, the request's environment, working folder and nice value) and
runs the trainer's entry (`__main__._run_entry`) on the request's arguments, as
`python -m ftgui.training ARGS` would after its imports. So a standby is ready in the time
it takes to build and trace its state, not 3–6 s of imports more
(`benchmarks/proto_fork_server.py`: start → 3rd step 0.64 s
against 4.86 s, the same losses to the bit).

The server reaps its children and reports each exit, `{"exit": PID, "status": S}` with `S` in
`Popen.returncode` terms, so that the supervisor sees the exit status of a process it did not
start itself; a child also writes its status to its status pipe as it leaves, read where the
server ended first. A child watches its lifeline (a pipe whose only writer is the supervisor) and
kills itself when it reads EOF: it dies with the supervisor's process, as a trainer started
with `PR_SET_PDEATHSIG` does, and it outlives the server if the server ends first.
EOF on the socket ends the server.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable

MAX_MESSAGE = 1 << 20  # bytes: a request carries its environment and arguments


def serve(fd: int, entry: Callable[[], int], exit_now: Callable[[int], None],
          main_module) -> int:
    """Serve fork requests on the connected `socket.AF_UNIX` `SOCK_SEQPACKET` socket `fd`
    until EOF; returns 0. In each child, `entry()` runs with `sys.argv` set to the request's
    arguments and its status goes to `exit_now` (the child never returns here);
    `main_module._T0` is reset at the fork, so that the child counts no import time, and
    `main_module._FORKED` set (its `standby_ready` says `forked`)."""
    import setproctitle

    from ftgui.core.supervision import priority
    from ftgui.core.supervision.fork_server import PROTOCOL
    from ftgui.training.imports import import_tensorflow, import_trainer_modules

    setproctitle.getproctitle()  # sets itself up while argv and environ are the server's own
    began = time.perf_counter()
    import_tensorflow()
    import_trainer_modules()
    priority.restore()  # started niced to import; its children set their own
    conn = socket.socket(fileno=fd)
    woken_r, woken_w = os.pipe()
    os.set_blocking(woken_w, False)
    signal.set_wakeup_fd(woken_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    _send(conn, {"ready": True, "pid": os.getpid(), "protocol": PROTOCOL,
                 "import_seconds": round(time.perf_counter() - began, 3)})
    print(f"fork server: ready after {time.perf_counter() - began:.2f} s of imports", flush=True)
    while True:
        readable, _, _ = select.select([conn, woken_r], [], [])
        if woken_r in readable:
            os.read(woken_r, 4096)
        _report_exits(conn)
        if conn not in readable:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(conn, MAX_MESSAGE, 6)
        except ConnectionResetError:
            data, fds = b"", []
        if not data:
            print("fork server: the supervisor closed its socket: ending", flush=True)
            return 0
        request = json.loads(data)
        pid = os.fork()
        if pid == 0:
            conn.close()
            os.close(woken_r)
            os.close(woken_w)
            main_module._T0 = time.perf_counter()
            main_module._FORKED = True
            _child(request, fds, entry, exit_now)
        for descriptor in fds:
            os.close(descriptor)
        _send(conn, {"forked": pid, "id": request["id"]})


def _child(request: dict, fds: list[int], entry, exit_now) -> None:
    """The forked child's whole life: it never returns into the server's loop."""
    status_fd, code = None, 1
    try:
        status_fd = _become(request, fds)
        code = _run(entry)
    except BaseException:  # noqa: BLE001 (before the entry: a bad request)
        import traceback

        traceback.print_exc()
    finally:
        if status_fd is not None:
            _tell(status_fd, code)
        exit_now(code)


def _send(conn: socket.socket, message: dict) -> None:
    try:
        conn.send(json.dumps(message).encode())
    except OSError:  # the supervisor is gone: the next read says EOF
        pass


def _report_exits(conn: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(conn, {"exit": pid, "status": os.waitstatus_to_exitcode(status)})  # -N: signal N


def _become(request: dict, fds: list[int]) -> int:
    """In the child: take the request's session, descriptors, environment, folder, priority and
    arguments. Returns the descriptor its exit status is written to (`_tell`)."""
    from ftgui.core.supervision import priority

    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.setsid()
    stdin_fd, log_fd, lifeline_fd, status_fd, *namespace_fds = fds
    _join(request.get("namespace", []), namespace_fds)
    for fd in (lifeline_fd, status_fd):  # not for the processes it starts
        os.set_inheritable(fd, False)
    os.dup2(stdin_fd, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(stdin_fd)
    os.close(log_fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    if request.get("nice"):
        priority.lower(request["nice"])
    _watch(lifeline_fd)
    sys.argv = [sys.argv[0], *request["args"]]
    _retitle(request["args"])
    return status_fd


def _join(kinds: list[str], fds: list[int]) -> None:
    """Join the namespaces of `fds` ("user", "net", in `kinds`' order), while this child is
    still single-threaded (joining a user namespace needs that). Raises `OSError`."""
    from ftgui.core.supervision.loopback_ns import LoopbackNamespace

    if not kinds:
        return
    named = dict(zip(kinds, fds, strict=True))
    LoopbackNamespace(named["net"], named.get("user")).join()
    for fd in fds:
        os.close(fd)


def _tell(status_fd: int, code: int) -> None:
    """Write exit status `code` for the supervisor, which reads it when the server that would
    report it has ended."""
    try:
        os.write(status_fd, str(code).encode())
    except OSError:
        pass


def _retitle(args: list[str]) -> None:
    """Show `python -m ftgui.training ARGS` as this process's command line (ps, psutil), not
    the server's `--fork-server FD` it was forked with."""
    import setproctitle

    from ftgui.child_python import module_argv

    setproctitle.setproctitle(" ".join([*module_argv("ftgui.training"), *args]))


def _watch(lifeline_fd: int) -> None:
    """Kill this process when its lifeline reads EOF: the supervisor's process ended."""
    def wait() -> None:
        while os.read(lifeline_fd, 1):
            pass
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=wait, name="ftgui-lifeline", daemon=True).start()


def _run(entry: Callable[[], int]) -> int:
    try:
        return entry()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception:  # noqa: BLE001 (as `python -m ftgui.training` reports it)
        import traceback

        traceback.print_exc()
        return 1
