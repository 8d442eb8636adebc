"""What each fault cost: incidents measured from a run's events, and totals over the run.

An incident starts at a `fault_injected` event, or at an unplanned abnormal exit. Per incident:
- detect: seconds from the fault to the moment it was known (the process' exit, the watchdog's
  `hang_detected`, or the trainer's `non_finite_loss`);
- recovery: seconds from detection to the first new step (restart, imports, restore);
- steps lost: global steps computed again (step reached at the fault − step resumed from);
- time lost: wall seconds from the fault to the first new step, plus the time the lost steps
  had taken the first time.
Over the run, goodput = (wall time − time lost) / wall time. A fork (the user resumes from an
older checkpoint, `forked`) is a branch, not a recovery: it opens no incident and lowers no
goodput; an incident still open then ends there, unrecovered (`ended_by` "fork"), so the steps
the user chose to abandon are charged to nobody. Events are fed in file order
(`observe`, or `observe_steps` for a block of step events), so a live run and a reopened one give
the same numbers. `ftgui.core.timeline.Timeline` feeds one tracker; the run list feeds another
with the non-step events only (to count incidents).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ftgui.core import exitcodes
from ftgui.core.run_state import is_decisive


@dataclass
class Incident:
    """One fault and its recovery. Times are Unix seconds; None until known."""

    kind: str  # kill, preempt, nan, hang, or crash (an exit nobody planned)
    target: str
    source: str  # user, schedule, timer, or "" for an unplanned crash
    attempt: int
    time: float
    step: int  # the last global step reached when the fault hit
    detected: float | None = None
    resumed_step: int | None = None
    recovered: float | None = None  # time of the first new step
    redo_seconds: float = 0.0  # how long the lost steps had taken the first time
    ended_by: str = ""  # "fork": the user branched from an older checkpoint instead
    restore_source: str = ""  # what the resume restored: memory (snapshot) or disk

    @property
    def detect_seconds(self) -> float | None:
        return None if self.detected is None else self.detected - self.time

    @property
    def recovery_seconds(self) -> float | None:
        if self.recovered is None or self.detected is None:
            return None
        return self.recovered - self.detected

    @property
    def steps_lost(self) -> int | None:
        return None if self.resumed_step is None else max(self.step - self.resumed_step, 0)

    @property
    def time_lost(self) -> float | None:
        if self.recovered is None:
            return None
        return self.recovered - self.time + self.redo_seconds

    @property
    def closed(self) -> bool:
        return self.recovered is not None


@dataclass
class Totals:
    """Over the whole run: `wall` seconds from the first to the last event, `lost` seconds and
    steps lost to incidents, and goodput = (wall − lost) / wall (1.0 with no incidents)."""

    incidents: int
    steps_lost: int
    time_lost: float
    wall: float

    @property
    def goodput(self) -> float:
        return 1.0 if self.wall <= 0 else max(self.wall - self.time_lost, 0.0) / self.wall


class IncidentTracker:
    """Builds `incidents` from a run's events, fed in file order through `observe`."""

    def __init__(self):
        self.incidents: list[Incident] = []
        self.first_time: float | None = None
        self.last_time: float | None = None
        self._line = _StepTimes()  # step -> time, in the current line of training
        self._last_step = 0
        self._open: Incident | None = None
        self._fork_attempt = -1  # the attempt that began as a fork: its `resumed` branches

    def observe(self, event: dict) -> bool:
        """Take one event; True when an incident was opened or changed."""
        when = event.get("time", 0.0)
        self.first_time = when if self.first_time is None else self.first_time
        self.last_time = when
        handler = getattr(self, f"_on_{event.get('event')}", None)
        return bool(handler(event, when)) if handler else False

    def observe_steps(self, steps, times) -> bool:
        """Take a run of consecutive step events at once (arrays of steps and Unix times):
        the same as observing each, without a Python call per step."""
        if not len(steps):
            return False
        self.first_time = float(times[0]) if self.first_time is None else self.first_time
        self.last_time = float(times[-1])
        changed = False
        incident = self._open
        if incident is not None and incident.resumed_step is not None:
            incident.recovered = float(times[0])
            self._open, changed = None, True
        self._line.extend(steps, times)
        self._last_step = int(steps[-1])
        return changed

    def totals(self) -> Totals:
        closed = [i for i in self.incidents if i.closed]
        wall = (self.last_time or 0.0) - (self.first_time or 0.0)
        return Totals(
            incidents=len(self.incidents),
            steps_lost=sum(i.steps_lost or 0 for i in closed),
            time_lost=sum(i.time_lost or 0.0 for i in closed),
            wall=wall,
        )

    # ------------------------------------------------------------ event handlers
    def _on_step(self, event, when):
        return self.observe_steps([event["step"]], [when])

    def _on_fault_injected(self, event, when):
        if self._open is not None and self._open.detected is None:
            return False  # a second signal to the same failing attempt is the same incident
        self._open = Incident(
            kind=event.get("kind", "kill"), target=event.get("target", "chief"),
            source=event.get("source", ""), attempt=event.get("attempt", 0), time=when,
            step=max(event.get("step") or 0, self._last_step),
        )
        self.incidents.append(self._open)
        return True

    def _on_process_exited(self, event, when):
        if event.get("shutdown"):
            return False  # ftgui was closed or interrupted: not a fault of the run
        abnormal = event.get("signal") is not None or event.get("exit_code") not in (0, None)
        decisive = is_decisive(event)
        if not abnormal:
            return False
        if not decisive:
            return self._worker_lost(event, when)
        incident = self._open
        later = incident is not None and event.get("attempt", 0) > incident.attempt
        if incident is None or (later and incident.detected is not None):
            # nothing open, or a restart that failed again before it got going
            kind = "preempt" if exitcodes.was_preempted(event) else "crash"
            incident = self._open = Incident(
                kind=kind, target=_target(event), source="", attempt=event.get("attempt", 0),
                time=when, step=self._last_step,
            )
            self.incidents.append(incident)
        if incident.detected is None:
            incident.detected = when
        incident.step = max(incident.step, self._last_step)
        return True

    def _worker_lost(self, event, when):
        incident = self._open
        if incident is None or incident.detected is not None:
            return False  # a process ended to tear the cluster down after the incident
        # A lone worker lost while the rest trains on (parameter-server): nothing is redone.
        incident.detected = when
        incident.resumed_step = incident.step = self._last_step
        incident.recovered = None
        return True

    def _on_training_started(self, event, when):
        incident = self._open
        if incident is not None and incident.detected is not None and (
            incident.resumed_step == incident.step and incident.target == _target(event)
            and incident.kind in ("kill", "hang")
        ):  # the lost worker is back
            incident.recovered = when
            self._open = None
            return True
        return False

    def _on_hang_detected(self, event, when):
        if self._open is not None and self._open.detected is None:
            self._open.detected = when
            return True
        return False

    def _on_non_finite_loss(self, event, when):
        if self._open is None:  # a divergence nobody injected
            self._open = Incident(kind="nan", target="chief", source="",
                                  attempt=event.get("attempt", 0), time=when,
                                  step=event.get("step", self._last_step))
            self.incidents.append(self._open)
        self._open.detected = self._open.detected or when
        self._open.step = max(self._open.step, event.get("step", 0))
        return True

    def _on_rolled_back(self, event, when):
        return self._resume(event.get("to_step", 0), when)

    def _on_forked(self, event, when):
        """A branch from an older checkpoint: the open incident ends unrecovered."""
        self._fork_attempt = event.get("attempt", 0)
        incident, self._open = self._open, None
        if incident is None:
            return False
        incident.ended_by = "fork"
        return True

    def _on_resumed(self, event, when):
        step = event.get("from_step", 0)
        if event.get("attempt", 0) == self._fork_attempt:  # a new branch: nothing to recover
            self._line.keep_up_to(step)
            self._last_step = step
            return False
        if self._open is not None:
            self._open.restore_source = event.get("source", "disk")
        return self._resume(step, when)

    def _resume(self, step: int, when: float) -> bool:
        incident = self._open
        if incident is None:
            return False
        if incident.detected is None:
            incident.detected = when
        incident.resumed_step = step
        start, end = self._time_of(step), self._time_of(incident.step)
        incident.redo_seconds = (end - start) if start is not None and end is not None else 0.0
        self._line.keep_up_to(step)
        self._last_step = step
        return True

    def _time_of(self, step: int) -> float | None:
        """When `step` was logged in the current line of training (None if never)."""
        return self._line.time_of(step)


