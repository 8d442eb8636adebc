"""The bridge between the Qt views and the Qt-free supervisor: one timer polls, views render.

Every ~33 ms the controller asks its event source (`EventSource`: the run's supervisor, or the
clock of a replay, which has no supervisor) for the run's new events and feeds them to the
run's `Timeline` (`ftgui.core.timeline.model`), the one model every view renders; it then emits what
changed, follows the processes' output files, and lets the plot redraw once. Views never
interpret events and never talk to processes themselves.

The event log gets the timeline's sentences. The processes' raw output (TensorFlow, gRPC,
tracebacks; always kept in `RUN/logs/`) reaches it only with `show_tf_output` on; without it, a
process that ended with an error it could not record as an event still gets one sentence: the
last line of its traceback.
"""

from __future__ import annotations

import math
import os
import signal
import time
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QApplication

from ftgui.core.checkpoints import resume_check
from ftgui.core.record import event_history
from ftgui.core.record.events import EventSource, who
from ftgui.core.record.process_output import OutputFollower
from ftgui.core.settings import config as configmod
from ftgui.core.settings import user_code
from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.supervision.slurm.launcher import SlurmLauncher, launcher_for
from ftgui.core.supervision.spare import SpareTrainer
from ftgui.core.supervision.supervisor import Supervisor
from ftgui.core.timeline.model import Changes, Note, Timeline
from ftgui.core.timeline.replay import ReplayClock
from ftgui.core.timeline.story import frozen

POLL_MS = 33
SPARE_CHECK_MS = 1500  # how often the spare trainer is checked against the settings shown
_SETTLED_STATES = ("idle", "finished", "killed", "failed", "preempted", "stopped", "interrupted")


def log_line(note: Note) -> str:
    """A note of the timeline as a line of the event log: local time, then the sentence."""
    return f"{time.strftime('%H:%M:%S', time.localtime(note.time))} {note.text}"


