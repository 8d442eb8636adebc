"""Starting and ending training processes: own session per process, whole-tree kills, no orphans."""

from __future__ import annotations

import ctypes
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil

from ftgui.core.supervision import priority
from ftgui.streams import CHILD_ENV

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:  # runs in the child between fork and exec
    """Have the kernel SIGKILL this process when its parent ends (Linux `PR_SET_PDEATHSIG`;
    nothing elsewhere): a trainer or fork server does not outlive a `kill -9` of the GUI."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass


def spawn(argv: list[str], log_path: Path, env: dict[str, str] | None = None,
          stdin_pipe: bool = False, namespace=None, nice: int = 0) -> subprocess.Popen:
    """Start `argv` in a new session (its own process group), stdout+stderr appended to `log_path`.

    `stdin_pipe` gives the child a pipe on stdin (`popen.stdin`) instead of /dev/null.
    `namespace` (a `loopback_ns.LoopbackNamespace`): the child runs inside it, reachable only
    from its own loopback. `nice` > 0: the child and its session run at that lower CPU
    priority (`priority.lower`). The child is killed by the kernel if this process dies first (Linux
    `PR_SET_PDEATHSIG`). Raises `OSError` if the program cannot be started.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    child_env = {**os.environ, "PYTHONUNBUFFERED": "1", **CHILD_ENV, **(env or {})}
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_env,
            start_new_session=True,
            preexec_fn=_prepare_child(namespace, nice),
        )


def _prepare_child(namespace, nice: int):
    if namespace is None and not nice:
        return die_with_parent

    def prepare() -> None:  # in the child between fork and exec: an error fails the Popen
        die_with_parent()
        if namespace is not None:
            namespace.join()
        if nice:
            priority.lower(nice)
    return prepare


def descendants(pid: int) -> list[psutil.Process]:
    """All live descendants of `pid` (empty if `pid` is gone)."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def signal_tree(pid: int, sig: int) -> bool:
    """Send `sig` to the process group led by `pid` and to any descendant outside it.

    Returns False when the process was already gone. Never raises for a vanished process.
    """
    stragglers = descendants(pid)
    try:
        os.killpg(pid, sig)
        sent = True
    except ProcessLookupError:
        sent = False
    except PermissionError:
        sent = False
    for child in stragglers:
        try:
            child.send_signal(sig)
        except psutil.Error:
            pass
    return sent


def kill_tree(pid: int, timeout: float = 5.0) -> None:
    """SIGKILL `pid`'s process group and every descendant, and wait (at most `timeout`
    seconds) until each has ended: gone, or a zombie. A descendant whose parent died with it
    is reaped by the init process, which some containers' init does ~1.4 s later (measured
    here); its exit is over once it is a zombie, and waiting for the reaping stalled the
    window's tick for 1.6 s at each kill of a chief with a checkpoint clerk."""
    stragglers = descendants(pid)
    signal_tree(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while any(map(_running, stragglers)) and time.monotonic() < deadline:
        time.sleep(0.005)


def _running(process: psutil.Process) -> bool:
    """Whether `process` has not ended yet (a zombie has: only its reaping is left)."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:  # gone (a pid used again is not it: `is_running`)
        return False


def describe_exit(returncode: int) -> dict:
    """Event fields for a `Popen.returncode`: `exit_code` or `signal` (name and number)."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return {"signal": -returncode, "signal_name": name}
    return {"exit_code": returncode}


AUTOGRAPH_FOLDER_PREFIX = "ftgui-autograph-"  # + a trainer's pid, in the temporary folder


def autograph_folder(pid: int) -> Path:
    """Where the trainer of process `pid` keeps the source files TensorFlow's autograph writes
    for the functions it converts (`ftgui.training.__main__.keep_autograph_files_apart`): one
    folder per process, so that the files of a trainer killed with SIGKILL, whose own clean-up
    never runs, can be deleted once it is gone (`sweep_autograph_folders`)."""
    import tempfile

    return Path(tempfile.gettempdir()) / f"{AUTOGRAPH_FOLDER_PREFIX}{pid}"


def own_private_folder(path: Path) -> bool:
    """Make `path` a folder only this user may enter (mode 0700) and return True; False when
    something else is there (another user's folder, a link, a file, a folder others may write
    into: autograph imports what it writes there, so such a folder is not used)."""
    try:
        path.mkdir(mode=0o700)
        return True
    except FileExistsError:
        info = path.lstat()
        return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
                and not info.st_mode & 0o077)


def sweep_autograph_folders() -> int:
    """Delete this user's autograph folders (`ftgui-autograph-<pid>`, or `…-<pid>-<suffix>`
    where that name was taken) of processes that no longer run (a zombie counts as gone);
    returns how many were deleted."""
    import shutil

    removed = 0
    for folder in autograph_folder(0).parent.glob(f"{AUTOGRAPH_FOLDER_PREFIX}*"):
        pid = folder.name[len(AUTOGRAPH_FOLDER_PREFIX):].partition("-")[0]
        if not pid.isdigit() or running(int(pid)):
            continue
        try:
            info = folder.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed += not folder.exists()
    return removed


def running(pid: int) -> bool:
    """Whether process `pid` runs (a zombie does not; one of another user counts)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True
