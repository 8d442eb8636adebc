"""The run's timeline, from events alone (no display, no TensorFlow): markers, redone ranges,
incidents and sentences; and the same timeline whether a run is watched live or reopened."""

from __future__ import annotations

import numpy as np
import pytest

from ftgui.core.record import event_history, events
from ftgui.core.record.events import EventWriter
from ftgui.core.timeline.model import Timeline

T0 = 1_700_000_000.0


class Clock:
    """Event times half a second apart (exact in binary, so sums compare exactly)."""

    def __init__(self):
        self.now = T0

    def __call__(self) -> float:
        self.now += 0.5
        return self.now


def write_story(run_dir) -> None:
    """A run with a NaN rollback, a crash and its automatic recovery, a preemption and a resume
    on more replicas, another crash, and a fork from an older checkpoint."""
    tick = Clock()

    def steps(writer, first, last, nan_at=None):
        for step in range(first, last + 1):
            loss = None if step == nan_at else 1.0 / step
            writer.emit("step", time=tick(), step=step, loss=loss, epoch=0)
            if step % 10 == 0 and step != nan_at:
                writer.emit("validation", time=tick(), step=step, val_loss=2.0 / step,
                            val_accuracy=0.5)
                writer.emit("checkpoint_saved", time=tick(), step=step,
                            path=f"checkpoints/ckpt-{step}", size=400_000)

    def started(writer, attempt, start, replicas, restore=None):
        writer.emit("process_started", time=tick(), role="chief", index=0, pid=100 + attempt,
                    chief=True, restore=restore)
        if restore:
            writer.emit("resumed", time=tick(), from_step=start, checkpoint=restore)
        writer.emit("training_started", time=tick(), role="chief", index=0, start_step=start,
                    strategy="mirrored", replicas=replicas)

    def exited(writer, **how):
        writer.emit("process_exited", time=tick(), role="chief", index=0, chief=True,
                    decisive=True, shutdown=False, **how)

    with EventWriter(run_dir, 0) as w:
        w.emit("run_started", time=tick(), config={"strategy": "mirrored", "steps": 100})
        started(w, 0, 0, 2)
        steps(w, 1, 24)
        w.emit("fault_injected", time=tick(), kind="nan", target="chief", step=25,
               source="schedule")
        steps(w, 25, 25, nan_at=25)
        w.emit("non_finite_loss", time=tick(), step=25)
        w.emit("rolled_back", time=tick(), from_step=25, to_step=20,
               checkpoint="checkpoints/ckpt-20")
        steps(w, 21, 45)
        # the supervisor had read up to step 41 when Kill was pressed; the trainer was at 45
        w.emit("fault_injected", time=tick(), kind="kill", target="chief", step=41,
               source="user")
        exited(w, last_step=45, signal=9, signal_name="SIGKILL", reason="ended by SIGKILL")
        w.emit("recovery_scheduled", time=tick(), delay=0.5, restart=1)
    with EventWriter(run_dir, 1) as w:
        started(w, 1, 40, 2, restore="checkpoints/ckpt-40")
        steps(w, 41, 68)
        w.emit("fault_injected", time=tick(), kind="preempt", target="chief", step=68,
               source="user")
        steps(w, 69, 70)
        w.emit("preempted", time=tick(), step=70, checkpoint="checkpoints/ckpt-70")
        exited(w, last_step=70, exit_code=42)
    with EventWriter(run_dir, 2) as w:
        started(w, 2, 70, 4, restore="checkpoints/ckpt-70")
        steps(w, 71, 95)
        w.emit("fault_injected", time=tick(), kind="kill", target="chief", step=93,
               source="user")
        exited(w, last_step=95, signal=9, signal_name="SIGKILL")
    with EventWriter(run_dir, 3) as w:
        w.emit("forked", time=tick(), from_step=80, archived_steps=[90],
               archive="history/fork-3/checkpoints")
        started(w, 3, 80, 4, restore="checkpoints/ckpt-80")
        steps(w, 81, 100)
        w.emit("run_finished", time=tick(), step=100, loss=0.01)
        exited(w, last_step=100, exit_code=0)


def watched_live(run_dir) -> Timeline:
    """The timeline as the window builds it while the run is written: a few events at a time."""
    timeline = Timeline()
    reader = events.EventReader(run_dir)
    while batch := reader.read_new(max_bytes=700):  # torn lines held back, as live
        timeline.feed(batch)
    return timeline


def reopened(run_dir) -> Timeline:
    timeline = Timeline()
    timeline.feed(event_history.read_history(run_dir))
    return timeline


