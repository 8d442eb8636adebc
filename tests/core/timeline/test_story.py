"""The story line, from events alone (no display): each phase of a crash and its automatic
recovery as one sentence, with the incident table's figures."""

from __future__ import annotations

from recorded import CHIEF, ev, steps

from ftgui.core.formatting import percent, seconds
from ftgui.core.timeline.model import Timeline
from ftgui.core.timeline.story import story, totals_line


def test_a_kill_and_its_automatic_recovery_told_phase_by_phase():
    timeline = Timeline()
    said = []

    def feed(*events):
        timeline.feed(list(events))
        said.append(story(timeline, total_steps=400))

    feed(ev("run_started", 0.0))
    feed(ev("process_started", 0.0, pid=10, restore=None, standby=False, **CHIEF))
    feed(ev("training_started", 10.0, start_step=0, strategy="mirrored", replicas=2, **CHIEF))
    feed(*steps(1, 230, 10.25))  # steps 1..230 at 10.25 .. 67.5 s
    feed(ev("fault_injected", 67.5, kind="kill", target="chief", step=228, source="user"))
    feed(ev("process_exited", 67.75, pid=10, last_step=230, signal=9, signal_name="SIGKILL",
            decisive=True, shutdown=False, **CHIEF))
    feed(ev("recovery_scheduled", 67.75, delay=0.0, restart=1))
    feed(ev("process_started", 68.0, 1, pid=11, restore="checkpoints/ckpt-200",
            standby=False, **CHIEF))
    feed(ev("resumed", 80.0, 1, from_step=200, checkpoint="checkpoints/ckpt-200"))
    feed(ev("training_started", 80.5, 1, start_step=200, strategy="mirrored", replicas=2,
            **CHIEF))
    feed(*steps(201, 210, 81.0, attempt=1))
    feed(*steps(211, 231, 91.0, attempt=1))  # past the step the kill hit
    assert said == [
        "Ready: press Start",
        "Starting → importing TensorFlow",
        "Starting → waiting for the first step",
        "Training: step 230 of 400 · loss 0.0043",
        "Killed at step 230 → waiting for the process to end",
        "Killed at step 230 → stopped: Resume restores the newest snapshot or checkpoint",
        "Killed at step 230 → restarting",
        "Killed at step 230 → restarting: importing TensorFlow to restore checkpoint 200",
        "Killed at step 230 → restored checkpoint 200 → waiting for the first step",
        "Killed at step 230 → restored checkpoint 200 → waiting for the first step",
        # while the lost steps are computed again, their cost is not told as paid
        "Killed at step 230 → restored checkpoint 200 → resumed: redoing steps 201–230 "
        "(10 of 30 done)",
        # 30 steps redone; lost: 67.5 → 81.0 s, plus the 7.5 s steps 200..230 had taken
        "Killed at step 230 → restored checkpoint 200 → resumed: 30 steps redone, 21.0 s lost"
        " · goodput 76 %",  # (86.0 − 21.0) / 86.0 s: the clock starts at training_started
    ]
    incident = timeline.incidents[0]
    assert (incident.step, incident.resumed_step, incident.steps_lost) == (230, 200, 30)
    assert incident.time_lost == 21.0
    totals = timeline.totals()
    assert totals.wall == 96.0 - 10.0  # the 10 s of start-up are no training
    # the sentence's figures are the totals line's, the one the incident table shows
    assert totals_line(totals) == "30 steps redone, 21.0 s lost · goodput 76 %"
    assert said[-1].endswith(totals_line(totals))


def test_after_the_end_the_story_keeps_the_incident_and_says_finished():
    timeline = Timeline()
    timeline.feed([ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 20, 1.0),
                   ev("fault_injected", 6.0, kind="preempt", target="chief", step=20,
                      source="user"),
                   ev("preempted", 6.25, step=20, checkpoint="checkpoints/ckpt-20"),
                   ev("process_exited", 6.5, pid=10, last_step=20, exit_code=42,
                      decisive=True, shutdown=False, **CHIEF)])
    assert story(timeline) == "Preempted at step 20 → stopped: Resume restores the newest " \
        "checkpoint"
    timeline.feed([ev("process_started", 10.0, 1, pid=11, restore="checkpoints/ckpt-20",
                      standby=True, **CHIEF)])
    assert story(timeline) == ("Preempted at step 20 → restarting: waking the warm standby to "
                               "restore checkpoint 20")
    timeline.feed([ev("resumed", 11.0, 1, from_step=20, checkpoint="checkpoints/ckpt-20"),
                   *steps(21, 24, 11.5, attempt=1),
                   ev("run_finished", 12.5, 1, step=24, loss=0.04),
                   ev("process_exited", 12.75, 1, pid=11, last_step=24, exit_code=0,
                      decisive=True, shutdown=False, **CHIEF)])
    # lost: the save 6.0 → 6.5 s and the restart 10.0 → 11.5 s, nothing redone; the 3.5 s the
    # stopped run waited for Resume are no run time, nor the 1.0 s before the first step (no
    # training_started): goodput (8.25 − 2.0) / 8.25
    assert story(timeline) == ("Finished at step 24 · preempted at step 20 → restored "
                               "checkpoint 20 → resumed: 0 steps redone, 2.0 s lost · "
                               "goodput 76 %")


