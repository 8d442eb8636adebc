"""What each incident cost, from events alone (no TensorFlow)."""

from __future__ import annotations

import pytest

from ftgui.core.record.incidents import from_events


def steps(attempt, first, last, t0, dt=0.1, loss=1.0):
    return [{"event": "step", "attempt": attempt, "step": s, "loss": loss,
             "time": t0 + (s - first) * dt} for s in range(first, last + 1)]


def test_a_kill_costs_the_redone_steps_and_the_restart():
    events = [{"event": "run_started", "attempt": 0, "time": 100.0}]
    events += steps(0, 1, 35, t0=100.0)  # step 35 at 103.4
    events += [
        {"event": "fault_injected", "attempt": 0, "time": 103.5, "kind": "kill",
         "target": "chief", "source": "schedule", "step": 35},
        {"event": "process_exited", "attempt": 0, "time": 103.6, "role": "chief", "index": 0,
         "signal": 9, "decisive": True},
        {"event": "resumed", "attempt": 1, "time": 108.0, "from_step": 30},
    ]
    events += steps(1, 31, 60, t0=108.5)  # first new step at 108.5, last at 111.4
    tracker = from_events(events)
    [incident] = tracker.incidents
    assert (incident.kind, incident.step, incident.resumed_step) == ("kill", 35, 30)
    assert incident.steps_lost == 5
    assert incident.detect_seconds == pytest.approx(0.1)
    assert incident.recovery_seconds == pytest.approx(4.9)
    # 5.0 s from the fault to the first new step, plus 0.5 s the 5 lost steps had taken
    assert incident.time_lost == pytest.approx(5.5)
    totals = tracker.totals()
    assert (totals.incidents, totals.steps_lost) == (1, 5)
    assert totals.wall == pytest.approx(11.4)
    assert totals.goodput == pytest.approx((11.4 - 5.5) / 11.4)


def _started_after(startup: float) -> list[dict]:
    """A run whose first trainer took `startup` s from `run_started` to `training_started`,
    then trained steps 1-20 0.1 s apart, killed after step 20, back 2.0 s later from 10."""
    t = 100.0 + startup
    return [{"event": "run_started", "attempt": 0, "time": 100.0},
            {"event": "process_started", "attempt": 0, "time": 100.1, "role": "chief",
             "index": 0, "pid": 10},
            {"event": "training_started", "attempt": 0, "time": t, "role": "chief",
             "index": 0, "start_step": 0},
            *steps(0, 1, 20, t0=t + 0.5), *kill(0, t + 2.5, 20),
            {"event": "resumed", "attempt": 1, "time": t + 4.0, "from_step": 10},
            *steps(1, 11, 30, t0=t + 4.5)]  # the last at t + 6.4


def test_the_start_up_before_training_started_is_no_wall_time():
    """A cold start (TensorFlow imported, 9 s) and a forked one (0.3 s) of the same training
    have the same wall time and goodput: in a comparison, neither figure tells the start-up."""
    cold, forked = (from_events(_started_after(s)).totals() for s in (9.0, 0.3))
    assert cold.wall == pytest.approx(6.4) and forked.wall == pytest.approx(6.4)
    assert cold.time_lost == pytest.approx(forked.time_lost)
    assert cold.time_lost == pytest.approx(2.0 + 1.0)  # kill → step 11, plus steps 11-20
    assert cold.goodput == pytest.approx(forked.goodput)
    assert cold.goodput == pytest.approx((6.4 - 3.0) / 6.4)


def test_a_fault_before_training_started_starts_the_clock():
    """A trainer killed while it imports: the wait for its restart is lost time, and wall."""
    events = [{"event": "run_started", "attempt": 0, "time": 100.0},
              {"event": "process_started", "attempt": 0, "time": 100.1, "role": "chief",
               "index": 0, "pid": 10}, *kill(0, 103.0, 0),
              {"event": "process_started", "attempt": 1, "time": 104.0, "role": "chief",
               "index": 0, "pid": 11},
              {"event": "training_started", "attempt": 1, "time": 106.0, "role": "chief",
               "index": 0, "start_step": 0}]
    events += steps(1, 1, 10, t0=106.5)  # the last at 107.4
    tracker = from_events(events)
    [incident] = tracker.incidents
    assert incident.time_lost == pytest.approx(106.5 - 103.0)
    assert tracker.totals().wall == pytest.approx(107.4 - 103.0)


