"""The bridge between the Qt views and the Qt-free supervisor: one timer polls, views render.

Every ~33 ms the controller asks the supervisor for the run's new events, hands them to the
plot, checkpoint table and event log, follows the processes' output files, and redraws the plot
once. The views never talk to processes themselves.
"""

from __future__ import annotations

import collections
import time
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal

from ftgui.core import exitcodes, runs
from ftgui.core.incidents import IncidentTracker
from ftgui.core.logs import LogTail
from ftgui.core.run_state import is_chief, is_decisive
from ftgui.core.supervisor import Supervisor

POLL_MS = 33
LOG_EVENTS = {
    "run_started", "process_started", "training_started", "resumed", "checkpoint_saved",
    "fault_injected", "process_exited", "recovery_scheduled", "preempted", "forked",
    "non_finite_loss", "training_error", "run_finished", "checkpoint_requested",
    "rolled_back", "hang_detected", "thawed", "standby_ready", "remote_task",
}


def describe(event: dict) -> str:
    """One human line for an event of the log pane."""
    kind = event["event"]
    stamp = time.strftime("%H:%M:%S", time.localtime(event.get("time", 0)))
    skip = {"event", "time", "attempt", "config"}
    details = ", ".join(f"{k}={_short(v)}" for k, v in event.items() if k not in skip)
    return f"{stamp} [attempt {event.get('attempt', 0)}] {kind}: {details}"


def _who(event: dict) -> str:
    return f"{event.get('role', 'chief')} {event.get('index', 0)}"


