"""The supervisor: starts, watches, kills, preempts and restarts the training processes of one run.

Qt-free; the GUI drives it from a timer and `ftgui train` from a loop, both by calling `poll()`.
The run directory is the source of truth: the supervisor writes its own events (process starts and
exits, injected faults, scheduled recoveries) next to the trainers' events in `RUN/events.jsonl`.

Its parts live beside it: `fault_injection` and `task_launch` (two parts of the class itself:
injecting faults, and starting and ending an attempt's tasks), `run_lock` (one owner per run
directory), `trainer_command` (the trainer's command lines), `training_process` (one process,
started warm or cold), `standby` (the warm-standby pool), `fault_schedule` (planned faults),
`restore_point` (which checkpoint a start restores; forks), `recovery` (what an exit means;
restart backoff), `run_state` (exit -> state).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from ftgui.core.checkpoints import listing, restore_point, resume_check, snapshots
from ftgui.core.record.events import EventReader, EventWriter, restart_words
from ftgui.core.record.run_folder import RunFolder
from ftgui.core.record.run_lock import RunBusyError, RunLock, busy_error
from ftgui.core.record.run_state import is_decisive, state_from_exit
from ftgui.core.settings import config as configmod
from ftgui.core.settings import datasets, user_code
from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.settings.schema import SETTINGS
from ftgui.core.supervision import cluster, holds, peer_notice
from ftgui.core.supervision.fault_injection import FaultInjection
from ftgui.core.supervision.fault_schedule import FaultSchedule
from ftgui.core.supervision.launcher import StartError
from ftgui.core.supervision.processes import describe_exit, kill_tree
from ftgui.core.supervision.recovery import RestartPolicy, exit_verdict
from ftgui.core.supervision.standby import StandbyPool
from ftgui.core.supervision.task_launch import LOG_DIR, TaskLauncher
from ftgui.core.supervision.training_process import TrainingProcess


class Supervisor(FaultInjection, TaskLauncher):
    """Owns the processes of one run directory.

    States: `idle` (nothing ran yet), `running`, `recovering` (waiting `restart_backoff` ×
    2^restarts seconds before an automatic restart), `finished`, `killed`, `preempted`,
    `failed`, and `interrupted` (history ends mid-run and nobody supervises it). A run that
    another process supervises is watched: its state follows the events that process writes.

    `poll()` must be called regularly (10–30 times a second); it returns the new events of the run
    (its own and the trainers') in file order.
    """

    def __init__(self, run_dir: str | os.PathLike, python: str = sys.executable):
        self.run_dir = Path(run_dir).absolute()
        self.python = python
        self.processes: list[TrainingProcess] = []
        self.state = "idle"
        self.reason = ""
        self.resume_line = ""  # what the last resume decided when it is news (CLI, window)
        self.user_check: user_code.CheckResult | None = None  # the last start's user-code check
        self.attempt = -1
        self.last_step = 0
        self._recovery = RestartPolicy()
        self._reader = EventReader(self.run_dir)
        self._lock = RunLock(self.run_dir)
        self._user_stop = ""  # 'kill' / 'preempt' / 'shutdown' while a user's stop is in flight
        self._errors: dict[tuple[int, str, int], str] = {}  # (attempt, role, index) -> error
        self._config: RunConfig | None = None
        self.config_error = ""  # why RUN/config.toml holds no valid configuration
        self.config_note = ""  # which settings it lacked and came from the run's record
        self._bad_config_stamp: int | None = None  # its modification time when it did not
        self._faults = FaultSchedule()
        self._task_names: list[str] = []  # the processes of the current attempt
        self._progress_seen = False  # a step was seen in this attempt (arms the watchdog)
        self._stop_reason = ""  # why the supervisor itself ended the attempt (watchdog)
        self._standby = StandbyPool(self.run_dir, self.run_dir / LOG_DIR, python)
        self._settled = False  # the current attempt's outcome is known; later exits only log
        self._pending: list[dict] = []
        self._memory = None  # the in-memory snapshot the current attempt restores (or None)
        self._forked = False  # the current attempt restores the checkpoint the user picked
        self._starts: dict[str, int] = {}  # task name -> process starts seen in the run
        # (attempt, newest step its current line of training has a `step` event for, or the
        # step it restored): what a promoted just-in-time checkpoint may add (`task_launch`)
        self._line: tuple[int, int] = (-1, 0)
        self._finished_attempt = -1  # the attempt that wrote `run_finished` (-1: none)
        self.refusal = ""  # why the last fault command did nothing (a finished run)
        self.held: tuple[int, str] | None = None  # (step, why) while the attempt is held
        self._held_since: float | None = None  # monotonic seconds a standby hold was seen
        self._first_launch = True  # the next launch is the first of a start
        # the run folder this supervisor started the run in, and why it is gone ('' while not)
        self._folder: RunFolder | None = None
        self._folder_lost = ""

    # ----------------------------------------------------------------- queries
    @property
    def live(self) -> bool:
        """True while a process runs or an automatic restart is pending."""
        return any(p.alive for p in self.processes) or self._recovery.due is not None

    @property
    def restarts(self) -> int:
        """Automatic restarts since the run last trained (reset by a step after a restart)."""
        return self._recovery.restarts

    @restarts.setter
    def restarts(self, value: int) -> None:
        self._recovery.restarts = value

    @property
    def config(self) -> RunConfig | None:
        """The run's configuration (from `RUN/config.toml` once it exists); None while that
        file does not hold a valid one (`config_error` then says why, naming the field; the
        file is read again only when it changes)."""
        if self._config is None:
            path = self.run_dir / configmod.CONFIG_FILE
            try:
                stamp = path.stat().st_mtime_ns
            except OSError:
                return None
            if stamp == self._bad_config_stamp:
                return None
            try:
                self._config = self._load_config()
            except (ConfigError, OSError) as exc:
                self._bad_config_stamp, self.config_error = stamp, str(exc)
                return None
            self.config_error = ""
        return self._config

    def _load_config(self) -> RunConfig:
        """`RUN/config.toml`; for a run that trained, a setting the file lacks or cannot read
        comes from the run's own record (`resume_check.fill_from_record`; `config_note` then
        says which), never from a default. Raises ConfigError naming the file, or OSError."""
        values = configmod.load_values(self.run_dir)
        self.config_note = ""
        if set(SETTINGS) <= set(values):  # complete: the record is not read
            try:
                return configmod.load(self.run_dir)
            except ConfigError:
                if not self.has_history():
                    raise
        if self.has_history():  # a setting missing or unreadable: from the record
            restore = listing.newest_valid(self.run_dir)
            values, self.config_note = resume_check.fill_from_record(
                self.run_dir, values, restore.meta if restore else None)
        try:
            return configmod.from_dict(values)
        except ConfigError as exc:
            raise ConfigError(f"{exc} (in {self.run_dir / configmod.CONFIG_FILE})") from None

    @property
    def standbys(self) -> list[tuple[subprocess.Popen, Path]]:
        """Warm standbys waiting for an order: (process, log path)."""
        return self._standby.standbys

    def is_busy_elsewhere(self) -> bool:
        """True when another process (or another Supervisor) holds this run directory's lock."""
        return self._lock.is_busy_elsewhere()

    def has_history(self) -> bool:
        """True when the directory already holds a run (events or checkpoints)."""
        return (self.run_dir / "events.jsonl").exists() or bool(
            listing.list_checkpoints(self.run_dir)
        )

    # ----------------------------------------------------------------- commands
    def start(
        self,
        config: RunConfig | None = None,
        resume: bool = False,
        from_step: int | None = None,
    ) -> None:
        """Validate, write `RUN/config.toml` and launch attempt N.

        `resume=False` starts a new run and refuses a directory that already has one.
        `resume=True` restores the newest valid checkpoint (or starts at step 0 when there is
        none); `from_step=S` restores exactly step S and first moves newer checkpoints to
        `RUN/history/` (a fork: nothing is deleted). A setting the restored checkpoint was
        saved with and that may not change (`ftgui.core.checkpoints.resume_check`) is refused.
        Raises `ConfigError`, `RunBusyError` or `StartError` before any process starts.
        """
        if self.live:
            raise StartError(f"{self.run_dir} is already running; kill or preempt it first")
        if self.is_busy_elsewhere():  # before any other refusal: the run is someone else's
            raise busy_error(self.run_dir)
        snapshots.sweep()  # the shared memory of deleted runs, which nothing else frees
        config = config or self.config
        if config is None and self.config_error:
            raise ConfigError(self.config_error)
        if config is None:
            raise StartError(f"{self.run_dir} has no config.toml; start a new run first")
        config.validate()
        datasets.check(config)
        cluster.check_ports(config)
        if cluster.isolated(config):  # then no other machine reaches its ports
            self.hold_namespace()
        resume = resume or from_step is not None
        if not resume and self.has_history():
            raise StartError(
                f"{self.run_dir} already holds a run; resume it (--resume) or pick a new directory"
            )
        try:
            restore, self.resume_line = restore_point.choose(self.run_dir, resume, from_step)
        except LookupError as exc:
            raise StartError(str(exc)) from None
        resume_check.check(self.run_dir, config, restore)  # refused settings: ConfigError
        self.user_check = user_code.check_start(config, self.run_dir, restore)
        previous = self.config if resume else None
        self._lock.acquire()
        self._folder, self._folder_lost = RunFolder(self.run_dir), ""
        self._config = config
        configmod.save(self.run_dir, config, user_code.record(config, self.user_check))
        self.restarts = 0
        self._first_launch = True  # of this start: says once that its ports are open
        # The in-memory snapshot records no settings: a resume that changes one that applies
        # from the resume step (learning rate, batch size) restores from disk, where the change
        # is checked, applied and recorded.
        self._launch(restore, from_step is not None,
                     memory_allowed=not resume_check.training_changed(previous, config))
        if self._memory is not None:
            self.resume_line = (f"restoring step {self._memory.step} from the in-memory "
                                "snapshot (newer than any checkpoint)")
        if self.user_check is not None and not self.user_check.deterministic:
            self._emit("determinism_warning", reason=self.user_check.reason,
                       ops=self.user_check.nondeterministic_ops)

    def resume(self, from_step: int | None = None) -> None:
        """Restart from the newest valid checkpoint, or fork from the checkpoint of `from_step`."""
        self.start(resume=True, from_step=from_step)

    def shutdown(self) -> None:
        """Kill every process of the run, cancel pending restarts and release the directory."""
        self._recovery.due = self._faults.timer_due = None
        self._user_stop = "shutdown"  # the exits that follow are not crashes to recover from
        if not (self._folder_lost or self._check_folder()):  # a lost folder gets no events
            self._kill_all()
        self.dismiss_standbys()
        self.release_namespace()
        self.poll()
        self._lock.release()

    # ----------------------------------------------------------------- the watch loop
    def poll(self) -> list[dict]:
        """Reap exited processes, start due restarts, and return the run's new events."""
        if self._folder_lost or self._check_folder():
            new, self._pending = self._pending, []
            return new
        self._drain()
        for proc in self.processes:
            if proc.alive and proc.popen.poll() is not None:
                self._on_exit(proc)
        self._refresh_servers()
        self._check_timer()
        self._check_watchdog()
        self._keep_standbys()
        self._check_holds()
        if self._recovery.take_due():
            try:
                self._launch(restore_point.choose(self.run_dir, True, None)[0], False)
            except (StartError, OSError) as exc:
                self._set_state("failed", f"automatic restart failed: {exc}")
        if not self.live and self._lock.held:
            self._lock.release()
        self._drain()
        if self.state == "running" and not self.processes and not self.is_busy_elsewhere():
            self._set_state("interrupted", "its supervisor ended without recording an exit")
        new, self._pending = self._pending, []
        return new

    def _check_folder(self) -> bool:
        """While the run is this supervisor's: when the run folder was removed, moved away or
        replaced since the start (`RunFolder`), end every process at once, write nothing
        (the folder is not re-created), set the state `failed` with the one-line reason and
        return True."""
        if self._folder is None or not (self.live or self._lock.held):
            return False
        problem = self._folder.problem()
        if not problem:
            return False
        self._folder_lost = problem
        self._recovery.due = self._faults.timer_due = None
        self._user_stop = "shutdown"
        for proc in self.processes:
            if proc.alive:
                proc.ended_by_supervisor = True
                kill_tree(proc.pid)
                try:
                    proc.popen.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    problem += f"; {proc.name} (pid {proc.pid}) did not end after SIGKILL"
                    continue
                proc.returncode = proc.popen.returncode
        self.dismiss_standbys()
        self._lock.release()
        self._settled = True
        self._set_state("failed", problem)
        return True

    def load_history(self, history) -> None:
        """Take a run's history read the fast way (`ftgui.core.record.runs.read_history`) instead of
        reading it event by event: what the non-step events tell, and the last step."""
        for _, event in history.others:
            self._observe(event)
        if len(history.steps):
            self.last_step = int(history.steps.step[-1])
            self.attempt = max(self.attempt, int(history.steps.attempt.max()))
            if not self.processes and not self._lock.held and self.state == "idle":
                self._set_state("running", "")
        self._reader.seek(history.end_offset)

    def _drain(self) -> None:
        """Read the run's new events into the pending list, updating what they tell."""
        batch = self._reader.read_new()
        for event in batch:
            self._observe(event)
        self._pending.extend(batch)

    # ----------------------------------------------------------------- internals
    def _observe(self, event: dict) -> None:
        kind = event.get("event")
        self.attempt = max(self.attempt, event.get("attempt", 0))
        if kind == "step":
            self.last_step = event["step"]
            if event.get("role", "chief") == "chief":
                self._note_line(event.get("attempt", 0), event["step"])
            if event.get("from_checkpoint"):
                return  # written here from a checkpoint after the attempt ended: no progress
            if self.processes and not self._progress_seen:
                self.restarts = 0  # a restart that trains again is not a crash loop
            self._progress_seen = True
            for proc in self.processes:
                if proc.is_chief and proc.alive:
                    proc.last_step, proc.last_heartbeat = event["step"], time.time()
            self._fire_armed(event["step"])
        elif kind == "standby_ready":
            self._standby.mark_ready(event.get("pid"), event.get("prepared_for"))
        elif kind == "heartbeat":
            for proc in self.processes:
                if proc.alive and (proc.role, proc.index) == (event.get("role"),
                                                              event.get("index", 0)):
                    proc.last_step, proc.last_heartbeat = event.get("step", 0), time.time()
        elif kind == "held":
            self._faults.observe(event)
            if event.get("attempt", 0) == self.attempt and self.processes:
                self.held = (event.get("step", 0), event.get("why", ""))
        elif kind == "hold_released" or (kind == "process_exited" and event.get("chief")):
            self.held = None  # going on, or the held chief is gone
        elif kind in ("resumed", "rolled_back"):
            self.last_step = event.get("from_step" if kind == "resumed" else "to_step", 0)
            self._note_line(event.get("attempt", 0), self.last_step, restart=True)
            for proc in self.processes:
                if proc.alive and proc.role != "ps":
                    proc.last_step = self.last_step
        elif kind == "fault_injected":
            self._faults.observe(event)
        elif kind == "run_finished":
            self._finished_attempt = max(self._finished_attempt, event.get("attempt", 0))
        elif kind == "process_started":
            role = event.get("role", "chief")
            name = "chief" if role == "chief" else f"{role}:{event.get('index', 0)}"
            self._starts[name] = self._starts.get(name, 0) + 1
        elif kind == "training_error":
            key = (event.get("attempt", 0), event.get("role", "chief"), event.get("index", 0))
            self._errors[key] = event.get("error", "")
        if self.processes or self._lock.held:
            return
        # Watching a run supervised elsewhere, or reopened: derive its state from history.
        if kind == "run_finished":
            self._set_state("finished", "reached the last step")
        elif kind == "process_exited" and is_decisive(event):
            self._set_state(*state_from_exit(event))
        elif kind in ("process_started", "resumed", "step") and self.state not in ("running",):
            self._set_state("running", "")

    def _note_line(self, attempt: int, step: int, restart: bool = False) -> None:
        """Follow the newest step of the current attempt's line of training (`_line`): a
        chief's `step` event of `attempt`, or (`restart`) the step it resumed or rolled back
        to. Events of an older attempt change nothing."""
        line_attempt, newest = self._line
        if attempt > line_attempt or (restart and attempt == line_attempt):
            self._line = (attempt, step)
        elif attempt == line_attempt:
            self._line = (attempt, max(newest, step))

    def _launch(self, restore, is_fork: bool, memory_allowed: bool = True) -> None:
        config = self.config
        self._end_old_attempt()
        peer_notice.clear(self.run_dir)  # the old attempts' notices (their processes are gone)
        self._drain()  # the attempt number and fired faults come from the whole history
        attempt = self.attempt + 1
        self._forked = is_fork
        if is_fork and restore is not None:
            restore_point.archive_newer(self.run_dir, restore.step, attempt)
        self.processes = []
        self._user_stop = ""
        self._recovery.held = False
        self._settled = False
        self._faults.new_attempt()
        holds.clear(self.run_dir)  # the old attempts' releases (their processes are gone)
        self.held = self._held_since = None
        self._restore = restore
        self._memory = restore_point.memory_point(
            self.run_dir, restore, attempt == 0 or is_fork or not memory_allowed)
        self._progress_seen = False
        self._stop_reason = ""
        self.attempt = attempt
        start = self._memory.step if self._memory is not None else (
            restore.step if restore is not None else 0)
        self._line = (attempt, start)
        tasks = cluster.tasks(config, free_port=self._free_port())
        self._task_names = [task.name for task in tasks]
        with EventWriter(self.run_dir, attempt, folder=self._folder) as writer:
            if attempt == 0:
                writer.emit("run_started", config=config.to_dict())
            self._isolate(tasks, writer, first=self._first_launch)
            self._first_launch = False
            handed = self._hand_standby_cluster(tasks)
            for task in tasks:
                if task.local:
                    self._spawn(task, writer, member=handed.get(task.name))
                else:
                    self._announce_remote(task, writer)
        self._faults.start_timer(config)
        self._set_state("running", "")

    def _on_exit(self, proc: TrainingProcess) -> None:
        """Record an exit and decide what it means for the attempt.

        The first exit that decides the attempt's outcome (`decisive` in its event) sets the
        state: the chief finishing or being preempted, or any process crashing — except a
        parameter-server worker, which is restarted on its own while TensorFlow reschedules
        its steps. Exits after that (the rest of the cluster being ended) are only recorded.
        """
        proc.returncode = proc.popen.returncode
        self._drain()  # a trainer writes why it failed (`training_error`) before it exits
        if not proc.is_chief and proc.role != "ps":
            # a worker's heartbeat lags up to a second; it runs the chief's global steps
            proc.last_step = max(proc.last_step, self.last_step)
        fields = describe_exit(proc.returncode)
        state, reason = exit_verdict(
            fields, error=self._errors.get((self.attempt, proc.role, proc.index)),
            stop_reason=self._stop_reason, user_stop=self._user_stop,
            cleanup=proc.ended_by_supervisor and self._settled)
        crashed = state in ("killed", "failed")
        rejoin = (crashed and not self._settled and self._user_stop != "shutdown"
                  and self.config.strategy == "parameter-server" and proc.role == "worker")
        decisive = not self._settled and not rejoin and (proc.is_chief or crashed)
        with EventWriter(self.run_dir, self.attempt, folder=self._folder) as writer:
            writer.emit("process_exited", role=proc.role, index=proc.index, pid=proc.pid,
                        chief=proc.is_chief, last_step=proc.last_step, reason=reason,
                        decisive=decisive, shutdown=self._user_stop == "shutdown", **fields)
            if rejoin and proc.rejoins < self.config.max_restarts:
                self._spawn(proc.task, writer, rejoins=proc.rejoins + 1)
        if not decisive:
            return
        self._settled = True
        if state == "finished":
            self._faults.timer_due = None
            self.dismiss_standbys()
        if not proc.is_chief:
            reason = f"{proc.label} {reason}"
        if crashed or self.config.strategy == "parameter-server":
            # One lost process breaks a multi-worker TensorFlow cluster: the others fail within
            # seconds and TensorFlow needs every process restarted; and the servers of a
            # parameter-server cluster never end on their own.
            if crashed and not proc.ended_by_supervisor:
                self._await_just_in_time(reason if not proc.is_chief
                                         else f"{proc.label} {reason}")
            self._kill_all()
            self._promote_just_in_time()
        self._set_state(state, reason)
        if state in ("killed", "failed", "preempted") and self._recovery.worth_it(
                self.config, fields, self._user_stop, newest_restored=not self._forked):
            delay = self._recovery.schedule(self.config)
            self._emit("recovery_scheduled", delay=delay, restart=self.restarts)
            self._set_state("recovering", restart_words(self.restarts, delay))

    def _kill_all(self) -> None:
        """SIGKILL every live process tree of the run and wait until each is reaped."""
        for other in self.processes:
            if other.alive:
                other.ended_by_supervisor = True
                kill_tree(other.pid)
                try:
                    other.popen.wait(timeout=10)
                except subprocess.TimeoutExpired:  # unkillable (D state): reported, not hidden
                    self.reason = f"{other.name} (pid {other.pid}) did not end after SIGKILL"
                    continue
                if other.alive:  # record its exit now, before a restart replaces the list
                    self._on_exit(other)

    def _emit(self, event: str, /, **fields) -> None:
        """Write one event of the supervisor's own, as attempt `self.attempt`."""
        with EventWriter(self.run_dir, self.attempt, folder=self._folder) as writer:
            writer.emit(event, **fields)

    def _chief(self) -> TrainingProcess | None:
        """The live chief of the attempt (None when it is not running here)."""
        return next((p for p in self.processes if p.is_chief and p.alive), None)

    def _set_state(self, state: str, reason: str) -> None:
        self.state, self.reason = state, reason


__all__ = [
    "ConfigError", "RunBusyError", "StartError", "Supervisor", "TrainingProcess",
]