def kill(attempt, time, step):
    return [{"event": "fault_injected", "attempt": attempt, "time": time, "kind": "kill",
             "target": "chief", "source": "user", "step": step},
            {"event": "process_exited", "attempt": attempt, "time": time + 0.1, "role": "chief",
             "index": 0, "signal": 9, "decisive": True}]


def test_a_kill_during_the_redo_counts_the_first_restart_once():
    """Killed at 35 and resumed from 30; killed again at 33, redoing, and resumed from 30:
    the second incident's lost steps 31-33 had taken 0.2 s in the attempt that lost them, not
    the 5 s from the first attempt's step 30 across the first restart."""
    events = [{"event": "run_started", "attempt": 0, "time": 100.0}]
    events += steps(0, 1, 35, t0=100.0)  # step 30 at 102.9, 35 at 103.4
    events += kill(0, 103.5, 35)
    events += [{"event": "resumed", "attempt": 1, "time": 108.0, "from_step": 30}]
    events += steps(1, 31, 33, t0=108.5)  # 31 at 108.5, 33 at 108.7
    events += kill(1, 108.8, 33)
    events += [{"event": "resumed", "attempt": 2, "time": 110.0, "from_step": 30}]
    events += steps(2, 31, 60, t0=110.5)
    first, second = from_events(events).incidents
    assert first.time_lost == pytest.approx(5.0 + 0.5)
    # 1.7 s from the fault to the first new step, plus 31-33 in attempt 1: 108.7 - 108.5
    assert second.redo_seconds == pytest.approx(0.2)
    assert second.time_lost == pytest.approx(1.7 + 0.2)


def test_a_preemption_loses_no_step():
    events = steps(0, 1, 12, t0=0.0) + [
        {"event": "fault_injected", "attempt": 0, "time": 1.15, "kind": "preempt",
         "target": "chief", "source": "user", "step": 12},
        {"event": "process_exited", "attempt": 0, "time": 1.5, "role": "chief",
         "exit_code": 42, "decisive": True},
        {"event": "recovery_scheduled", "attempt": 0, "time": 1.5, "delay": 1.0},
        {"event": "resumed", "attempt": 1, "time": 3.0, "from_step": 12},
    ] + steps(1, 13, 14, t0=3.2)
    [incident] = from_events(events).incidents
    assert (incident.kind, incident.source, incident.steps_lost) == ("preempt", "user", 0)
    assert incident.time_lost == pytest.approx(3.2 - 1.15)


@pytest.mark.parametrize("source", ["user", "schedule"])
def test_the_time_a_preempted_run_waits_for_its_resume_is_no_wall_time(source):
    """Preempted with no restart scheduled (Ctrl+C to `ftgui train`, `--preempt-at-step`, Preempt
    without automatic recovery): the run saved and stopped. The 20 s before the user's
    `--resume` are a stopped run's, not the incident's: a new user saw 22.3 s lost, 12.7 s of
    it idle, and goodput 47 % instead of 68 %. The incident costs the save (0.35 s) and the
    restart (2.7 s)."""
    events = [{"event": "run_started", "attempt": 0, "time": 0.0}, *steps(0, 1, 12, t0=0.0),
              {"event": "fault_injected", "attempt": 0, "time": 1.15, "kind": "preempt",
               "target": "chief", "source": source, "step": 12},
              {"event": "process_exited", "attempt": 0, "time": 1.5, "role": "chief",
               "index": 0, "exit_code": 42, "decisive": True},
              {"event": "run_started", "attempt": 1, "time": 21.5},
              {"event": "resumed", "attempt": 1, "time": 24.0, "from_step": 12},
              *steps(1, 13, 20, t0=24.2)]  # the last at 24.9
    tracker = from_events(events)
    [incident] = tracker.incidents
    assert incident.time_lost == pytest.approx(0.35 + 2.7)
    assert incident.recovery_seconds == pytest.approx(2.7)
    totals = tracker.totals()
    assert totals.wall == pytest.approx(1.5 + 3.4)
    assert totals.goodput == pytest.approx((4.9 - 3.05) / 4.9)


def shut_down_then_resumed(attempt, ended, started, resumed, from_step):
    """The chief of `attempt` ended by ftgui stopping at `ended`, then the user's resume: the
    next attempt's chief started at `started` and restored `from_step` at `resumed`."""
    return [{"event": "process_exited", "attempt": attempt, "time": ended, "role": "chief",
             "index": 0, "signal": 9, "decisive": True, "shutdown": True},
            {"event": "process_started", "attempt": attempt + 1, "time": started,
             "role": "chief", "index": 0, "pid": 11 + attempt},
            {"event": "resumed", "attempt": attempt + 1, "time": resumed,
             "from_step": from_step}]