def _short(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


class RunController(QObject):
    """Owns the `Supervisor` of the run on screen and feeds the views.

    `plot` is a `LossPlot`, or a `PendingPlot` that records for one until the window has
    created it (the window then sets `plot` to the real one).

    Signals: `stateChanged(str state, str reason)`, `logLine(str)`, `checkpointsChanged()`,
    `statusChanged(str)`, `processesChanged(list of TrainingProcess)` (at most 4 times a second),
    `incidentsChanged(IncidentTracker)`.
    """

    stateChanged = Signal(str, str)
    logLine = Signal(str)
    checkpointsChanged = Signal()
    statusChanged = Signal(str)
    processesChanged = Signal(list)
    incidentsChanged = Signal(object)  # the IncidentTracker

    def __init__(self, plot, parent=None):
        super().__init__(parent)
        self.plot = plot
        self.supervisor: Supervisor | None = None
        self._tails: dict[Path, LogTail] = {}
        self._rate = collections.deque(maxlen=256)
        self._last_state = ("", "")
        self._last_step = 0
        self._stopped_at = 0
        self._attempt = 0
        self._settled_attempts: set[int] = set()
        self._processes_shown = 0.0
        self._lost: set[tuple[int, str]] = set()  # (attempt, 'worker 1') lost, not yet back
        self.incidents = IncidentTracker()
        self._hung_attempts: set[int] = set()  # attempts the watchdog ended
        self._segment = -1  # one plot curve per line of training (attempt, or after a rollback)
        self._segment_attempt = -1
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.tick)
        self.timer.start()

    # ------------------------------------------------------------ commands
    def open(self, run_dir: Path) -> Supervisor:
        """Show `run_dir` (existing or new); stops nothing that runs elsewhere."""
        if self.supervisor is not None and self.supervisor.live:
            raise RuntimeError("a run is live; kill or preempt it before opening another")
        if self.supervisor is not None:
            self.supervisor.shutdown()
        self.supervisor = Supervisor(run_dir)
        self.plot.clear_run()
        self._tails.clear()
        self._rate.clear()
        self._last_step = self._stopped_at = 0
        self._settled_attempts = set()
        self._lost = set()
        self.incidents = IncidentTracker()
        self._hung_attempts = set()
        self._segment = self._segment_attempt = -1
        self._replay(runs.read_history(run_dir))
        self.incidentsChanged.emit(self.incidents)
        self._last_state = ("", "")
        self.checkpointsChanged.emit()
        self.tick()
        return self.supervisor

    def _replay(self, history) -> None:
        """Show a run's history at once: the step events as whole arrays, the few other
        events one by one, in file order (a million steps open in about a second)."""
        self.supervisor.load_history(history)
        steps, start = history.steps, 0
        for line, event in history.others:
            end = int(np.searchsorted(steps.line, line))
            self._bulk_steps(steps, start, end)
            start = end
            self._dispatch(event)
            self.incidents.observe(event)
        self._bulk_steps(steps, start, len(steps))

    def _bulk_steps(self, points, start: int, end: int) -> None:
        """Plot points[start:end] (consecutive step events), a block per attempt."""
        if end <= start:
            return
        attempts = points.attempt[start:end]
        cuts = [start, *(start + np.flatnonzero(np.diff(attempts)) + 1).tolist(), end]
        for first, last in zip(cuts[:-1], cuts[1:], strict=False):
            attempt = int(points.attempt[first])
            if attempt != self._segment_attempt:
                self._segment, self._segment_attempt = self._segment + 1, attempt
            block = slice(first, last)
            self.plot.add_steps(self._segment, points.step[block], points.loss[block],
                                points.time[block])
            self.incidents.observe_steps(points.step[block], points.time[block])
            self._last_step, self._attempt = int(points.step[last - 1]), attempt

    def start(self, config, resume: bool = False, from_step: int | None = None) -> None:
        """Start or resume the open run; raises the supervisor's errors unchanged."""
        self.supervisor.start(config, resume=resume, from_step=from_step)
        self.tick()

    def kill(self, target: str = "chief") -> bool:
        return bool(self.supervisor) and self.supervisor.kill(target)

    def preempt(self, target: str = "chief") -> bool:
        return bool(self.supervisor) and self.supervisor.preempt(target)

    def checkpoint_now(self) -> bool:
        return bool(self.supervisor) and self.supervisor.checkpoint_now()

    def freeze(self, target: str = "chief") -> bool:
        return bool(self.supervisor) and self.supervisor.freeze(target)

    def thaw(self, target: str = "chief") -> bool:
        return bool(self.supervisor) and self.supervisor.thaw(target)

    def shutdown(self) -> None:
        """Kill everything of the run (the window is closing)."""
        self.timer.stop()
        if self.supervisor is not None:
            self.supervisor.shutdown()

    # ------------------------------------------------------------ the timer
    def tick(self) -> None:
        supervisor = self.supervisor
        if supervisor is None:
            return
        events = supervisor.poll()
        checkpoints_changed = incidents_changed = False
        for event in events:
            checkpoints_changed |= self._dispatch(event)
            incidents_changed |= self.incidents.observe(event)
        if incidents_changed:
            self.incidentsChanged.emit(self.incidents)
        for proc in supervisor.processes:
            tail = self._tails.setdefault(proc.log_path, LogTail(proc.log_path))
            for line in tail.read_lines():
                if line.strip():
                    self.logLine.emit(f"  {proc.role}:{proc.index} | {line}")
        if checkpoints_changed:
            self.checkpointsChanged.emit()
        self.plot.redraw()
        state = (self._state_name(), supervisor.reason)
        if state != self._last_state:
            self._last_state = state
            self.stateChanged.emit(*state)
        self.statusChanged.emit(self.status_text())
        now = time.monotonic()
        if now - self._processes_shown > 0.25 or checkpoints_changed:
            self._processes_shown = now
            self.processesChanged.emit(list(supervisor.processes))

    def _dispatch(self, event: dict) -> bool:
        kind = event["event"]
        attempt = event.get("attempt", 0)
        if self.plot.time_origin is None and "time" in event:
            self.plot.set_time_origin(event["time"])  # the run's first event: wall time 0
        if kind == "step":
            if attempt != self._segment_attempt:
                self._segment, self._segment_attempt = self._segment + 1, attempt
            self.plot.add_step(self._segment, event["step"], event.get("loss"),
                               time=event.get("time"))
            self._last_step, self._attempt = event["step"], attempt
            self._rate.append((event["time"], event["step"]))
            return False
        if kind in LOG_EVENTS:
            self.logLine.emit(describe(event))
        if kind == "validation":
            self.plot.add_validation(event["step"], event.get("val_loss"), time=event.get("time"))
        elif kind == "resumed":
            self.plot.add_marker("resume", event["from_step"], f"resume ← {event['from_step']}")
            self.plot.shade_redone(event["from_step"], self._stopped_at)
            self._rate.clear()
        elif kind == "rolled_back":
            self.plot.add_marker("failed", event["from_step"], f"NaN @ {event['from_step']}")
            self.plot.add_marker("resume", event["to_step"], f"rollback ← {event['to_step']}")
            self.plot.shade_redone(event["to_step"], event["from_step"])
            self._segment += 1  # the replayed steps are a new line of training
        elif kind == "hang_detected":
            self._hung_attempts.add(attempt)
        elif kind == "process_exited":
            self._mark_exit(event)
        elif kind == "training_started" and (attempt, _who(event)) in self._lost:
            self._lost.discard((attempt, _who(event)))
            self.plot.add_marker("resume", self._last_step, f"{_who(event)} back")
        return kind in ("checkpoint_saved", "forked", "process_exited", "resumed")

    def _mark_exit(self, event: dict) -> None:
        """Mark the exit that ended an attempt, and a lone process lost while the rest runs
        (a parameter-server worker); not the processes ended afterwards to clean up."""
        attempt = event.get("attempt", 0)
        decisive = is_decisive(event)
        if event.get("shutdown"):
            return  # ftgui itself was closed or interrupted
        if attempt in self._settled_attempts or not (decisive or event.get("signal")):
            return
        chief = is_chief(event)
        step = event.get("last_step", self._last_step) if chief else self._last_step
        who = "" if chief else f"{_who(event)} "
        if decisive:
            self._settled_attempts.add(attempt)
            self._stopped_at = step
        else:
            self._lost.add((attempt, _who(event)))
        if exitcodes.was_killed(event) and attempt in self._hung_attempts:
            self.plot.add_marker("failed", step, f"{who}hung @ {step}")
        elif exitcodes.was_killed(event):
            self.plot.add_marker("kill", step, f"{who}killed @ {step}")
        elif exitcodes.was_preempted(event):
            self.plot.add_marker("preempt", step, f"{who}preempted @ {step}")
        elif exitcodes.was_error(event):
            self.plot.add_marker("failed", step, f"{who}failed @ {step}")

    # ------------------------------------------------------------ derived state
    def _state_name(self) -> str:
        supervisor = self.supervisor
        if supervisor.state in ("idle", "finished", "killed", "failed", "preempted", "stopped",
                                "interrupted") and supervisor.is_busy_elsewhere():
            return "busy"
        return supervisor.state

    def steps_per_second(self) -> float:
        """Steps per second over the last ~2 s of step events (0 when idle)."""
        if len(self._rate) < 2:
            return 0.0
        newest_time, newest_step = self._rate[-1]
        if time.time() - newest_time > 2.0:
            return 0.0
        for when, step in self._rate:
            if newest_time - when <= 2.0 and when < newest_time:
                return (newest_step - step) / (newest_time - when)
        return 0.0

    def status_text(self) -> str:
        supervisor = self.supervisor
        config = supervisor.config
        total = f"/{config.steps}" if config else ""
        text = (f"{self._state_name()} · attempt {max(supervisor.attempt, 0)} · "
                f"step {self._last_step}{total} · {self.steps_per_second():.0f} steps/s")
        if supervisor.reason:
            text += f" · {supervisor.reason}"
        return text
