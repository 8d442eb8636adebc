"""The tasks of an attempt: starting a training process per task (warm from a standby or cold),
the command for a task on another machine, the warm-standby pool kept beside them; and, before
the next attempt, the survivors' just-in-time save and the old attempt's last exits.

`TaskLauncher` is a part of `ftgui.core.supervision.supervisor.Supervisor` (a mixin): it uses the
supervisor's run directory, attempt, restore point, in-memory snapshot, fault schedule, standby
pool, the newest step of the attempt's line of training (`_line`), `_on_exit`, `_kill_all`,
`_drain` and `_emit`, and writes `process_started`, `remote_task`, the promoted just-in-time
`checkpoint_saved` and the `step` a promoted checkpoint recovers (`from_checkpoint`).
"""

from __future__ import annotations

import subprocess
import time

from ftgui.core.checkpoints import moves
from ftgui.core.checkpoints.listing import CheckpointInfo
from ftgui.core.record.events import EventWriter
from ftgui.core.settings.config import ConfigError
from ftgui.core.supervision import cluster, peer_notice, training_process
from ftgui.core.supervision.cluster import Task
from ftgui.core.supervision.launcher import StartError
from ftgui.core.supervision.loopback_ns import LoopbackNamespace, NamespaceError
from ftgui.core.supervision.standby import Member, wants_cluster
from ftgui.core.supervision.trainer_command import remote_command, trainer_args
from ftgui.core.supervision.training_process import TrainingProcess

LOG_DIR = "logs"
EXIT_GRACE_SECONDS = 5.0  # an old attempt's process still exiting at a restart gets this long
# A multi-worker survivor's step fails ~0.1 s after a peer's loss (at once when told by a
# notice, `peer_notice`) and its just-in-time checkpoint takes ~0.2 s more: it gets this long to
# save and exit before the cluster is ended.
JUST_IN_TIME_GRACE_SECONDS = 3.0


