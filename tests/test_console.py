"""`ftgui train`'s progress lines: a step line now and then, a sentence per notable event."""

from __future__ import annotations

from ftgui.console import Progress


def test_a_non_finite_loss_is_printed_as_nan(capsys):
    progress = Progress()
    progress.show({"event": "step", "step": 35, "loss": None})  # events write NaN as null
    assert capsys.readouterr().out == "step 35  loss nan\n"


def test_notable_events_are_sentences_and_steps_are_not_repeated(capsys, monkeypatch):
    clock = iter([100.0, 100.0, 100.5, 103.0, 103.0])
    monkeypatch.setattr("ftgui.console.time.time", lambda: next(clock))
    progress = Progress()
    for step in (1, 2):
        progress.show({"event": "step", "attempt": 0, "time": 1.0, "step": step, "loss": 0.5})
    progress.show({"event": "heartbeat", "attempt": 0, "time": 1.0, "role": "worker",
                   "index": 1, "step": 2})
    progress.show({"event": "checkpoint_saved", "attempt": 0, "time": 1.0, "step": 2,
                   "size": 400_000})
    progress.show({"event": "fault_injected", "attempt": 0, "time": 1.0, "kind": "kill",
                   "target": "chief", "step": 1, "source": "user"})
    progress.show({"event": "step", "attempt": 0, "time": 1.0, "step": 3, "loss": 0.25})
    progress.show({"event": "process_exited", "attempt": 0, "time": 1.0, "role": "chief",
                   "index": 0, "signal": 9, "decisive": True})
    assert capsys.readouterr().out.splitlines() == [
        "step 1  loss 0.5000",  # step 2 came 0.5 s later: no line
        "checkpoint 2 saved (400.0 kB)",
        "kill of chief at step 2 (user)",
        "step 3  loss 0.2500",
        "chief killed at step 3",
    ]
    assert progress.last_loss == 0.25


def test_a_poll_shown_at_once_prints_what_one_event_at_a_time_does(capsys, monkeypatch):
    monkeypatch.setattr("ftgui.console.time.time", lambda: 100.0)
    events = [{"event": "step", "attempt": 0, "time": 1.0 + s, "step": s, "loss": 1.0 / s}
              for s in (1, 2, 3)]
    events += [{"event": "checkpoint_saved", "attempt": 0, "time": 4.0, "step": 3,
                "size": 400_000},
               {"event": "step", "attempt": 0, "time": 5.0, "step": 4, "loss": 0.125}]
    one, batch = Progress(), Progress()
    for event in events:
        one.show(event)
    by_one = capsys.readouterr().out
    batch.show_all(events)
    # a run of steps prints its newest one: the line is as due after step 1 as after step 3
    assert capsys.readouterr().out.splitlines() == [
        "step 3  loss 0.3333", "checkpoint 3 saved (400.0 kB)"]
    assert by_one.splitlines() == ["step 1  loss 1.0000", "checkpoint 3 saved (400.0 kB)"]
    assert batch.timeline.last_step == one.timeline.last_step == 4
    assert batch.last_loss == one.last_loss == 0.125
    assert batch.timeline.totals() == one.timeline.totals()


def test_quiet_prints_nothing_but_keeps_the_last_loss(capsys):
    progress = Progress(quiet=True)
    progress.show({"event": "step", "step": 1, "loss": 0.5})
    progress.show({"event": "run_finished", "step": 1, "loss": 0.5})
    assert capsys.readouterr().out == ""
    assert progress.last_loss == 0.5


def test_a_run_with_incidents_ends_with_its_story_and_totals():
    from recorded import CHIEF, ev, steps

    progress = Progress(quiet=True)
    assert progress.summary() == []
    history = [ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 20, 1.0)]
    for attempt, (step, at) in enumerate([(20, 6.0), (24, 12.0)]):
        history += [
            ev("fault_injected", at, attempt, kind="preempt", target="chief", step=step,
               source="user"),
            ev("preempted", at + 0.25, attempt, step=step, checkpoint=f"checkpoints/ckpt-{step}"),
            ev("process_exited", at + 0.5, attempt, pid=10 + attempt, last_step=step,
               exit_code=42, decisive=True, shutdown=False, **CHIEF),
            ev("process_started", at + 4.0, attempt + 1, pid=11 + attempt,
               restore=f"checkpoints/ckpt-{step}", **CHIEF),
            ev("resumed", at + 5.0, attempt + 1, from_step=step,
               checkpoint=f"checkpoints/ckpt-{step}"),
            *steps(step + 1, step + 4, at + 5.5, attempt=attempt + 1)]
    history += [ev("run_finished", 19.5, 2, step=28, loss=0.04),
                ev("process_exited", 19.75, 2, pid=12, last_step=28, exit_code=0,
                   decisive=True, shutdown=False, **CHIEF)]
    for event in history:
        progress.show(event)
    # the final banner gives the run's totals (issue 24); the line before it the last incident
    last, banner = progress.summary()
    assert last == ("Last incident: preempted at step 24 → restored checkpoint 24 → resumed: "
                    "0 steps redone, 2.0 s lost")
    # lost: twice the save (0.5 s) and the restart (1.5 s); no restart was scheduled, so the
    # 3.5 s each preempted run waited for its resume are no run time, nor the 1.0 s before
    # step 1: wall 20.0 − 7.0 − 1.0 s on the run clock (step 24 at 12.25 s precedes the fault
    # stamped 12.0 s: the clock does not go back)
    assert banner == "Finished at step 28 · 2 incidents: 0 steps redone, 4.0 s lost · goodput " \
        "67 %"


def test_the_run_finished_sentence_is_left_to_the_commands_own_last_line(capsys):
    progress = Progress()
    progress.show({"event": "step", "attempt": 0, "time": 1.0, "step": 1, "loss": 0.5})
    capsys.readouterr()
    progress.show({"event": "run_finished", "attempt": 0, "time": 1.0, "step": 1, "loss": 0.5})
    progress.show({"event": "process_exited", "attempt": 0, "time": 1.0, "role": "chief",
                   "index": 0, "exit_code": 0, "decisive": True})
    assert capsys.readouterr().out.splitlines() == ["chief finished at step 1"]


def test_a_manual_resume_ends_with_the_story_of_the_kill_before_it(capsys):
    """`ftgui train RUN --resume` primes its progress with the run's history (not printed):
    the kill of the earlier command is the incident its summary tells."""
    from recorded import CHIEF, ev, steps

    killed = [ev("process_started", 0.0, pid=10, **CHIEF), *steps(1, 37, 1.0),
              ev("fault_injected", 6.0, kind="kill", target="chief", step=37,
                 source="schedule"),
              ev("process_exited", 6.25, pid=10, last_step=37, signal=9, decisive=True,
                 shutdown=False, **CHIEF)]
    resumed = [ev("process_started", 40.0, 1, pid=11, restore="checkpoints/ckpt-30", **CHIEF),
               ev("resumed", 45.0, 1, from_step=30, checkpoint="checkpoints/ckpt-30"),
               *steps(31, 40, 45.5, attempt=1),
               ev("run_finished", 47.0, 1, step=40, loss=0.04)]
    progress = Progress()
    progress.prime(killed)
    for event in resumed:
        progress.show(event)
    printed = capsys.readouterr().out
    assert "killed" not in printed and "step 1 " not in printed  # the history is not repeated
    [story_line] = progress.summary()
    assert story_line.startswith("Finished at step 40 · killed at step 37 → restored "
                                 "checkpoint 30 → resumed: 7 steps redone")
