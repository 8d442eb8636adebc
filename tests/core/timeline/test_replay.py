"""Replay: a finished run's events played into the window through the same path as live events,
at X times real speed, read-only; `ftgui replay RUN --speed X --exit-when-done`."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import subprocess
import sys

import pytest
from recorded import crash_and_recovery

from ftgui import cli
from ftgui.core.record import event_history
from ftgui.core.record.events import read_all
from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.timeline.model import Timeline
from ftgui.core.timeline.replay import ReplayClock, check_speed, schedule


class FakeClock:
    """Monotonic seconds that move only when told to."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def opened(run_dir) -> Timeline:
    timeline = Timeline()
    timeline.feed(event_history.read_history(run_dir))
    return timeline


def figures(timeline: Timeline):
    """What a replay must reproduce: markers, redone ranges, incidents and totals."""
    return (timeline.markers, timeline.redone, timeline.incidents, timeline.totals(),
            [len(s.series.x()) for s in timeline.segments], timeline.state, timeline.reason)


# ------------------------------------------------------------------------------ the clock
def test_idle_gaps_are_capped_and_file_order_is_kept():
    times = [10.0, 10.5, 9.9, 100.0, 101.0]  # a writer slightly behind, then an hour-long pause
    assert schedule(times, max_gap=10.0).tolist() == [0.0, 0.5, 0.5, 10.5, 11.5]


def test_events_come_due_at_their_recorded_times_divided_by_the_speed():
    events = [{"event": "step", "time": 50.0 + t, "step": i} for i, t in
              enumerate([0.0, 1.0, 2.0, 4.0])]
    now = FakeClock()
    clock = ReplayClock(events, speed=2.0, now=now)
    assert clock.duration == 2.0
    assert [e["step"] for e in clock.poll()] == [0]  # the first poll starts the clock
    now.now += 0.49
    assert clock.poll() == []
    now.now += 0.01
    assert [e["step"] for e in clock.poll()] == [1]
    assert clock.recorded_now() == 51.0
    now.now += 1.0
    assert [e["step"] for e in clock.poll()] == [2]
    assert not clock.done
    now.now += 0.5
    assert [e["step"] for e in clock.poll()] == [3] and clock.done
    assert clock.poll() == []


@pytest.mark.parametrize("speed", [0, -1, 1000.5, float("nan"), float("inf"), True, "2"])
def test_a_speed_outside_0_to_1000_is_refused_in_one_line(speed):
    with pytest.raises(ConfigError) as error:
        check_speed(speed)
    assert str(error.value).startswith("speed (--speed): ") and "\n" not in str(error.value)
    assert check_speed(1000) == 1000.0


def test_the_history_is_replayed_as_the_events_of_the_file_in_their_order(tmp_path):
    run_dir = crash_and_recovery(tmp_path / "run")
    clock = ReplayClock.from_run(run_dir, speed=1000)
    in_file = read_all(run_dir)
    for event in in_file:
        event.pop("epoch", None)  # the one step field the timeline does not read
    assert clock.events[0:len(clock.events)] == in_file
    assert clock.end_offset == (run_dir / "events.jsonl").stat().st_size


def test_a_replay_fed_in_ticks_gives_the_figures_of_the_opened_run(tmp_path):
    run_dir = crash_and_recovery(tmp_path / "run")
    now = FakeClock()
    clock = ReplayClock.from_run(run_dir, speed=2, now=now)
    timeline, batches = Timeline(), 0
    while not clock.done:
        batch = clock.poll()
        batches += bool(batch)
        timeline.feed(batch)
        now.now += 0.033  # the controller's tick
    assert batches > 20  # played over many ticks, not in one go
    assert figures(timeline) == figures(opened(run_dir))
    assert [m.label for m in timeline.markers] == ["killed @ 12", "resume ← 10"]
    assert timeline.totals().steps_lost == 2