def test_a_preemption_stopped_at_once_by_a_second_ctrl_c_waits_as_a_stopped_run():
    """Ctrl+C twice to `ftgui train` (the second: "stop at once"): the chief saved step 13 and
    ftgui killed it while it stopped (`shutdown`), not exit 42. The 20 s until `--resume` were
    counted as wall time and time lost: "24.2 s lost · goodput 16 %" (a breaker's finding).
    Now as one Ctrl+C: the save and the restart, and the step it saved."""
    events = [{"event": "run_started", "attempt": 0, "time": 0.0}, *steps(0, 1, 12, t0=0.0),
              {"event": "fault_injected", "attempt": 0, "time": 1.15, "kind": "preempt",
               "target": "chief", "source": "user", "step": 12},
              *steps(0, 13, 13, t0=1.3), *shut_down_then_resumed(0, 1.5, 21.5, 24.0, 13),
              *steps(1, 14, 20, t0=24.2)]  # the last at 24.8
    tracker = from_events(events)
    [incident] = tracker.incidents
    assert (incident.kind, incident.step, incident.resumed_step) == ("preempt", 13, 13)
    assert incident.time_lost == pytest.approx(0.35 + 2.7)
    totals = tracker.totals()
    assert totals.wall == pytest.approx(1.5 + 3.3)
    assert totals.goodput == pytest.approx((4.8 - 3.05) / 4.8)


def test_ftgui_closed_during_a_restart_leaves_the_wait_for_the_resume_out():
    """Killed at 12 with a restart under way (attempt 1 importing) when ftgui was closed: its
    process ended as a shutdown. The 20 s before the user's resume are no run time."""
    events = [{"event": "run_started", "attempt": 0, "time": 0.0}, *steps(0, 1, 12, t0=0.0),
              *kill(0, 1.15, 12),
              {"event": "recovery_scheduled", "attempt": 0, "time": 1.3, "delay": 0.0},
              {"event": "process_started", "attempt": 1, "time": 1.4, "role": "chief",
               "index": 0, "pid": 11},
              *shut_down_then_resumed(1, 2.0, 22.0, 23.0, 10),
              *steps(2, 11, 20, t0=23.5)]  # the last at 24.4
    tracker = from_events(events)
    [incident] = tracker.incidents
    assert incident.resumed_step == 10 and incident.steps_lost == 2
    # the kill to the shutdown (0.85 s), the resume to its first new step (1.5 s), and the
    # 0.2 s steps 11-12 had taken
    assert incident.time_lost == pytest.approx(0.85 + 1.5 + 0.2)
    assert tracker.totals().wall == pytest.approx(2.0 + 2.4)


def test_a_worker_preempted_with_its_cluster_is_not_a_lost_worker():
    # a multi-worker cluster preempted: worker 1's exit 42 is seen before the chief's (under
    # Slurm the tasks' exits arrive in the order the job recorded them)
    events = steps(0, 1, 151, t0=0.0, dt=0.01) + [
        {"event": "fault_injected", "attempt": 0, "time": 1.52, "kind": "preempt",
         "target": "chief", "source": "schedule", "step": 150},
        {"event": "process_exited", "attempt": 0, "time": 1.6, "role": "worker", "index": 1,
         "exit_code": 42, "decisive": False},
        {"event": "process_exited", "attempt": 0, "time": 1.61, "role": "worker", "index": 0,
         "chief": True, "exit_code": 42, "decisive": True},
        {"event": "recovery_scheduled", "attempt": 0, "time": 1.61, "delay": 1.0},
        {"event": "resumed", "attempt": 1, "time": 5.0, "from_step": 151},
    ] + steps(1, 152, 160, t0=5.5)
    [incident] = from_events(events).incidents
    assert (incident.kind, incident.lone, incident.steps_lost) == ("preempt", False, 0)
    assert incident.detect_seconds == pytest.approx(1.61 - 1.52)
    assert incident.time_lost == pytest.approx(5.5 - 1.52)


