"""What each fault cost: incidents measured from a run's events, and totals over the run.

An incident starts at a `fault_injected` event, or at an unplanned abnormal exit. Per incident:
- detect: seconds from the fault to the moment it was known (the process' exit, the watchdog's
  `hang_detected`, or the trainer's `non_finite_loss`);
- recovery: seconds from detection to the first new step (restart, imports, restore); under
  Slurm the part of it the recovery's job waited as PENDING is its own phase (`queued_seconds`,
  from the job's `job_started` event);
- steps lost: global steps computed again (step reached at the fault − step resumed from);
- time lost: wall seconds from the fault to the first new step, plus the time the lost steps
  had taken the first time.
Over the run, goodput = (wall time − time lost) / wall time, within 0–1; `Totals` is the one
place these figures are summed, and every view (story line, Incidents tab, report, comparison,
`ftgui train`'s summary) prints it with `ftgui.core.timeline.story`'s formats. A fork (the user
resumes from an older checkpoint, `forked`) is a branch, not a recovery: it opens no incident and
lowers no goodput; an incident still open then ends there, unrecovered (`ended_by` "fork"), so the
steps the user chose to abandon are charged to nobody. A restart that crashes before its first
step (a second fault, or any kill, during the recovery) ends the incident too (`ended_by`
"crash"): it is charged the time from its fault to that crash (and, when the restart had
restored before it died, the steps it restored from and their time), and the next incident,
opened at the crash, the rest up to the first new step and the steps redone (before, the time up
to the second crash was charged to nobody, and the goodput came out too high).

Durations are differences on a run clock (`_RunClock`): seconds since the run's first event,
advanced between consecutive events by the difference of their `mono` stamps when both were taken
on the same clock (`events.CLOCK`), else of their wall times, and never backwards. A wall clock
set back (NTP, a resumed VM) in a run without `mono` stamps is clamped and the incidents open at
that moment say so (`clock_jumped`). Events are fed in file order
(`observe`, or `observe_steps` for a block of step events), so a live run and a reopened one give
the same numbers.

Special cases, each told as what happened:
- an attempt that ended with no exit recorded (its supervisor died with its processes) and that
  the user resumes: an `interrupted` incident from its last step, detected at the resume (the
  wait is no run time), recovered at the first new step, charged the restart and the steps it
  redid (a resume from an older checkpoint) — before, such a resume redid its steps unseen;
- a lone parameter-server worker lost while TensorFlow's coordinator carries on with the others
  (`lone`): nothing is redone; the time lost is the coordinator's stall, how much later than
  its steps' cadence the first step after the fault came (`_StepTimes.stall_after`: ~0.7 s
  while the coordinator gives up on the lost worker's closures); it ends when its replacement
  serves;
- a freeze (`hang`) thawed before any watchdog ended it: detected at the `thawed`, resumed at
  the step it froze at, recovered at the first new step;
- a restart with nothing to restore (killed before the first checkpoint, `training_started`
  from step 0 with no `resumed`): every step done before the fault is redone;
- a preemption with no restart scheduled (no `recovery_scheduled` after the exit: Ctrl+C to
  `ftgui train`, Preempt without automatic recovery) saved and stopped the run, and ftgui stopped
  while a restart was pending (`recovery_cancelled`): the wait for the user's resume is no run
  time, as a stopped run's; the incident costs what ran before and the restart;
- a fault command written after the attempt's `run_finished` (a Kill pressed on a finished run,
  in runs recorded before the supervisor refused it) is no incident.

`ftgui.core.timeline.model.Timeline` feeds one tracker; the run list feeds another
with the non-step events only (to count incidents).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ftgui.core.record import exitcodes
from ftgui.core.record.run_state import is_decisive


@dataclass
class Incident:
    """One fault and its recovery. Times are Unix seconds; None until known."""

    kind: str  # kill, preempt, nan, hang, crash (an exit nobody planned), or interrupted (no
    # exit recorded: the supervisor died with its processes; counted from the user's resume)
    target: str
    source: str  # user, schedule, timer, or "" for an unplanned crash
    attempt: int
    time: float
    step: int  # the last global step reached when the fault hit
    detected: float | None = None
    resumed_step: int | None = None
    recovered: float | None = None  # time of the first new step
    redo_seconds: float = 0.0  # how long the lost steps had taken the first time
    ended_by: str = ""  # "fork": the user branched from an older checkpoint instead; "crash":
    # its restart crashed before its first step (the next incident goes on from there);
    # "finished": the run reached its last step anyway (a preemption at that step)
    restore_source: str = ""  # what the resume restored: memory, just_in_time or disk
    lone: bool = False  # a parameter-server worker lost while the others trained on
    stall_seconds: float | None = None  # lone: how late the first step after the fault came
    signal_name: str = ""  # a crash no fault of ftgui's explains: the signal that ended it
    thawed: bool = False  # a freeze let go (Thaw) before anything ended it
    in_process: bool = False  # recovered by the trainer itself (a NaN rolled back), no restart
    queued_seconds: float | None = None  # the recovery's batch job waited this long for Slurm
    # the same moments on the run clock (seconds since the run's first event, never backwards)
    at: float = 0.0
    at_detected: float | None = None
    at_recovered: float | None = None
    clock_jumped: bool = False  # the wall clock went back while it was open: durations clamped
    at_ended: float | None = None  # run clock: the crash of its restart (`ended_by` "crash")

    @property
    def detect_seconds(self) -> float | None:
        return None if self.at_detected is None else self.at_detected - self.at

    @property
    def detected_in_process(self) -> bool:
        """True when the training process itself found the fault (a non-finite loss): there
        is no time to detect to speak of."""
        return self.kind == "nan"

    @property
    def recovery_seconds(self) -> float | None:
        if self.at_recovered is None or self.at_detected is None:
            return None
        return self.at_recovered - self.at_detected

    @property
    def steps_lost(self) -> int | None:
        if self.ended_by == "finished":
            return 0
        if self.ended_by == "fork":  # the user abandoned them: charged to nobody
            return 0 if self.resumed_step is not None else None
        return None if self.resumed_step is None else max(self.step - self.resumed_step, 0)

    @property
    def time_lost(self) -> float | None:
        if self.ended_by == "finished":
            return 0.0
        if self.ended_by == "crash" and self.at_ended is not None:
            # up to the crash, and the steps its resume had restored from before (0 when it
            # died before restoring: the next incident's resume redoes them)
            return self.at_ended - self.at + self.redo_seconds
        if self.at_recovered is None:
            return None
        if self.lone:  # the coordinator went on training with the remaining workers
            return self.stall_seconds or 0.0
        return self.at_recovered - self.at + self.redo_seconds

    @property
    def closed(self) -> bool:
        return self.recovered is not None


@dataclass
class Totals:
    """Over the whole run: `wall` seconds from its first `training_started` (or step, or a
    fault before either: the start-up, cold or forked, is no training) to the last event,
    less the time nothing ran (`_RunClock.skip_to`): a run that had finished, been stopped or
    lost its supervisor waiting for the user to resume or fork it, and every hold (from `held`
    to `hold_released` or the fault fired there: a demo's presenter talking, a planned fault
    waiting for its warm standby: neither is training); `lost` seconds and steps lost to
    incidents, and goodput = (wall − lost) / wall (1.0 with no incidents)."""

    incidents: int
    steps_lost: int
    time_lost: float
    wall: float

    @property
    def goodput(self) -> float:
        if self.wall <= 0:
            return 1.0
        return min(max(self.wall - self.time_lost, 0.0) / self.wall, 1.0)


class IncidentTracker:
    """Builds `incidents` from a run's events, fed in file order through `observe`."""

    def __init__(self):
        self.incidents: list[Incident] = []
        self.first_time: float | None = None
        self.last_time: float | None = None
        self._line = _StepTimes()  # step -> run-clock time, in the current line of training
        self._clock = _RunClock()
        self._step_clock: str | None = None  # the clock of the step events so far
        self._last_step = 0
        self._open: Incident | None = None
        self._stalled: Incident | None = None  # a lone worker's, its stall not yet measured
        self._fork_attempt = -1  # the attempt that began as a fork: its `resumed` branches
        self._finished: set[int] = set()  # attempts that wrote `run_finished`
        self._exited: set[int] = set()  # attempts with a decisive or shutdown exit recorded
        self._started: set[int] = set()  # attempts with an event seen
        self._fresh: tuple[int, int] | None = None  # (attempt, start step) with no `resumed`
        self._holding: set[tuple] = set()  # (attempt, role, index) held at a step boundary
        self._trained = False  # `training_started` or a step seen: the run's clock runs
        self._parked = False  # stopped with an incident open: preempted with no restart
        # scheduled, or ftgui stopped with one pending (the wait until a resume is no run time)

    def observe(self, event: dict) -> bool:
        """Take one event; True when an incident was opened or changed."""
        when = event.get("time", 0.0)
        self.first_time = when if self.first_time is None else self.first_time
        self.last_time = when
        mono = event.get("mono")
        mono = mono if isinstance(mono, (int, float)) and not isinstance(mono, bool) else None
        if event.get("event") == "step":
            return self.observe_steps([event["step"]], [when], [mono], event.get("clock"))
        attempt = event.get("attempt", 0)
        kind = event.get("event")
        interrupted = None
        if isinstance(attempt, int) and self._started and attempt > max(self._started) \
                and not self._holding:
            previous = max(self._started)
            lost = self.ended_unrecorded(previous)
            if self._open is None or self._parked or lost:
                # A new attempt with no fault to recover from, after a preemption that saved
                # and stopped, or after its supervisor died: the user resumed or forked a run
                # that had finished, been stopped, been preempted or lost its supervisor.
                # Nothing ran meanwhile.
                self._clock.skip_to(when, mono, event.get("clock"))
                self._parked = False
                # its start-up (importing, building) is no training either, as at the run's
                # first start: a fork's 5.3 s of start-up raised its goodput (a new user's)
                self._trained = False
                if lost:
                    interrupted = self._lost_supervisor(previous, when, kind)
        if isinstance(attempt, int) and attempt >= 0:
            self._started.add(attempt)
        if self._holding:  # paused on purpose (a demo's hold): no run time
            self._clock.skip_to(when, mono, event.get("clock"))
            if kind in HOLD_ENDS:
                self._holding.clear()
        elif self._starting:
            self._clock.skip_to(when, mono, event.get("clock"))
            self._trained = kind == "training_started"
        jumped = self._clock.advance(when, mono, event.get("clock"))
        if interrupted is not None and kind != "forked":  # a fork branches: no incident
            self._open_interrupted(interrupted, when)
        if kind == "held":
            self._holding.add((attempt, event.get("role", "chief"), event.get("index", 0)))
        handler = getattr(self, f"_on_{kind}", None)
        changed = bool(handler(event, when)) if handler else False
        if jumped and self._open is not None:
            self._open.clock_jumped = changed = True
        return changed

    def observe_steps(self, steps, times, monos=None, clock: str | None = None) -> bool:
        """Take a run of consecutive step events of one process at once (arrays of steps, Unix
        times and `mono` stamps, NaN where missing; their `clock`, None: that of the steps
        before): the same as observing each, without a Python call per step."""
        if not len(steps):
            return False
        self.first_time = float(times[0]) if self.first_time is None else self.first_time
        self.last_time = float(times[-1])
        clock = self._step_clock = clock if isinstance(clock, str) else self._step_clock
        if self._starting:  # a run that logged no `training_started`: its clock starts here
            self._clock.skip_to(float(times[0]), monos[0] if monos is not None else None, clock)
        self._trained = True
        self._holding.clear()  # a step: no process holds any more
        run_times, jumped = self._clock.advance_block(times, monos, clock)
        changed = self._measure_stall(float(run_times[0]))
        incident = self._open
        if jumped and incident is not None:
            incident.clock_jumped = changed = True
        if incident is not None and incident.resumed_step is None and self._fresh is not None \
                and incident.detected is not None and self._fresh[0] > incident.attempt:
            # a restart with nothing to restore: it trains again from its start step
            incident.restore_source = "none"
            self._resume(self._fresh[1], float(times[0]))
        if incident is not None and incident.resumed_step is not None:
            incident.recovered = float(times[0])
            incident.at_recovered = float(run_times[0])
            self._open, changed = None, True
            # the line goes on from here: its downtime is this incident's, not time a later
            # fault's lost steps had taken (a kill during the redo counted it twice)
            self._line.shift_to(float(run_times[0]))
        self._line.extend(steps, run_times)
        self._last_step = int(steps[-1])
        return changed

    def _measure_stall(self, first_new: float | None = None) -> bool:
        """The stall of a lone worker's incident, once a step after its fault is logged (in
        the line, or `first_new`: the run-clock time of the next step, before the line is
        shifted to it)."""
        incident = self._stalled
        if incident is None:
            return False
        stall = self._line.stall_after(incident.at, first_new)
        if stall is None:
            return False
        incident.stall_seconds, self._stalled = stall, None
        return True

    @property
    def _starting(self) -> bool:
        """Before the run's first `training_started` (or step) with no fault open: importing
        TensorFlow and building the strategy and the model, cold or forked, is no training
        time (a fault then starts the clock)."""
        return not self._trained and self._open is None

    def totals(self) -> Totals:
        closed = [i for i in self.incidents if i.closed or i.ended_by]  # a fork's: 0 s
        wall = self._clock.now
        return Totals(
            incidents=len(self.incidents),
            steps_lost=sum(i.steps_lost or 0 for i in closed),
            time_lost=sum(i.time_lost or 0.0 for i in closed),
            wall=wall,
        )

    def ended_unrecorded(self, attempt: int) -> bool:
        """Whether `attempt`, seen, wrote neither `run_finished` nor a decisive or shutdown
        `process_exited`: once a later attempt starts, it died with its supervisor."""
        return attempt in self._started and attempt not in self._finished | self._exited

    def _lost_supervisor(self, attempt: int, when: float, kind: str) -> int | None:
        """Attempt `attempt` died with its supervisor; the user resumes now (`when`, by an
        event of `kind`). A fault it had not yet answered (a preemption asked, its exit never
        recorded) is detected now, at the last step its process logged (SIGTERM then SIGKILL
        named the request's step 27, the trainer had saved 30); a recovery under way ends
        here, as a restart that crashed (`_end_by_crash`), unless the user forks instead (the
        `forked` handler ends it, charged to nobody). Returns `attempt` when an `interrupted`
        incident is to be opened (nothing else is open), else None."""
        incident = self._open
        if incident is not None and incident.detected is None:
            incident.step = max(incident.step, self._last_step)
            incident.detected, incident.at_detected = when, self._clock.now
            return None
        if kind == "forked":
            return None
        if incident is not None and incident.recovered is None and not incident.lone:
            self._end_by_crash(incident)
            self._open = None
        return attempt if self._open is None else None

    def _open_interrupted(self, attempt: int, when: float) -> None:
        """Attempt `attempt` ended with no exit recorded (`ftgui train` or the window killed
        with SIGKILL, a power cut: its processes died with their supervisor), and the user
        resumed it now (`when`): an incident of kind `interrupted` from its last step, detected
        at the resume (the wait before it is no run time, as a stopped run's). Before, nothing
        was counted: a resume from an older checkpoint redid its steps with 0 steps redone and
        goodput 100 % on every view."""
        self._open = Incident(kind="interrupted", target="chief", source="", attempt=attempt,
                              time=when, at=self._clock.now, step=self._last_step,
                              detected=when, at_detected=self._clock.now)
        self.incidents.append(self._open)

    # ------------------------------------------------------------ event handlers
    def _on_run_finished(self, event, when):
        self._finished.add(event.get("attempt", 0))
        incident = self._open
        if incident is None:
            return False
        if incident.resumed_step is not None:
            # resumed at the last step (killed after its final checkpoint): the restart had
            # no step left to take; it recovered when the run finished ("waiting for the
            # first step" stayed on the finished run's story line)
            incident.recovered, incident.at_recovered = when, self._clock.now
        elif event.get("attempt", 0) == incident.attempt:
            # the faulted attempt itself finished: a preemption at the last step is none
            incident.ended_by = "finished"
        else:
            return False
        self._open = None
        return True

    def _on_fault_injected(self, event, when):
        if event.get("attempt", 0) in self._finished:
            return False  # pressed after the run had finished: nothing was left to fault
        if self._open is not None and self._open.detected is None:
            return False  # a second signal to the same failing attempt is the same incident
        self._end_by_crash(self._open)  # a fault during a recovery: that recovery is over
        self._open = Incident(
            kind=event.get("kind", "kill"), target=event.get("target", "chief"),
            source=event.get("source", ""), attempt=event.get("attempt", 0), time=when,
            at=self._clock.now,
            step=max(event.get("step") or 0, self._last_step),
        )
        self.incidents.append(self._open)
        return True

    def _on_process_exited(self, event, when):
        if event.get("shutdown") or is_decisive(event):  # a lost worker replaced: not the end
            self._exited.add(event.get("attempt", 0))
        if event.get("attempt", 0) in self._finished:
            return False  # the run had already finished
        if event.get("shutdown"):  # ftgui was closed or interrupted
            return self._stopped_pending(event, when)
        abnormal = event.get("signal") is not None or event.get("exit_code") not in (0, None)
        decisive = is_decisive(event)
        if not abnormal:
            return False
        if not decisive and exitcodes.was_preempted(event):
            return False  # a worker of a preempted cluster saved and stopped: not a lost one
        if not decisive:
            return self._worker_lost(event, when)
        incident = self._open
        later = incident is not None and event.get("attempt", 0) > incident.attempt
        if incident is None or (later and incident.detected is not None):
            # nothing open, or a restart that failed again before it got going: the open
            # incident ends at this crash, which opens the next
            self._end_by_crash(incident)
            kind = "preempt" if exitcodes.was_preempted(event) else "crash"
            incident = self._open = Incident(
                kind=kind, target=_target(event), source="", attempt=event.get("attempt", 0),
                time=when, at=self._clock.now, step=self._last_step,
                signal_name=event.get("signal_name") or "" if kind == "crash" else "",
            )
            self.incidents.append(incident)
        if incident.detected is None:
            incident.detected, incident.at_detected = when, self._clock.now
        incident.step = max(incident.step, self._last_step)
        # saved and stopped: unless a restart is scheduled (`recovery_scheduled`), the wait
        # for the user's resume is a stopped run's, not the incident's
        self._parked = exitcodes.was_preempted(event)
        return True

    def _stopped_pending(self, event, when) -> bool:
        """A decisive process ended by ftgui closing (or interrupted) while a fault was pending
        (a second Ctrl+C while a preemption saved, ftgui closed during a restart): the fault
        is detected here if it was not yet, at the step its process last logged, and the wait
        until the user's resume is a stopped run's, not the incident's (as after one Ctrl+C)."""
        incident = self._open
        if incident is None or not is_decisive(event):
            return False
        if incident.detected is None:
            incident.detected, incident.at_detected = when, self._clock.now
        incident.step = max(incident.step, self._last_step)
        self._parked = True
        return True

    def _end_by_crash(self, incident: Incident | None) -> None:
        """`incident`, detected and not yet recovered, ends here: its restart crashed (or a
        new fault hit it) before the first new step. A lone worker's keeps its stall only."""
        if incident is not None and incident.detected is not None and \
                incident.recovered is None and not incident.lone:
            incident.ended_by, incident.at_ended = "crash", self._clock.now

    def _on_recovery_scheduled(self, event, when):
        self._parked = False  # automatic recovery: the delay and restart are the incident's
        return False

    def _on_recovery_cancelled(self, event, when):
        self._parked = self._open is not None  # ftgui stopped before the restart: as a stop
        return False

    def _worker_lost(self, event, when):
        incident = self._open
        if incident is None or incident.detected is not None:
            return False  # a process ended to tear the cluster down after the incident
        # A lone worker lost while the rest trains on (parameter-server): nothing is redone.
        incident.detected, incident.at_detected = when, self._clock.now
        incident.resumed_step = incident.step = self._last_step
        incident.recovered = incident.at_recovered = None
        incident.lone = True
        self._stalled = incident
        self._measure_stall()
        return True

    def _on_job_started(self, event, when):
        """A Slurm job of a recovery started (`job_started`, written by its batch step): the
        seconds it waited for Slurm (`pending_seconds`) are a phase of the incident."""
        incident = self._open
        pending = event.get("pending_seconds")
        if incident is None or incident.detected is None or not isinstance(
                pending, (int, float)) or event.get("attempt", 0) <= incident.attempt:
            return False
        incident.queued_seconds = (incident.queued_seconds or 0.0) + float(pending)
        return True

    def _on_training_started(self, event, when):
        incident = self._open
        start = event.get("start_step")
        if start is not None:
            self._fresh = (event.get("attempt", 0), int(start))
            if self._line.time_of(int(start)) is None:  # the start of the line (step 0)
                self._line.extend([int(start)], [self._clock.now])
        if incident is not None and incident.lone and incident.target == _target(event):
            # the lost worker's replacement serves again
            incident.recovered, incident.at_recovered = when, self._clock.now
            self._open = None
            return True
        return False

    def _on_hang_detected(self, event, when):
        if self._open is not None and self._open.detected is None:
            self._open.detected, self._open.at_detected = when, self._clock.now
            return True
        return False

    def _on_thawed(self, event, when):
        """A freeze let go before a watchdog ended it: nothing to redo; it ends at the first
        new step."""
        incident = self._open
        if incident is None or incident.kind != "hang" or incident.detected is not None:
            return False
        incident.detected, incident.at_detected = when, self._clock.now
        incident.resumed_step = incident.step = max(incident.step, self._last_step)
        incident.thawed = True
        return True

    def _on_non_finite_loss(self, event, when):
        if self._open is None:  # a divergence nobody injected
            self._open = Incident(kind="nan", target="chief", source="",
                                  attempt=event.get("attempt", 0), time=when,
                                  at=self._clock.now,
                                  step=event.get("step", self._last_step))
            self.incidents.append(self._open)
        if self._open.detected is None:
            self._open.detected, self._open.at_detected = when, self._clock.now
        self._open.step = max(self._open.step, event.get("step", 0))
        return True

    def _on_rolled_back(self, event, when):
        if self._open is not None:
            self._open.restore_source = event.get("source", "disk")
            self._open.in_process = True
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
        self._fresh = None
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
            incident.detected, incident.at_detected = when, self._clock.now
        start, end = self._time_of(step), self._time_of(incident.step)
        if end is not None:  # a step logged after the fault (the NaN one) is in `at_recovered - at`
            end = min(end, incident.at)
        # a resume from past the step of the fault (a just-in-time checkpoint of the step the
        # victim finished but never logged, its `step` recovered from the checkpoint) redoes
        # none; a second resume of the same incident (its first restart died after restoring)
        # finds the line cut at the first one's step: the time measured then stands
        if start is not None and end is not None:
            incident.redo_seconds = max(end - start, 0.0)
        elif incident.resumed_step is None:
            incident.redo_seconds = 0.0
        incident.resumed_step = step
        self._line.keep_up_to(step)
        self._last_step = step
        return True

    def _time_of(self, step: int) -> float | None:
        """When `step` was logged in the current line of training (None if never)."""
        return self._line.time_of(step)