def test_a_nan_rollback_and_a_worker_lost_in_words():
    timeline = Timeline()
    timeline.feed([ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 25, 1.0),
                   ev("non_finite_loss", 7.25, step=25)])
    assert story(timeline) == "NaN loss at step 25 → rolling back in the process"
    timeline.feed([ev("rolled_back", 7.5, from_step=25, to_step=20,
                      checkpoint="checkpoints/ckpt-20")])
    assert story(timeline) == ("NaN loss at step 25 → rolled back to checkpoint 20 → waiting "
                               "for the first step")
    timeline.feed(steps(21, 22, 8.0))
    assert story(timeline) == ("NaN loss at step 25 → rolled back to checkpoint 20 → "
                               "redoing steps 21–25 (2 of 5 done)")
    timeline.feed(steps(23, 26, 9.0))
    assert story(timeline).startswith("NaN loss at step 25 → rolled back to checkpoint 20 → "
                                      "5 steps redone, ")  # no process resumed


def test_a_nan_rollback_that_found_no_state_is_not_told_as_rolling_back():
    # the story said "rolling back in the process" under "run failed" (a new user's finding)
    timeline = Timeline()
    timeline.feed([ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 2, 1.0),
                   ev("non_finite_loss", 1.5, step=3),
                   ev("process_exited", 2.0, pid=10, last_step=3, exit_code=3,
                      decisive=True, shutdown=False, reason="exited with status 3", **CHIEF)])
    assert story(timeline).startswith("NaN loss at step 3 → stopped: ")
    assert "rolling back" not in story(timeline)


def test_the_formats_the_incident_totals_share():
    assert seconds(7.66) == "7.7 s"
    assert percent(0.5149) == "51 %"


def test_a_held_run_says_held_not_training_also_after_an_incident():
    """A hold is a wait at a step boundary: the story line said "Training: step 650" while
    nothing trained (issue 24 trial)."""
    timeline = Timeline()
    timeline.feed([ev("run_started", 0), ev("process_started", 0, **CHIEF),
                   *steps(1, 8, 1.0),
                   ev("held", 3.0, step=8, why="standby", **CHIEF)])
    assert story(timeline, 20) == ("Held at step 8 of 20 until the warm standby has imported "
                                   "TensorFlow · loss 0.1250")
    timeline.feed([ev("hold_released", 4.0, step=8, by="standby", **CHIEF), *steps(9, 10, 4.25)])
    assert story(timeline, 20) == "Training: step 10 of 20 · loss 0.1000"


def test_a_nan_whose_process_the_watchdog_ended_is_restored_not_rolled_back():
    """The chaos demo's NaN step outlasted the 3 s watchdog: the trainer was killed and a new
    process restored checkpoint 270, but the story said "rolled back to checkpoint 270"."""
    timeline = Timeline()
    timeline.feed([ev("run_started", 0.0), ev("process_started", 0.0, pid=10, **CHIEF),
                   *steps(1, 24, 1.0),
                   ev("fault_injected", 7.0, kind="nan", target="chief", step=25,
                      source="schedule"),
                   ev("hang_detected", 10.0, seconds=3.0, last_step=24, **CHIEF),
                   ev("process_exited", 10.5, pid=10, last_step=24, signal=9,
                      signal_name="SIGKILL", decisive=True, shutdown=False,
                      reason="hang: no progress for 3.0 s (watchdog 3 s)", **CHIEF),
                   ev("recovery_scheduled", 10.5, delay=0.0, restart=1),
                   ev("process_started", 10.5, 1, pid=11, restore="checkpoints/ckpt-20",
                      **CHIEF),
                   ev("resumed", 11.0, 1, from_step=20, checkpoint="checkpoints/ckpt-20",
                      source="disk"),
                   *steps(21, 22, 11.25, attempt=1)])
    said = story(timeline)
    assert said.startswith("NaN loss at step 25 → restored checkpoint 20 → resumed: ")
    assert "rolled back" not in said