class TaskLauncher:
    """Starting the processes of a supervisor's attempt and its warm standbys, and ending the
    attempt before: its survivors' just-in-time save, its last exits."""

    def _spawn(self, task: Task, writer: EventWriter, rejoins: int = 0,
               member: Member | None = None) -> TrainingProcess:
        """Start `task` (`rejoins`: its restarts on its own within this attempt; `member`: the
        standby-cluster member already handed its order)."""
        suffix = f".restart-{rejoins}" if rejoins else ""
        log_name = f"{task.role}-{task.index}.attempt-{self.attempt}{suffix}.log"
        log_path = self.run_dir / LOG_DIR / log_name
        restore = self._restore
        restarts = self._starts.get(task.name, 0)
        try:
            proc = training_process.start(
                task, self._trainer_args(task), self._task_env(task), log_path, self._standby,
                self.python, restarts=restarts, rejoins=rejoins,
                start_step=self.last_step if rejoins else (restore.step if restore else 0),
                handed=(member.popen, member.log_path) if member else None,
                namespace=self._namespace)
        except OSError as exc:
            self._kill_all()
            raise StartError(f"cannot start {task.name}: {exc}") from None
        self.processes.append(proc)
        warm, age = self._standby.readiness(proc.pid) if proc.standby else (None, None)
        writer.emit(
            "process_started", role=task.role, index=task.index, pid=proc.pid,
            chief=task.is_chief, label=task.label, restarts=restarts,
            address=member.address if member else task.address,
            restore=restore.relpath if restore else None,
            log=str(proc.log_path.relative_to(self.run_dir)), standby=proc.standby,
            standby_warm=warm, standby_age=None if age is None else round(age, 2),
            snapshot=self._memory.step if self._memory is not None and task.is_chief else None,
        )
        return proc

    _namespace: LoopbackNamespace | None = None  # the cluster's, while one is held

    def _isolate(self, tasks: list[Task], writer: EventWriter, first: bool) -> None:
        """Before the tasks of an attempt start: a cluster all on this machine gets (or keeps)
        its loopback-only network namespace, so that no other machine can reach its ports;
        one with remote tasks says once (`first`: the first attempt of this start) that its
        ports are open to the network, and before a restart checks that no other program took
        a local task's port. Raises `StartError` naming the reason or the port."""
        if cluster.isolated(self.config):
            self.hold_namespace()
            return
        self.release_namespace()
        spec = tasks[0].tf_config["cluster"] if tasks and tasks[0].tf_config else {}
        line = cluster.exposure_line(spec)
        if line and first:
            writer.emit("cluster_exposed", addresses=[a for job in spec.values() for a in job],
                        line=line)
        if not first:
            try:
                cluster.check_ports(self.config)
            except ConfigError as exc:
                raise StartError(f"cannot restart: {exc}") from None

    def _free_port(self):
        """Where this attempt's free ports come from: the cluster's namespace when it has one
        (ports there are not this machine's), else this machine."""
        if cluster.isolated(self.config):
            self.hold_namespace()
            return self._namespace.free_port
        return cluster.free_port

    def hold_namespace(self) -> None:
        """Make the loopback-only network namespace of a cluster all on this machine (kept
        until `release_namespace`), where its tasks and standbys start. Raises `StartError`
        with the reason where the system allows none."""
        if self._namespace is None:
            try:
                self._namespace = LoopbackNamespace.create()  # this Python, not the trainers
            except NamespaceError as exc:
                raise StartError(
                    "cannot keep the cluster's TensorFlow servers off the network: "
                    f"{exc.strerror or exc}; ftgui starts a cluster of this machine only in a "
                    "loopback-only network namespace (as root, or with unprivileged user "
                    "namespaces allowed: sysctl kernel.unprivileged_userns_clone=1)") from None
        self._standby.namespace = self._namespace

    def release_namespace(self) -> None:
        """Let go of the cluster's network namespace (its processes have ended); the standbys
        started inside it go too (they could not serve a cluster outside it)."""
        if self._namespace is not None:
            self._standby.dismiss()
            self._namespace.close()
            self._namespace = self._standby.namespace = None

    def _announce_remote(self, task: Task, writer: EventWriter) -> str:
        """Write the command that starts `task` on its own machine (a `remote_task` event).

        That machine needs ftgui installed and this run directory at the same path (a shared
        file system): its events and the chief's checkpoints live there."""
        command = remote_command(self._trainer_args(task), task.tf_config)
        writer.emit("remote_task", role=task.role, index=task.index, address=task.address,
                    label=task.label, command=command)
        return command

    def _task_env(self, task: Task) -> dict[str, str]:
        env = cluster.tf_config_env(task)
        if self.config.gpus == 0:
            env["CUDA_VISIBLE_DEVICES"] = "-1"  # CPU runs must not grab or use a GPU
        return env

    def _keep_standbys(self) -> None:
        """Keep one warm standby per task, or one standby cluster, while the run lives
        (started once the attempt trains, so that imports do not compete with its start;
        or at once when the attempt itself came from standbys and imports nothing, so that a
        second fault soon after finds the next standby ready)."""
        config = self.config
        warm_start = any(p.standby for p in self.processes)
        if config and config.warm_standby and (self._progress_seen or warm_start) \
                and not self._settled:
            if wants_cluster(config):
                self._standby.keep_cluster(config.workers)
            else:
                self._standby.keep(len(self._task_names))

    def _hand_standby_cluster(self, tasks: list[Task]) -> dict[str, Member]:
        """Hand this attempt's orders to the standby cluster when it is ready for the run's
        configuration (`StandbyPool.hand_cluster_orders`): task name -> its member; empty
        when the attempt starts cold."""
        if not wants_cluster(self.config) or not self._standby.members:
            return {}
        orders = [(self._trainer_args(task), self._task_env(task)) for task in tasks]
        members = self._standby.hand_cluster_orders(orders, self.config.to_dict())
        return {} if members is None else {t.name: m for t, m in zip(tasks, members, strict=True)}

    def dismiss_standbys(self) -> None:
        """End every waiting standby (the run is over, or the supervisor is closing)."""
        self._standby.dismiss()

    def _trainer_args(self, task: Task) -> list[str]:
        """The trainer's arguments for `task` in this attempt, with the faults it fires."""
        own = self._faults.args_for(self.config, task, self._task_names)
        restore = self._restore.relpath if self._restore is not None else None
        return trainer_args(self.run_dir, task.role, task.index, self.attempt, restore, own,
                            restore_snapshot=self._memory is not None and task.is_chief)

    def _end_old_attempt(self) -> None:
        """Record the exit of every process of the attempt that ended before the next one starts
        (a worker may still be exiting when a restart is due): wait up to EXIT_GRACE_SECONDS
        for it, then kill it. Each exit is written as the old attempt's; none keeps a port."""
        deadline = time.time() + EXIT_GRACE_SECONDS
        for proc in self.processes:
            if proc.alive:
                try:
                    proc.popen.wait(timeout=max(deadline - time.time(), 0.0))
                except subprocess.TimeoutExpired:
                    continue
                self._on_exit(proc)
        self._kill_all()

    def _refresh_servers(self) -> None:
        """Parameter-server workers and servers run no steps and write no heartbeats: show the
        chief's step, and count a live, not frozen process as a heartbeat."""
        if self.config is None or self.config.strategy != "parameter-server":
            return
        now = time.time()
        for proc in self.processes:
            if proc.alive and not proc.is_chief and not proc.frozen:
                proc.last_step, proc.last_heartbeat = self.last_step, now

    def _await_just_in_time(self, reason: str) -> None:
        """In a multi-worker cluster that lost a process (`reason`: what happened, e.g.
        "worker 1 ended by SIGKILL"), tell the others (`peer_notice.announce`: each aborts its
        collectives, so that none waits in one for the lost peer), then let them save the last
        completed step (`actions/just_in_time.py`) and exit on their own, for at most
        `JUST_IN_TIME_GRACE_SECONDS` in all. A frozen process is not waited for."""
        if self.config.strategy != "multi-worker":
            return
        try:
            peer_notice.announce(self.run_dir, self.attempt, reason)
        except OSError as exc:  # then only TensorFlow tells them, as before
            self.reason = f"cannot tell the other workers that {reason}: {exc}"
        deadline = time.monotonic() + JUST_IN_TIME_GRACE_SECONDS
        for other in self.processes:
            if other.alive and not other.frozen:
                try:
                    other.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    return

    def _promote_just_in_time(self) -> None:
        """Move a worker's just-in-time checkpoint into `RUN/checkpoints` once its attempt has
        ended (`moves.promote_just_in_time`) and report it as saved.

        The step it holds may have no `step` event: the chief can die after the step's
        all-reduce and before it logged the step. Then the step's loss, as the checkpoint
        recorded it, is written as that attempt's `step` event, marked `from_checkpoint`
        (`_recover_steps`)."""
        promoted = moves.promote_just_in_time(self.run_dir)
        for info, source in promoted:
            self._emit("checkpoint_saved", step=info.step, path=info.relpath,
                       loss=info.meta.get("loss"), size=info.size, just_in_time=True,
                       promoted_from=source, saved_by=info.meta.get("saved_by"))
        self._recover_steps([info for info, _ in promoted])

    def _recover_steps(self, promoted: list[CheckpointInfo]) -> None:
        """Write a `step` event (`from_checkpoint: true`, `checkpoint`: its path) for each
        promoted checkpoint newer than every step the ended attempt's line of training logged,
        in step order, with the loss and epoch of its metadata. Called once the attempt's
        local processes have ended: their events are all in the file and are read first, so a
        step the chief did log is not written again (a chief on another machine could still
        log it late: the timeline then keeps one point). Dated now, before the next attempt.
        """
        if not promoted:
            return
        self._drain()
        line_attempt, newest = self._line
        if line_attempt != self.attempt:  # an attempt this supervisor did not launch
            return
        for info in sorted(promoted, key=lambda info: info.step):
            if info.step <= newest or "loss" not in info.meta:
                continue
            self._emit("step", step=info.step, loss=info.meta["loss"],
                       epoch=info.meta.get("epoch"), from_checkpoint=True,
                       checkpoint=info.relpath)
            newest = info.step