def shape(timeline: Timeline) -> dict:
    """Everything a view shows, in plain values (arrays as lists, NaN as None)."""
    def plain(array):
        return [None if np.isnan(v) else float(v) for v in array]

    return {
        "segments": [(s.attempt, plain(s.series.x()), plain(s.series.y()), plain(s.series.t()))
                     for s in timeline.segments],
        "validation": (plain(timeline.validation.x()), plain(timeline.validation.y())),
        "markers": timeline.markers,
        "redone": timeline.redone,
        "incidents": timeline.incidents,
        "totals": timeline.totals(),
        "notes": timeline.notes,
        "now": (timeline.state, timeline.reason, timeline.attempt, timeline.last_step,
                timeline.origin, timeline.last_loss),
    }


@pytest.fixture
def story(tmp_path):
    run_dir = tmp_path / "run"
    write_story(run_dir)
    return run_dir


def test_a_run_watched_live_and_reopened_gives_the_same_timeline(story):
    live, again = watched_live(story), reopened(story)
    assert len(live.segments) == 5
    assert shape(live) == shape(again)


def test_the_story_has_its_markers_and_redone_ranges(story):
    timeline = reopened(story)
    assert [(m.kind, m.step, m.label) for m in timeline.markers] == [
        ("nan_rollback", 25, "NaN @ 25"), ("resume", 20, "rollback ← 20"),
        ("crash", 45, "killed @ 45"), ("resume", 40, "resume ← 40"),
        ("preemption", 70, "preempted @ 70"), ("resume", 70, "resume ← 70"),
        ("setting_changed", 70, "replicas 2 → 4"),
        ("crash", 95, "killed @ 95"), ("fork", 80, "fork ← 80"),
    ]
    # a fork is a branch, not redone work (issue 24: the report counted it as redone)
    assert [(r.start, r.end, r.cause) for r in timeline.redone] == [
        (20, 25, "nan_rollback"), (40, 45, "crash"),
    ]
    assert [(s.attempt, int(s.series.x()[0]), int(s.series.x()[-1]))
            for s in timeline.segments] == [(0, 1, 25), (0, 21, 45), (1, 41, 70), (2, 71, 95),
                                             (3, 81, 100)]
    assert np.isnan(timeline.segments[0].series.y()[-1])  # the NaN step is a gap
    assert (timeline.state, timeline.attempt, timeline.last_step) == ("finished", 3, 100)


def test_the_story_costs_what_its_incidents_say(story):
    timeline = reopened(story)
    assert [(i.kind, i.source, i.step, i.resumed_step, i.steps_lost)
            for i in timeline.incidents] == [
        ("nan", "schedule", 25, 20, 5), ("kill", "user", 45, 40, 5),
        ("preempt", "user", 70, 70, 0), ("kill", "user", 95, None, None),
    ]
    # the last kill was followed by a fork, not a recovery: it ends there, charged nothing
    assert [i.ended_by for i in timeline.incidents] == ["", "", "", "fork"]
    nan, kill = timeline.incidents[:2]
    # fault, step 25 (gap), non_finite_loss: 1.0 s to detect; rollback, first new step: 1.0 s
    assert (nan.detect_seconds, nan.recovery_seconds) == (1.0, 1.0)
    # fault .. exit: 0.5 s; exit, recovery_scheduled, process_started, resumed,
    # training_started, first step: 2.5 s; step 40 to 45 had taken 3.5 s (with the
    # validation and checkpoint after step 40)
    assert (kill.detect_seconds, kill.recovery_seconds, kill.redo_seconds) == (0.5, 2.5, 3.5)
    assert kill.time_lost == 0.5 + 2.5 + 3.5
    totals = timeline.totals()
    assert (totals.incidents, totals.steps_lost) == (4, 10)
    # the NaN: 2.0 s from the fault to the first new step, plus steps 21-24's 3.5 s before the
    # fault (the NaN step, logged after the fault, was counted twice: 6.0)
    # the preemption, with no restart scheduled: the save (fault to exit, 1.5 s) and the
    # restart (started to first step, 3.0 s); the 0.5 s it waited for the user's Resume
    # (with 4 replicas) is no run time
    assert [i.time_lost for i in timeline.incidents] == [5.5, 6.5, 4.5, None]
    assert totals.time_lost == 5.5 + 6.5 + 4.5


def test_the_kill_step_is_the_step_the_process_reached(story):
    # The supervisor wrote step=41 (what it had read when Kill was pressed); steps up to 45
    # were logged before the exit: marker, incident and both sentences say 45.
    timeline = reopened(story)
    texts = [note.text for note in timeline.notes]
    assert "kill of chief at step 45 (user)" in texts
    assert "chief killed at step 45" in texts
    assert timeline.incidents[1].step == 45
    assert ("crash", 45) in [(m.kind, m.step) for m in timeline.markers]


