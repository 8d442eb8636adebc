"""The story line: a run's current state and its last incident as one sentence, from its Timeline.

`story(timeline)` is what the window's `storyBanner` shows, e.g.
"Killed at step 606 → restored checkpoint 500 → resumed: 106 steps redone, 7.7 s lost ·
goodput 52 %". The figures are the incident table's (`ftgui.core.record.incidents`): the kill step
is the incident's step, the steps redone its `steps_lost`, the seconds its `time_lost`, the goodput
the run's `Totals`; `totals_line` and `ftgui.core.formatting`'s `seconds` and `percent` format
them for every view (banner, Incidents tab, report, comparison, `ftgui train`), so that all
print the same digits. A finished run with more than one incident ends on its totals
(`incidents_line`).

A restart is told phase by phase as its events arrive: restarting (`recovery_scheduled`),
waiting for the fork server's import (`recovery_waiting`), importing TensorFlow, waking the
warm standby or "the warm standby is still getting ready" (importing or building:
`process_started` of the new attempt, with `standby_warm`, or a `standby_ready` of its pid),
restored checkpoint N / step N from memory / step N just in time
(`resumed`), and "resumed" only once the first new step is in. The run is never called
"training" before a step of the current attempt has arrived. Other faults have their own words:
an in-process rollback ("rolling back in the process"), a freeze ("frozen: …" until a watchdog
or Thaw ends it; a thaw closes it), a parameter-server worker lost while TensorFlow's
coordinator trains on with the other workers (no step redone; the coordinator's stall is the
time lost) and a replacement joins (no restart: the word is kept for a restarted cluster); a
synchronous cluster is never said to train on. A run held at a step boundary (for the
presenter, the warm standby or a fault) says so, not "training".
"""

from __future__ import annotations

import math

from ftgui.core import formatting
from ftgui.core.formatting import counted, percent, seconds, steps
from ftgui.core.record.incidents import Incident, Totals
from ftgui.core.timeline.model import Timeline

ARROW = " → "
DOT = " · "
# What a fault did, as the sentence's first words (by `Incident.kind`).
FAULT_WORDS = {"kill": "killed", "preempt": "preempted", "hang": "froze", "nan": "NaN loss",
               "crash": "crashed", "kill-in-save": "killed inside a checkpoint save",
               "kill-in-snapshot": "killed inside a snapshot",
               "interrupted": "interrupted (its supervisor lost)"}
ENDED_STATES = {"killed": "stopped", "failed": "stopped", "preempted": "stopped",
                "stopped": "stopped by ftgui", "interrupted": "interrupted"}
FORKED_START = "building the model (TensorFlow already imported)"  # a forked cold start
NOTES_SEARCHED = 200  # a restart's notes are among the newest few dozen


def totals_line(totals: Totals) -> str:
    """The run's incident figures in words: `106 steps redone, 7.7 s lost · goodput 52 %`."""
    return (f"{steps(totals.steps_lost)} redone, {seconds(totals.time_lost)} lost"
            f"{DOT}goodput {percent(totals.goodput)}")


def story(timeline: Timeline, total_steps: int | None = None,
          watchdog_due_in: float | None = None) -> str:
    """One sentence: the run's state and its last incident (see the module's docstring).

    `total_steps` (the run's configured length) adds "of N" to the step while training;
    `watchdog_due_in` (seconds, the supervisor's) counts a freeze's watchdog down. At the
    end of a run with more than one incident (or one never recovered) the sentence gives the
    run's totals instead of the last incident: "Finished at step 1200 · 3 incidents: …".
    """
    incident = timeline.incidents[-1] if timeline.incidents else None
    if incident is not None and (not _settled(incident) or _stall_pending(timeline, incident)):
        return _capital(_incident_now(timeline, incident, watchdog_due_in))
    state = timeline.state
    if state == "finished":
        head = f"finished at step {timeline.last_step}"
    elif not has_stepped(timeline):
        head = _starting(timeline) if _started(timeline) else _idle(timeline)
    elif state in ENDED_STATES:
        head = f"{ENDED_STATES[state]} at step {timeline.last_step}"
    else:
        of = f" of {total_steps}" if total_steps else ""
        last = timeline.last_loss
        loss = "" if last is None else f"{DOT}loss {formatting.loss(last)}"
        if timeline.held is not None:  # not training: waiting at a step boundary
            return _capital(f"{held_words(*timeline.held, of)}{loss}")
        head = f"training: step {timeline.last_step}{of}{loss}"
    if incident is None:
        return _capital(head)
    if state == "finished" and (len(timeline.incidents) > 1 or not incident.closed):
        return _capital(f"{head}{DOT}{incidents_line(timeline.totals())}")
    return _capital(f"{head}{DOT}{_incident_done(timeline, incident)}"
                    if state == "finished" or not has_stepped(timeline)
                    else _incident_done(timeline, incident))