def test_a_start_forked_from_the_fork_server_is_told_as_building_not_importing():
    # with no standby left, the restart is forked from the fork server: it imports nothing,
    # and "importing TensorFlow" would be untrue for the seconds it builds the model
    timeline = Timeline()
    timeline.feed([ev("process_started", 0.0, pid=10, standby=False, forked=True, **CHIEF)])
    assert story(timeline) == "Starting → building the model (TensorFlow already imported)"
    timeline.feed([*steps(1, 30, 1.0),
                   ev("process_exited", 9.0, pid=10, last_step=30, signal=9,
                      signal_name="SIGKILL", decisive=True, shutdown=False, **CHIEF),
                   ev("recovery_scheduled", 9.0, delay=0.0, restart=1),
                   ev("process_started", 9.1, 1, pid=11, restore="checkpoints/ckpt-30",
                      standby=False, forked=True, **CHIEF)])
    # a SIGKILL no fault of ftgui's explains (a kill -9 from a terminal): the signal named
    assert story(timeline) == ("Crashed (SIGKILL) at step 30 → restarting: building the model "
                               "(TensorFlow already imported) to restore checkpoint 30")
    assert timeline.notes[-1].text == ("chief started (pid 11), restoring ckpt-30, forked "
                                       "with TensorFlow imported")


def killed_at_20_restart_due() -> list[dict]:
    """A chief killed after step 20, its automatic restart due at once (6.25 s)."""
    return [ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 20, 1.0),
            ev("fault_injected", 6.0, kind="kill", target="chief", step=20, source="user"),
            ev("process_exited", 6.25, pid=10, last_step=20, signal=9, signal_name="SIGKILL",
               decisive=True, shutdown=False, **CHIEF),
            ev("recovery_scheduled", 6.25, delay=0.0, restart=1)]


WAITING = ev("recovery_waiting", 6.25, seconds=10.0,
             waits_for="the fork server's import of TensorFlow")


def test_a_restart_that_waits_for_the_fork_server_says_so_until_it_starts():
    timeline = Timeline()
    timeline.feed(killed_at_20_restart_due())
    assert story(timeline) == "Killed at step 20 → restarting"
    timeline.feed([WAITING])
    assert story(timeline) == ("Killed at step 20 → restarting: waiting for the fork "
                               "server's import of TensorFlow")
    assert (timeline.state, timeline.reason) == (
        "recovering", "waiting to restart (up to 10 s)")
    timeline.feed([ev("process_started", 7.5, 1, pid=11, restore=None, snapshot=20,
                      standby=False, forked=True, **CHIEF)])
    assert story(timeline).startswith("Killed at step 20 → restarting: ")
    assert "waiting" not in story(timeline)


def test_a_restart_cancelled_while_it_waits_is_a_stopped_run():
    """Ctrl+C during the wait: reopened, the run still said "waiting for the fork server's
    import", and its report "interrupted" (a breaker's finding)."""
    timeline = Timeline()
    timeline.feed([*killed_at_20_restart_due(), WAITING,
                   ev("recovery_cancelled", 8.0, restart=1)])
    assert (timeline.state, timeline.reason) == (
        "stopped", "automatic restart cancelled: ftgui stopped")
    assert story(timeline) == ("Killed at step 20 → stopped: Resume restores the newest "
                               "snapshot or checkpoint")


def test_a_run_stopped_before_anything_was_saved_says_resume_starts_from_0():
    """A new user's `--snapshot-every 0 --kill-at-step 3`: "stopped: Resume restores the
    newest checkpoint", then "`--resume` goes on from step 0: nothing was saved"."""
    timeline = Timeline()
    timeline.feed([ev("run_started", 0.0, config={"snapshot_every": 0}),
                   ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 3, 1.0),
                   ev("fault_injected", 2.0, kind="kill", target="chief", step=3,
                      source="schedule"),
                   ev("process_exited", 2.1, pid=10, last_step=3, signal=9,
                      signal_name="SIGKILL", decisive=True, shutdown=False, **CHIEF)])
    assert story(timeline) == ("Killed at step 3 → stopped: Resume starts again from step 0 "
                               "(nothing saved)")
    timeline.feed([ev("checkpoint_saved", 2.2, step=3, path="checkpoints/ckpt-3")])
    assert story(timeline) == "Killed at step 3 → stopped: Resume restores the newest checkpoint"