def test_the_time_a_recoverys_slurm_job_waited_is_its_own_phase():
    from ftgui.core.timeline.story import incident_line

    events = steps(0, 1, 70, t0=0.0) + [
        {"event": "fault_injected", "attempt": 0, "time": 7.0, "kind": "kill",
         "target": "worker:1", "source": "schedule", "step": 70},
        {"event": "process_exited", "attempt": 0, "time": 7.1, "role": "worker", "index": 1,
         "signal": 9, "decisive": True},
        {"event": "job_started", "attempt": 0, "time": 7.2, "job": "5", "pending_seconds": 0.4},
        {"event": "job_started", "attempt": 1, "time": 11.2, "job": "6", "pending_seconds": 3.1},
        {"event": "resumed", "attempt": 1, "time": 20.0, "from_step": 70,
         "source": "just_in_time"},
    ] + steps(1, 71, 80, t0=21.0)
    [incident] = from_events(events).incidents
    assert incident.queued_seconds == pytest.approx(3.1)  # attempt 0's own start is no phase
    assert incident_line(incident) == (
        "worker 1 killed at step 70 → waiting for Slurm: 3.1 s → restored step 70 just in "
        "time → resumed: 0 steps redone, 14.0 s lost")


def test_a_nan_rolls_back_inside_the_process():
    events = steps(0, 1, 7, t0=0.0) + [
        {"event": "fault_injected", "attempt": 0, "time": 0.65, "kind": "nan",
         "target": "chief", "source": "schedule", "step": 8},
        {"event": "step", "attempt": 0, "time": 0.7, "step": 8, "loss": None},
        {"event": "non_finite_loss", "attempt": 0, "time": 0.71, "step": 8},
        {"event": "rolled_back", "attempt": 0, "time": 0.8, "from_step": 8, "to_step": 5},
    ] + steps(0, 6, 10, t0=0.9)
    [incident] = from_events(events).incidents
    assert (incident.kind, incident.step, incident.resumed_step) == ("nan", 8, 5)
    assert incident.detect_seconds == pytest.approx(0.06)
    assert incident.recovery_seconds == pytest.approx(0.19)


def test_an_unplanned_crash_is_an_incident_and_cleanup_exits_are_not():
    events = steps(0, 1, 3, t0=0.0) + [
        {"event": "process_exited", "attempt": 0, "time": 1.0, "role": "worker", "index": 1,
         "signal": 11, "decisive": True},
        {"event": "process_exited", "attempt": 0, "time": 1.1, "role": "worker", "index": 0,
         "signal": 9, "decisive": False},
    ]
    [incident] = from_events(events).incidents
    assert (incident.kind, incident.target, incident.source) == ("crash", "worker:1", "")
    assert incident.recovered is None and incident.time_lost is None
    assert from_events(events).totals().steps_lost == 0


def test_a_slow_nan_step_is_counted_once_in_the_time_lost():
    """The NaN step is logged after the fault (2.5 s here, as a retraced step took in the
    bad-numerics demo): the time from the fault to the first new step holds it already, so
    the redone steps' first time ends at the fault (it was counted twice: 5.6 s for 3.2 s)."""
    events = steps(0, 1, 7, t0=0.0) + [  # step 5 at 0.4, step 7 at 0.6
        {"event": "fault_injected", "attempt": 0, "time": 0.65, "kind": "nan",
         "target": "chief", "source": "schedule", "step": 8},
        {"event": "step", "attempt": 0, "time": 3.15, "step": 8, "loss": None},
        {"event": "non_finite_loss", "attempt": 0, "time": 3.15, "step": 8},
        {"event": "rolled_back", "attempt": 0, "time": 3.25, "from_step": 8, "to_step": 5},
    ] + steps(0, 6, 10, t0=3.5)
    [incident] = from_events(events).incidents
    assert incident.steps_lost == 3
    # back at step 5's state at 3.5 s, which it had first reached at 0.4 s
    assert incident.time_lost == pytest.approx(3.5 - 0.4)