def held_words(step: int, why: str, of: str = "") -> str:
    """What the run does while its trainer holds after `step` for `why` (presenter, standby
    or a fault's target): `held for the presenter at step 650 of 1200 (press K)`."""
    if why == "presenter":
        return f"held for the presenter at step {step}{of} (press K)"
    if why == "standby":
        return f"held at step {step}{of} until the warm standby has imported TensorFlow"
    return f"held at step {step}{of} until the fault of {formatting.task(why)} is fired"


def incidents_line(totals: Totals) -> str:
    """`3 incidents: 95 steps redone, 3.6 s lost · goodput 34 %` (the run's totals)."""
    count = totals.incidents
    return f"{counted(count, 'incident')}: {totals_line(totals)}"


def incident_line(incident: Incident) -> str:
    """What one settled incident cost, without the run's goodput: `killed at step 606 →
    restored checkpoint 500 → resumed: 106 steps redone, 7.7 s lost`."""
    fault = _fault(incident)
    if incident.ended_by == "fork":
        return f"{fault}{ARROW}not recovered: the run was forked from an older checkpoint"
    if incident.ended_by == "finished":
        return f"{fault}{ARROW}nothing to recover: it was the run's last step"
    if incident.ended_by == "crash":  # the next incident redoes its steps
        return (f"{fault}{ARROW}{ENDED_BY_CRASH}: {seconds(incident.time_lost or 0.0)} lost "
                "until then")
    if incident.lone:
        return (f"{fault}{ARROW}the coordinator trained on with the other workers; a "
                f"replacement {_who(incident)} joined: 0 steps redone, "
                f"{seconds(incident.time_lost or 0.0)} lost")
    how = _how(incident)
    queued = (f"waiting for Slurm: {seconds(incident.queued_seconds)}{ARROW}"
              if incident.queued_seconds is not None else "")
    return (f"{fault}{ARROW}{queued}{how}{ARROW}{_resumed(incident)}"
            f"{steps(incident.steps_lost or 0)} redone, {seconds(incident.time_lost or 0.0)} lost")


ENDED_BY_CRASH = "its restart crashed before the first new step"


def _resumed(incident: Incident) -> str:
    """"resumed: " after a restart; nothing after an in-process rollback, which no process
    resumed (its demo says "no restart" beside it) and whose line a room read cut."""
    return "" if incident.in_process and not incident.thawed else "resumed: "


SOURCE_WORDS = {"memory": "memory", "just_in_time": "just in time", "disk": "disk",
                "none": "none"}


def detect_words(incident: Incident, unknown: str = "—") -> str:
    """An incident's time to detect, as the Incidents tab and the report say it: "0.05 s",
    "0.30 s in-process" (the trainer found it itself, a non-finite loss: its seconds too, so
    that detect and recovery add up to the time lost), `unknown` while not known."""
    if incident.detect_seconds is None:
        return unknown
    text = seconds(incident.detect_seconds, digits=2)
    return f"{text} in-process" if incident.detected_in_process else text


def source_words(incident: Incident) -> str:
    """What the recovery of `incident` restored from, as the Incidents tab's source column and
    the report say it: memory, just in time, disk, none (nothing saved yet: from step 0); ""
    when nothing was restored (a thawed freeze, a lone worker replaced, not yet recovered)."""
    if incident.lone or incident.thawed or incident.resumed_step is None:
        return ""
    return SOURCE_WORDS.get(incident.restore_source or "disk", incident.restore_source)


def frozen(timeline: Timeline) -> bool:
    """Whether the run's last incident is a freeze nothing has ended or thawed yet."""
    incident = timeline.incidents[-1] if timeline.incidents else None
    return incident is not None and incident.kind == "hang" and incident.detected is None


def stopping(timeline: Timeline) -> bool:
    """Whether the run's last incident is a preemption whose chief is still saving its step
    (sent, its exit not yet seen): the run is stopping, not training."""
    incident = timeline.incidents[-1] if timeline.incidents else None
    return incident is not None and incident.kind == "preempt" and incident.detected is None


# ------------------------------------------------------------------------------ incidents
def _settled(incident: Incident) -> bool:
    return incident.closed or bool(incident.ended_by)


def _stall_pending(timeline: Timeline, incident: Incident) -> bool:
    """A lone worker's replacement joined before the coordinator's next step: its stall, the
    incident's cost, is not measured yet (the banner said "0.0 s lost · goodput 100 %", then
    "0.6 s lost · goodput 97 %" a moment later: a presenter's finding)."""
    return (incident.lone and incident.stall_seconds is None and not incident.ended_by
            and timeline.state == "running")