def test_notes_tell_the_story_in_sentences(story):
    texts = [note.text for note in reopened(story).notes]
    assert texts[:4] == ["run started: mirrored, 100 steps", "chief started (pid 100)",
                         "chief training from step 0 (mirrored, 2 replicas)",
                         "checkpoint 10 saved (400.0 kB)"]
    for sentence in ("NaN in the loss at step 25 (schedule)", "loss not finite at step 25",
                     "rolled back from step 25 to checkpoint 20", "restarting in 0.5 s",
                     "chief started (pid 101), restoring ckpt-40",
                     "resumed from checkpoint 40",
                     "preemption of chief requested at step 68 (user)",
                     "preempted: checkpoint 70 saved, stopping", "chief preempted at step 70",
                     "forked from checkpoint 80; newer checkpoints 90 kept in "
                     "history/fork-3/checkpoints",
                     "run finished at step 100, final loss 0.0100", "chief finished at step 100"):
        assert sentence in texts, sentence
    assert not any(text.startswith("step ") or "validation" in text for text in texts)


# ------------------------------------------------------------------------------ rules
def feed(*items) -> Timeline:
    timeline = Timeline()
    timeline.feed([dict(item, attempt=item.get("attempt", 0), time=item.get("time", 1.0))
                   for item in items])
    return timeline


def steps(first, last, attempt=0, t=0.0):
    return [{"event": "step", "step": s, "loss": 1.0, "attempt": attempt, "time": t + s}
            for s in range(first, last + 1)]


def exit_event(role="chief", index=0, **fields):
    return {"event": "process_exited", "role": role, "index": index,
            "chief": role == "chief", **fields}


def test_a_parameter_server_worker_lost_and_back_is_marked_but_ends_nothing():
    timeline = feed(
        *steps(1, 30),
        {"event": "fault_injected", "kind": "kill", "target": "worker:1", "step": 28},
        exit_event("worker", 1, signal=9, decisive=False),
        *steps(31, 33),
        {"event": "training_started", "role": "worker", "index": 1, "start_step": None},
        *steps(34, 35),
    )
    assert [(m.kind, m.step, m.label) for m in timeline.markers] == [
        ("worker_lost", 30, "worker 1 killed @ 30"), ("worker_back", 33, "worker 1 back")]
    assert timeline.redone == [] and len(timeline.segments) == 1
    assert "worker 1 lost (killed) at step 30" in [n.text for n in timeline.notes]
    assert timeline.state == "running"
    [incident] = timeline.incidents
    assert (incident.kind, incident.target, incident.steps_lost) == ("kill", "worker:1", 0)


def test_a_lost_multi_worker_peer_ends_the_attempt_and_the_clean_up_is_no_loss():
    timeline = feed(
        *steps(1, 352),
        exit_event("worker", 1, signal=9, decisive=True, reason="ended by SIGKILL"),
        exit_event("worker", 0, signal=9, decisive=False, chief=True,
                   reason="ended by ftgui: the rest of the cluster was over"),
    )
    assert [(m.kind, m.step, m.label) for m in timeline.markers] == [
        ("crash", 352, "worker 1 killed @ 352")]
    texts = [note.text for note in timeline.notes]
    assert texts == ["worker 1 lost (killed) at step 352",
                     "worker 0 ended by ftgui: the rest of the cluster was over"]
    assert (timeline.state, timeline.reason) == ("killed", "worker 1 ended by SIGKILL")


def test_a_parameter_server_clusters_tasks_ended_after_the_chief_finished_are_no_loss():
    timeline = feed(
        *steps(1, 60),
        {"event": "run_finished", "attempt": 0, "step": 60, "time": 7.0},
        exit_event("chief", 0, exit_code=0, decisive=True, chief=True,
                   reason="reached the last step"),
        exit_event("worker", 0, signal=9, decisive=False,
                   reason="ended by ftgui: the rest of the cluster was over"),
        exit_event("ps", 0, signal=9, decisive=False,
                   reason="ended by ftgui: the rest of the cluster was over"),
    )
    texts = [note.text for note in timeline.notes]
    assert texts[-2:] == ["worker 0 ended by ftgui: the rest of the cluster was over",
                          "ps 0 ended by ftgui: the rest of the cluster was over"]
    assert timeline.incidents == [] and timeline.state == "finished"


