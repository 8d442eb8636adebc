"""A run as a timeline: the one model the plot, incident table, status line, event log and CLI show.

A `Timeline` is built by one method, `feed`, from a run's events in file order: live, the lists
`Supervisor.poll` returns; when a run is reopened, the `History` of `event_history.read_history`
(the step events as arrays, the others parsed, with their line numbers). Both are cut into the same
items — a block of consecutive step events, or one other event — and each kind of item is taken by
one function, so a run watched live and the same run reopened give the same segments, markers,
redone ranges, incidents and sentences.

What it holds:
- `segments`: one line of training each (a new one per attempt, and after a NaN rollback), with
  growing float64 arrays of global step, loss (NaN for a non-finite one) and Unix time;
- `validation`: validation loss per step;
- `markers`: where a line of training ended or began (`MARKER_KINDS`), with a short label;
- `redone`: step ranges computed a second time after a restart or rollback (a fork's steps are
  a new branch the user chose, not redone work);
- `forks`: each branch from an older checkpoint (`Fork`); a fork is no incident: the segments'
  steps after the fork step are flagged `abandoned_after` (kept, drawn dashed), the new line of
  training is `branch` + 1, and the checkpoints the fork archived are named;
- `incidents` and `totals()`: what each fault cost (`ftgui.core.record.incidents` holds those
rules);
- `notes`: one sentence per notable event (`ftgui.core.record.events.describe`), for logs;
- `state`, `reason`, `attempt`, `last_step`, `steps_per_second()`;
- `version`, +1 per `feed` that changed something; `feed` also returns what changed (`Changes`).

The step of a kill: the last step logged before the process died. A `fault_injected` written by
the supervisor carries the step the supervisor had read when the user pressed Kill, which lags
behind the trainer by up to one poll (plus whatever the window was busy with); the trainer's
step events before the exit in the file are what it really reached. Markers, incidents and
sentences all use that step.

A step of an attempt whose outcome is already known (the `step` the supervisor recovers from a
promoted just-in-time checkpoint, `from_checkpoint`, written after the attempt's exits) joins
that attempt's line of training but does not make the run `running` again; a step a line of
training already has is not added twice.
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass, field

import numpy as np

from ftgui.core.record import exitcodes, run_state
from ftgui.core.record.events import (
    describe,
    is_notable,
    restart_words,
    setting_label,
    short_value,
    waiting_reason,
    who,
)
from ftgui.core.record.incidents import Incident, IncidentTracker, Totals
from ftgui.core.timeline.series import GrowingSeries

MARKER_KINDS = ("crash", "preemption", "hang", "nan_rollback", "fork", "resume",
                "setting_changed", "worker_lost", "worker_back")
RATE_WINDOW_SECONDS = 2.0
INTERRUPTED_LABEL = "supervisor lost"  # the marker of an attempt that ended with no exit recorded

# events after which the checkpoint list on disk may differ
_CHECKPOINT_KINDS = {"checkpoint_saved", "forked", "process_exited", "resumed"}


def interrupted_words(attempt: int, step: int) -> str:
    """The event log's line for an attempt that ended with no exit recorded, found when the
    next attempt starts: its supervisor died with its processes, nothing said why."""
    return (f"{INTERRUPTED_LABEL} at step {step}: attempt {attempt} ended with no exit "
            "recorded (ftgui was killed, or its machine went down)")


@dataclass
class Segment:
    """One line of training: `index` in `Timeline.segments`, the `attempt` that logged it,
    the `branch` it belongs to (0, then +1 per fork) and `abandoned_after`: the global step
    after which its points belong to a branch a fork left (None: none of them)."""

    index: int
    attempt: int
    series: GrowingSeries = field(default_factory=GrowingSeries)
    branch: int = 0
    abandoned_after: int | None = None


@dataclass(frozen=True)
class Fork:
    """A branch from the checkpoint of global `step`, begun by `attempt` (the new `branch`);
    the newer checkpoints `archived_steps` were moved to `archive` (relative to the run)."""

    step: int
    attempt: int
    branch: int
    archived_steps: tuple[int, ...]
    archive: str


@dataclass(frozen=True)
class Marker:
    """A vertical mark at global `step`: `kind` is one of MARKER_KINDS, `label` a few words
    ("killed @ 606", "resume ← 500")."""

    kind: str
    step: int
    label: str
    attempt: int


@dataclass(frozen=True)
class RedoneRange:
    """Steps `start`+1 … `end` were computed a second time; `cause` is the marker kind that
    ended the first line of training (crash, preemption, hang, nan_rollback)."""

    start: int
    end: int
    cause: str


@dataclass(frozen=True)
class Note:
    """A notable event as one sentence (`text`), at Unix `time`."""

    time: float
    attempt: int
    kind: str
    text: str


@dataclass
class Changes:
    """What one `Timeline.feed` changed; false when nothing did. `notes` are the new ones."""

    steps: bool = False
    validation: bool = False
    markers: bool = False
    redone: bool = False
    incidents: bool = False
    checkpoints: bool = False
    state: bool = False
    forks: bool = False
    notes: list[Note] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.steps or self.validation or self.markers or self.redone
                    or self.incidents or self.checkpoints or self.state or self.forks
                    or self.notes)


@dataclass
class _Steps:
    """Consecutive step events as arrays: attempt and step (int64), loss, time and mono
    (float64), clock (object: str or None)."""

    attempt: np.ndarray
    step: np.ndarray
    loss: np.ndarray
    time: np.ndarray
    mono: np.ndarray
    clock: np.ndarray

    @classmethod
    def of(cls, events: list[dict]) -> _Steps:
        def number(value):
            return np.nan if value is None else value

        return cls(
            attempt=np.fromiter((e.get("attempt", 0) for e in events), np.int64, len(events)),
            step=np.fromiter((e["step"] for e in events), np.int64, len(events)),
            loss=np.fromiter((number(e.get("loss")) for e in events), np.float64, len(events)),
            time=np.fromiter((number(e.get("time")) for e in events), np.float64, len(events)),
            mono=np.fromiter((number(e.get("mono")) for e in events), np.float64, len(events)),
            clock=np.array([e.get("clock") for e in events] + [None], dtype=object)[:-1],
        )

    def part(self, start: int, end: int) -> _Steps:
        return _Steps(self.attempt[start:end], self.step[start:end], self.loss[start:end],
                      self.time[start:end], self.mono[start:end], self.clock[start:end])


def _after(part: _Steps, segment: Segment) -> _Steps:
    """The steps of `part` after the last step of `segment` (a line of training logs each step
    once: a step logged again within it, as the chief's own event arriving after the step a
    promoted just-in-time checkpoint recovered, is not a second point)."""
    if not segment.series.size or part.step[0] > segment.series.x()[-1]:
        return part
    kept = part.step > segment.series.x()[-1]
    return _Steps(part.attempt[kept], part.step[kept], part.loss[kept], part.time[kept],
                  part.mono[kept], part.clock[kept])


def _items(source):
    """The items of `source` in file order: `_Steps` blocks and other events (dicts).
    `source` is a list of events or a `event_history.History`."""
    if hasattr(source, "steps") and hasattr(source, "others"):
        steps, start = source.steps, 0
        block = _Steps(steps.attempt, steps.step, steps.loss, steps.time, steps.mono,
                       steps.clock)
        for line, event in source.others:
            end = int(np.searchsorted(steps.line, line))
            if end > start:
                yield block.part(start, end)
            start = end
            yield event
        if len(steps) > start:
            yield block.part(start, len(steps))
        return
    pending: list[dict] = []
    for event in source:
        if event.get("event") == "step":
            pending.append(event)
            continue
        if pending:
            yield _Steps.of(pending)
            pending = []
        yield event
    if pending:
        yield _Steps.of(pending)


class Timeline:
    """A run's timeline (see the module's docstring); `feed` is the only way in."""

    def __init__(self):
        self.segments: list[Segment] = []
        self.validation = GrowingSeries(64)
        self.markers: list[Marker] = []
        self.redone: list[RedoneRange] = []
        self.forks: list[Fork] = []
        self.branch = 0  # the branch new steps belong to
        self.notes: list[Note] = []
        self.state, self.reason = "idle", ""
        self.attempt = -1  # the newest attempt seen (-1: none yet)
        self.last_step = 0  # the global step the run stands at
        self._last_step_time = float("nan")  # Unix time of that step's event
        self.origin: float | None = None  # Unix time of the run's first event
        self.version = 0
        self.last_loss: float | None = None
        self._tracker = IncidentTracker()
        self._split = False  # the next step starts a new segment (after a rollback)
        self._settled: set[int] = set()  # attempts whose outcome is known
        self._hung: set[int] = set()  # attempts the watchdog ended
        self._frozen_marked: set[int] = set()  # attempts whose freeze is marked where it began
        self._lost: set[tuple[int, str]] = set()  # (attempt, 'worker 1') lost, not yet back
        self._forked: set[int] = set()  # attempts that began as a fork
        self._stopped_at = 0  # the step reached when the last attempt ended
        self._unredone: RedoneRange | None = None  # shaded at a resume, no step redone yet
        self._stop_cause = ""  # the marker kind of that end
        self._setup: tuple[int, dict] | None = None  # (attempt, strategy/replicas) last seen
        self._took_over: set[int] = set()  # pids of warm standbys given a task
        self.ready_standbys: set[int] = set()  # pids of standbys that have imported TensorFlow
        self.started: dict[int, dict] = {}  # attempt -> its chief's `process_started` event
        self.config: dict = {}  # the run's configuration as `run_started` recorded it
        self._finished: set[int] = set()  # attempts that wrote `run_finished`
        self._began: set[int] = set()  # attempts that resumed, rolled back or logged a step
        self.held: tuple[int, str] | None = None  # (step, why) while training is held
        # what a due restart waits for, in words, until its processes start (`recovery_waiting`)
        self.restart_waits_for: str | None = None
        self.saved = False  # whether a checkpoint was saved (`checkpoint_saved`, `preempted`)

    # ------------------------------------------------------------ reading
    @property
    def incidents(self) -> list[Incident]:
        return self._tracker.incidents

    def totals(self) -> Totals:
        """Incidents, steps and seconds lost, wall time and goodput over the run."""
        return self._tracker.totals()

    def steps_per_second(self, now: float | None = None) -> float:
        """Steps per second over the last RATE_WINDOW_SECONDS of the current line of training;
        0 when its newest step is older than that (at Unix time `now`, default: the clock)."""
        if not self.segments or self.segments[-1].series.size < 2:
            return 0.0
        series = self.segments[-1].series
        times, steps = series.t(), series.x()
        newest = times[-1]
        now = _time.time() if now is None else now
        if not np.isfinite(newest) or now - newest > RATE_WINDOW_SECONDS:
            return 0.0
        first = int(np.searchsorted(times, newest - RATE_WINDOW_SECONDS, side="left"))
        if first >= len(times) or not times[first] < newest:
            return 0.0
        return float((steps[-1] - steps[first]) / (newest - times[first]))

    # ------------------------------------------------------------ the one way in
    def feed(self, source) -> Changes:
        """Take the next events of the run, in file order: a list of event dicts (live) or a
        `event_history.History` (a whole run, read the fast way). Returns what changed."""
        changes = Changes()
        for item in _items(source):
            if isinstance(item, _Steps):
                self._take_steps(item, changes)
            else:
                self._take_event(item, changes)
        if changes:
            self.version += 1
        return changes

    def _take_steps(self, block: _Steps, changes: Changes) -> None:
        attempts = block.attempt
        cuts = [0, *(np.flatnonzero(np.diff(attempts)) + 1).tolist(), len(attempts)]
        live = False  # a step of an attempt whose outcome is not known yet
        for start, end in zip(cuts[:-1], cuts[1:], strict=False):
            part = block.part(start, end)
            attempt = int(part.attempt[0])
            self._restarted_fresh(attempt, int(part.step[0]), changes)
            segment, clock = self._segment_for(attempt), part.clock[0]
            part = _after(part, segment)
            if not len(part.step):
                continue
            segment.series.extend(part.step, part.loss, part.time)
            self._unredone = None
            changes.incidents |= self._tracker.observe_steps(part.step, part.time, part.mono,
                                                             clock)
            self.last_step, self._last_step_time = int(part.step[-1]), float(part.time[-1])
            self.attempt = max(self.attempt, attempt)
            live |= attempt not in self._settled
            loss = float(part.loss[-1])
            self.last_loss = loss if np.isfinite(loss) else None
            changes.steps = True
        finite = block.time[np.isfinite(block.time)]
        if self.origin is None and len(finite):
            self.origin = float(finite[0])
        if live:  # not the step a just-in-time checkpoint recovers after its attempt ended
            self._set_state("running", "", changes)

    def _restarted_fresh(self, attempt: int, first: int, changes: Changes) -> None:
        """The first step of a restart that restored nothing (killed before the first
        checkpoint): it starts again from `first` - 1, and what was done before is redone."""
        if attempt in self._began or attempt <= 0:
            return
        self._began.add(attempt)
        start = first - 1
        if attempt in self._settled or attempt in self._forked or start >= self._stopped_at:
            return
        self._mark("resume", start, f"resume ← {start}", {"attempt": attempt}, changes)
        self._redone(start, self._stopped_at, self._stop_cause, changes)
        self._stopped_at = start

    def _segment_for(self, attempt: int) -> Segment:
        if self._split or not self.segments or self.segments[-1].attempt != attempt:
            self.segments.append(Segment(len(self.segments), attempt, branch=self.branch))
            self._split = False
        return self.segments[-1]

    def _take_event(self, event: dict, changes: Changes) -> None:
        kind = event.get("event", "")
        attempt = event.get("attempt", 0)
        when = event.get("time")
        if self.origin is None and isinstance(when, (int, float)):
            self.origin = float(when)
        self.attempt = max(self.attempt, attempt)
        # a finished attempt is settled too: a parameter-server cluster's workers and servers,
        # ended by ftgui once the chief finished, are no loss ("worker 0 lost (killed) at step
        # 60, after the run had finished" alarmed a new user)
        step = self.last_step
        settled = attempt in self._settled or attempt in self._finished
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(event, changes)
        changes.incidents |= self._tracker.observe(event)
        changes.checkpoints |= kind in _CHECKPOINT_KINDS
        if is_notable(kind):
            if kind == "standby_ready" and event.get("pid") in self._took_over:
                # given its task before it was ready: it trains as soon as its imports end
                event = {**event, "took_over": True}
            text = describe(event, step=step, settled=settled)
            if kind == "fault_injected" and attempt in self._finished:
                text += ": ignored, the run had finished"
            elif kind == "process_exited" and attempt in self._finished and not text.endswith(
                    f"finished at step {step}") and "ended by ftgui" not in text:
                text += ", after the run had finished"
            note = Note(when if isinstance(when, (int, float)) else 0.0, attempt, kind, text)
            self.notes.append(note)
            changes.notes.append(note)

    # ------------------------------------------------------------ rules, per event type
    def _on_validation(self, event: dict, changes: Changes) -> None:
        self.validation.append(event["step"], event.get("val_loss"), event.get("time"))
        changes.validation = True

    def _on_run_started(self, event: dict, changes: Changes) -> None:
        self.config = dict(event.get("config") or {})

    def _on_process_started(self, event: dict, changes: Changes) -> None:
        self.held = None  # a new attempt, or a worker coming back: no process holds now
        self.restart_waits_for = None
        attempt = event.get("attempt", 0)
        previous = max(self.started) if self.started else None
        if previous is not None and attempt > previous and previous not in self._settled \
                and self._tracker.ended_unrecorded(previous):  # (it sees this event after)
            self._interrupted(previous, changes)
        if run_state.is_chief(event) or attempt not in self.started:
            self.started[attempt] = event
        if event.get("standby"):
            self._took_over.add(event.get("pid"))
        self._set_state("running", "", changes)

    def _on_recovery_scheduled(self, event: dict, changes: Changes) -> None:
        delay = event.get("delay") or 0.0
        self.restart_waits_for = None
        self._set_state("recovering", restart_words(event.get("restart"), delay),
                        changes)

    def _on_checkpoint_saved(self, event: dict, changes: Changes) -> None:
        self.saved = True

    def _on_preempted(self, event: dict, changes: Changes) -> None:
        self.saved = self.saved or bool(event.get("checkpoint"))

    def _on_recovery_cancelled(self, event: dict, changes: Changes) -> None:
        """ftgui stopped with a restart pending: the run is stopped, not restarting (a run
        reopened after Ctrl+C during the wait still said "waiting for the fork server's
        import", and its report "interrupted")."""
        self.restart_waits_for = None
        self._set_state("stopped", describe(event), changes)

    def _on_recovery_waiting(self, event: dict, changes: Changes) -> None:
        self.restart_waits_for = event.get("waits_for")
        self._set_state("recovering", waiting_reason(event.get("seconds")), changes)

    def _on_run_finished(self, event: dict, changes: Changes) -> None:
        self._finished.add(event.get("attempt", 0))
        self._set_state("finished", "reached the last step", changes)

    def _on_standby_ready(self, event: dict, changes: Changes) -> None:
        self.ready_standbys.add(event.get("pid"))

    def _on_forked(self, event: dict, changes: Changes) -> None:
        """A branch from an older checkpoint: flag what lies beyond it, start a new branch."""
        attempt, step = event.get("attempt", 0), int(event.get("from_step", 0))
        self._forked.add(attempt)
        if self._unredone in self.redone:  # its resume died before redoing any of them
            self.redone.remove(self._unredone)
            self._unredone, changes.redone = None, True
        for segment in self.segments:
            if segment.series.size and segment.series.x()[-1] > step and (
                segment.abandoned_after is None or segment.abandoned_after > step
            ):
                segment.abandoned_after = step
        self.branch += 1
        archived = tuple(int(s) for s in event.get("archived_steps") or ())
        self.forks.append(Fork(step, attempt, self.branch, archived, event.get("archive", "")))
        changes.forks = True

    def _on_setting_changed(self, event: dict, changes: Changes) -> None:
        name = setting_label(event.get("setting", "?"))
        label = f"{name} {short_value(event.get('old'))} → {short_value(event.get('new'))}"
        self._mark("setting_changed", event.get("step", self.last_step), label, event, changes)

    def _on_held(self, event: dict, changes: Changes) -> None:
        if (event.get("step", 0), event.get("why", "")) != self.held:
            self.held = (event.get("step", 0), event.get("why", ""))
            changes.state = True

    def _on_hold_released(self, event: dict, changes: Changes) -> None:
        if self.held is not None:
            self.held = None
            changes.state = True

    def _on_fault_injected(self, event: dict, changes: Changes) -> None:
        """A freeze is marked where it stops the run, when it is sent: the watchdog's kill
        comes seconds later, a thaw never. Its `step` is the one it stopped at (the
        supervisor reads it after the SIGSTOP; a planned one is written by the trainer)."""
        attempt = event.get("attempt", 0)
        if event.get("kind") != "hang" or attempt in self._finished | self._settled:
            return
        target = event.get("target") or "chief"
        prefix = "" if target == "chief" else f"{target.replace(':', ' ')} "
        step = int(event.get("step", self.last_step))
        self._frozen_marked.add(attempt)
        self._mark("hang", step, f"{prefix}frozen @ {step}", event, changes)

    def _on_hang_detected(self, event: dict, changes: Changes) -> None:
        self._hung.add(event.get("attempt", 0))

    def _on_resumed(self, event: dict, changes: Changes) -> None:
        start = event.get("from_step", 0)
        self._began.add(event.get("attempt", 0))
        fork = event.get("attempt", 0) in self._forked
        name = "fork" if fork else "resume"
        self._mark(name, start, f"{name} ← {start}", event, changes)
        if not fork:  # a fork is a new branch, not work done again
            self._redone(start, self._stopped_at, self._stop_cause, changes)
        self.last_step = start
        self._set_state("running", "", changes)

    def _on_rolled_back(self, event: dict, changes: Changes) -> None:
        failed, restored = event.get("from_step", 0), event.get("to_step", 0)
        self._mark("nan_rollback", failed, f"NaN @ {failed}", event, changes)
        self._mark("resume", restored, f"rollback ← {restored}", event, changes)
        self._redone(restored, failed, "nan_rollback", changes)
        self._split = True  # the replayed steps are a new line of training
        self.last_step = restored

    def _on_training_started(self, event: dict, changes: Changes) -> None:
        attempt, name = event.get("attempt", 0), who(event)
        if (attempt, name) in self._lost:
            self._lost.discard((attempt, name))
            self._mark("worker_back", self.last_step, f"{name} back", event, changes)
        if event.get("start_step") is None:
            return  # a parameter-server worker or ps: it runs no steps of its own
        setup = {"strategy": event.get("strategy"), "replicas": event.get("replicas")}
        if self._setup is not None and self._setup[0] != attempt:
            before = self._setup[1]
            changed = [f"{key} {before[key]} → {value}" for key, value in setup.items()
                       if before.get(key) != value]
            if changed:
                self._mark("setting_changed", event["start_step"], ", ".join(changed), event,
                           changes)
        self._setup = (attempt, setup)

    def _interrupted(self, attempt: int, changes: Changes) -> None:
        """`attempt` ended with no exit recorded (its supervisor died with its processes:
        SIGKILL, a power cut) and a new one starts: marked where it stopped, so that the
        steps a resume from an older checkpoint does again are shaded as redone, as the
        `interrupted` incident counts them (`ftgui.core.record.incidents`)."""
        self._settled.add(attempt)
        self._stopped_at, self._stop_cause = self.last_step, "crash"
        self._mark("crash", self.last_step, f"{INTERRUPTED_LABEL} @ {self.last_step}",
                   {"attempt": attempt}, changes)
        when = self._last_step_time if np.isfinite(self._last_step_time) else 0.0
        note = Note(when, attempt, "interrupted", interrupted_words(attempt, self.last_step))
        self.notes.append(note)
        changes.notes.append(note)

    def _on_process_exited(self, event: dict, changes: Changes) -> None:
        """Mark the exit that ended an attempt, and a lone process lost while the rest runs
        (a parameter-server worker); not the processes ended afterwards to clean up."""
        attempt = event.get("attempt", 0)
        decisive = run_state.is_decisive(event)
        if attempt in self._finished:
            return  # the run had reached its last step: whatever ended it then is no fault
        if decisive and attempt not in self._settled:
            state, reason = run_state.state_from_exit(event)
            reason = event.get("reason") or reason
            if not run_state.is_chief(event) and not event.get("shutdown"):
                reason = f"{who(event)} {reason}"
            self._set_state(state, reason, changes)
        if event.get("shutdown"):
            return  # ftgui itself was closed or interrupted
        if attempt in self._settled or not (decisive or event.get("signal")):
            return
        step, name = self.last_step, who(event)
        prefix = "" if run_state.is_chief(event) else f"{name} "
        if exitcodes.was_killed(event) and attempt in self._hung:
            kind, label = "hang", f"{prefix}hung @ {step}"
        elif exitcodes.was_killed(event):
            kind, label = "crash", f"{prefix}killed @ {step}"
        elif exitcodes.was_preempted(event):
            kind, label = "preemption", f"{prefix}preempted @ {step}"
        elif exitcodes.was_error(event):
            kind, label = "crash", f"{prefix}failed @ {step}"
        else:
            kind, label = "", ""
        if decisive:
            self._settled.add(attempt)
            self._stopped_at, self._stop_cause = step, kind
        else:
            self._lost.add((attempt, name))
            kind = "worker_lost" if kind else ""
        # a freeze the watchdog ended is marked where it froze: the exits it caused (a
        # cluster's other workers fail without their peer) are no faults of their own
        if kind and not (attempt in self._frozen_marked and attempt in self._hung):
            self._mark(kind, step, label, event, changes)

    # ------------------------------------------------------------ helpers
    def _mark(self, kind: str, step: int, label: str, event: dict, changes: Changes) -> None:
        self.markers.append(Marker(kind, int(step), label, event.get("attempt", 0)))
        changes.markers = True

    def _redone(self, start: int, end: int, cause: str, changes: Changes) -> None:
        if end > start:
            self._unredone = RedoneRange(int(start), int(end), cause)
            self.redone.append(self._unredone)
            changes.redone = True

    def _set_state(self, state: str, reason: str, changes: Changes) -> None:
        if (state, reason) != (self.state, self.reason):
            self.state, self.reason = state, reason
            changes.state = True
