"""The supervisor: starts, watches, kills, preempts and restarts the training processes of one run.

Qt-free; the GUI drives it from a timer and `ftgui train` from a loop, both by calling `poll()`.
The run directory is the source of truth: the supervisor writes its own events (process starts and
exits, injected faults, scheduled recoveries) next to the trainers' events in `RUN/events.jsonl`.

The supervisor decides; a `launcher.Launcher` does the process work (start a task, signal it,
report its exit and output file): `local_launcher.LocalLauncher` on this machine, the default.
Its collaborators, each given what it uses in its constructor: `task_launch.AttemptTasks`
(starting and ending an attempt's tasks), `fault_injection.FaultInjection` (injecting faults),
sharing `shared_state` (the run's state and current attempt; the writer of the supervisor's
events). Beside them: `run_lock` (one owner per run directory), `trainer_command` (the trainer's
command lines), `training_process` (one process as the supervisor follows it), `standby` (the
warm-standby pool of the local launcher), `fault_schedule` (planned faults), `restore_point`
(which checkpoint a start restores; forks), `recovery` (what an exit means; restart backoff),
`run_state` (exit -> state).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ftgui.core.checkpoints import listing, restore_point, resume_check, snapshots
from ftgui.core.record.events import EventReader, restart_words, waiting_reason
from ftgui.core.record.run_folder import RunFolder
from ftgui.core.record.run_lock import RunBusyError, RunLock, busy_error
from ftgui.core.record.run_state import INTERRUPTED_REASON, is_decisive, state_from_exit
from ftgui.core.settings import config as configmod
from ftgui.core.settings import datasets, user_code
from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.supervision import cluster, fault_plan, holds, peer_notice
from ftgui.core.supervision.fault_injection import FAULT_SIGNALS, FaultInjection
from ftgui.core.supervision.fault_schedule import FaultSchedule
from ftgui.core.supervision.launcher import Launcher, StartError
from ftgui.core.supervision.local_launcher import LocalLauncher
from ftgui.core.supervision.processes import describe_exit, sweep_autograph_folders
from ftgui.core.supervision.recovery import RestartPolicy, exit_verdict
from ftgui.core.supervision.shared_state import Journal, SupervisionState
from ftgui.core.supervision.standby import config_fingerprint
from ftgui.core.supervision.task_launch import LOG_DIR, AttemptTasks
from ftgui.core.supervision.training_process import TrainingProcess

# The most an automatic restart waits for what the launcher asks it to (its fork server's
# import: a cold import takes 3-14 s here, and the server has been importing since the
# attempt started); then it starts anyway.
START_WAIT_SECONDS = 10.0
VICTIM_WAIT_SECONDS = 2.0  # how long another exit waits for a killed process's own


def _shared(name: str, doc: str) -> property:
    """A public attribute of the supervisor kept in its `SupervisionState`."""
    def get(self):
        return getattr(self.shared, name)

    def put(self, value) -> None:
        setattr(self.shared, name, value)
    return property(get, put, doc=doc)


class _Delegate:
    """A public method of the supervisor that one of its collaborators (`part`) carries out:
    `method` of that collaborator's class, whose docstring it keeps. An attribute set on the
    supervisor itself wins over it (a test's stand-in)."""

    def __init__(self, part: str, method):
        self.part, self.name, self.__doc__ = part, method.__name__, method.__doc__

    def __get__(self, supervisor, owner=None):
        if supervisor is None:
            return self
        return getattr(getattr(supervisor, self.part), self.name)


# The supervisor's commands its collaborators carry out: (attribute, its class, the commands).
DELEGATED = (
    ("faults", FaultInjection, ("kill", "preempt", "preempt_and_stop", "checkpoint_now",
                                "freeze", "thaw", "plan_hold", "release_hold", "standby_ready")),
    ("launcher", Launcher, ("hold_namespace", "release_namespace", "dismiss_standbys")),
)


# The supervisor's public attributes kept in its `SupervisionState`, with their meaning.
SHARED = {
    "state": "idle, running, recovering, finished, killed, preempted, ...",
    "reason": "Why the run is in its state (one line).",
    "attempt": "The newest attempt seen (-1: none).",
    "last_step": "The newest global step seen.",
    "processes": "The current attempt's `TrainingProcess`es.",
    "held": "(step, why) while the attempt is held, else None.",
}


def _delegating(cls):
    """Give `cls` each attribute of `SHARED` (kept in its state) and each command of
    `DELEGATED` (a `_Delegate`)."""
    for name, doc in SHARED.items():
        setattr(cls, name, _shared(name, doc))
    for part, kind, names in DELEGATED:
        for name in names:
            setattr(cls, name, _Delegate(part, getattr(kind, name)))
    return cls


@_delegating
class Supervisor:
    """Owns the processes of one run directory.

    States: `idle` (nothing ran yet), `running`, `recovering` (waiting `restart_backoff` ×
    2^restarts seconds before an automatic restart), `finished`, `killed`, `preempted`,
    `failed`, and `interrupted` (history ends mid-run and nobody supervises it). A run that
    another process supervises is watched: its state follows the events that process writes.

    `poll()` must be called regularly (10–30 times a second); it returns the new events of the run
    (its own and the trainers') in file order.

    `launcher` starts and signals the tasks (`launcher.Launcher`); None: a `LocalLauncher` of
    this machine running the trainers with `python`. The fault commands (`kill`, `preempt`,
    `freeze`, `thaw`, `checkpoint_now`, holds) are `FaultInjection`'s, `hold_namespace`,
    `release_namespace` and `dismiss_standbys` the launcher's.
    """

    def __init__(self, run_dir: str | os.PathLike, python: str = sys.executable, *,
                 launcher: Launcher | None = None):
        self.run_dir = Path(run_dir).absolute()
        self.launcher: Launcher = launcher or LocalLauncher(
            self.run_dir, self.run_dir / LOG_DIR, python)
        self.python = python
        self.shared = SupervisionState()
        self.journal = Journal(self.run_dir, self.shared)
        self.resume_line = ""  # what the last resume decided when it is news (CLI, window)
        self.user_check: user_code.CheckResult | None = None  # the last start's user-code check
        self._recovery = RestartPolicy()
        self._reader = EventReader(self.run_dir)
        self._lock = RunLock(self.run_dir)
        self._errors: dict[tuple[int, str, int], str] = {}  # (attempt, role, index) -> error
        self._config: RunConfig | None = None
        self.config_error = ""  # why RUN/config.toml holds no valid configuration
        self.config_note = ""  # which settings it lacked and came from the run's record
        self._bad_config_stamp: int | None = None  # its modification time when it did not
        self._faults = FaultSchedule()
        self._launched: int | None = None  # the attempt this supervisor launched last
        self._pending: list[dict] = []
        self._first_launch = True  # the next launch is the first of a start
        self._folder_lost = ""  # why the run folder it started the run in is gone ('' while not)
        self.spare = None  # a `spare.SpareTrainer` whose spares a start adopts (the window's)
        config = lambda: self.config  # noqa: E731 - read when used: it changes with a start
        self.tasks = AttemptTasks(self.run_dir, self.shared, self.journal, self.launcher,
                                  self._faults, config, self._on_exit, self._drain)
        self.faults = FaultInjection(self.run_dir, self.shared, self.journal, self.tasks,
                                     self.launcher, self._faults, self._recovery, config,
                                     self._drain)

    # ----------------------------------------------------------------- queries
    @property
    def python(self) -> str:
        """The Python the trainers are started with (by the local launcher; set it before a
        start to run them with another)."""
        return self._python

    @python.setter
    def python(self, value: str) -> None:
        self._python = value
        if isinstance(self.launcher, LocalLauncher):
            self.launcher.python = value

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
        """`RUN/config.toml` (`resume_check.load_config`: for a run that trained, a setting
        the file lacks or cannot read comes from the run's own record; `config_note` then says
        which). Raises ConfigError naming the file, or OSError."""
        self.config_note = ""
        config, self.config_note = resume_check.load_config(self.run_dir, self.has_history())
        return config

    @property
    def refusal(self) -> str:
        """Why the last fault command did nothing (a finished run), else ''."""
        return self.faults.refusal

    @property
    def standbys(self) -> list:
        """Warm standbys waiting for an order (the local launcher's: (process, log path))."""
        return self.launcher.standbys

    def is_busy_elsewhere(self) -> bool:
        """True when another process (or another Supervisor) holds this run directory's lock."""
        return self._lock.is_busy_elsewhere()

    def reaches_job(self) -> bool:
        """True when another process supervises this run and its tasks are a job this process
        can still signal (a Slurm job named in the run folder): a watching window's Kill and
        Preempt then act on the job (`signal_job`)."""
        signal_attached = getattr(self.launcher, "signal_attached", None)
        return signal_attached is not None and self.is_busy_elsewhere() and \
            self.state in ("running", "recovering")

    def signal_job(self, kind: str, target: str = "chief") -> bool:
        """Kill (`kind` "kill": SIGKILL) or preempt ("preempt": SIGTERM) `target`'s tasks of a
        run another process supervises, through the launcher's own signalling (Slurm:
        `scancel --signal=SIG` of each task's step). Writes no event: the run's events are the
        supervising process's, which sees the exits and recovers as usual. False when the run
        is not such a run or no such task is running."""
        if kind not in ("kill", "preempt"):
            raise ValueError(f"kind: {kind!r}; allowed: kill, preempt")
        return self.reaches_job() and self.launcher.signal_attached(target, FAULT_SIGNALS[kind])

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
        sweep_autograph_folders()  # of trainers killed before, here or elsewhere
        config = config or self.config
        if config is None and self.config_error:
            raise ConfigError(self.config_error)
        if config is None:
            raise StartError(f"{self.run_dir} has no config.toml; start a new run first")
        config.validate()
        _check_checkpoint_folder(self.run_dir)
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
        self._plan_standby_holds(config)
        self.user_check = user_code.check_start(config, self.run_dir, restore,
                                                fork=from_step is not None)
        previous = self.config if resume else None
        self._lock.acquire()
        self.journal.folder, self._folder_lost = RunFolder(self.run_dir), ""
        self._config = config
        configmod.save(self.run_dir, config, user_code.record(config, self.user_check))
        self.restarts = 0
        self._first_launch = True  # of this start: says once that its ports are open
        adopted = self._adopt_spare(config)
        # The in-memory snapshot records no settings: a resume that changes one that applies
        # from the resume step (learning rate, batch size) restores from disk, where the change
        # is checked, applied and recorded.
        memory_allowed = not resume_check.training_changed(previous, config)
        unused = None if memory_allowed or from_step is not None else \
            restore_point.memory_point(self.run_dir, restore, fresh=False)
        try:
            self._launch(restore, from_step is not None, memory_allowed=memory_allowed)
        except BaseException:
            if adopted:  # no order reached them: they would wait for good
                self.dismiss_standbys()
            raise
        if self.shared.memory is not None:
            self.resume_line = (f"restoring step {self.shared.memory.step} from the in-memory "
                                "snapshot (newer than any checkpoint)")
        elif unused is not None:  # said, not dropped silently: the steps after it are redone
            self.resume_line = resume_check.unused_snapshot_line(unused.step, restore,
                                                                 previous, config)
        if self.user_check is not None and not self.user_check.deterministic:
            self.journal.emit("determinism_warning", reason=self.user_check.reason,
                       ops=self.user_check.nondeterministic_ops)

    def _plan_standby_holds(self, config: RunConfig) -> None:
        """A planned fault of a run with a warm standby waits until the standby is ready, so
        that its recovery is the warm one asked for, from the command line and the window as
        in the audit and the demos (`fault_plan.standby_holds`). The holds of an earlier
        start's faults go (a resume may plan other faults); a presenter's hold stays."""
        faults = fault_plan.standby_hold_faults(config,
                                                [task.name for task in cluster.tasks(config)])
        planned = {step: why for step, why in self._faults.holds.items() if why != "standby"}
        for step in faults:
            planned.setdefault(step, "standby")
        self._faults.holds, self._faults.hold_faults = planned, faults

    def _adopt_spare(self, config: RunConfig) -> int:
        """Give the launcher the spare trainers built for exactly `config`, if there are some
        and the launcher takes standbys in (`LocalLauncher.adopt_standby`): the attempt's
        chief is then one of them, its state already built and its step traced, and the
        others are its standbys. Returns how many were adopted."""
        adopt = getattr(self.launcher, "adopt_standby", None)
        handles = self.spare.take(config) if self.spare is not None and adopt else []
        for handle in handles:
            adopt(handle)
        return len(handles)

    def hand_on_standbys(self) -> int:
        """The run is over (finished, or its folder is closed): hand the waiting standbys built
        for its configuration to the spare trainer (`SpareTrainer.take_in`, where the launcher
        releases standbys: `LocalLauncher.release_standbys`), so that the next run of these
        settings — a demo's next run, Start pressed again — starts on them instead of
        importing TensorFlow; end the others. Returns how many were handed on."""
        release = getattr(self.launcher, "release_standbys", None)
        handed = 0
        if self.spare is not None and release is not None and self._config is not None:
            handles = release(config_fingerprint(self._config.to_dict()))
            handed = self.spare.take_in(handles, self._config)
        self.dismiss_standbys()
        return handed

    def resume(self, from_step: int | None = None) -> None:
        """Restart from the newest valid checkpoint, or fork from the checkpoint of `from_step`."""
        self.start(resume=True, from_step=from_step)

    def shutdown(self) -> None:
        """Kill every process of the run, cancel pending restarts (a `recovery_cancelled`
        event: the wait until the user resumes is a stopped run's, not the incident's) and
        release the directory."""
        folder_kept = not (self._folder_lost or self._check_folder())  # a lost one: no events
        if folder_kept and self._recovery.due is not None:
            self.journal.emit("recovery_cancelled", restart=self.restarts)
        self._recovery.due = None
        self._faults.pause_timer()
        self.shared.user_stop = "shutdown"  # the exits that follow are not crashes to recover from
        if folder_kept:
            self.tasks.kill_all()
        self.launcher.end_attempt()
        self.hand_on_standbys()
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
            if proc.alive and proc.handle.poll() is not None:
                self._on_exit(proc)
        self.tasks.refresh_servers()
        self.faults.check_timer()
        self.faults.check_watchdog()
        self.tasks.keep_standbys()
        self.faults.check_holds()
        if not self._restart_waits() and self._recovery.take_due():
            try:
                self._launch(restore_point.choose(self.run_dir, True, None)[0], False)
            except (StartError, OSError) as exc:
                self.shared.set_state("failed", f"automatic restart failed: {exc}")
        if not self.live and self._lock.held:
            self._lock.release()
        self._drain()
        if self.state == "running" and not self.processes and not self.is_busy_elsewhere():
            self.shared.set_state("interrupted", INTERRUPTED_REASON)
        new, self._pending = self._pending, []
        return new

    def _restart_waits(self) -> bool:
        """Whether the automatic restart that is due waits for what the launcher names
        (`start_waits_for`, optional for a launcher), for at most `START_WAIT_SECONDS` past
        its due time. The first wait is written (`recovery_waiting`) and shown as the state's
        reason; polling goes on meanwhile (the window's thread must not block)."""
        overdue = self._recovery.overdue()
        waits_for = getattr(self.launcher, "start_waits_for", None)
        if overdue is None or waits_for is None or overdue >= START_WAIT_SECONDS:
            return False
        what = waits_for(self.config, len(self.shared.task_names))
        if what is None:
            return False
        if not self._recovery.waiting:
            self._recovery.waiting = True
            self.journal.emit("recovery_waiting", waits_for=what, seconds=START_WAIT_SECONDS)
            self.shared.set_state("recovering", waiting_reason(START_WAIT_SECONDS))
        return True

    def _check_folder(self) -> bool:
        """While the run is this supervisor's: when the run folder was removed, moved away or
        replaced since the start (`RunFolder`), end every process at once, write nothing
        (the folder is not re-created), set the state `failed` with the one-line reason and
        return True."""
        folder = self.journal.folder
        if folder is None or not (self.live or self._lock.held):
            return False
        problem = folder.problem()
        if not problem:
            return False
        self._folder_lost = problem
        self._recovery.due = self._faults.timer_due = None
        self.shared.user_stop = "shutdown"
        problem = "; ".join([problem, *self.tasks.kill_all(record=False)])
        self.launcher.end_attempt()
        self.dismiss_standbys()
        self._lock.release()
        self.shared.settled = True
        self.shared.set_state("failed", problem)
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
                self.shared.set_state("running", "")
        self._reader.seek(history.end_offset)

    def _drain(self) -> None:
        """Read the run's new events into the pending list, updating what they tell."""
        batch = self._reader.read_new()
        for event in batch:
            self._observe(event)
        self._pending.extend(batch)

    # ----------------------------------------------------------------- internals
    def _observe(self, event: dict) -> None:
        shared, kind = self.shared, event.get("event")
        shared.attempt = max(shared.attempt, event.get("attempt", 0))
        if kind == "step":
            shared.last_step = event["step"]
            if event.get("role", "chief") == "chief":
                self._note_line(event.get("attempt", 0), event["step"])
            if event.get("from_checkpoint"):
                return  # written here from a checkpoint after the attempt ended: no progress
            if shared.processes and not shared.progress_seen:
                self.restarts = 0  # a restart that trains again is not a crash loop
            shared.progress_seen = True
            # from the first step, not the launch: importing TensorFlow takes 2-10 s, so a
            # timer from the launch killed a slow-starting run before it trained at all
            if event.get("attempt", 0) == self._launched and not shared.settled:
                self._faults.start_timer(self.config)  # not for a replay of older attempts
            for proc in shared.processes:
                if proc.is_chief and proc.alive:
                    proc.last_step, proc.last_heartbeat = event["step"], time.time()
            self.faults.fire_armed(event["step"])
        elif kind == "standby_ready":
            self.launcher.mark_standby_ready(event.get("pid"), event.get("prepared_for"))
        elif kind == "training_started":
            self.faults.repeat_preemption(event)
        elif kind == "heartbeat":
            for proc in shared.processes:
                if proc.alive and (proc.role, proc.index) == (event.get("role"),
                                                              event.get("index", 0)):
                    proc.last_step, proc.last_heartbeat = event.get("step", 0), time.time()
        elif kind == "held":
            self._faults.observe(event)
            if event.get("attempt", 0) == shared.attempt and shared.processes:
                shared.held = (event.get("step", 0), event.get("why", ""))
                who = (event.get("role", "chief"), event.get("index", 0))
                if any(p.is_chief and (p.role, p.index) == who for p in shared.processes):
                    self.faults.fire_armed(event.get("step", 0), held=True)
        elif kind == "hold_released" or (kind == "process_exited" and event.get("chief")):
            shared.held = None  # going on, or the held chief is gone
        elif kind in ("resumed", "rolled_back"):
            shared.last_step = event.get("from_step" if kind == "resumed" else "to_step", 0)
            self._note_line(event.get("attempt", 0), shared.last_step, restart=True)
            for proc in shared.processes:
                if proc.alive and proc.role != "ps":
                    proc.last_step = shared.last_step
        elif kind == "fault_injected":
            self._faults.observe(event)
        elif kind == "run_finished":
            shared.finished_attempt = max(shared.finished_attempt, event.get("attempt", 0))
        elif kind == "process_started":
            role = event.get("role", "chief")
            name = "chief" if role == "chief" else f"{role}:{event.get('index', 0)}"
            shared.starts[name] = shared.starts.get(name, 0) + 1
        elif kind == "training_error":
            key = (event.get("attempt", 0), event.get("role", "chief"), event.get("index", 0))
            self._errors[key] = event.get("error", "")
        if shared.processes or self._lock.held:
            return
        # Watching a run supervised elsewhere, or reopened: derive its state from history.
        if kind == "run_finished":
            shared.set_state("finished", "reached the last step")
        elif kind == "process_exited" and is_decisive(event):
            shared.set_state(*state_from_exit(event))
        elif kind in ("process_started", "resumed", "step") and shared.state not in ("running",):
            shared.set_state("running", "")

    def _note_line(self, attempt: int, step: int, restart: bool = False) -> None:
        """Follow the newest step of the current attempt's line of training (`line`): a
        chief's `step` event of `attempt`, or (`restart`) the step it resumed or rolled back
        to. Events of an older attempt change nothing."""
        line_attempt, newest = self.shared.line
        if attempt > line_attempt or (restart and attempt == line_attempt):
            self.shared.line = (attempt, step)
        elif attempt == line_attempt:
            self.shared.line = (attempt, max(newest, step))

    def _launch(self, restore, is_fork: bool, memory_allowed: bool = True) -> None:
        config, shared = self.config, self.shared
        self.tasks.end_old_attempt()
        peer_notice.clear(self.run_dir)  # the old attempts' notices (their processes are gone)
        self._drain()  # the attempt number and fired faults come from the whole history
        self._faults.pause_timer()  # it goes on at the new attempt's first step
        attempt = shared.attempt + 1
        self._launched = attempt
        shared.forked = is_fork
        if is_fork and restore is not None:
            restore_point.archive_newer(self.run_dir, restore.step, attempt)
        shared.processes = []
        shared.user_stop = ""
        self._recovery.held = False
        shared.settled = False
        self._faults.new_attempt()
        holds.clear(self.run_dir)  # the old attempts' releases (their processes are gone)
        shared.held = shared.held_since = None
        shared.restore = restore
        shared.memory = restore_point.memory_point(
            self.run_dir, restore, attempt == 0 or is_fork or not memory_allowed)
        shared.progress_seen = False
        shared.stop_reason = ""
        shared.attempt = attempt
        start = shared.memory.step if shared.memory is not None else (
            restore.step if restore is not None else 0)
        shared.line = (attempt, start)
        # the new attempt trains on from `start`: a fault before its first step is at that
        # step, not at the step the attempt before reached (a freeze was marked 65 steps late)
        shared.last_step = start
        tasks = cluster.tasks(config, free_port=self.tasks.free_port())
        shared.task_names = [task.name for task in tasks]
        with self.journal.writer() as writer:
            if attempt == 0:
                writer.emit("run_started", config=config.to_dict())
            self.tasks.isolate(tasks, writer, first=self._first_launch)
            self._first_launch = False
            self.tasks.start(tasks, writer)
        shared.set_state("running", "")

    def _on_exit(self, proc: TrainingProcess) -> None:
        """Record an exit and decide what it means for the attempt.

        The first exit that decides the attempt's outcome (`decisive` in its event) sets the
        state: the chief finishing or being preempted, or any process crashing — except a
        parameter-server worker, which is restarted on its own while TensorFlow reschedules
        its steps. Exits after that (the rest of the cluster being ended) are only recorded.
        """
        shared = self.shared
        proc.returncode = proc.handle.poll()
        sweep_autograph_folders()  # a SIGKILLed trainer's did not go with it
        if not (proc.killed_by_fault or shared.settled):
            self._record_kill_first()
        self._drain()  # a trainer writes why it failed (`training_error`) before it exits
        if not proc.is_chief and proc.role != "ps":
            # a worker's heartbeat lags up to a second; it runs the chief's global steps
            proc.last_step = max(proc.last_step, shared.last_step)
        fields = describe_exit(proc.returncode)
        state, reason = exit_verdict(
            fields, error=self._errors.get((shared.attempt, proc.role, proc.index)),
            stop_reason=shared.stop_reason, user_stop=shared.user_stop,
            cleanup=proc.ended_by_supervisor and shared.settled)
        crashed = state in ("killed", "failed")
        rejoin = (crashed and not shared.settled and shared.user_stop != "shutdown"
                  and self.config.strategy == "parameter-server" and proc.role == "worker")
        decisive = not shared.settled and not rejoin and (proc.is_chief or crashed)
        with self.journal.writer() as writer:
            writer.emit("process_exited", role=proc.role, index=proc.index, pid=proc.pid,
                        chief=proc.is_chief, last_step=proc.last_step, reason=reason,
                        decisive=decisive, shutdown=shared.user_stop == "shutdown", **fields)
            if rejoin and proc.rejoins < self.config.max_restarts:
                self.tasks.rejoin(proc, writer)
        if not decisive:
            return
        shared.settled = True
        self._faults.pause_timer()  # no process trains until the next attempt's first step
        if state == "finished":
            self.hand_on_standbys()
        if not proc.is_chief:
            reason = f"{proc.label} {reason}"
        if crashed or self.config.strategy == "parameter-server":
            # One lost process breaks a multi-worker TensorFlow cluster: the others fail within
            # seconds and TensorFlow needs every process restarted; and the servers of a
            # parameter-server cluster never end on their own.
            if crashed and not proc.ended_by_supervisor:
                self.tasks.await_just_in_time(reason if not proc.is_chief
                                              else f"{proc.label} {reason}")
            self.tasks.kill_all()
            self.tasks.promote_just_in_time()
        shared.set_state(state, reason)
        if state in ("killed", "failed", "preempted") and self._recovery.worth_it(
                self.config, fields, shared.user_stop, newest_restored=not shared.forked):
            delay = self._recovery.schedule(self.config)
            self.journal.emit("recovery_scheduled", delay=delay, restart=self.restarts)
            shared.set_state("recovering", restart_words(self.restarts, delay))

    def _record_kill_first(self) -> None:
        """Record the exit of a process a Kill was sent to before another's (up to
        VICTIM_WAIT_SECONDS each): the killed one decides the attempt, not a survivor that
        lost contact with it and whose exit was seen first (Slurm reports exits by polling)."""
        for victim in self.shared.processes:
            if (victim.alive and victim.killed_by_fault
                    and victim.handle.wait(VICTIM_WAIT_SECONDS) is not None):
                self._on_exit(victim)


__all__ = [
    "ConfigError", "RunBusyError", "StartError", "Supervisor", "TrainingProcess",
]


def _check_checkpoint_folder(run_dir: Path) -> None:
    """Raise `StartError` when `RUN/checkpoints` is there but is no folder: every trainer would
    fail on its first save (a tester's run restarted 4 times, 20 s, before saying so)."""
    folder = listing.checkpoint_dir(run_dir)
    if (folder.exists() or folder.is_symlink()) and not folder.is_dir():
        raise StartError(f"run_dir: {folder} is not a folder; a run keeps its checkpoints "
                         "there: move it away")
