"""The tasks of an attempt: starting each through the launcher (`launcher.Launcher`: warm
from a standby or cold), the command for a task on another machine, the warm standbys kept
beside them; and, before the next attempt, the survivors' just-in-time save and the old
attempt's last exits.

`AttemptTasks` is a collaborator of `ftgui.core.supervision.supervisor.Supervisor`: it is given
the run's shared state and journal (`shared_state`), the launcher, the fault schedule, and the
supervisor's `config` (a getter), `on_exit` (records one exit and decides what it means) and
`drain` (reads the run's new events). It writes `process_started`, `remote_task`,
`cluster_exposed`, the promoted just-in-time `checkpoint_saved` and the `step` a promoted
checkpoint recovers (`from_checkpoint`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ftgui.core.checkpoints import moves
from ftgui.core.checkpoints.listing import CheckpointInfo
from ftgui.core.record.events import EventWriter
from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.supervision import cluster, peer_notice
from ftgui.core.supervision.cluster import Task
from ftgui.core.supervision.fault_schedule import FaultSchedule
from ftgui.core.supervision.launcher import Launcher, StartError, TaskStart
from ftgui.core.supervision.shared_state import Journal, SupervisionState
from ftgui.core.supervision.standby import device_env
from ftgui.core.supervision.trainer_command import remote_command, trainer_args
from ftgui.core.supervision.training_process import TrainingProcess

LOG_DIR = "logs"
EXIT_GRACE_SECONDS = 5.0  # an old attempt's process still exiting at a restart gets this long
KILL_WAIT_SECONDS = 10.0  # how long a SIGKILLed process is waited for (D state: it never ends)
# A multi-worker survivor's step fails ~0.1 s after a peer's loss (at once when told by a
# notice, `peer_notice`) and its just-in-time checkpoint takes ~0.2 s more: it gets this long to
# save and exit before the cluster is ended.
JUST_IN_TIME_GRACE_SECONDS = 3.0


class AttemptTasks:
    """Starting the processes of a supervisor's attempt and its warm standbys, and ending the
    attempt: its survivors' just-in-time save, its last exits."""

    def __init__(self, run_dir: Path, state: SupervisionState, journal: Journal,
                 launcher: Launcher, faults: FaultSchedule,
                 config: Callable[[], RunConfig | None],
                 on_exit: Callable[[TrainingProcess], None], drain: Callable[[], None]):
        self.run_dir, self.state, self.journal = run_dir, state, journal
        self.launcher, self.faults = launcher, faults
        self.config, self.on_exit, self.drain = config, on_exit, drain

    def start(self, tasks: list[Task], writer: EventWriter) -> None:
        """Start the attempt's local tasks (`begin_attempt`, then one `start` each, in task
        order) and announce the others. Raises `StartError` when one cannot be started."""
        local = [self._request(task) for task in tasks if task.local]
        try:
            self.launcher.begin_attempt(self.config(), local)
        except OSError as exc:
            raise StartError(f"cannot start the attempt's tasks: {exc}") from None
        requests = iter(local)
        for task in tasks:
            if task.local:
                self._spawn(next(requests), writer)
            else:
                self._announce_remote(task, writer)

    def rejoin(self, proc: TrainingProcess, writer: EventWriter) -> TrainingProcess:
        """Start `proc`'s task again on its own within the attempt (a parameter-server
        worker). Raises `StartError`."""
        return self._spawn(self._request(proc.task, proc.rejoins + 1), writer)

    def _request(self, task: Task, rejoins: int = 0) -> TaskStart:
        suffix = f".restart-{rejoins}" if rejoins else ""
        attempt = self.state.attempt
        log_name = f"{task.role}-{task.index}.attempt-{attempt}{suffix}.log"
        return TaskStart(task, self.trainer_args(task), self.task_env(task),
                         self.run_dir / LOG_DIR / log_name, attempt, rejoins)

    def _spawn(self, request: TaskStart, writer: EventWriter) -> TrainingProcess:
        state, task = self.state, request.task
        restore = state.restore
        restarts = state.starts.get(task.name, 0)
        try:
            handle = self.launcher.start(request)
        except OSError as exc:
            self.kill_all()
            raise StartError(f"cannot start {task.name}: {exc}") from None
        memory = state.memory.step if state.memory is not None and task.is_chief else None
        start = memory if memory is not None else (restore.step if restore else 0)
        proc = TrainingProcess(task, handle, restarts=restarts, rejoins=request.rejoins,
                               last_step=state.last_step if request.rejoins else start)
        state.processes.append(proc)
        age = handle.standby_age
        writer.emit(
            "process_started", role=task.role, index=task.index, pid=handle.pid,
            ident=handle.ident, chief=task.is_chief, label=task.label, restarts=restarts,
            address=handle.address or task.address,
            restore=restore.relpath if restore else None,
            log=str(handle.log_path.relative_to(self.run_dir)), standby=handle.standby,
            standby_warm=handle.standby_warm if handle.standby else None,
            standby_age=None if age is None else round(age, 2),
            forked=bool(getattr(handle, "forked", False)),
            cold_reason=getattr(handle, "cold_reason", None),
            snapshot=memory,
        )
        return proc

    def isolate(self, tasks: list[Task], writer: EventWriter, first: bool) -> None:
        """Before the tasks of an attempt start: a cluster all on this machine gets (or keeps)
        its loopback-only network namespace, so that no other machine can reach its ports;
        one with remote tasks says once (`first`: the first attempt of this start) that its
        ports are open to the network, and before a restart checks that no other program took
        a local task's port. Raises `StartError` naming the reason or the port."""
        config = self.config()
        if cluster.isolated(config):
            self.launcher.hold_namespace()
            return
        self.launcher.release_namespace()
        spec = tasks[0].tf_config["cluster"] if tasks and tasks[0].tf_config else {}
        line = cluster.exposure_line(spec)
        if line and first:
            writer.emit("cluster_exposed", addresses=[a for job in spec.values() for a in job],
                        line=line)
        if not first:
            try:
                cluster.check_ports(config)
            except ConfigError as exc:
                raise StartError(f"cannot restart: {exc}") from None

    def free_port(self) -> Callable[[], int]:
        """Where this attempt's free ports come from: the cluster's namespace when it has one
        (ports there are not this machine's), else this machine."""
        if cluster.isolated(self.config()):
            self.launcher.hold_namespace()
        return self.launcher.free_port

    def _announce_remote(self, task: Task, writer: EventWriter) -> str:
        """Write the command that starts `task` on its own machine (a `remote_task` event).

        That machine needs ftgui installed and this run directory at the same path (a shared
        file system): its events and the chief's checkpoints live there."""
        command = remote_command(self.trainer_args(task), task.tf_config)
        writer.emit("remote_task", role=task.role, index=task.index, address=task.address,
                    label=task.label, command=command)
        return command

    def task_env(self, task: Task) -> dict[str, str]:
        """The environment `task` gets on top of the launcher's: its `TF_CONFIG`, and no GPU
        for a CPU run."""
        return {**cluster.tf_config_env(task), **device_env(self.config())}

    def keep_standbys(self) -> None:
        """Keep one warm standby per task, or one standby cluster, while the run lives, so
        that a fault in an attempt's first seconds, or a second one soon after a restart,
        finds one ready: `keep_standbys` once the attempt trains, or at once when it came
        from standbys and imports nothing (a replacement for the standby just used); before
        that, the launcher's `prestart_standbys` if it has one (standbys at a low CPU
        priority, which do not slow the attempt's own import and tracing)."""
        config, state = self.config(), self.state
        if not config or not config.warm_standby or state.settled:
            return
        tasks = len(state.task_names)
        if state.progress_seen or any(p.standby for p in state.processes):
            self.launcher.keep_standbys(config, tasks)
        elif (prestart := getattr(self.launcher, "prestart_standbys", None)) is not None:
            prestart(config, tasks)  # optional for a launcher

    def trainer_args(self, task: Task) -> list[str]:
        """The trainer's arguments for `task` in this attempt, with the faults it fires."""
        state = self.state
        own = self.faults.args_for(self.config(), task, state.task_names)
        restore = state.restore.relpath if state.restore is not None else None
        return trainer_args(self.run_dir, task.role, task.index, state.attempt, restore, own,
                            restore_snapshot=state.memory is not None and task.is_chief)

    def end_old_attempt(self) -> None:
        """Record the exit of every process of the attempt that ended before the next one starts
        (a worker may still be exiting when a restart is due): wait up to EXIT_GRACE_SECONDS
        for it, then kill it. Each exit is written as the old attempt's; none keeps a port."""
        deadline = time.time() + EXIT_GRACE_SECONDS
        for proc in self.state.processes:
            if proc.alive:
                if proc.handle.wait(deadline - time.time()) is None:
                    continue
                self.on_exit(proc)
        self.kill_all()
        self.launcher.end_attempt()

    def kill_all(self, record: bool = True) -> list[str]:
        """SIGKILL every live process of the attempt and wait until each is reaped (up to
        KILL_WAIT_SECONDS each); `record`: record each exit (`on_exit`), else only note its
        exit status. Returns a line per process that did not end (uninterruptible sleep:
        reported, not hidden), each also set as `state.reason` when `record`."""
        stuck = []
        for proc in self.state.processes:
            if not proc.alive:
                continue
            proc.ended_by_supervisor = True
            code = proc.handle.kill(KILL_WAIT_SECONDS)
            if code is None:
                stuck.append(f"{proc.name} (pid {proc.pid}) did not end after SIGKILL")
                if record:
                    self.state.reason = stuck[-1]
            elif not record:
                proc.returncode = code
            elif proc.alive:  # record its exit now, before a restart replaces the list
                self.on_exit(proc)
        return stuck

    def refresh_servers(self) -> None:
        """Parameter-server workers and servers run no steps and write no heartbeats: show the
        chief's step, and count a live, not frozen process as a heartbeat."""
        config = self.config()
        if config is None or config.strategy != "parameter-server":
            return
        now = time.time()
        for proc in self.state.processes:
            if proc.alive and not proc.is_chief and not proc.frozen:
                proc.last_step, proc.last_heartbeat = self.state.last_step, now

    def await_just_in_time(self, reason: str) -> None:
        """In a multi-worker cluster that lost a process (`reason`: what happened, e.g.
        "worker 1 ended by SIGKILL"), tell the others (`peer_notice.announce`: each aborts its
        collectives, so that none waits in one for the lost peer), then let them save the last
        completed step (`actions/just_in_time.py`) and exit on their own, for at most
        `JUST_IN_TIME_GRACE_SECONDS` in all. A frozen process is not waited for."""
        if self.config().strategy != "multi-worker":
            return
        try:
            peer_notice.announce(self.run_dir, self.state.attempt, reason)
        except OSError as exc:  # then only TensorFlow tells them, as before
            self.state.reason = f"cannot tell the other workers that {reason}: {exc}"
        deadline = time.monotonic() + JUST_IN_TIME_GRACE_SECONDS
        for other in self.state.processes:
            if other.alive and not other.frozen:
                if other.handle.wait(deadline - time.monotonic()) is None:
                    return

    def promote_just_in_time(self) -> None:
        """Move a worker's just-in-time checkpoint into `RUN/checkpoints` once its attempt has
        ended (`moves.promote_just_in_time`) and report it as saved.

        The step it holds may have no `step` event: the chief can die after the step's
        all-reduce and before it logged the step. Then the step's loss, as the checkpoint
        recorded it, is written as that attempt's `step` event, marked `from_checkpoint`
        (`_recover_steps`)."""
        promoted = moves.promote_just_in_time(self.run_dir)
        for info, source in promoted:
            self.journal.emit("checkpoint_saved", step=info.step, path=info.relpath,
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
        self.drain()
        line_attempt, newest = self.state.line
        if line_attempt != self.state.attempt:  # an attempt this supervisor did not launch
            return
        for info in sorted(promoted, key=lambda info: info.step):
            if info.step <= newest or "loss" not in info.meta:
                continue
            self.journal.emit("step", step=info.step, loss=info.meta["loss"],
                              epoch=info.meta.get("epoch"), from_checkpoint=True,
                              checkpoint=info.relpath)
            newest = info.step