def test_the_time_a_finished_run_waits_for_its_fork_is_no_wall_time():
    """A run finishes; a minute later the user forks it from step 30. The idle minute is
    neither run time nor time lost: goodput would otherwise rise with how long the user
    waited before forking (a new user saw 48 %, then 94 % after 65 s idle)."""
    events = [{"event": "run_started", "attempt": 0, "time": 100.0}]
    events += steps(0, 1, 60, t0=100.0)  # the last step at 105.9
    events += [{"event": "run_finished", "attempt": 0, "time": 106.0, "step": 60},
               {"event": "process_exited", "attempt": 0, "time": 106.1, "role": "chief",
                "index": 0, "exit_code": 0, "decisive": True},
               {"event": "forked", "attempt": 1, "time": 166.1, "from_step": 30},
               {"event": "resumed", "attempt": 1, "time": 167.0, "from_step": 30}]
    events += steps(1, 31, 60, t0=167.5)  # the last at 170.4
    totals = from_events(events).totals()
    assert totals.incidents == 0
    # to the first exit, then the fork's training from its first step (170.4 - 167.5): its
    # start-up (166.1 to 167.5) is no training, as the run's first start-up is not (a new
    # user's fork got 5.3 s of start-up counted as useful time, its goodput raised)
    assert totals.wall == pytest.approx(6.1 + 2.9)
    assert totals.goodput == 1.0


def test_a_demos_hold_for_the_presenter_is_no_wall_time():
    """Training holds at step 50 while the presenter talks for 10 s, then K kills it there.
    The hold is neither run time nor time lost: counted as run time it raised goodput the
    longer the presenter talked (a presenter's finding)."""
    events = [{"event": "run_started", "attempt": 0, "time": 100.0}]
    events += steps(0, 1, 50, t0=100.0)  # the last step at 104.9
    events += [{"event": "held", "attempt": 0, "time": 105.0, "step": 50, "role": "chief",
                "index": 0, "why": "presenter"},
               *({"event": "heartbeat", "attempt": 0, "time": 105.0 + s, "step": 50,
                  "held": True} for s in range(1, 10)),
               {"event": "fault_injected", "attempt": 0, "time": 115.0, "kind": "kill",
                "target": "chief", "step": 50, "source": "user"},
               {"event": "process_exited", "attempt": 0, "time": 115.2, "role": "chief",
                "index": 0, "signal": 9, "decisive": True},
               {"event": "resumed", "attempt": 1, "time": 116.0, "from_step": 40}]
    events += steps(1, 41, 60, t0=116.1)  # the last at 118.0
    totals = from_events(events).totals()
    assert totals.incidents == 1 and totals.steps_lost == 10
    # 5.0 s of training to the hold, the hold's 10 s left out, 3.0 s from the kill on
    assert totals.wall == pytest.approx(5.0 + 3.0)
    assert totals.time_lost == pytest.approx(1.1 + 1.0)  # kill → first new step, redo 41-50


def test_a_released_hold_is_no_wall_time_either():
    events = steps(0, 1, 20, t0=0.0)  # the last step at 1.9
    events += [{"event": "held", "attempt": 0, "time": 2.0, "step": 20, "role": "chief",
                "index": 0, "why": "standby"},
               {"event": "hold_released", "attempt": 0, "time": 6.0, "step": 20,
                "role": "chief", "index": 0, "seconds": 4.0, "by": "standby"}]
    events += steps(0, 21, 30, t0=6.1)  # the last at 7.0
    totals = from_events(events).totals()
    assert totals.wall == pytest.approx(7.0 - 4.0) and totals.goodput == 1.0


@pytest.mark.parametrize("ending", ["stopped", "supervisor lost"])
def test_the_time_a_stopped_run_waits_for_its_resume_is_no_wall_time(ending):
    """ftgui closed (or `ftgui train` killed) at step 101; the user resumes 289 s later.
    Nothing ran meanwhile: a new user saw `wall time 247.94 s … goodput 100 %` for 10 s of
    training."""
    events = [{"event": "run_started", "attempt": 0, "time": 0.0}, *steps(0, 1, 101, t0=1.1)]
    if ending == "stopped":  # the chief ended by the closing supervisor, nothing else said
        events.append({"event": "process_exited", "attempt": 0, "time": 11.2, "role": "chief",
                       "index": 0, "signal": 9, "decisive": True, "shutdown": True})
    events += [{"event": "run_started", "attempt": 1, "time": 300.0},
               {"event": "resumed", "attempt": 1, "time": 303.0, "from_step": 100},
               *steps(1, 101, 199, t0=303.1)]  # the last at 312.9
    tracker = from_events(events)
    totals = tracker.totals()
    before = (11.2 if ending == "stopped" else 11.1) - 1.1  # the clock starts at step 1
    # stopped: the resume's start-up (300.0 to its first step at 303.1) is no training, as
    # the first start-up is not; the supervisor lost: it is the open incident's time lost
    assert totals.wall == pytest.approx(before + (9.8 if ending == "stopped" else 12.9))
    if ending == "stopped":
        assert totals.incidents == 0
        return
    # no exit recorded: the processes died with their supervisor; step 101 is done again
    [incident] = tracker.incidents
    assert (incident.kind, incident.step, incident.resumed_step) == ("interrupted", 101, 100)
    # 3.1 s from the resume to its first step, plus the 0.1 s step 101 had taken
    assert (totals.steps_lost, totals.time_lost) == (1, pytest.approx(3.2))


