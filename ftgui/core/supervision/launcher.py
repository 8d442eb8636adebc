"""The launcher seam: the supervisor decides, a `Launcher` does the process work.

The supervisor (`supervisor.Supervisor` and its collaborators) decides what an attempt is, which
tasks it has, their command lines, when a fault is injected, when the attempt is over and
whether to restart. A `Launcher` carries those decisions out: it starts a task with its trainer
arguments, environment and output file, signals it, and reports whether it is alive and how it
exited. It keeps the attempt-level resources that belong to *how* tasks run — on this machine
(`local_launcher.LocalLauncher`) a loopback-only network namespace and the warm standbys; under
a workload manager, a batch job.

Who calls what, per attempt (all from the supervisor's thread, inside `Supervisor.poll()` or a
command):

1. `hold_namespace()` (a cluster all on this machine) or `release_namespace()`;
2. `free_port()` once per port of the attempt's `TF_CONFIG`;
3. `begin_attempt(config, starts)` once, with every task the launcher is to start;
4. `start(request)` for each of those tasks, in task order; later, `start(request)` again for a
   task restarted on its own within the attempt (`request.rejoins > 0`: a parameter-server
   worker), with no `begin_attempt` before it;
5. `TaskHandle.poll()` 10–30 times a second per live task; `signal()` for a fault or a checkpoint
   request; `kill()` and `wait()` when the attempt ends;
6. `end_attempt()` once every task of the attempt has ended or been killed: before the next
   `begin_attempt`, at `Supervisor.shutdown`, and when the run folder is lost.

Warm standbys (`keep_standbys`, `standbys_ready`, `mark_standby_ready`, `dismiss_standbys`) are
optional for a launcher: one that keeps none returns True from `standbys_ready` (nothing to wait
for) and does nothing in the others. A launcher may also have `prestart_standbys(config,
tasks)`, called each poll before the attempt's first step (the local one starts its standbys
there at a low CPU priority, so that they do not slow the attempt's own start), and
`start_waits_for(config, tasks)`, asked each poll while an automatic restart is due: what the
restart should wait for, in words, or None to start now (the local one waits for its fork
server's import; the supervisor waits at most `supervisor.START_WAIT_SECONDS`).

Exit statuses follow `subprocess.Popen.returncode`: >= 0 an exit code, -N ended by signal N (a
SIGKILLed task is -9). `describe_exit` turns one into event fields. Times are seconds.

The supervisor takes its launcher as an argument, `Supervisor(run_dir, launcher=...)`; None
(the default) is a `LocalLauncher` for the run directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ftgui.core.settings.config import RunConfig
    from ftgui.core.supervision.cluster import Task


class StartError(RuntimeError):
    """A run cannot start (or resume) as asked; the message says why and what to do."""


@dataclass(frozen=True)
class TaskStart:
    """What the supervisor asks a launcher to start: one task of attempt `attempt`.

    `task`: role, index, chief or not, `TF_CONFIG` (`cluster.Task`); `args`: the trainer's
    arguments, what follows `python -m ftgui.training` (`trainer_command.trainer_args`); `env`:
    extra environment variables for the task (its `TF_CONFIG`, `CUDA_VISIBLE_DEVICES`), on top of
    the launcher's own; `log_path`: the file its stdout and stderr are appended to (a launcher
    that hands the task to a warm standby reports the standby's own file as `TaskHandle.log_path`
    instead); `rejoins`: how often the task was restarted on its own within the attempt (0 for
    the attempt's own start)."""

    task: Task
    args: list[str]
    env: dict[str, str]
    log_path: Path
    attempt: int
    rejoins: int = 0


@runtime_checkable
class TaskHandle(Protocol):
    """One started task, as its launcher sees it.

    `pid`: the process id on this machine (written into `process_started` and `process_exited`
    events), None when the task runs elsewhere; `ident`: how the task is named to a person
    ("pid 4242"; a batch job's "job 17 task 1"); `log_path`: its output file; `address`:
    "host:port" where it serves when that is not `task.address` (a standby-cluster member keeps
    its own `TF_CONFIG`), else None; `standby`: it was a warm standby handed its order, then
    `standby_warm` (whether that standby had TensorFlow imported) and `standby_age` (seconds since
    the standby was started; None when not known); `forked` (optional, False when absent): a
    cold start forked from the fork server, which had imported TensorFlow."""

    pid: int | None
    ident: str
    log_path: Path
    address: str | None
    standby: bool
    standby_warm: bool | None
    standby_age: float | None

    def poll(self) -> int | None:
        """The exit status once the task has ended, else None. Cheap: called 10–30 times a
        second; never blocks, never raises for a task that is gone."""

    def wait(self, timeout: float) -> int | None:
        """Block up to `timeout` seconds for the task to end; its exit status, or None when it
        still runs after that."""

    def signal(self, sig: int, tree: bool = True) -> bool:
        """Send signal `sig` (SIGKILL: a crash; SIGTERM: a preemption; SIGSTOP/SIGCONT: a freeze
        and a thaw; SIGUSR1: checkpoint now) to the task: with `tree`, to every process of it
        (its children too), else to its main process only (SIGUSR1, which would end a child
        that does not handle it). False when the task was already gone; never raises for that."""

    def kill(self, timeout: float = 10.0) -> int | None:
        """SIGKILL every process of the task and wait up to `timeout` seconds for it to end; its
        exit status, or None when it did not end (a process in uninterruptible sleep)."""

    @property
    def frozen(self) -> bool:
        """True while the task is stopped (SIGSTOP: a hang injected or real)."""


@runtime_checkable
class Launcher(Protocol):
    """Starts and signals the tasks of a run's attempts (see the module's docstring for the
    order of calls)."""

    @property
    def standbys(self) -> list:
        """The warm standbys waiting for an order, in the launcher's own terms (the local one:
        (process, log path)); empty for a launcher that keeps none."""

    @property
    def isolated(self) -> bool:
        """True while the attempt's tasks are kept off the network (`hold_namespace`)."""

    def hold_namespace(self) -> None:
        """Keep the tasks (and standbys) started from now on reachable only from each other,
        until `release_namespace`. Raises `StartError` with the reason where that is not
        possible. Idempotent."""

    def release_namespace(self) -> None:
        """Let go of what `hold_namespace` holds (the tasks inside it have ended); standbys that
        live inside it end too. Idempotent."""

    def free_port(self) -> int:
        """A TCP port free a moment ago where the tasks will run (inside the held namespace
        when there is one)."""

    def begin_attempt(self, config: RunConfig, starts: list[TaskStart]) -> None:
        """Prepare attempt `starts[0].attempt` of a run configured by `config`, whose local tasks
        are `starts` (task order): e.g. hand their orders to a standby cluster, or submit the one
        batch job that runs them all. Each is then started by `start`. Raises `OSError` when the
        tasks cannot be started."""

    def start(self, request: TaskStart) -> TaskHandle:
        """Start one task (after `begin_attempt` named it, or on its own with `rejoins` > 0).
        Raises `OSError` when it cannot be started (the supervisor then kills the attempt's
        other tasks and reports a `StartError`)."""

    def end_attempt(self) -> None:
        """The current attempt's tasks have all ended or been killed: free what `begin_attempt`
        took (a batch job's leftovers)."""

    def keep_standbys(self, config: RunConfig, tasks: int) -> None:
        """Keep warm standbys for a restart of `tasks` tasks of `config` (called each poll
        while the attempt trains; start at most one per call). Raises `OSError` if a standby
        cannot be started."""

    def standbys_ready(self, config: RunConfig, tasks: int) -> bool:
        """Whether a restart of `tasks` tasks of `config` now would start warm; True for a
        launcher that keeps no standbys."""

    def mark_standby_ready(self, pid: int | None, prepared_for: str | None = None) -> None:
        """A standby wrote `standby_ready` (TensorFlow imported; `prepared_for`: the
        `standby.config_fingerprint` of the configuration it built its state for)."""

    def dismiss_standbys(self) -> None:
        """End every waiting standby (the run is over, or the supervisor is closing)."""