class RunController(QObject):
    """Owns the `Supervisor` of the run on screen and its `Timeline`.

    `plot` is the view that draws the timeline (a `LossPlot`), or None until the window has
    created it; the controller hands it the timeline and asks it to redraw once per tick.

    Signals: `stateChanged(str state, str reason)`, `logLine(str)`, `checkpointsChanged()`,
    `statusChanged(str)`, `processesChanged(list of TrainingProcess)` (at most 4 times a second),
    `incidentsChanged(Timeline)`, `timelineChanged(Timeline)` (once per tick that changed it).
    """

    stateChanged = Signal(str, str)
    logLine = Signal(str)
    checkpointsChanged = Signal()
    statusChanged = Signal(str)
    processesChanged = Signal(list)
    incidentsChanged = Signal(object)  # the Timeline
    timelineChanged = Signal(object)  # the Timeline

    def __init__(self, plot=None, parent=None):
        super().__init__(parent)
        self.supervisor: Supervisor | None = None  # None before a run is open, and in a replay
        self.replay: ReplayClock | None = None  # the source while a replay plays, else None
        self.run_dir: Path | None = None  # the run shown (absolute), None before any
        self._replay_config: RunConfig | None = None  # the replayed run's configuration
        self.timeline = Timeline()
        self._plot = None
        self.plot = plot
        self._tails: dict[Path, OutputFollower] = {}
        self.show_tf_output = False  # the processes' raw output in the event log
        self._state = ("", "")
        self._processes_shown = 0.0
        self._countdown: int | None = None  # the whole seconds a freeze's story last said
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.tick)
        self.timer.start()
        self.spare: SpareTrainer | None = None  # kept once `keep_spare` is called
        self._spare_settings = lambda: None
        self._spare_timer = QTimer(self)
        self.spare_line = ""  # the spares' state for the status bar, while no run is live

    @property
    def plot(self):
        return self._plot

    @plot.setter
    def plot(self, plot) -> None:
        """Draw the timeline on `plot` from now on (it is shown the whole timeline at once)."""
        self._plot = plot
        if plot is not None:
            plot.show_timeline(self.timeline)

    @property
    def state(self) -> tuple[str, str]:
        """(state, reason) as last shown: `busy` when another process supervises the run."""
        return self._state

    # ------------------------------------------------------------ commands
    @property
    def source(self) -> EventSource | None:
        """Where `tick` takes the events from: the replay clock, else the supervisor."""
        return self.replay or self.supervisor

    @property
    def config(self) -> RunConfig | None:
        """The configuration of the run shown: the supervisor's, or the replayed run's (None
        when it has none that loads)."""
        if self.supervisor is not None:
            return self.supervisor.config
        return self._replay_config

    def open(self, run_dir: Path, replay: ReplayClock | None = None) -> Supervisor | None:
        """Show `run_dir` (existing or new) and return its supervisor; stops nothing that runs
        elsewhere. With `replay`, the run's events come from that clock instead and no
        supervisor is made (read-only: nothing can be started); returns None."""
        if self.supervisor is not None and self.supervisor.live:
            raise RuntimeError("a run is live; kill or preempt it before opening another")
        if self.supervisor is not None:
            self.supervisor.shutdown()
        self.run_dir = Path(run_dir).absolute()
        self.supervisor = Supervisor(run_dir, launcher=_launcher_of(run_dir)) \
            if replay is None else None
        if self.supervisor is not None:
            self.supervisor.spare = self._spares_for_runs()
        self._replay_config = None if replay is None else _replayed_config(self.run_dir)
        self._tails.clear()
        self.timeline = Timeline()
        self.replay = replay
        changes = Changes()
        if replay is None:
            history = event_history.read_history(run_dir)
            self.supervisor.load_history(history)
            changes = self.timeline.feed(history)  # a million steps open in about a second
        if self._plot is not None:
            self._plot.show_timeline(self.timeline)
        for note in changes.notes:
            self.logLine.emit(log_line(note))
        self.timelineChanged.emit(self.timeline)
        self.incidentsChanged.emit(self.timeline)  # also when empty: the last run's go
        self.checkpointsChanged.emit()
        self._state = ("", "")
        self.tick()
        return self.supervisor

    def start(self, config, resume: bool = False, from_step: int | None = None) -> None:
        """Start or resume the open run; raises the supervisor's errors unchanged."""
        if self.replay is not None:
            raise RuntimeError("a replay is read-only: open the run to resume it")
        checking = (config is not None and user_code.is_user_code(config)
                    and user_code.cached(config) is None)  # passed before: no wait
        if checking:  # the helper process takes 10-30 s: say so before the window waits
            self.timer.stop()  # no tick may paint over the message meanwhile
            self.statusChanged.emit("checking your model and data in a helper process…")
            QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
            QApplication.processEvents()
        try:
            self._take_launcher(config or self.supervisor.config)
            self.supervisor.start(config, resume=resume, from_step=from_step)
        finally:
            if checking:
                QApplication.restoreOverrideCursor()
                self.timer.start()
        self.tick()

    def _take_launcher(self, config: RunConfig | None) -> None:
        """Before a start: a supervisor whose launcher is the one `config` asks for (Slurm's
        checks first: `ConfigError` in one line), the run's history read into it again."""
        if config is None:
            return
        wanted = launcher_for(config, self.supervisor.run_dir)
        if isinstance(wanted, SlurmLauncher) == isinstance(self.supervisor.launcher,
                                                           SlurmLauncher):
            return
        run_dir = self.supervisor.run_dir
        self.supervisor.shutdown()
        self.supervisor = Supervisor(run_dir, launcher=wanted)
        self.supervisor.spare = self._spares_for_runs()
        self.supervisor.load_history(event_history.read_history(run_dir))

    def kill(self, target: str = "chief") -> bool:
        """Kill `target`: through this window's supervisor, or (a Slurm run another process
        supervises) through the run's job."""
        return self._fault("kill", target)

    def preempt(self, target: str = "chief") -> bool:
        return self._fault("preempt", target)

    def _fault(self, kind: str, target: str) -> bool:
        supervisor = self.supervisor
        if supervisor is None:
            return False
        if not supervisor.reaches_job():
            return self._command(getattr(supervisor, kind), target)
        done = supervisor.signal_job(kind, target)
        self.logLine.emit(f"{time.strftime('%H:%M:%S')} {kind.capitalize()} {target} "
                          + (f"sent through Slurm ({supervisor.launcher.job.line()})" if done
                             else "did nothing: no such task is running in the job"))
        return done

    def _command(self, command, *args) -> bool:
        """Run a fault command of the supervisor; when it refuses (the run has finished),
        say why in the event log."""
        done = command(*args)
        if not done and self.supervisor.refusal:
            self.logLine.emit(f"{time.strftime('%H:%M:%S')} {self.supervisor.refusal}")
        return done

    def preempt_and_stop(self) -> bool:
        """Preempt the chief with no automatic restart after it (quitting while training).
        False if nothing is alive."""
        return bool(self.supervisor) and self.supervisor.preempt_and_stop()

    def checkpoint_now(self) -> bool:
        return self._command(self.supervisor.checkpoint_now) if self.supervisor else False

    def inject_nan_now(self) -> bool:
        """Poison the loss of the chief's next step (SIGUSR2; custom loop only): the trainer
        writes the `fault_injected` event and rolls back. False when no chief trains yet (before
        its first step the signal could arrive before its handler) or with the fit loop."""
        supervisor = self.supervisor
        if supervisor is None or supervisor.config is None or supervisor.config.loop != "custom":
            return False
        chief = next((p for p in supervisor.processes if p.is_chief and p.alive), None)
        trains = any(s.attempt == supervisor.attempt for s in self.timeline.segments[-1:])
        if chief is None or not trains:
            return False
        os.kill(chief.pid, signal.SIGUSR2)
        return True

    def freeze(self, target: str = "chief") -> bool:
        return self._command(self.supervisor.freeze, target) if self.supervisor else False

    def thaw(self, target: str = "chief") -> bool:
        return self._command(self.supervisor.thaw, target) if self.supervisor else False

    def shutdown(self) -> None:
        """Kill everything of the run and the spare trainer (the window is closing)."""
        self.timer.stop()
        if self.supervisor is not None:
            self.supervisor.shutdown()
        self.stop_spare()

    # ------------------------------------------------------------ the spare trainer
    def keep_spare(self, settings) -> None:
        """From now on, keep spare trainers (`ftgui.core.supervision.spare`) for the settings
        `settings()` returns (a `RunConfig`, or None while they do not validate) whenever no
        run is live and no replay plays, so that Start finds its state built and a standby
        ready; checked every `SPARE_CHECK_MS`. The `ftgui` window does; a window made
        without it starts every run cold."""
        if self.spare is None:
            self.spare = SpareTrainer()
            self._spare_timer.timeout.connect(self._tend_spare)
        self._spare_settings = settings
        if self.supervisor is not None:
            self.supervisor.spare = self.spare
        self._spare_timer.start(SPARE_CHECK_MS)  # the first after the window's first paint

    def stop_spare(self) -> None:
        """End the spare trainers, if any, and keep none from now on: a run that finishes
        ends its standbys instead of handing them on (nothing would tend them)."""
        self._spare_timer.stop()
        self.spare_line = ""
        if self.supervisor is not None:
            self.supervisor.spare = None
        if self.spare is not None:
            self.spare.dismiss()

    def _spares_for_runs(self):
        """The spare trainer a new supervisor's runs take from and hand back to: None while
        spares are off."""
        return self.spare if self._spare_timer.isActive() else None

    def _tend_spare(self) -> None:
        supervisor = self.supervisor
        if self.replay is not None or (supervisor is not None and (
                supervisor.live or supervisor.standbys)):
            self.spare.dismiss()  # the run's own standbys stand by; the cap holds for them
            self.spare_line = ""
            return
        config = self._spare_settings()
        try:
            if config is not None:
                self.spare.keep(config)
        except OSError as exc:
            self.stop_spare()
            self.logLine.emit(f"{time.strftime('%H:%M:%S')} no spare trainer: {exc}")
            return
        self.spare_line = self.spare.status(config)

    # ------------------------------------------------------------ the timer
    def tick(self) -> None:
        source = self.source
        if source is None:
            return
        changes = self.timeline.feed(source.poll())
        self._emit(changes)
        self._count_down(changes)
        processes = self.supervisor.processes if self.supervisor is not None else []
        for proc in processes:
            self._follow_output(proc)
        if self._plot is not None:
            self._plot.redraw()
        state = (self._state_name(), self._reason())
        if state != self._state:
            self._state = state
            self.stateChanged.emit(*state)
        self.statusChanged.emit(self.status_text())
        now = time.monotonic()
        if now - self._processes_shown > 0.25 or changes.checkpoints:
            self._processes_shown = now
            self.processesChanged.emit(list(processes))

    def watchdog_due_in(self) -> float | None:
        """Seconds until the watchdog ends the open run's frozen attempt (the supervisor's
        `watchdog_due_in`), or None when nothing is frozen or nothing watches it."""
        if self.supervisor is None or not frozen(self.timeline):
            return None
        return self.supervisor.faults.watchdog_due_in()

    def _count_down(self, changes: Changes) -> None:
        """While a freeze waits for its watchdog, tell the story again each whole second (no
        event comes from a frozen process to do it)."""
        due_in = self.watchdog_due_in()
        left = None if due_in is None else max(0, math.ceil(due_in))
        if left != self._countdown:
            self._countdown = left
            if not changes:
                self.timelineChanged.emit(self.timeline)

    def _follow_output(self, proc) -> None:
        """Pass on `proc`'s new output lines (with `show_tf_output`), and once, the error that
        ended it when no `training_error` event said it already."""
        follower = self._tails.get(proc.log_path)
        if follower is None:
            follower = self._tails[proc.log_path] = OutputFollower(proc.log_path)
        for line in follower.read_lines():
            if self.show_tf_output:
                self.logLine.emit(f"  {proc.role}:{proc.index} | {line}")
        failed = proc.returncode is not None and proc.returncode > 0
        if not failed or proc.ended_by_supervisor or follower.error is None or follower.reported:
            return
        follower.reported = True
        name = who({"role": proc.role, "index": proc.index})
        if not any(note.kind == "training_error" and note.text.startswith(f"{name} error:")
                   and note.attempt == self.supervisor.attempt for note in self.timeline.notes):
            self.logLine.emit(f"{time.strftime('%H:%M:%S')} {name} failed: {follower.error}")

    def _emit(self, changes: Changes) -> None:
        """The signals for what one feed of the timeline changed."""
        for note in changes.notes:
            self.logLine.emit(log_line(note))
        if changes.incidents:
            self.incidentsChanged.emit(self.timeline)
        if changes.checkpoints:
            self.checkpointsChanged.emit()
        if changes:
            self.timelineChanged.emit(self.timeline)

    # ------------------------------------------------------------ derived state
    def _state_name(self) -> str:
        if self.replay is not None:
            return f"replay ×{self.replay.speed:g}"
        supervisor = self.supervisor
        if supervisor.state in _SETTLED_STATES and supervisor.is_busy_elsewhere():
            return "busy"
        return supervisor.state

    def steps_per_second(self) -> float:
        """Steps per second over the last ~2 s of step events (0 when idle)."""
        if self.replay is not None:  # in the recording's time
            return self.timeline.steps_per_second(self.replay.recorded_now())
        return self.timeline.steps_per_second()

    def _reason(self) -> str:
        """The supervisor's reason; in a replay the replayed run's state, then "done"."""
        if self.replay is None:
            launcher = self.supervisor.launcher
            job = launcher.current_line() if isinstance(launcher, SlurmLauncher) else ""
            return " · ".join(filter(None, (self.supervisor.reason, job)))
        timeline = self.timeline
        text = timeline.state + (f": {timeline.reason}" if timeline.reason else "")
        return text + (" (replay done)" if self.replay.done else "")

    def status_text(self) -> str:
        """"running · step 140/2000 · 212 steps/s · restarts 1 · …": the rate only while a run
        trains, the restarts (attempts after the first) only after one, and how many of them
        were forks ("restarts 2 (1 of them a fork)")."""
        supervisor, timeline = self.supervisor, self.timeline
        config = self.config
        total = f"/{config.steps}" if config else ""
        attempt = supervisor.attempt if supervisor is not None else -1
        restarts = max(attempt, timeline.attempt, 0)
        state = self._state_name()
        frozen_now = state == "running" and frozen(timeline)  # as the state label says
        text = f"{'frozen' if frozen_now else state} · step {timeline.last_step}{total}"
        if not frozen_now and (self.replay is not None
                               or supervisor.state not in _SETTLED_STATES):
            text += f" · {self.steps_per_second():.0f} steps/s"
        if restarts:
            text += f" · restarts {restarts}"
            forks = len(timeline.forks)  # a user's resume from an older checkpoint, no fault
            if forks:
                text += f" ({forks} of them {'a fork' if forks == 1 else 'forks'})"
        reason = self._reason()
        if reason:
            text += f" · {reason}"
        if self.spare_line and not (supervisor is not None and supervisor.live):
            text += f" · {self.spare_line}"
        return text


def _launcher_of(run_dir: Path) -> SlurmLauncher | None:
    """The launcher of an existing run: a `SlurmLauncher` when its config.toml says launcher
    slurm (no Slurm check yet: that comes with a start), else None (the local one)."""
    try:
        slurm = configmod.load_values(run_dir).get("launcher") == "slurm"
    except (OSError, ConfigError):
        return None
    return SlurmLauncher(run_dir) if slurm else None


def _replayed_config(run_dir: Path) -> RunConfig | None:
    """The configuration of a run to replay (`resume_check.load_config`), None when it has
    none that loads (the replay shows its events all the same)."""
    try:
        return resume_check.load_config(run_dir, has_history=True)[0]
    except (ConfigError, OSError):
        return None