# the events that end a hold: its release, or the fault fired at the held step (from here on
# the time is the incident's)
HOLD_ENDS = ("hold_released", "fault_injected", "process_exited")

JUMP_SECONDS = 1.0  # a wall clock going back by more is a jump, not two writers' order


class _RunClock:
    """Seconds since the run's first event (`now`), never going back: each event moves it on
    by the difference of its `mono` stamp and the previous event's when both are on the same
    `clock`, else by the difference of their wall times, clamped at 0."""

    def __init__(self):
        self.now = 0.0
        self._last: tuple[float, float, object] | None = None  # (time, mono, clock)

    def skip_to(self, when, mono, clock) -> None:
        """Count nothing from the last event to one stamped (`when`, `mono`, `clock`): the
        run had finished and nothing ran until the user resumed or forked it (that idle time
        is no wall time of the run, or goodput would rise with how long the user waited)."""
        if self._last is not None and when is not None and math.isfinite(when):
            self._last = (float(when), float("nan") if mono is None else float(mono),
                          clock if isinstance(clock, str) else None)

    def advance(self, when, mono, clock) -> bool:
        """Move on to an event stamped (`when`, `mono` or None, `clock`); True when the wall
        clock went back more than JUMP_SECONDS with no `mono` difference to measure by."""
        return self.advance_block([when], [mono], clock)[1]

    def advance_block(self, times, monos, clock) -> tuple[np.ndarray, bool]:
        """Move on through consecutive events of one writer (Unix `times`, `monos` stamps with
        None or NaN where missing, or None; their `clock`). Returns each event's run-clock time
        (float64 array) and whether a wall clock going back was clamped (`advance`)."""
        times = np.asarray(times, dtype=np.float64)
        clock = clock if isinstance(clock, str) else None
        if monos is None or clock is None:
            monos = np.full(len(times), np.nan)
        elif not isinstance(monos, np.ndarray):
            monos = np.array([np.nan if m is None else m for m in monos], dtype=np.float64)
        last_time, last_mono, last_clock = self._last or (times[0], monos[0], clock)
        wall = np.diff(times, prepend=last_time)
        mono = np.diff(monos, prepend=last_mono if clock == last_clock else np.nan)
        measured = np.where(np.isfinite(mono), mono, wall)
        measured = np.where(np.isfinite(measured), measured, 0.0)
        jumped = bool(np.any(~np.isfinite(mono) & (wall < -JUMP_SECONDS)))
        run_times = self.now + np.cumsum(np.maximum(measured, 0.0))
        self.now = float(run_times[-1])
        if np.isfinite(times[-1]):
            self._last = (float(times[-1]), float(monos[-1]), clock)
        return run_times, jumped


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

    def shift_to(self, time: float) -> None:
        """Move every time so that the newest is `time` (the line's first new step after a
        resume), keeping the differences between them."""
        if self.size:
            self._times[:self.size] += time - self._times[self.size - 1]

    def stall_after(self, time: float, next_time: float | None = None,
                    cadence_of: int = 20) -> float | None:
        """How much later than the cadence of the steps before `time` the first step after it
        came (the line's, else `next_time`): its time less (the last step's time at or before
        `time` plus the median interval between the last `cadence_of` + 1 steps before), at
        least 0; None before a step after `time` is known or without two steps before it."""
        times = self._times[:self.size]
        after = times[times > time]
        first = float(after[0]) if len(after) else next_time
        before = times[times <= time][-(cadence_of + 1):]
        if first is None or first <= time or len(before) < 2:
            return None
        expected = before[-1] + float(np.median(np.diff(before)))
        return max(first - expected, 0.0)

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