# ------------------------------------------------------------------------------ the window
def test_replaying_at_1000_shows_what_opening_the_run_shows(window, qtbot, tmp_path):
    run_dir = crash_and_recovery(tmp_path / "run")
    assert window.replay_run(run_dir, speed=1000)
    controller = window.controller
    assert controller.source is controller.replay
    qtbot.waitUntil(lambda: controller.replay.done, timeout=20000)
    controller.tick()
    assert figures(controller.timeline) == figures(opened(run_dir))
    plot = window.plot
    assert [series.y().tolist() for series in plot.series.values()] == [
        [1.0 / step for step in range(1, 13)], [1.0 / step for step in range(11, 21)]]
    assert len(plot.markers) == 2 and len(plot.regions) == 1  # killed/resume, redone 10–12
    assert window.state_label.text() == (
        "replay ×1000 — finished: reached the last step (replay done)")
    log = window.log.toPlainText()
    assert "kill of chief at step 12 (user)" in log and "resumed from checkpoint 10" in log


def test_a_replay_is_read_only(window, tmp_path):
    run_dir = crash_and_recovery(tmp_path / "run")
    before = (run_dir / "events.jsonl").read_bytes()
    assert window.replay_run(run_dir, speed=20)
    assert window.state_label.text().startswith("replay ×20")
    for button in (window.start_button, window.kill_button, window.preempt_button,
                   window.resume_button, window.checkpoint_button):
        assert not button.isEnabled()
    assert not window.start_run() and not window.resume_run()
    assert "read-only" in window.statusBar().currentMessage()
    assert not window.controller.kill("chief")
    # no supervisor at all: the events come from the clock only, no process can be started
    assert window.controller.supervisor is None
    assert window.controller.source is window.controller.replay
    assert window.controller.config == RunConfig(steps=20, checkpoint_every=10,
                                                 auto_recover=True)
    assert (run_dir / "events.jsonl").read_bytes() == before  # nothing written to the run
    window.open_run(run_dir)  # opening it again ends the replay
    assert window.controller.replay is None and window.resume_button.isEnabled() is False


def test_replaying_a_folder_without_events_is_refused(window, tmp_path):
    (tmp_path / "empty").mkdir()
    assert not window.replay_run(tmp_path / "empty")
    assert "has no events to replay" in window.statusBar().currentMessage()
    assert window.controller.replay is None


# ------------------------------------------------------------------------------ the command
def test_ftgui_replay_exits_0_when_done(tmp_path):
    run_dir = crash_and_recovery(tmp_path / "run")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen",
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")}
    # --present too: the replay in the presentation view (the flag was refused once)
    result = subprocess.run([sys.executable, "-m", "ftgui.cli", "replay", str(run_dir),
                             "--speed", "20", "--exit-when-done", "--present"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert read_all(run_dir)[-1]["event"] == "process_exited"  # the run is untouched


def test_ftgui_replay_refuses_a_bad_speed_and_a_missing_run_in_one_line(tmp_path, capsys):
    run_dir = crash_and_recovery(tmp_path / "run")
    assert cli.main(["replay", str(run_dir), "--speed", "0"]) == 2
    assert capsys.readouterr().err == (
        "ftgui: speed (--speed): 0.0 is not in (0, 1000] (1 plays in real time, 20 twenty "
        "times faster)\n")
    assert cli.main(["replay", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err == f"ftgui: run_dir: {tmp_path / 'nope'} is not a directory\n"


# ------------------------------------------------------------------------------ a real run
@pytest.mark.tf
def test_a_real_crash_and_recovery_replays_as_it_opens_and_reports(killed_at_25_and_recovered):
    """A real trainer's events (validation, checkpoint stalls, exits as the supervisor writes
    them): killed at step 25, recovered from checkpoint 20 automatically."""
    from ftgui.core.reports import report
    from ftgui.core.timeline.run_figures import read_run

    run_dir, _ = killed_at_25_and_recovered
    now = FakeClock()
    clock = ReplayClock.from_run(run_dir, speed=1000, now=now)
    timeline = Timeline()
    while not clock.done:
        timeline.feed(clock.poll())
        now.now += 0.033
    assert figures(timeline) == figures(opened(run_dir))
    assert [m.kind for m in timeline.markers] == ["crash", "resume"]
    assert timeline.redone[0].start == 20 and timeline.totals().incidents == 1

    saves = [e for e in read_all(run_dir) if e["event"] == "checkpoint_saved"]
    _, run_figures = read_run(run_dir)
    assert run_figures.checkpoints == len(saves) >= 4
    assert run_figures.checkpoint_seconds == pytest.approx(sum(e["stall_seconds"]
                                                               for e in saves))
    text = report.build_report(run_dir)
    assert text.count("<polyline") == 2 and f"{run_figures.checkpoint_seconds:.2f} s" in text