def test_a_lost_supervisor_s_redone_steps_are_counted_and_shaded():
    """`ftgui train` killed by SIGKILL at step 87 (snapshots off), resumed from checkpoint 50:
    37 steps were done again, and every view said "No incidents", 0 steps redone, goodput
    100 % (a breaker's finding). Now an `interrupted` incident counts them, the plot shades
    them and marks where the supervisor was lost, and the story line says so."""
    from ftgui.core.timeline import story
    from ftgui.core.timeline.model import INTERRUPTED_LABEL, Timeline

    events = [{"event": "run_started", "attempt": 0, "time": 0.0},
              {"event": "process_started", "attempt": 0, "time": 0.1, "role": "chief",
               "index": 0, "chief": True, "pid": 10},
              {"event": "training_started", "attempt": 0, "time": 1.0, "role": "chief",
               "index": 0, "start_step": 0},
              *steps(0, 1, 87, t0=1.1),  # step 87 at 9.7
              {"event": "process_started", "attempt": 1, "time": 60.0, "role": "chief",
               "index": 0, "chief": True, "pid": 11, "restore": "checkpoints/ckpt-50"},
              {"event": "resumed", "attempt": 1, "time": 62.0, "from_step": 50,
               "source": "disk"},
              *steps(1, 51, 200, t0=62.5),
              {"event": "run_finished", "attempt": 1, "time": 77.5, "step": 200},
              {"event": "process_exited", "attempt": 1, "time": 77.6, "role": "chief",
               "index": 0, "chief": True, "exit_code": 0, "decisive": True}]
    tracker = from_events(events)
    [incident] = tracker.incidents
    assert (incident.kind, incident.step, incident.resumed_step) == ("interrupted", 87, 50)
    # 2.5 s from the resume to its first new step, plus 3.7 s steps 51-87 had taken
    assert incident.time_lost == pytest.approx(2.5 + 3.7)
    timeline = Timeline()
    timeline.feed(events)
    assert [(r.start, r.end) for r in timeline.redone] == [(50, 87)]
    assert f"{INTERRUPTED_LABEL} @ 87" in [m.label for m in timeline.markers]
    # the event log says so, at the last step's time, before the resumed chief's line (it went
    # from "checkpoint 50 saved" to "chief started … restoring ckpt-50")
    texts = [note.text for note in timeline.notes]
    lost = texts.index("supervisor lost at step 87: attempt 0 ended with no exit recorded "
                       "(ftgui was killed, or its machine went down)")
    assert texts[lost + 1].startswith("chief started (pid 11), restoring ckpt-50")
    assert timeline.notes[lost].time == pytest.approx(1.1 + 86 * 0.1)
    line = story.story(timeline, 200)
    assert line.startswith("Finished at step 200 · interrupted (its supervisor lost) at step "
                           "87 → restored checkpoint 50 → resumed: 37 steps redone"), line


def test_the_wait_after_a_cancelled_automatic_restart_is_no_wall_time():
    """Killed, a restart scheduled 30 s later, then ftgui stopped (Ctrl+C) during the backoff;
    the user resumes 20 s after that. The incident costs the kill to the stop and the restart;
    the 20 s idle are no run time."""
    events = [{"event": "run_started", "attempt": 0, "time": 0.0}, *steps(0, 1, 12, t0=0.0),
              *kill(0, 1.2, 12),  # exit at 1.3
              {"event": "recovery_scheduled", "attempt": 0, "time": 1.3, "delay": 30.0},
              {"event": "recovery_cancelled", "attempt": 0, "time": 4.3, "restart": 1},
              {"event": "run_started", "attempt": 1, "time": 24.3},
              {"event": "resumed", "attempt": 1, "time": 26.0, "from_step": 10},
              *steps(1, 11, 20, t0=26.5)]  # the last at 27.4
    tracker = from_events(events)
    [incident] = tracker.incidents
    # 1.2 → 4.3 s before the stop, 24.3 → 26.5 s of restart, plus steps 11-12's 0.2 s
    assert incident.time_lost == pytest.approx(3.1 + 2.2 + 0.2)
    assert tracker.totals().wall == pytest.approx(4.3 + 3.1)



