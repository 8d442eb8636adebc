"""A warm standby's CPU priority: low while it imports and traces, the trainer's once ordered.

A standby started beside an attempt that is itself importing TensorFlow would take half of a
two-core machine from it. It runs at `STANDBY_NICE` instead. Plain `nice` is not enough: with
the kernel's autogroups (`/proc/sys/kernel/sched_autogroup_enabled`), and every task in its own
session, CPU time is shared between sessions first, so the session's own nice value
(`/proc/self/autogroup`) is set too (measured on this machine: two busy loops on one core,
nice 10 alone 8.26 M vs 8.36 M iterations; with the autogroup's nice 10, 16.8 M vs 2.75 M).
Raising a priority back needs CAP_SYS_NICE (root) or an RLIMIT_NICE that allows it:
`restorable()` says whether this process could, and a standby is lowered only then.
"""

from __future__ import annotations

import errno
import os
import resource
import time

STANDBY_NICE = 10  # a standby's nice value until its order (weight 110 against 1024)


def restorable() -> bool:
    """Whether a process started from this one could raise its priority back to nice 0."""
    if os.geteuid() == 0:
        return True
    soft = resource.getrlimit(resource.RLIMIT_NICE)[0]
    return soft == resource.RLIM_INFINITY or soft >= 20  # RLIMIT_NICE n allows nice 20 - n


def lower(nice: int = STANDBY_NICE) -> None:
    """Give the calling process (and its session's autogroup) nice value `nice`; for a child
    between fork and exec, after `setsid`. Without autogroups only the process's own."""
    _set_autogroup(nice)
    os.setpriority(os.PRIO_PROCESS, 0, nice)


def restore(pid: int | None = None) -> bool:
    """Put process `pid` (None: the calling one), every thread of it and its autogroup back at
    nice 0; False when that is not allowed or the kernel still refuses the autogroup change
    after its retry (it keeps its lower priority: a standby trains on), or `pid` is gone."""
    proc = "self" if pid is None else str(pid)
    try:
        _set_autogroup(0, proc)
        for tid in os.listdir(f"/proc/{proc}/task"):
            try:
                os.setpriority(os.PRIO_PROCESS, int(tid), 0)
            except ProcessLookupError:  # a thread that just ended
                pass
    except (PermissionError, BlockingIOError):  # not allowed, or still rate-limited (EAGAIN)
        return False
    except (FileNotFoundError, ProcessLookupError):  # the process ended
        return pid is None
    return True


def _set_autogroup(nice: int, proc: str = "self") -> None:
    """Set the nice value of process `proc`'s autogroup. Nothing where there is no autogroup to
    set: a kernel without them (no file), or a session in the root task group, whose share the
    kernel refuses to change (EINVAL, from `sched_group_set_shares`: seen on CI, whose processes
    share one session). `PermissionError` where this process may not; one retry after 0.1 s for
    EAGAIN (without CAP_SYS_ADMIN the kernel allows one autogroup change per 0.1 s)."""
    for attempt in (1, 2):
        try:
            with open(f"/proc/{proc}/autogroup", "w", encoding="ascii") as handle:
                handle.write(str(nice))
            return
        except FileNotFoundError:  # a kernel without autogroups
            return
        except OSError as error:
            if error.errno == errno.EINVAL:
                return
            if error.errno != errno.EAGAIN or attempt == 2:
                raise
            time.sleep(0.1)