def _fault(incident: Incident) -> str:
    """`killed at step 606`, `worker 1 killed at step 352`; a crash by a signal from outside
    ftgui names it, `crashed (SIGKILL) at step 30` (a `kill -9` or the OOM killer; the plot
    marks it "killed @ 30")."""
    words = FAULT_WORDS.get(incident.kind, incident.kind)
    if incident.kind == "crash" and incident.signal_name:
        words = f"{words} ({incident.signal_name})"
    who = "" if incident.target == "chief" else formatting.task(incident.target) + " "
    return f"{who}{words} at step {incident.step}"


def _how(incident: Incident) -> str:
    """How the run got back to training after `incident`: thawed, or what was restored."""
    return "thawed" if incident.thawed else _restored(incident)


def _restored(incident: Incident) -> str:
    # a NaN whose process a watchdog then ended was restored by a new process, not rolled back
    verb = "rolled back to" if incident.in_process else "restored"
    source = incident.restore_source
    if source == "memory":
        return f"{verb} step {incident.resumed_step} from memory"
    if source == "just_in_time":
        return f"{verb} step {incident.resumed_step} just in time"
    if source == "none":
        return f"restarted from step {incident.resumed_step} (no checkpoint yet)"
    return f"{verb} checkpoint {incident.resumed_step}"


def _incident_done(timeline: Timeline, incident: Incident) -> str:
    """A settled incident and what it cost, with the run's goodput; while the resumed run is
    still computing the lost steps again, how far it has got (the cost is not yet paid)."""
    if _redoing(timeline, incident):
        how = _how(incident)
        done = timeline.last_step - incident.resumed_step
        return (f"{_fault(incident)}{ARROW}{how}{ARROW}{_resumed(incident)}redoing steps "
                f"{incident.resumed_step + 1}–{incident.step} ({done} of "
                f"{incident.steps_lost} done)")
    return f"{incident_line(incident)}{DOT}goodput {percent(timeline.totals().goodput)}"


def _redoing(timeline: Timeline, incident: Incident) -> bool:
    """Whether the training after `incident` is still short of the step the fault hit."""
    return (timeline.state == "running" and incident.resumed_step is not None
            and not incident.lone and not incident.ended_by
            and incident.resumed_step < timeline.last_step < incident.step)


def _incident_now(timeline: Timeline, incident: Incident, due_in: float | None) -> str:
    """An incident still under way: the phase its recovery has reached."""
    fault = _fault(incident)
    if incident.detected is None:
        return f"{fault}{ARROW}{_undetected(timeline, incident, due_in)}"
    if incident.resumed_step is not None:
        if incident.lone:
            replacement = (f"a replacement {_who(incident)} joined; measuring the "
                           "coordinator's stall" if incident.closed
                           else f"starting a replacement {_who(incident)}")
            return (f"{fault}{ARROW}the coordinator trains on with the other workers; "
                    f"{replacement}")
        # a thawed process goes on where it stopped: its next step, not a new attempt's first
        awaited = "the next step" if incident.thawed else "the first step"
        return f"{fault}{ARROW}{_how(incident)}{ARROW}waiting for {awaited}"
    if (incident.kind == "nan" and incident.attempt == timeline.attempt
            and timeline.state not in ENDED_STATES):  # a failed rollback ended the process
        return f"{fault}{ARROW}rolling back in the process"
    started = timeline.started.get(timeline.attempt)
    if started is not None and timeline.attempt > incident.attempt:
        restore = started.get("restore")
        snapshot = started.get("snapshot")
        target = (f" to restore step {snapshot} from memory" if snapshot is not None else
                  f" to restore checkpoint {restore.rsplit('-', 1)[-1]}" if restore else "")
        return f"{fault}{ARROW}restarting: {_how_started(timeline, started)}{target}"
    if timeline.state == "recovering":
        waits = timeline.restart_waits_for
        return f"{fault}{ARROW}restarting" + (f": waiting for {waits}" if waits else "")
    if timeline.state in ENDED_STATES:
        # a preemption saves its step; after a crash the in-memory snapshot may be newer,
        # where the run takes them (a run whose config says snapshot_every 0 has none)
        snapshots = timeline.config.get("snapshot_every", 1) != 0
        if not snapshots and not timeline.saved and incident.kind != "nan":
            # it said "restores the newest checkpoint" of none (a new user's kill at step 3)
            return f"{fault}{ARROW}stopped: Resume starts again from step 0 (nothing saved)"
        saved = "checkpoint" if incident.kind == "preempt" or not snapshots else \
            "snapshot or checkpoint"
        # a NaN stops the run when there is none before it (or it came back each time)
        either = ", if any" if incident.kind == "nan" else ""
        return f"{fault}{ARROW}stopped: Resume restores the newest {saved}{either}"
    return f"{fault}{ARROW}recovering"