class _StepTimes:
    """(step, Unix time) of the steps logged, in order, in int64/float64 buffers that double
    when full: one `extend` per block of steps, whatever its length."""

    def __init__(self, capacity: int = 1024):
        self._steps = np.empty(capacity, dtype=np.int64)
        self._times = np.empty(capacity, dtype=np.float64)
        self.size = 0

    def extend(self, steps, times) -> None:
        end = self.size + len(steps)
        if end > len(self._steps):
            capacity = max(2 * len(self._steps), end)
            self._steps = np.resize(self._steps, capacity)
            self._times = np.resize(self._times, capacity)
        self._steps[self.size:end] = steps
        self._times[self.size:end] = times
        self.size = end

    def keep_up_to(self, step: int) -> None:
        """Forget the steps after `step` (a restart computes them again)."""
        kept = np.flatnonzero(self._steps[:self.size] <= step)
        count = len(kept)
        self._steps[:count] = self._steps[kept]
        self._times[:count] = self._times[kept]
        self.size = count

    def time_of(self, step: int) -> float | None:
        """The time `step` was last logged, or None."""
        hits = np.flatnonzero(self._steps[:self.size] == step)
        return float(self._times[hits[-1]]) if len(hits) else None


def _target(event: dict) -> str:
    role = event.get("role", "chief")
    return "chief" if role == "chief" else f"{role}:{event.get('index', 0)}"


def from_events(events: list[dict]) -> IncidentTracker:
    """An `IncidentTracker` that has observed all of `events`."""
    tracker = IncidentTracker()
    for event in events:
        tracker.observe(event)
    return tracker