@pytest.mark.parametrize("planned", [False, True], ids=["crashed", "killed"])
def test_a_restart_that_crashes_before_its_first_step_charges_the_whole_wait(planned):
    """Killed at 35; its restart dies 4 s later, before any step (a second kill, or a crash
    nobody planned); the next restart resumes from 30. The 4 s up to the second death are the
    first incident's, the rest and the 5 redone steps the second's: 11.75 s in all (before,
    the first incident stayed open and charged nothing: 7.75 s, goodput 72 % for 58 %)."""
    events = [{"event": "run_started", "attempt": 0, "time": 100.0}]
    events += steps(0, 1, 35, t0=100.0, dt=0.25)  # step 35 at 108.5
    events += kill(0, 110.0, 35)
    events += [{"event": "recovery_scheduled", "attempt": 0, "time": 110.2, "restart": 1},
               {"event": "process_started", "attempt": 1, "time": 111.2, "role": "chief"}]
    second = kill(1, 113.9, 35)  # 114.0: the restarted chief dies
    events += second if planned else second[1:]
    events += [{"event": "resumed", "attempt": 2, "time": 120.0, "from_step": 30}]
    events += steps(2, 31, 60, t0=120.5, dt=0.25)
    tracker = from_events(events)
    first, then = tracker.incidents
    assert (first.ended_by, first.resumed_step, first.steps_lost) == ("crash", None, None)
    assert first.time_lost == pytest.approx((113.9 if planned else 114.0) - 110.0)
    assert (then.kind, then.step, then.resumed_step) == (
        "kill" if planned else "crash", 35, 30)
    assert then.time_lost == pytest.approx(120.5 - (113.9 if planned else 114.0) + 5 * 0.25)
    totals = tracker.totals()
    assert (totals.incidents, totals.steps_lost) == (2, 5)
    assert totals.time_lost == pytest.approx(120.5 - 110.0 + 5 * 0.25)
    assert totals.wall == pytest.approx(127.75 - 100.0)


def test_a_preemption_whose_supervisor_died_names_the_step_it_saved():
    """SIGTERM to `ftgui train` at step 27, SIGKILL 50 ms later: the trainer saved step 30,
    but no exit was recorded, and the summary said "preempted at step 27" (a breaker's
    finding): the incident's step is the last one its process logged."""
    events = [{"event": "run_started", "attempt": 0, "time": 0.0}, *steps(0, 1, 27, t0=1.0),
              {"event": "fault_injected", "attempt": 0, "time": 3.65, "kind": "preempt",
               "target": "chief", "source": "user", "step": 27},
              *steps(0, 28, 30, t0=3.7),
              {"event": "process_started", "attempt": 1, "time": 50.0, "role": "chief",
               "index": 0, "chief": True, "pid": 11},
              {"event": "resumed", "attempt": 1, "time": 52.0, "from_step": 30,
               "source": "memory"},
              *steps(1, 31, 40, t0=52.5)]
    [incident] = from_events(events).incidents
    assert (incident.kind, incident.step, incident.resumed_step) == ("preempt", 30, 30)
    assert incident.steps_lost == 0
    # the 46 s nobody supervised the run are no run time: lost are the 0.25 s from the
    # request to step 30 and the resume's 2.5 s
    assert incident.time_lost == pytest.approx(0.25 + 2.5)


def _lost_and_resumed(first_dt=0.05):
    """Attempt 0: steps 1-130 (0.05 s each from t=1.0), no exit: `ftgui train` killed."""
    return [{"event": "run_started", "attempt": 0, "time": 0.0},
            {"event": "process_started", "attempt": 0, "time": 0.1, "role": "chief",
             "index": 0, "chief": True, "pid": 10},
            *steps(0, 1, 130, t0=1.0, dt=first_dt)]


def _restart(attempt, time, from_step, first_step=None):
    events = [{"event": "process_started", "attempt": attempt, "time": time, "role": "chief",
               "index": 0, "chief": True, "pid": 10 + attempt},
              {"event": "resumed", "attempt": attempt, "time": time + 2.0,
               "from_step": from_step, "source": "disk"}]
    if first_step is not None:
        events += steps(attempt, first_step, first_step + 9, t0=time + 2.5)
    return events