def test_a_hang_the_watchdog_ended_is_marked_as_a_hang():
    timeline = feed(*steps(1, 12), {"event": "hang_detected", "role": "chief", "seconds": 5.0,
                                    "last_step": 12},
                    exit_event(signal=9, decisive=True))
    assert [(m.kind, m.label) for m in timeline.markers] == [("hang", "hung @ 12")]
    assert timeline.notes[0].text == "chief hung: no progress for 5.0 s at step 12"


def test_a_freeze_is_marked_where_it_stopped_the_run_when_it_is_sent():
    frozen = {"event": "fault_injected", "kind": "hang", "target": "chief", "step": 12,
              "source": "user"}
    timeline = feed(*steps(1, 12), frozen)
    assert [(m.kind, m.step, m.label) for m in timeline.markers] == [
        ("hang", 12, "frozen @ 12")]  # not only once the watchdog has ended it
    timeline.feed([dict(e, attempt=0, time=20.0) for e in (
        {"event": "hang_detected", "role": "chief", "seconds": 4.0, "last_step": 12},
        exit_event(signal=9, decisive=True))])
    assert [(m.kind, m.label) for m in timeline.markers] == [("hang", "frozen @ 12")]


def test_the_exits_a_watchdog_causes_in_a_cluster_add_no_marker_of_their_own():
    timeline = feed(*steps(1, 251), {"event": "fault_injected", "kind": "hang",
                                     "target": "worker:1", "step": 251, "source": "user"},
                    {"event": "hang_detected", "role": "worker", "index": 1, "seconds": 4.0,
                     "last_step": 251},
                    exit_event(exit_code=1, decisive=True,
                               reason="hang: no progress for 4.0 s (watchdog 4 s)"),
                    exit_event("worker", 1, signal=9, decisive=False))
    assert [(m.kind, m.label) for m in timeline.markers] == [("hang", "worker 1 frozen @ 251")]


def test_a_thawed_freeze_keeps_its_marker_and_a_worker_s_is_named():
    timeline = feed(*steps(1, 30), {"event": "fault_injected", "kind": "hang",
                                    "target": "worker:1", "step": 30, "source": "user"},
                    {"event": "thawed", "target": "worker:1", "step": 30}, *steps(31, 33))
    assert [(m.kind, m.step, m.label) for m in timeline.markers] == [
        ("hang", 30, "worker 1 frozen @ 30")]


def test_an_error_exit_is_a_crash_and_a_shutdown_is_nothing():
    failed = feed(*steps(1, 5), exit_event(exit_code=3, decisive=True,
                                           reason="exited with status 3 (non-finite loss)"))
    assert [(m.kind, m.label) for m in failed.markers] == [("crash", "failed @ 5")]
    assert failed.notes[0].text == "chief failed at step 5: exited with status 3 " \
                                   "(non-finite loss)"
    stopped = feed(*steps(1, 5), exit_event(signal=9, decisive=True, shutdown=True))
    assert stopped.markers == [] and stopped.incidents == []
    assert stopped.state == "stopped" and stopped.notes[0].text == "chief stopped by ftgui"


def test_steps_per_second_over_the_last_two_seconds_of_the_current_line():
    timeline = Timeline()
    timeline.feed([{"event": "step", "attempt": 0, "step": s, "loss": 1.0, "time": s * 0.1}
                   for s in range(1, 101)])  # 10 steps/s, newest at 10.0 s
    assert timeline.steps_per_second(now=10.5) == pytest.approx(10.0)
    assert timeline.steps_per_second(now=12.5) == 0.0  # nothing new for more than 2 s
    timeline.feed([{"event": "resumed", "attempt": 1, "time": 11.0, "from_step": 90},
                   {"event": "step", "attempt": 1, "time": 11.5, "step": 91, "loss": 1.0}])
    assert timeline.steps_per_second(now=11.5) == 0.0  # one point of the new line: no rate
    assert timeline.last_step == 91


def test_feed_says_what_changed_and_counts_versions():
    timeline = Timeline()
    first = timeline.feed(steps(1, 3))
    assert first.steps and not first.markers and first.notes == []
    assert timeline.version == 1
    second = timeline.feed([exit_event(signal=9, decisive=True)])
    assert second.markers and second.checkpoints and not second.steps
    assert [note.text for note in second.notes] == ["chief killed at step 3"]
    assert not timeline.feed([]) and timeline.version == 2


