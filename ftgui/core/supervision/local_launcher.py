"""The launcher of processes on this machine (`launcher.Launcher`): each task is
`python -m ftgui.training ARGS` in its own session, or a warm standby handed its order.

A cluster all on this machine runs inside one loopback-only network namespace
(`loopback_ns`), held from `hold_namespace` to `release_namespace`; its standbys start in it
too. A MultiWorkerMirroredStrategy run keeps a standby cluster (`standby.StandbyPool`):
`begin_attempt` hands it the attempt's orders when it is ready, and each task's `start` then
takes its member; otherwise a task takes a waiting standby, else starts cold.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil

from ftgui.core.supervision import cluster, priority
from ftgui.core.supervision.launcher import StartError, TaskStart
from ftgui.core.supervision.loopback_ns import LoopbackNamespace, NamespaceError
from ftgui.core.supervision.processes import kill_tree, signal_tree, spawn
from ftgui.core.supervision.standby import Member, StandbyPool, device_env, wants_cluster
from ftgui.core.supervision.trainer_command import trainer_argv


class LocalProcess:
    """A task running as a process of this machine (`launcher.TaskHandle`): `popen` is its
    `subprocess.Popen` (or `fork_server.ForkedProcess`); `forked`: started cold, but forked
    from the fork server, so it imports nothing; `cold_reason`: why one started cold imports
    TensorFlow instead (`StandbyPool.cold_reason`), or None."""

    def __init__(self, popen: subprocess.Popen, log_path: Path, address: str | None = None,
                 standby: bool = False, standby_warm: bool | None = None,
                 standby_age: float | None = None, forked: bool = False,
                 cold_reason: str | None = None):
        self.popen, self.log_path, self.address = popen, log_path, address
        self.standby, self.standby_warm, self.standby_age = standby, standby_warm, standby_age
        self.forked, self.cold_reason = forked, cold_reason

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def ident(self) -> str:
        return f"pid {self.popen.pid}"

    def poll(self) -> int | None:
        return self.popen.poll()

    def wait(self, timeout: float) -> int | None:
        try:
            return self.popen.wait(timeout=max(timeout, 0.0))
        except subprocess.TimeoutExpired:
            return None

    def signal(self, sig: int, tree: bool = True) -> bool:
        if tree:
            return signal_tree(self.popen.pid, sig)
        try:
            os.kill(self.popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def kill(self, timeout: float = 10.0) -> int | None:
        kill_tree(self.popen.pid)
        return self.wait(timeout)

    @property
    def frozen(self) -> bool:
        try:
            return psutil.Process(self.popen.pid).status() == psutil.STATUS_STOPPED
        except psutil.Error:
            return False


class LocalLauncher:
    """Starts a run's tasks as processes of this machine (`launcher.Launcher`); standbys log
    to `log_dir/standby-<n>.log`. `python`: the interpreter the trainers run with; `fork`:
    standbys forked from the fork server (`StandbyPool`)."""

    def __init__(self, run_dir: str | os.PathLike, log_dir: str | os.PathLike,
                 python: str = sys.executable, fork: bool = True):
        self._pool = StandbyPool(Path(run_dir), Path(log_dir), python, fork)
        self._can_lower = priority.restorable()
        self._namespace: LoopbackNamespace | None = None
        self._members: dict[int, Member] = {}  # task index -> its standby-cluster member

    @property
    def python(self) -> str:
        """The interpreter of the trainers, the standbys and the fork server they are forked
        from (set it before a start to run them with another)."""
        return self._pool.python

    @python.setter
    def python(self, value: str) -> None:
        self._pool.python = value

    @property
    def standbys(self) -> list[tuple[subprocess.Popen, Path]]:
        return self._pool.standbys

    @property
    def isolated(self) -> bool:
        return self._namespace is not None

    def hold_namespace(self) -> None:
        if self._namespace is None:
            try:
                self._namespace = LoopbackNamespace.create()  # this Python, not the trainers
            except NamespaceError as exc:
                raise StartError(
                    "cannot keep the cluster's TensorFlow servers off the network: "
                    f"{exc.strerror or exc}; ftgui starts a cluster of this machine only in a "
                    "loopback-only network namespace (as root, or with unprivileged user "
                    "namespaces allowed: sysctl kernel.unprivileged_userns_clone=1)") from None
        self._pool.namespace = self._namespace

    def release_namespace(self) -> None:
        if self._namespace is not None:
            self._pool.dismiss()
            self._namespace.close()
            self._namespace = self._pool.namespace = None

    def free_port(self) -> int:
        if self._namespace is not None:  # ports there are not this machine's
            return self._namespace.free_port()
        return cluster.free_port()

    def begin_attempt(self, config, starts: list[TaskStart]) -> None:
        """Hand the attempt's orders to the standby cluster when it is ready for `config`
        (`StandbyPool.hand_cluster_orders`); the attempt starts cold otherwise. Have the fork
        server started, so that a later cold start is forked (`start`)."""
        self._members = {}
        self._pool.start_server(device_env(config))
        if not wants_cluster(config) or not self._pool.members:
            return
        orders = [(start.args, start.env) for start in starts]
        members = self._pool.hand_cluster_orders(orders, config.to_dict())
        if members is not None:
            self._members = {s.task.index: m for s, m in zip(starts, members, strict=True)}

    def start(self, request: TaskStart) -> LocalProcess:
        """The member `begin_attempt` handed this task's order, else a waiting standby given
        it, else `python -m ftgui.training` started cold (in the namespace when one is held):
        forked from the fork server when it is ready (no import of TensorFlow), else a
        process of its own. Raises `OSError` if the program cannot be started."""
        member = self._members.pop(request.task.index, None) if not request.rejoins else None
        if member is not None:
            popen, log_path, address = member.popen, member.log_path, member.address
        else:
            popen, log_path = self._pool.hand_order(request.args, request.env)
            address = None
        if popen is None:
            popen = self._pool.fork_trainer(request.args, request.env, request.log_path)
            if popen is not None:
                return LocalProcess(popen, request.log_path, forked=True)
            popen = spawn(trainer_argv(request.args, self.python), request.log_path,
                          request.env, namespace=self._namespace)
            return LocalProcess(popen, request.log_path,
                                cold_reason=self._pool.cold_reason(request.env))
        warm, age = self._pool.readiness(popen.pid)
        return LocalProcess(popen, log_path, address, standby=True,
                            standby_warm=warm, standby_age=age)

    def end_attempt(self) -> None:
        self._members = {}

    def adopt_standby(self, handle) -> None:
        """Take in a spare trainer (`standby.SpareHandle`) as the next task's standby
        (`StandbyPool.adopt`); a run in its own network namespace ends it instead (the spare
        was started outside it)."""
        if self._namespace is not None:
            kill_tree(handle.popen.pid)
            handle.popen.wait()
            return
        self._pool.adopt(handle)

    def release_standbys(self, fingerprint: str) -> list:
        """The waiting standbys built for `fingerprint`, handed over for another run to adopt
        (`StandbyPool.release`); none from a run in its own network namespace (they were
        started inside it)."""
        return [] if self._namespace is not None else self._pool.release(fingerprint)

    def keep_standbys(self, config, tasks: int) -> None:
        """`config.standbys_per_task` standbys per task, at most `config.max_standbys` (one
        started per call); a standby cluster only when all its members fit under that cap
        (it is used whole or not at all). Those `prestart_standbys` started low get nice 0."""
        self._pool.raise_priority()
        self._keep(config, tasks, low=False)

    def prestart_standbys(self, config, tasks: int) -> None:
        """`keep_standbys` before the attempt's first step, its standbys at
        `priority.STANDBY_NICE`; nothing where this process could not raise them back
        (`priority.restorable`: root or an RLIMIT_NICE allowing nice 0)."""
        if self._can_lower:
            self._keep(config, tasks, low=True)

    def _keep(self, config, tasks: int, low: bool) -> None:
        if not wants_cluster(config):
            self._pool.keep(min(tasks * config.standbys_per_task, config.max_standbys), low,
                            device_env(config))
        elif config.workers <= config.max_standbys:
            self._pool.keep_cluster(config.workers, low, device_env(config))

    def start_waits_for(self, config, tasks: int) -> str | None:
        """What a restart of `tasks` tasks of `config` should wait for before it starts, in
        words, or None: the fork server, while it imports TensorFlow and no standby (nor a
        standby cluster ready for `config`) would take the tasks. A trainer forked once it
        is ready imports nothing; one started cold now imports TensorFlow beside it, and
        under load its import took 6.6 s where the server's had 1-2 s left (issue 28)."""
        if wants_cluster(config) and self._pool.cluster_ready(config.to_dict()):
            return None
        if self._pool.server_importing(device_env(config), tasks):
            return "the fork server's import of TensorFlow"
        return None

    def standbys_ready(self, config, tasks: int) -> bool:
        return self._pool.ready_for(config, tasks)

    def mark_standby_ready(self, pid: int | None, prepared_for: str | None = None) -> None:
        self._pool.mark_ready(pid, prepared_for)

    def dismiss_standbys(self) -> None:
        self._pool.dismiss()