def test_a_resume_that_died_after_restoring_keeps_the_redone_steps_time():
    """Supervisor lost at 130, the resume restored 100 and died before its first step, the
    next resume restored 100 again: the 1.5 s steps 101-130 had taken were dropped (the
    breaker's r4: 10.4 s lost said, 11.9 s true). Each lost supervisor is an incident, as the
    plot marks each (3 markers, 2 incidents said)."""
    from ftgui.core.timeline.model import Timeline

    events = [*_lost_and_resumed(), *_restart(1, 60.0, 100), *_restart(2, 120.0, 100, 101)]
    tracker = from_events(events)
    first, second = tracker.incidents
    assert (first.kind, first.ended_by, first.steps_lost) == ("interrupted", "crash", 30)
    assert first.time_lost == pytest.approx(2.0 + 1.5)  # its restart, then the redone steps
    assert (second.kind, second.steps_lost) == ("interrupted", 0)
    assert second.time_lost == pytest.approx(2.5)
    totals = tracker.totals()
    assert (totals.incidents, totals.steps_lost) == (2, 30)
    assert totals.time_lost == pytest.approx(6.0)
    timeline = Timeline()
    timeline.feed(events)
    assert sum(m.label.startswith("supervisor lost") for m in timeline.markers) == 2
    # the run list counts from the non-step events alone: the same two
    assert from_events([e for e in events if e["event"] != "step"]).totals().incidents == 2


def test_a_restart_that_died_after_restoring_keeps_the_redone_steps_time():
    """The same for a kill and automatic recovery whose restart is killed after restoring
    (the breaker's r13): the first incident's redone steps were charged to nobody."""
    events = [*_lost_and_resumed(),
              {"event": "fault_injected", "attempt": 0, "time": 7.5, "kind": "kill",
               "target": "chief", "source": "schedule", "step": 130},
              {"event": "process_exited", "attempt": 0, "time": 7.6, "role": "chief",
               "index": 0, "signal": 9, "decisive": True},
              {"event": "recovery_scheduled", "attempt": 0, "time": 7.6},
              *_restart(1, 8.0, 100),
              {"event": "process_exited", "attempt": 1, "time": 10.5, "role": "chief",
               "index": 0, "signal": 9, "decisive": True},
              *_restart(2, 11.0, 100, 101)]
    first, second = from_events(events).incidents
    assert (first.ended_by, first.steps_lost, second.steps_lost) == ("crash", 30, 0)
    assert first.time_lost == pytest.approx(10.5 - 7.5 + 1.5)


def test_a_fork_after_a_resume_that_died_charges_its_steps_to_nobody():
    """Supervisor lost at 130, the resume restored 100 and died, then the user forked from
    50: "30 steps redone" was said of steps nobody redid (the breaker's r16)."""
    events = [*_lost_and_resumed(), *_restart(1, 60.0, 100),
              {"event": "forked", "attempt": 2, "time": 119.0, "from_step": 50,
               "archived_steps": [100], "archive": "history/fork-2/checkpoints"},
              *_restart(2, 120.0, 50, 51)]
    tracker = from_events(events)
    [incident] = tracker.incidents
    assert (incident.ended_by, incident.steps_lost) == ("fork", 0)
    assert (tracker.totals().steps_lost, tracker.totals().time_lost) == (0, 0.0)
    from ftgui.core.timeline.model import Timeline

    timeline = Timeline()
    timeline.feed(events)
    assert timeline.redone == []  # nor are 100-130 shaded as redone


def test_a_lost_worker_replaced_earlier_does_not_hide_a_lost_supervisor():
    """Parameter-server: worker 1 killed at 60 and replaced (its exit recorded), then `ftgui
    train` killed at 130 and resumed from 100: the second incident went unseen (the
    breaker's r11: goodput 100 % said)."""
    events = [*_lost_and_resumed()]
    events[3:3] = [  # after step 1, in file order by time
        {"event": "fault_injected", "attempt": 0, "time": 1.02, "kind": "kill",
         "target": "worker:1", "source": "schedule", "step": 1},
        {"event": "process_exited", "attempt": 0, "time": 1.03, "role": "worker", "index": 1,
         "signal": 9, "decisive": False},
        {"event": "training_started", "attempt": 0, "time": 1.04, "role": "worker",
         "index": 1}]
    events += _restart(1, 60.0, 100, 101)
    tracker = from_events(events)
    assert [i.kind for i in tracker.incidents] == ["kill", "interrupted"]
    assert tracker.incidents[1].steps_lost == 30