# ------------------------------------------------------------------------------ forks
def test_a_fork_is_a_branch_not_an_incident():
    archived = [60, 70, 80, 90, 100]
    timeline = feed(
        *steps(1, 100),
        {"event": "run_finished", "step": 100, "loss": 1.0, "time": 100.5},
        exit_event(exit_code=0, decisive=True, time=101.0),
        {"event": "forked", "attempt": 1, "from_step": 50, "archived_steps": archived,
         "archive": "history/fork-1/checkpoints", "time": 200.0},
        {"event": "resumed", "attempt": 1, "from_step": 50, "time": 201.0},
        *steps(51, 120, attempt=1, t=151.0),
    )
    assert timeline.incidents == []
    totals = timeline.totals()
    assert (totals.incidents, totals.steps_lost, totals.time_lost, totals.goodput) == (
        0, 0, 0.0, 1.0)
    first, branch = timeline.segments
    assert (first.branch, first.abandoned_after) == (0, 50)  # steps 51-100: the old branch
    assert (branch.branch, branch.abandoned_after) == (1, None)
    assert [(f.step, f.attempt, f.branch, f.archived_steps, f.archive)
            for f in timeline.forks] == [(50, 1, 1, (60, 70, 80, 90, 100),
                                          "history/fork-1/checkpoints")]
    assert [(m.kind, m.step, m.label) for m in timeline.markers] == [("fork", 50, "fork ← 50")]


def test_a_fork_after_a_kill_leaves_the_run_s_losses_as_they_were(story):
    every = events.read_all(story)
    fork_at = next(i for i, e in enumerate(every) if e["event"] == "forked")
    before, after = Timeline(), reopened(story)
    before.feed(every[:fork_at])
    assert (after.totals().steps_lost, after.totals().time_lost) == (
        before.totals().steps_lost, before.totals().time_lost) == (10, 16.5)  # NaN: 5.5 s
    # the kill before the fork is counted, unrecovered, and charged nothing
    assert (after.incidents[-1].kind, after.incidents[-1].ended_by) == ("kill", "fork")
    # the branch left at step 80: the attempt killed at 95 (steps 71-95) is flagged
    assert [(s.attempt, s.branch, s.abandoned_after) for s in after.segments] == [
        (0, 0, None), (0, 0, None), (1, 0, None), (2, 0, 80), (3, 1, None)]


def test_a_second_fork_from_further_back_widens_the_abandoned_part():
    timeline = feed(
        *steps(1, 40),
        {"event": "forked", "attempt": 1, "from_step": 30, "archived_steps": [40]},
        {"event": "resumed", "attempt": 1, "from_step": 30},
        *steps(31, 45, attempt=1),
        {"event": "forked", "attempt": 2, "from_step": 20, "archived_steps": [30, 40]},
        {"event": "resumed", "attempt": 2, "from_step": 20},
        *steps(21, 25, attempt=2),
    )
    assert [(s.branch, s.abandoned_after) for s in timeline.segments] == [
        (0, 20), (1, 20), (2, None)]
    assert timeline.incidents == [] and timeline.branch == 2


def test_a_setting_changed_event_is_a_marker_and_a_sentence():
    timeline = feed(*steps(1, 10), {"event": "setting_changed", "setting": "learning_rate",
                                    "old": 0.01, "new": 0.001, "step": 10})
    assert [(m.kind, m.step, m.label) for m in timeline.markers] == [
        ("setting_changed", 10, "learning rate 0.01 → 0.001")]
    assert [n.text for n in timeline.notes] == [
        "learning rate changed from 0.01 to 0.001 at step 10"]
    assert timeline.incidents == []


def test_a_standby_ready_after_it_took_over_says_so():
    timeline = feed(
        {"event": "standby_ready", "pid": 11, "import_seconds": 4.0, "attempt": -1},
        {"event": "process_started", "role": "chief", "index": 0, "pid": 12, "standby": True,
         "attempt": 1},
        {"event": "standby_ready", "pid": 12, "import_seconds": 5.5, "attempt": -1},
        {"event": "standby_ready", "pid": 13, "import_seconds": 4.5, "attempt": -1},
        {"event": "standby_ready", "pid": 14, "import_seconds": 0.001, "forked": True,
         "prepare_seconds": 1.26, "attempt": -1},
        {"event": "standby_ready", "pid": 15, "import_seconds": 0.001, "forked": True,
         "prepare_seconds": None, "attempt": -1},
    )
    assert [n.text for n in timeline.notes if n.kind == "standby_ready"] == [
        "warm standby ready (TensorFlow imported in 4.0 s)",
        "the warm standby that took over (pid 12) is ready (TensorFlow imported in 5.5 s)",
        "warm standby ready (TensorFlow imported in 4.5 s)",
        "warm standby ready (forked with TensorFlow imported, built in 1.3 s)",
        "warm standby ready (forked with TensorFlow imported)"]
