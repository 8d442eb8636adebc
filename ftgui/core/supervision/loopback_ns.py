"""A network namespace with only loopback, for a cluster whose tasks all run on this machine.

TensorFlow's gRPC server listens on every interface (`0.0.0.0:PORT`, hard-coded in
`grpc_server_lib.cc`; no option or variable names another address), has no authorization and
runs the graphs it is sent. A cluster of ftgui's own local processes needs none of that reach:
its processes (tasks, warm standbys, their checkpoint clerks) are started inside one network
namespace that has only its own loopback interface, so nothing outside the namespace can
connect to their ports, and a program outside cannot take a port they need. The supervisor
talks to them through files, pipes and signals only, none of which a network namespace
touches.

The namespace is made by a short-lived holder process (`python -m
ftgui.core.supervision.loopback_ns`): it unshares a network namespace (as root; otherwise a user
namespace mapping only the user's own ids, plus a network namespace), brings `lo` up and waits; the
supervisor opens the namespace files (`/proc/PID/ns/net`, and `ns/user`), which keep the namespace
alive, and lets the holder go. Each process then joins with `setns` between fork and exec.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
import subprocess
import sys

from ftgui.child_python import module_argv

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
READY = "ready"
# 16 distinct ports at once: each socket holds its port until all are printed
_PORTS = """
import socket
held = [socket.socket() for _ in range(16)]
for sock in held:
    sock.bind(("127.0.0.1", 0))
print(" ".join(str(sock.getsockname()[1]) for sock in held))
"""


class NamespaceError(OSError):
    """No loopback-only namespace can be made here; the message says why."""


class LoopbackNamespace:
    """An open loopback-only network namespace. `join()` runs in a child between fork and exec
    (`preexec_fn`); `close()` drops the supervisor's hold (the namespace ends with the last
    process in it). `user`: whether a user namespace comes with it (not root)."""

    def __init__(self, net_fd: int, user_fd: int | None, python: str = sys.executable):
        self.net_fd, self.user_fd, self.python = net_fd, user_fd, python
        self._ports: list[int] = []

    @property
    def user(self) -> bool:
        return self.user_fd is not None

    @classmethod
    def create(cls, python: str = sys.executable, timeout: float = 30.0) -> LoopbackNamespace:
        """Make the namespace with a holder process. Raises `NamespaceError` naming why (no
        Linux, namespaces refused by the kernel or a container)."""
        if not sys.platform.startswith("linux"):
            raise NamespaceError(f"network namespaces need Linux (this is {sys.platform})")
        holder = subprocess.Popen(module_argv("ftgui.core.supervision.loopback_ns", python),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        try:
            line = holder.stdout.readline().decode("utf-8", "replace").strip()
            if line != READY:
                holder.wait(timeout=timeout)
                reason = holder.stderr.read().decode("utf-8", "replace").strip()
                raise NamespaceError(reason.splitlines()[-1] if reason else "the holder ended")
            user = os.geteuid() != 0
            user_fd = os.open(f"/proc/{holder.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC) \
                if user else None
            net_fd = os.open(f"/proc/{holder.pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            return cls(net_fd, user_fd, python)
        finally:
            holder.stdin.close()
            holder.wait(timeout=timeout)
            holder.stdout.close()
            holder.stderr.close()

    def join(self) -> None:
        """Move the calling process into the namespace (its user namespace first). Meant for
        a fresh child (single-threaded, before exec); raises `OSError` on failure."""
        libc = ctypes.CDLL(None, use_errno=True)
        for fd, kind in ((self.user_fd, CLONE_NEWUSER), (self.net_fd, CLONE_NEWNET)):
            if fd is not None and libc.setns(fd, kind) != 0:
                errno = ctypes.get_errno()
                raise OSError(errno, f"setns: {os.strerror(errno)}")

    def free_port(self) -> int:
        """A TCP port free inside the namespace a moment ago (the supervisor's own
        `cluster.free_port` looks at this machine's ports, not these). Asked for a batch at a
        time from a small process inside; each is handed out once. Raises `OSError`."""
        if not self._ports:
            found = subprocess.run([self.python, "-S", "-c", _PORTS], capture_output=True,
                                   encoding="utf-8", check=False, preexec_fn=self.join,
                                   timeout=30)
            if found.returncode != 0:
                raise OSError(f"no free port in the cluster's namespace: {found.stderr.strip()}")
            self._ports = [int(port) for port in found.stdout.split()]
        return self._ports.pop(0)

    def close(self) -> None:
        for fd in (self.net_fd, self.user_fd):
            if fd is not None:
                os.close(fd)
        self.net_fd = self.user_fd = None


def _unshare() -> None:
    """Unshare a network namespace (as root) or a user and a network namespace (else, mapping
    this user's own uid and gid, so that files written inside keep their owner)."""
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWNET if uid == 0 else CLONE_NEWUSER | CLONE_NEWNET
    if libc.unshare(flags) != 0:
        errno = ctypes.get_errno()
        what = "a network namespace" if uid == 0 else "a user and a network namespace"
        raise NamespaceError(errno, f"the system refuses {what} (unshare: "
                             f"{os.strerror(errno)})")
    if uid != 0:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                           ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w", encoding="ascii") as handle:
                handle.write(text)


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh22x", b"lo", 0)
        flags = struct.unpack("16sh22x", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags | _IFF_UP))


def main() -> int:
    """The holder: make the namespace, say `ready`, wait for stdin to close."""
    try:
        _unshare()
        _loopback_up()
    except OSError as exc:
        print(exc.strerror or str(exc), file=sys.stderr, flush=True)
        return 1
    print(READY, flush=True)
    sys.stdin.buffer.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
