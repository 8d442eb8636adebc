"""The story line: a run's current state and its last incident as one sentence, from its Timeline.

`story(timeline)` is what the window's `storyBanner` shows, e.g.
"Killed at step 606 → restored checkpoint 500 → resumed: 106 steps redone, 7.7 s lost ·
goodput 52 %". The figures are the incident table's (`ftgui.core.incidents`): the kill step is
the incident's step, the steps redone its `steps_lost`, the seconds its `time_lost`, the goodput
the run's `Totals`; `seconds`, `percent` and `totals_line` format them for both views.

A restart is told phase by phase as its events arrive: restarting (`recovery_scheduled`),
importing TensorFlow or waking the warm standby (`process_started` of the new attempt), restored
checkpoint N (`resumed`), and "resumed" only once the first new step is in. The run is never
called "training" before a step of the current attempt has arrived.
"""

from __future__ import annotations

import re

from ftgui.core.incidents import Incident, Totals
from ftgui.core.timeline import Timeline

ARROW = " → "
DOT = " · "
# What a fault did, as the sentence's first words (by `Incident.kind`).
FAULT_WORDS = {"kill": "killed", "preempt": "preempted", "hang": "froze", "nan": "NaN loss",
               "crash": "crashed"}
ENDED_STATES = {"killed": "stopped", "failed": "stopped", "preempted": "stopped",
                "stopped": "stopped by ftgui", "interrupted": "interrupted"}
# `describe` of a process_started event names the checkpoint it restores ("restoring ckpt-500")
_RESTORING = re.compile(r"restoring ckpt-(\d+)")
NOTES_SEARCHED = 200  # a restart's notes are among the newest few dozen


def seconds(value: float) -> str:
    """Seconds as the story and the incident totals write them: `7.7 s`."""
    return f"{value:.1f} s"


def percent(fraction: float) -> str:
    """A fraction 0–1 as a whole percentage: `52 %`."""
    return f"{100 * fraction:.0f} %"


def totals_line(totals: Totals) -> str:
    """The run's incident figures in words: `106 steps redone, 7.7 s lost · goodput 52 %`."""
    return (f"{_steps(totals.steps_lost)} redone, {seconds(totals.time_lost)} lost"
            f"{DOT}goodput {percent(totals.goodput)}")


def story(timeline: Timeline, total_steps: int | None = None) -> str:
    """One sentence: the run's state and its last incident (see the module's docstring).

    `total_steps` (the run's configured length) adds "of N" to the step while training.
    """
    incident = timeline.incidents[-1] if timeline.incidents else None
    if incident is not None and not incident.closed:
        return _capital(_incident_now(timeline, incident))
    state = timeline.state
    if state == "finished":
        head = f"finished at step {timeline.last_step}"
    elif not has_stepped(timeline):
        head = _starting(timeline) if _started(timeline) else _idle(timeline)
    elif state in ENDED_STATES:
        head = f"{ENDED_STATES[state]} at step {timeline.last_step}"
    else:
        of = f" of {total_steps}" if total_steps else ""
        loss = "" if timeline.last_loss is None else f"{DOT}loss {timeline.last_loss:.4f}"
        head = f"training: step {timeline.last_step}{of}{loss}"
    if incident is None:
        return _capital(head)
    return _capital(f"{head}{DOT}{_incident_done(timeline, incident)}"
                    if state == "finished" or not has_stepped(timeline)
                    else _incident_done(timeline, incident))


# ------------------------------------------------------------------------------ incidents
def _fault(incident: Incident) -> str:
    """`killed at step 606`, `worker 1 killed at step 352`."""
    words = FAULT_WORDS.get(incident.kind, incident.kind)
    who = "" if incident.target == "chief" else incident.target.replace(":", " ") + " "
    return f"{who}{words} at step {incident.step}"


def _restored(incident: Incident) -> str:
    verb = "rolled back to" if incident.kind == "nan" else "restored"
    if incident.restore_source == "memory":
        return f"{verb} step {incident.resumed_step} from memory"
    return f"{verb} checkpoint {incident.resumed_step}"


def _incident_done(timeline: Timeline, incident: Incident) -> str:
    """A recovered incident and what it cost, with the run's goodput."""
    if incident.resumed_step == incident.step and incident.target != "chief":
        cost = f"back after {seconds(incident.time_lost or 0.0)}"  # a lone worker restarted
        return f"{_fault(incident)}{ARROW}{cost}{DOT}goodput {percent(timeline.totals().goodput)}"
    cost = (f"resumed: {_steps(incident.steps_lost or 0)} redone, "
            f"{seconds(incident.time_lost or 0.0)} lost")
    return (f"{_fault(incident)}{ARROW}{_restored(incident)}{ARROW}{cost}"
            f"{DOT}goodput {percent(timeline.totals().goodput)}")


def _incident_now(timeline: Timeline, incident: Incident) -> str:
    """An incident still under way: the phase its recovery has reached."""
    fault = _fault(incident)
    if incident.detected is None:
        return f"{fault}{ARROW}waiting for the process to end"
    if incident.resumed_step is not None:
        if incident.resumed_step == incident.step and incident.target != "chief":
            return f"{fault}{ARROW}the others train on; restarting {_who(incident)}"
        return f"{fault}{ARROW}{_restored(incident)}{ARROW}waiting for the first step"
    started = _latest(timeline, "process_started", after=incident.attempt)
    if started is not None:
        match = _RESTORING.search(started.text)
        target = f" to restore checkpoint {match.group(1)}" if match else ""
        how = ("waking the warm standby" if "warm standby" in started.text
               else "importing TensorFlow")
        return f"{fault}{ARROW}restarting: {how}{target}"
    if timeline.state == "recovering":
        return f"{fault}{ARROW}restarting"
    if timeline.state in ENDED_STATES:
        # a preemption saves its step; after a crash the in-memory snapshot may be newer
        saved = "checkpoint" if incident.kind == "preempt" else "snapshot or checkpoint"
        return f"{fault}{ARROW}stopped: Resume restores the newest {saved}"
    return f"{fault}{ARROW}recovering"


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
        return f"starting{ARROW}waking the warm standby"
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
    return incident.target.replace(":", " ")


def _steps(count: int) -> str:
    return f"{count} step{'' if count == 1 else 's'}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