def frozen_words(timeline: Timeline, due_in: float | None = None) -> str:
    """What ends a freeze of this run: its watchdog after `watchdog_seconds` without
    progress — in `due_in` seconds (the supervisor's `watchdog_due_in`, rounded up to whole
    seconds) when known — else the user (Thaw or Kill)."""
    watchdog = timeline.config.get("watchdog_seconds") or 0
    if watchdog and due_in is not None:
        left = math.ceil(due_in)
        if left <= 0:
            return "the watchdog is ending it"
        # before an attempt's first step the watchdog allows its start-up grace
        grace = " (its start-up grace: no step yet)" if due_in > watchdog else ""
        return f"the watchdog ends it in {left} s{grace}"
    if watchdog:
        return f"the watchdog ends it after {watchdog:g} s without progress"
    return "no progress until Thaw or Kill"


def _undetected(timeline: Timeline, incident: Incident, due_in: float | None) -> str:
    """Between a fault and the moment it is known, in words true of that fault (`due_in`:
    `frozen_words`)."""
    if incident.kind == "nan":
        return ("stopped: no earlier state to roll back to" if timeline.state in ENDED_STATES
                else "rolling back in the process")
    if incident.kind == "hang":
        return frozen_words(timeline, due_in)  # "Froze at step N" says it froze
    if incident.kind == "preempt":
        return "saving its step and stopping"
    return "waiting for the process to end"


def _how_started(timeline: Timeline, started: dict) -> str:
    """How the restarted chief gets going: a cold start imports TensorFlow, or only builds
    its model when forked from the fork server; a warm standby has imported it already, or
    is still importing it (for `standby_age` seconds so far)."""
    if not started.get("standby"):
        return FORKED_START if started.get("forked") else "importing TensorFlow"
    warm = started.get("standby_warm")
    if started.get("pid") in timeline.ready_standbys:
        if warm is False:  # handed its task while importing; its imports have ended since
            return "the warm standby has imported TensorFlow"
        warm = True
    if warm is None:  # recorded before the supervisor said
        return "waking the warm standby"
    if warm:
        return "waking the warm standby (TensorFlow already imported)"
    age = started.get("standby_age")
    so_far = f" ({seconds(age)})" if isinstance(age, (int, float)) else ""
    return f"the warm standby is still getting ready{so_far}"


# ------------------------------------------------------------------------------ phases
def has_stepped(timeline: Timeline) -> bool:
    """Whether a step of the newest attempt has arrived (before it, the run is starting)."""
    return bool(timeline.segments) and timeline.segments[-1].attempt == timeline.attempt


def _started(timeline: Timeline) -> bool:
    note = _latest(timeline, "process_started", after=-1)
    return note is not None and note.attempt == timeline.attempt and timeline.state == "running"


def _starting(timeline: Timeline) -> str:
    """Before the first step of an attempt that no incident explains."""
    if _latest(timeline, "resumed", after=timeline.attempt - 1) is not None:
        return f"resumed from checkpoint {timeline.last_step}{ARROW}waiting for the first step"
    if _latest(timeline, "training_started", after=timeline.attempt - 1) is not None:
        return f"starting{ARROW}waiting for the first step"
    started = _latest(timeline, "process_started", after=timeline.attempt - 1)
    if started is not None and "warm standby" in started.text:
        event = timeline.started.get(timeline.attempt, {})
        return f"starting{ARROW}{_how_started(timeline, {'standby': True, **event})}"
    if started is not None and timeline.started.get(timeline.attempt, {}).get("forked"):
        return f"starting{ARROW}{FORKED_START}"
    return f"starting{ARROW}importing TensorFlow"


def _idle(timeline: Timeline) -> str:
    if timeline.state in ENDED_STATES:
        return f"{ENDED_STATES[timeline.state]} at step {timeline.last_step}"
    if timeline.last_step or timeline.segments:
        return f"stopped at step {timeline.last_step}"
    return "ready: press Start"


def _latest(timeline: Timeline, kind: str, after: int):
    """The newest of the last NOTES_SEARCHED notes of `kind` from an attempt later than
    `after`, or None."""
    for note in reversed(timeline.notes[-NOTES_SEARCHED:]):
        if note.kind == kind and note.attempt > after:
            return note
    return None


def _who(incident: Incident) -> str:
    return formatting.task(incident.target)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
