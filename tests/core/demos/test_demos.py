"""Guided demos: the demo files parse and validate, a bad file is refused in one line while the
others stay listed, the stage machine follows a run's events and the presenter's keys, and the
demos run to the end their text claims (crash and recover in the window, the others headless,
faults on schedule). `benchmarks/run_demos.py` times them.

The real runs check the pacing rules once, on bad-numerics (the file's pace, each stage on screen
`READING_SECONDS`); the other demos run at full speed (the `unpaced` fixture: pace 0, stages
`FAST_READING` apart) with all their content assertions, so that the suite stays quick."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import json
import math
import shutil
import sys
from pathlib import Path

import pytest
from conftest import alive, of_kind

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from ftgui.core.demos import definitions, results
from ftgui.core.demos.definitions import DemoError
from ftgui.core.demos.session import DemoSession, StageMachine
from ftgui.core.record import events
from ftgui.core.record.incidents import from_events
from ftgui.core.timeline.run_figures import read_run

KEYS = ["bad-numerics", "chaos", "checkpoint-interval", "crash-and-recover",
        "custom-loop-vs-fit", "preemption", "worker-loss"]

GOOD = """
title = "Mine"
[settings]
steps = 300
checkpoint_every = 50
auto_recover = true
[[faults]]
kind = "kill"
step = 120
wait = true
[[stages]]
after = "start"
text = "It starts."
[[stages]]
after = "checkpoint"
wait = true
text = "Press K."
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def builtin(key: str) -> definitions.Demo:
    return definitions.load(definitions.BUILTIN_DIR / f"{key}.toml")


# ------------------------------------------------------------------ files
def test_the_seven_demos_of_the_menu_parse_and_validate():
    found, refused = definitions.discover([definitions.BUILTIN_DIR])
    assert refused == []
    assert sorted(d.key for d in found) == KEYS
    assert [d.order for d in found] == [1, 2, 3, 4, 5, 6, 7]  # the menu's order
    for demo in found:
        for run in range(1, len(demo.runs) + 1):
            demo.config(run).validate()
            demo.config(run, presenter=True).validate()
        for stage in demo.stages:
            sentences = stage.text.count(". ") + 1
            assert 1 <= sentences <= 4, (demo.key, stage.text)
    assert [len(d.runs) for d in found] == [1, 1, 2, 2, 1, 2, 2]


def test_each_demo_sets_what_its_text_is_about():
    crash = builtin("crash-and-recover").config(1)
    assert (crash.kill_at_step, crash.auto_recover) == (650, True)
    assert builtin("preemption").config(1).preempt_at_step == 730
    interval = builtin("checkpoint-interval")
    assert [interval.config(r).checkpoint_every for r in (1, 2)] == [10, 100]
    assert [interval.config(r).kill_at_step for r in (1, 2)] == [395, 395]
    workers = builtin("worker-loss")
    assert [(workers.config(r).strategy, workers.config(r).fault_target) for r in (1, 2)] == [
        ("multi-worker", "worker:1"), ("parameter-server", "worker:1")]
    assert builtin("bad-numerics").config(1).nan_at_step == 420
    assert [builtin("custom-loop-vs-fit").config(r).loop for r in (1, 2)] == ["custom", "fit"]
    chaos = builtin("chaos")
    assert [chaos.config(r).chaos_faults for r in (1, 2)] == [0, 5]
    assert chaos.claims == ("same_final_loss",)


def test_a_presenter_fault_leaves_the_schedule_when_the_presenter_fires_it():
    demo = builtin("crash-and-recover")
    assert demo.config(1, presenter=False).kill_at_step == 650
    assert demo.config(1, presenter=True).kill_at_step == 0  # waits for K


@pytest.mark.parametrize("body, line", [
    (GOOD.replace("steps = 300", "stepz = 300"),
     "bad.toml: settings.stepz: unknown setting"),
    (GOOD.replace("steps = 300", 'steps = "many"'),
     "bad.toml: settings.steps: 'many' is not a whole number"),
    (GOOD.replace("steps = 300", "steps = 300\nkill_at_step = 5"),
     "bad.toml: settings.kill_at_step: schedule faults in [[faults]]"),
    (GOOD.replace('kind = "kill"', 'kind = "kill"\ntarget = "worker:1"'),
     "bad.toml: faults[0].target: fault_target: 'worker:1' does not exist; strategy mirrored "
     "has only chief"),
    (GOOD.replace('kind = "kill"', 'kind = "nan"'),
     "bad.toml: faults[0].wait: a nan fault fires on its schedule only"),
    (GOOD.replace("auto_recover = true", 'auto_recover = true\nloop = "fit"')
     .replace('kind = "kill"\nstep = 120\nwait = true', 'kind = "preempt"\nstep = 120')
     .replace("wait = true\ntext", "text"),
     "bad.toml: faults[0].kind: preempt_at_step: the fit loop takes kill faults only"),
    (GOOD.replace("step = 120", "step = 900"),
     "bad.toml: faults[0].step: kill_at_step: 900 is not a whole number from 0 to 300"),
    (GOOD.replace('after = "checkpoint"', 'after = "lunch"'),
     "bad.toml: stages[1].after: 'lunch' is not one of start, first step"),
    (GOOD.replace("wait = true\ntext", "text"),
     "bad.toml: faults[0].wait: no stage of run 1 has wait = true"),
    (GOOD.replace('title = "Mine"', 'title = "Mine"\ncolour = "red"'),
     "bad.toml: colour: unknown field"),
    (GOOD + "[[[", "bad.toml: not valid TOML"),
])
def test_a_bad_demo_file_is_refused_in_one_line_and_the_others_stay_listed(tmp_path, body,
                                                                           line):
    write(tmp_path, "bad.toml", body)
    write(tmp_path, "good.toml", GOOD)
    found, refused = definitions.discover([tmp_path])
    assert [d.key for d in found] == ["good"]
    [message] = refused
    assert message.startswith(line), message
    assert "\n" not in message
    with pytest.raises(DemoError, match="^bad.toml: "):
        definitions.load(tmp_path / "bad.toml")


def test_a_presenter_adds_demos_in_the_user_config_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(definitions, "user_config_path", lambda app: tmp_path / app)
    assert definitions.user_dir() == tmp_path / "ftgui" / "demos"
    write(definitions.user_dir(), "mine.toml", GOOD)
    found, refused = definitions.discover()
    assert refused == []
    assert [d.key for d in found][-1] == "mine"  # after the built-in seven (order 1000)
    assert len(found) == 8


# ------------------------------------------------------------------ the stage machine
def crash_events() -> list[dict]:
    """A hand-written run: a step, three checkpoints, a kill, a restart, its first step and
    the end."""
    return [
        {"event": "run_started", "attempt": 0},
        {"event": "step", "attempt": 0, "step": 1, "loss": 2.0},
        *({"event": "checkpoint_saved", "attempt": 0, "step": s} for s in (100, 200, 300)),
        {"event": "fault_injected", "attempt": 0, "kind": "kill", "step": 350},
        {"event": "process_exited", "attempt": 0, "role": "chief", "signal": 9,
         "decisive": True},
        {"event": "process_exited", "attempt": 0, "role": "worker", "index": 1, "signal": 9,
         "decisive": False},  # the clean-up of the rest of a cluster counts for nothing
        {"event": "resumed", "attempt": 1, "from_step": 300},
        {"event": "step", "attempt": 1, "step": 301, "loss": 0.5},
        {"event": "run_finished", "attempt": 1, "step": 400},
    ]


def test_the_stage_machine_follows_a_run_and_the_presenters_keys():
    demo = builtin("crash-and-recover")  # start, first step, 3 checkpoints, kill, resume, end
    machine = StageMachine(demo.stages)
    assert machine.current == -1 and machine.stage is None
    stream = crash_events()
    assert machine.begin_run(1) and machine.current == 0
    assert machine.feed(stream[:2]) and machine.current == 1  # first step
    assert machine.waiting_for() == "3 more checkpoints are written"  # the stage counts 3
    assert not machine.feed(stream[2:3]) and machine.waiting_for() == (
        "2 more checkpoints are written")
    assert not machine.feed(stream[3:4]) and machine.current == 1  # two checkpoints
    assert machine.waiting_for() == "the next checkpoint is written"
    assert machine.feed(stream[4:5]) and machine.current == 2  # the third: press K
    assert machine.stage.wait
    assert not machine.feed(stream[5:6])  # the fault alone is no stage
    assert machine.previous() and machine.current == 1  # Page Up
    assert machine.feed(stream[6:8]) and machine.current == 3  # the kill
    # Page Down never shows a stage ahead of the events: its text would tell of a resume
    # that has not happened (a presenter's finding: "Saved at the current step" before the
    # preemption)
    assert not machine.next() and machine.current == 3
    assert machine.waiting_for() == "the first new step comes"
    assert not machine.feed(stream[8:9]) and machine.reached == 3  # restored: no new step yet
    assert machine.feed(stream[9:10]) and machine.reached == machine.current == 4
    assert not machine.next() and machine.waiting_for() == "the demo ends"
    assert machine.finish() and machine.current == 5 and machine.reached == 5
    assert not machine.next() and machine.waiting_for() == ""


def test_page_down_skips_the_reading_time_up_to_the_stage_the_run_reached():
    now = [0.0]
    demo = builtin("crash-and-recover")
    machine = StageMachine(demo.stages, reading_seconds=4.0, clock=lambda: now[0])
    machine.begin_run(1)
    machine.feed(crash_events()[:5])  # first step and three checkpoints: stage 2 reached
    assert machine.reached == 2 and machine.current == 0  # each waits for its reading time
    assert machine.next() and machine.current == 1
    assert machine.next() and machine.current == 2
    assert not machine.next() and machine.waiting_for() == "the process is killed"


def test_every_trigger_has_words_for_what_the_next_stage_waits_for():
    from ftgui.core.demos.definitions import TRIGGERS
    from ftgui.core.demos.session import TRIGGER_WORDS

    assert set(TRIGGER_WORDS) == set(TRIGGERS)


def test_a_long_stage_text_stays_on_screen_in_proportion_to_its_words():
    from ftgui.core.demos.definitions import Stage
    from ftgui.core.demos.session import READING_WORDS

    now = [0.0]
    stages = (Stage(after="start", text=" ".join(["word"] * (2 * READING_WORDS))),
              Stage(after="first step", text="short"), Stage(after="end", text="done"))
    machine = StageMachine(stages, reading_seconds=4.0, clock=lambda: now[0])
    machine.begin_run(1)
    machine.feed([{"event": "step", "attempt": 0, "step": 1}])  # at once, on a spare
    assert machine.current == 0
    now[0] = 7.9  # twice the words: twice the 4 s
    assert not machine.tick() and machine.current == 0
    now[0] = 8.0
    assert machine.tick() and machine.current == 1
    assert machine.reading_time(1) == 4.0  # a short one still gets the 4 s


def test_stages_of_a_second_run_wait_for_it():
    demo = builtin("checkpoint-interval")  # start, kill | run 2: start, kill | end
    machine = StageMachine(demo.stages)
    machine.begin_run(1)
    machine.feed([{"event": "process_exited", "attempt": 0, "role": "chief", "signal": 9,
                   "decisive": True}])
    assert machine.current == 1
    machine.feed([{"event": "resumed", "attempt": 1, "from_step": 390},
                  {"event": "process_exited", "attempt": 1, "role": "chief", "signal": 9,
                   "decisive": True}])  # a second kill in run 1 is not run 2's
    assert machine.current == 1
    machine.begin_run(2)
    assert machine.current == 2
    machine.feed([{"event": "process_exited", "attempt": 0, "role": "chief", "signal": 9,
                   "decisive": True}])
    assert machine.current == 3
    machine.finish()
    assert machine.current == 4


def test_a_session_gives_each_run_a_fresh_folder_named_after_the_demo(tmp_path):
    demo = builtin("checkpoint-interval")
    session = DemoSession(demo, tmp_path, stamp="20260101-120000")
    assert [d.name for d in session.run_dirs] == [
        "demo-checkpoint-interval-20260101-120000-checkpoint-every-10",
        "demo-checkpoint-interval-20260101-120000-checkpoint-every-100"]
    session.run_dirs[0].mkdir()  # taken: the next showing gets -2
    again = DemoSession(demo, tmp_path, stamp="20260101-120000")
    assert [d.name[-5:] for d in again.run_dirs] == ["-10-2", "100-2"]
    first = session.next_run()
    assert first == (session.run_dirs[0], demo.config(1)) and session.machine.current == 0
    assert session.next_run()[1].checkpoint_every == 100
    assert session.next_run() is None


def test_the_presenter_is_asked_for_k_at_the_waiting_stage_only(tmp_path):
    demo = builtin("crash-and-recover")
    session = DemoSession(demo, tmp_path, presenter=True)
    session.next_run()
    stream = crash_events()
    session.feed(stream[:4])
    assert session.pending_wait() is None  # two checkpoints: not yet
    session.feed(stream[4:5])
    fault = session.pending_wait()
    assert (fault.kind, fault.target, fault.describe()) == ("kill", "chief", "kill the chief")
    session.machine.previous()
    assert session.pending_wait() is None  # paged back: no prompt
    session.machine.next()
    session.mark_fired(fault)
    assert session.pending_wait() is None  # fired once
    on_schedule = DemoSession(demo, tmp_path, presenter=False)
    on_schedule.next_run()
    on_schedule.feed(stream[:5])
    assert on_schedule.pending_wait() is None  # it fires on its step


# ------------------------------------------------------------------ claims, on written events
def write_run(run_dir: Path, rows: list[dict]) -> Path:
    run_dir.mkdir(parents=True)
    with open(run_dir / events.EVENTS_FILE, "w") as handle:
        for t, row in enumerate(rows):
            handle.write(json.dumps({"time": 1000.0 + t, "attempt": 0, **row}) + "\n")
    return run_dir


def test_a_preemption_claim_holds_only_when_the_first_new_step_is_the_next(tmp_path):
    def run(name, first_new):
        return write_run(tmp_path / name, [
            {"event": "step", "step": 7, "loss": 1.0},
            {"event": "preempted", "step": 7},
            {"event": "resumed", "attempt": 1, "from_step": 7},
            {"event": "step", "attempt": 1, "step": first_new, "loss": 0.9},
        ])

    good = run("good", 8)
    seen = events.read_all(good)
    assert results.no_step_lost_on_preemption(seen, good) == (
        True, "saved at step 7, first new step 8")
    bad = run("bad", 6)
    assert results.no_step_lost_on_preemption(events.read_all(bad), bad)[0] is False


def test_redone_steps_must_repeat_their_losses_to_the_bit(tmp_path):
    rows = [{"event": "step", "step": s, "loss": 1.0 / s} for s in (1, 2, 3)]
    again = [{"event": "step", "attempt": 1, "step": s, "loss": 1.0 / s} for s in (2, 3, 4)]
    same = write_run(tmp_path / "same", rows + again)
    assert results.redone_steps_identical(events.read_all(same), same) == (
        True, "2 redone steps, the same losses to the bit")
    again[1]["loss"] = 1.0 / 3 + 1e-16 * 4
    other = write_run(tmp_path / "other", rows + again)
    assert results.redone_steps_identical(events.read_all(other), other) == (
        False, "1 of 2 redone steps differ (first: 3)")



def test_absorbed_worker_loss_says_how_many_workers_and_restarts_in_words():
    """It read "1 worker(s) lost, 1 attempt(s)" on the demo's last stage."""
    lost = {"event": "process_exited", "role": "worker", "index": 1, "signal": 9, "attempt": 0}
    once = [{"event": "run_started", "attempt": 0}, lost, {"event": "step", "attempt": 0}]
    assert results.absorbed_worker_loss(once, None) == (True, "1 worker lost, no restart")
    twice = [*once, dict(lost, index=0), {"event": "step", "attempt": 1}]
    assert results.absorbed_worker_loss(twice, None) == (False, "2 workers lost, 1 restart")


def test_the_claims_name_their_run_only_where_a_demo_has_more_than_one():
    """A one-run demo's claims each ended "(crash-and-recover)", the demo's own name, three
    times in the end panel (a presenter's finding); a demo of two runs names them."""
    one = [results.Claim("finished", ("crash-and-recover",), True, "step 1200 of 1200"),
           results.Claim("redone_steps_identical", ("crash-and-recover",), False, "1 of 2")]
    assert results.summary(one) == "✓ finished: step 1200 of 1200\n✗ redone steps identical: 1 of 2"
    two = [results.Claim("finished", ("every-10",), True, "step 300"),
           results.Claim("fewer_redone", ("every-10", "every-100"), True, "4 < 40")]
    assert results.summary(two) == ("✓ finished (every-10): step 300\n"
                                    "✓ fewer redone (every-10, every-100): 4 < 40")

# ------------------------------------------------------------------ the menu (no training)
def test_the_demo_menu_lists_the_demos_and_names_a_refused_file(window, tmp_path):
    from PySide6.QtWidgets import QMenu

    menu = window.findChild(QMenu, "demoMenu")
    titles = [a.text() for a in menu.actions()]
    assert titles[:7] == [d.title for d in definitions.discover([definitions.BUILTIN_DIR])[0]]
    write(tmp_path / "mine", "broken.toml", GOOD.replace("steps = 300", "stepz = 300"))
    write(tmp_path / "mine", "good.toml", GOOD)
    window.demos.folders = [definitions.BUILTIN_DIR, tmp_path / "mine"]
    window.demos.reload()
    actions = menu.actions()
    assert "Mine" in [a.text() for a in actions]
    [refused] = [a for a in actions if a.objectName() == "demoRefused"]
    assert refused.text().startswith("refused: broken.toml: settings.stepz: unknown setting")
    assert not refused.isEnabled()
    assert window.demos.next_action.shortcut().toString() == "PgDown"
    assert window.demos.previous_action.shortcut().toString() == "PgUp"
    assert window.demos.fire_action.shortcut().toString() == "K"
    assert not window.demos.fire_action.isEnabled()  # nothing waits


def test_the_demo_panel_stays_in_the_presentation_view(window):
    window.demos.dock.show()
    window.set_presenting(True)
    assert window.demos.dock.isVisible()
    assert window.demos.panel.text.font().pixelSize() == 24
    window.set_presenting(False)
    assert window.demos.panel.text.font().pixelSize() == 15


def test_k_fires_the_fault_the_demo_waits_for(window, tmp_path, monkeypatch):
    """K fires the fault only once training holds at the fault's step and the warm standby
    is ready (before, K pressed is remembered and said); a K pressed at once used to kill
    wherever the trainer was, 40-60 steps past the step on screen."""
    fired = []
    monkeypatch.setattr(window.controller, "kill", lambda target: fired.append(target) or True)
    from ftgui.core.supervision.supervisor import Supervisor

    supervisor = Supervisor(tmp_path / "watched")  # held and ready set by hand below
    ready = []
    monkeypatch.setattr(supervisor, "standby_ready", lambda: bool(ready))
    monkeypatch.setattr(window.controller, "supervisor", supervisor)
    menu = window.demos
    menu.session = DemoSession(builtin("crash-and-recover"), tmp_path, presenter=True)
    menu.session.next_run()
    assert menu.session.holds_of(1) == {650: "presenter"}
    menu.session.feed(crash_events()[:4])
    menu._show()
    assert not menu.fire_action.isEnabled() and menu.panel.prompt.isHidden()
    menu.session.feed(crash_events()[4:5])  # the third checkpoint: the waiting stage
    menu._show()
    assert menu.panel.stage_label.text() == "stage 3 of 6"
    assert menu.panel.prompt.text() == (
        "Press K when ready: kill the chief (training will hold at step 650).")
    assert menu.fire_action.isEnabled()
    menu.fire_action.trigger()
    assert fired == []  # training has not reached 650 yet
    assert menu.panel.prompt.text() == (
        "K pressed: kill the chief at step 650, once training is there.")
    supervisor.held = (650, "presenter")
    menu.tick()
    assert fired == []
    assert menu.panel.prompt.text() == (
        "K pressed: kill the chief once the warm standby has imported TensorFlow.")
    ready.append(True)
    menu.tick()
    assert fired == ["chief"]
    assert menu.panel.prompt.isHidden() and not menu.fire_action.isEnabled()
    menu.session.feed(crash_events()[5:8])  # the kill's events
    menu._show()
    assert menu.panel.stage_label.text() == "stage 4 of 6"
    menu.previous_action.trigger()  # Page Up
    assert menu.panel.stage_label.text() == "stage 3 of 6"
    menu.next_action.trigger()  # Page Down
    assert menu.panel.stage_label.text() == "stage 4 of 6"


STAND_IN = """
import sys, time
from ftgui.core.record.events import EventWriter
if "--fork-server" in sys.argv:  # asked to be the fork server: it cannot fork trainers
    sys.exit(1)
events = EventWriter(sys.argv[sys.argv.index("ftgui.training") + 1], 0)
events.emit("training_started", role="chief", index=0, start_step=0, strategy="mirrored")
for step in range(1, 31):
    events.emit("step", step=step, loss=1.0 / step)
    if step % 10 == 0:
        events.emit("checkpoint_saved", step=step, path=f"checkpoints/ckpt-{step}")
    time.sleep(0.01)
events.emit("run_finished", step=30, loss=1.0 / 30)
"""

TWO_RUNS = """
title = "Two runs"
claims = ["fewer_steps_redone_first"]
[settings]
steps = 30
[[runs]]
name = "first"
settings = { checkpoint_every = 10 }
claims = ["finished"]
[[runs]]
name = "second"
settings = { checkpoint_every = 15 }
claims = ["finished"]
[[stages]]
after = "checkpoint"
text = "Run one saved."
[[stages]]
after = "run end"
run = 2
text = "Run two is done."
[[stages]]
after = "end"
text = "Both are done."
"""


def _stand_in_trainer(tmp_path, monkeypatch) -> None:
    """The window's supervisors start `STAND_IN` (no TensorFlow) as their trainer."""
    import functools

    from ftgui.core.supervision.supervisor import Supervisor
    from ftgui.qt.window import controller

    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    launcher = tmp_path / "stand-in-python"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    launcher.chmod(0o755)
    monkeypatch.setattr(controller, "Supervisor",
                        functools.partial(Supervisor, python=str(launcher)))


def test_a_demo_of_two_runs_plays_in_the_window_and_gives_the_panel_back(
        window, qtbot, tmp_path, monkeypatch):
    """A stand-in trainer (no TensorFlow) behind the window's supervisor: the demo's two runs
    start one after the other in their own folders, the panel follows them, the comparison
    opens at the end, and the settings panel shows what it showed before."""
    _stand_in_trainer(tmp_path, monkeypatch)
    window.panel.set_config(window.panel.config().replace(steps=777, learning_rate=0.002))
    before, run_dir_text = window.panel.config(), window.panel.run_dir_edit.text()
    window.demos.runs_root = tmp_path / "runs"
    window.demos.reading_seconds = 0.0  # each stage as soon as reached (see the paced test)
    demo = definitions.parse(tomllib.loads(TWO_RUNS), Path("two-runs.toml"))
    assert window.demos.start(demo, presenter=False)
    session = window.demos.session
    assert window.panel.config().steps == 30  # the demo's settings, shown while it runs
    qtbot.waitUntil(lambda: session.ended, timeout=60_000)

    assert [d.name.rsplit("-", 1)[-1] for d in session.run_dirs] == ["first", "second"]
    assert all((d / events.EVENTS_FILE).is_file() for d in session.run_dirs)
    assert window.demos.panel.stage_label.text() == "stage 3 of 3"
    assert window.demos.panel.text.text() == "Both are done."
    result = window.demos.panel.result.text().splitlines()
    assert result[:2] == ["✓ finished (first): finished at step 30",
                          "✓ finished (second): finished at step 30"]
    assert result[2].startswith("✗ fewer steps redone first (first, second): 0 vs 0 steps")
    assert window.run_history.compare_view.isVisible()
    assert window.panel.config() == before  # nothing of the demo leaks into the next run
    assert window.panel.run_dir_edit.text() == run_dir_text
    assert window.settings.value("last_config") is None  # nor into the next launch
    assert not window.demos.stop_action.isEnabled()


def test_a_finished_run_stays_on_screen_before_the_demo_s_next_run_starts(
        window, qtbot, tmp_path, monkeypatch):
    """The room reads the first run's ending (its banner, its curve) before the next run
    clears the plot: the next starts the stages' reading time after (at most
    BETWEEN_RUNS_SECONDS), not the moment the first is over."""
    from ftgui.qt.demos import menu as menu_module

    _stand_in_trainer(tmp_path, monkeypatch)
    window.demos.runs_root = tmp_path / "runs"
    window.demos.reading_seconds = 1.0
    monkeypatch.setattr(menu_module, "BETWEEN_RUNS_SECONDS", 1.5)
    demo = definitions.parse(tomllib.loads(TWO_RUNS), Path("two-runs.toml"))
    assert window.demos.start(demo, presenter=False)
    session = window.demos.session
    first, second = session.run_dirs
    qtbot.waitUntil(lambda: (second / events.EVENTS_FILE).is_file(), timeout=60_000)
    ended = max(e["time"] for e in events.read_all(first))
    began = min(e["time"] for e in events.read_all(second))
    assert began - ended >= 1.0  # min(1.5, the reading time)
    qtbot.waitUntil(lambda: session.ended, timeout=60_000)


def test_the_last_stage_shows_at_the_end_even_if_the_presenter_never_pressed_k():
    machine = StageMachine(builtin("crash-and-recover").stages)
    machine.begin_run(1)
    machine.feed(crash_events()[:5])
    assert machine.current == 2
    assert machine.finish() and machine.current == 5


# ------------------------------------------------------------------ real runs (TensorFlow)
FAST_READING = 0.05  # seconds a stage stays on screen in an unpaced test: still one at a time


def full_speed(monkeypatch, runs: set[int] | None = None) -> None:
    """Runs `runs` (1-based; None: all) of every demo at full speed (pace 0 = as fast as
    possible), for tests only: what a demo does (faults, recoveries, losses, claims) does not
    depend on its pace (a paced run has the losses of a full-speed one: test_training's paced
    test); the pace and the reading time are checked on one demo, bad-numerics."""
    config = definitions.Demo.config

    def maybe_unpaced(self, run, presenter=False):
        paced = config(self, run, presenter)
        return paced if runs is not None and run not in runs else paced.replace(pace=0.0)

    monkeypatch.setattr(definitions.Demo, "config", maybe_unpaced)


@pytest.fixture
def unpaced(monkeypatch):
    """Every run of a demo at full speed (`full_speed`)."""
    full_speed(monkeypatch)


@pytest.mark.tf
def test_crash_and_recover_runs_to_its_end_in_the_window(window, qtbot, tmp_path, unpaced):
    """Faults on schedule: the kill at 650, recovery from checkpoint 600, the redone steps
    repeat their losses; the panel and the remembered settings are as before."""
    before = window.panel.config()
    run_dir_text = window.panel.run_dir_edit.text()
    remembered = window.settings.value("last_config")
    window.demos.runs_root = tmp_path / "runs"
    demo = builtin("crash-and-recover")
    assert window.demos.start(demo, presenter=False)
    session = window.demos.session
    assert window.demos.dock.isVisible()
    assert window.panel.config().kill_at_step == 650  # shown while it runs
    qtbot.waitUntil(lambda: session.ended, timeout=280_000)

    [run_dir] = session.run_dirs
    assert run_dir.parent == tmp_path / "runs"
    assert run_dir.name.startswith("demo-crash-and-recover-")
    seen = events.read_all(run_dir)
    [resumed] = of_kind(seen, "resumed")
    assert resumed["from_step"] == 600
    assert of_kind(seen, "run_finished")[0]["step"] == 1200
    assert session.machine.reached == len(demo.stages) - 1
    result = window.demos.panel.result.text()
    assert result.count("✓") == 3 and "✗" not in result
    assert window.panel.config() == before  # nothing leaks into the next run
    assert window.panel.run_dir_edit.text() == run_dir_text
    assert window.settings.value("last_config") == remembered
    shutil.rmtree(run_dir)


@pytest.mark.tf
def test_preemption_resumes_at_the_next_step_headless(tmp_path, unpaced):
    demo = builtin("preemption")
    outcome = results.run_demo(demo, tmp_path)
    [run_dir] = outcome.run_dirs
    seen = events.read_all(run_dir)
    [preempted] = of_kind(seen, "preempted")
    assert preempted["step"] == 730
    first_new = [e["step"] for e in of_kind(seen, "step") if e["attempt"] == 1][0]
    assert first_new == 731  # S + 1: no step lost, none redone
    steps = [e["step"] for e in of_kind(seen, "step")]
    assert steps == list(range(1, 1201))
    assert outcome.holds, results.summary(outcome.claims)
    assert outcome.stages_reached == len(demo.stages)


def run_to_end(key: str, tmp_path, reading_seconds: float = FAST_READING
               ) -> tuple[results.DemoOutcome, list[list[dict]]]:
    """Demo `key` run headless to its end, faults on schedule: every claim held, every stage
    reached, in order, and each on screen `reading_seconds` (the paced test gives
    `READING_SECONDS`); the events of each run, and no process of any run left alive."""
    demo = builtin(key)
    outcome = results.run_demo(demo, tmp_path, reading_seconds=reading_seconds)
    assert outcome.holds, results.summary(outcome.claims)
    assert outcome.stages_reached == len(demo.stages)
    assert [stage for stage, _ in outcome.shown] == list(range(len(demo.stages)))
    assert all(seconds >= reading_seconds for _, seconds in shown_seconds(outcome.shown))
    assert len(outcome.run_dirs) == len(demo.runs)
    seen = [events.read_all(run_dir) for run_dir in outcome.run_dirs]
    for run in seen:
        started = of_kind(run, "process_started") + of_kind(run, "standby_ready")
        assert alive([e["pid"] for e in started]) == []
    return outcome, seen


def first_new_step(seen: list[dict], attempt: int) -> int:
    return [e["step"] for e in of_kind(seen, "step") if e["attempt"] == attempt][0]


@pytest.mark.tf
def test_the_checkpoint_interval_demo_redoes_fewer_steps_with_more_checkpoints(tmp_path, unpaced):
    outcome, (every_10, every_100) = run_to_end("checkpoint-interval", tmp_path)
    assert [e["from_step"] for e in of_kind(every_10, "resumed")] == [390]
    assert [e["from_step"] for e in of_kind(every_100, "resumed")] == [300]
    assert len(of_kind(every_10, "checkpoint_saved")) == 60
    assert len(of_kind(every_100, "checkpoint_saved")) == 6
    assert events.final_losses(every_100)[600] == events.final_losses(every_10)[600]


@pytest.mark.tf
def test_the_worker_loss_demo_restarts_the_synchronous_cluster_only(tmp_path, unpaced):
    outcome, (synchronous, parameter_server) = run_to_end("worker-loss", tmp_path)
    [fault] = of_kind(synchronous, "fault_injected")
    assert (fault["kind"], fault["target"], fault["step"]) == ("kill", "worker:1", 250)
    [resumed] = of_kind(synchronous, "resumed")
    # just in time: the survivor saved the last completed step (249 if its own 250 was cut)
    assert resumed["attempt"] == 1 and resumed["from_step"] in (249, 250)
    assert of_kind(synchronous, "run_finished")[0]["step"] == 400

    starts = of_kind(parameter_server, "process_started")
    assert [(e["role"], e["index"], e["restarts"]) for e in starts] == [
        ("chief", 0, 0), ("worker", 0, 0), ("worker", 1, 0), ("ps", 0, 0), ("worker", 1, 1),
    ]
    assert {e["attempt"] for e in parameter_server} == {0}  # the coordinator never restarted
    # the coordinator held at 250 until the kill: it lands at the step asked for, not at the
    # end of a 100-step block (300)
    [fault] = of_kind(parameter_server, "fault_injected")
    assert (fault["target"], fault["step"]) == ("worker:1", 250)
    before = parameter_server[:parameter_server.index(fault)]
    assert max(e["step"] for e in of_kind(before, "step")) == 250
    [held] = of_kind(parameter_server, "held")
    assert (held["role"], held["step"], held["why"]) == ("chief", 250, "worker:1")
    [finished] = of_kind(parameter_server, "run_finished")
    assert finished["step"] == 400
    [lost] = [e for e in of_kind(parameter_server, "process_exited", role="worker", index=1,
                                 signal=9) if e["time"] < finished["time"]]
    assert lost["decisive"] is False and lost["time"] < starts[-1]["time"]
    losses = events.final_losses(parameter_server)
    assert sorted(losses) == list(range(1, 401))
    # asynchronous training: every step trained to a number (not necessarily a falling one)
    assert all(math.isfinite(loss) for loss in losses.values())


@pytest.mark.tf
def test_the_bad_numerics_demo_rolls_the_nan_back_in_process_at_its_pace(tmp_path):
    """The one demo run at its file's pace (the others: `unpaced`): each stage stays on screen
    `READING_SECONDS`, and the steps go at most at the file's pace."""
    from ftgui.core.demos.session import READING_SECONDS

    outcome, [seen] = run_to_end("bad-numerics", tmp_path, reading_seconds=READING_SECONDS)
    pace = builtin("bad-numerics").config(1).pace
    mono: dict[int, float] = {}  # when each step was first logged (the rollback redoes some)
    for e in of_kind(seen, "step", attempt=0):
        mono.setdefault(e["step"], e["mono"])
    assert mono[419] - mono[1] >= 418 / pace
    [poisoned] = [e for e in of_kind(seen, "step") if e["loss"] is None]
    assert poisoned["step"] == 420
    [rollback] = of_kind(seen, "rolled_back")
    assert (rollback["from_step"], rollback["to_step"], rollback["source"]) == (
        420, 419, "memory")  # the snapshot of the step before
    assert len(of_kind(seen, "process_started")) == 1
    assert of_kind(seen, "run_finished")[0]["step"] == 800
    assert math.isfinite(events.final_losses(seen)[800])


@pytest.mark.tf
def test_the_fit_demo_resumes_the_custom_loop_at_its_step_and_fit_at_the_epoch(tmp_path, unpaced):
    outcome, (custom, fit) = run_to_end("custom-loop-vs-fit", tmp_path)
    [resumed] = of_kind(custom, "resumed")
    assert resumed["from_step"] == 150 and first_new_step(custom, 1) == 151
    # digits: 1,437 training examples / 64 = 22 steps per epoch; step 153 is in epoch 7
    [resumed] = of_kind(fit, "resumed")
    assert (resumed["attempt"], resumed["from_step"]) == (1, 132)  # not 150: the epoch start
    assert "epoch" in resumed["restores"]
    assert first_new_step(fit, 1) == 133
    [incident] = from_events(fit).incidents
    assert incident.steps_lost == 153 - 132
    saved = sorted(p.name for p in (outcome.run_dirs[1] / "fit-checkpoints").iterdir())
    assert saved[-1] == "epoch-010.weights.h5"  # 220 steps = 10 epochs
    assert of_kind(fit, "run_finished")[0]["step"] == 220
    # each epoch file is one of the run's checkpoints: the comparison said "model.fit: 0
    # checkpoints" (the crashed attempt's epochs 1-6, then 7-10)
    files = [e["path"] for e in of_kind(fit, "checkpoint_saved")]
    assert files == [f"fit-checkpoints/epoch-{n:03d}.weights.h5" for n in range(1, 11)]
    assert all(e["stall_seconds"] > 0 for e in of_kind(fit, "checkpoint_saved"))
    _, figures = read_run(outcome.run_dirs[1])
    assert figures.checkpoints == 10 and figures.checkpoint_seconds > 0


@pytest.mark.tf
def test_the_chaos_demo_ends_with_the_weights_of_the_uninterrupted_run(tmp_path, monkeypatch):
    # The reference run at full speed; the chaos run at its file's pace: at full speed the
    # holds wait as long for each warm standby, and on a loaded machine its 3 s watchdog took
    # the first checkpoint's stall (step 10, at full speed) for a hang.
    full_speed(monkeypatch, runs={1})
    outcome, (uninterrupted, chaos) = run_to_end("chaos", tmp_path)
    # seed 9 plans kill@143, hang@192, nan@275, kill@384, preempt@476
    fired = [(e["kind"], e["step"]) for e in of_kind(chaos, "fault_injected")]
    assert fired == [("kill", 143), ("hang", 192), ("nan", 275), ("kill", 384),
                     ("preempt", 476)]
    assert len(of_kind(chaos, "hang_detected")) == 1
    incidents = from_events(chaos).incidents
    # snapshots every step (the default): a kill or a hang resumes at its own step; a NaN
    # rolls back to the snapshot of the step before it
    assert [(i.kind, i.step, i.resumed_step) for i in incidents] == [
        ("kill", 143, 143), ("hang", 192, 192), ("nan", 275, 274), ("kill", 384, 384),
        ("preempt", 476, 476),
    ]
    assert all(i.closed for i in incidents)
    reference, losses = events.final_losses(uninterrupted), events.final_losses(chaos)
    assert sorted(losses) == list(range(1, 601))
    assert all(losses[s] == reference[s] for s in range(1, 601))  # to the bit
    restarted = of_kind(chaos, "process_started")[1:]
    assert len(restarted) == 4 and any(e["standby"] for e in restarted)


def shown_seconds(shown: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """(stage, seconds on screen) of each stage shown but the last, from a machine's log."""
    pairs = zip(shown[:-1], shown[1:], strict=True)
    return [(stage, after - when) for (stage, when), (_, after) in pairs]


def test_in_a_paced_demo_each_stage_stays_on_screen_a_reading_time():
    """Events that reach a stage every 0.4 s (as the crash stages came before pace and
    holds) still leave each stage READING_SECONDS on screen, in order, none skipped; Page
    Down moves on at once."""
    from ftgui.core.demos.session import READING_SECONDS

    clock = [0.0]
    demo = builtin("crash-and-recover")
    session = DemoSession(demo, Path("/nonexistent"), reading_seconds=READING_SECONDS,
                          clock=lambda: clock[0])
    session.machine.begin_run(1)
    stream = crash_events()
    for event in stream:
        session.feed([event])
        clock[0] += 0.4
        session.machine.tick()
    session.finish()
    while not session.machine.caught_up:
        clock[0] += 0.1
        session.machine.tick()
    shown = session.machine.shown
    assert [stage for stage, _ in shown] == list(range(len(demo.stages)))
    assert all(seconds >= READING_SECONDS for _, seconds in shown_seconds(shown))
    assert session.machine.previous() and session.machine.current == len(demo.stages) - 2
    assert session.machine.next() and session.machine.shown[-1] == (len(demo.stages) - 1,
                                                                   clock[0])


def test_every_demo_file_sets_a_watchable_pace():
    for key in KEYS:
        demo = builtin(key)
        for run in range(1, len(demo.runs) + 1):
            assert 5 <= demo.config(run).pace <= 60, (key, run)


def test_faults_of_a_demo_with_a_warm_standby_wait_for_it(tmp_path):
    """Chaos (seed 9: kill@143, hang@192, nan@275, kill@384, preempt@476) holds before each
    fault that restarts a process until the standby is ready: at a kill's or hang's step,
    and before a preemption's step (it is asked for before that step runs); the NaN rolls
    back in process and does not wait. The uninterrupted run keeps no standby: no hold."""
    session = DemoSession(builtin("chaos"), tmp_path)
    assert session.holds_of(1) == {}
    assert session.holds_of(2) == {143: "standby", 192: "standby", 384: "standby",
                                   475: "standby"}
    presenter = DemoSession(builtin("crash-and-recover"), tmp_path, presenter=True)
    assert presenter.holds_of(1) == {650: "presenter"}
    rehearsal = DemoSession(builtin("crash-and-recover"), tmp_path)
    assert rehearsal.holds_of(1) == {650: "standby"}  # on schedule: waits for the standby only


def test_page_down_at_a_waiting_stage_fires_the_fault(window, tmp_path, monkeypatch):
    """A clicker has Page Down, not K: at the waiting stage Page Down does what K does, held
    there or not yet (a presenter's Page Down before the hold used to show the next stage's
    text of a fault that never came, and then neither key fired it); elsewhere it shows the
    next stage the run has reached, and says what the next one waits for where there is
    none."""
    from ftgui.core.supervision.supervisor import Supervisor

    fired = []
    monkeypatch.setattr(window.controller, "kill", lambda target: fired.append(target) or True)
    supervisor = Supervisor(tmp_path / "watched")
    monkeypatch.setattr(supervisor, "standby_ready", lambda: True)
    monkeypatch.setattr(window.controller, "supervisor", supervisor)
    menu = window.demos
    menu.session = DemoSession(builtin("crash-and-recover"), tmp_path, presenter=True)
    menu.session.next_run()
    menu.session.feed(crash_events()[:5])
    menu._show()
    assert menu.panel.stage_label.text() == "stage 3 of 6"
    menu.next_action.trigger()  # before training holds at 650
    assert fired == [] and menu.panel.stage_label.text() == "stage 3 of 6"
    assert menu.panel.prompt.text() == (
        "K pressed: kill the chief at step 650, once training is there.")
    supervisor.held = (650, "presenter")
    menu.tick()
    assert fired == ["chief"]
    assert menu.panel.stage_label.text() == "stage 3 of 6"  # the kill's stage comes by itself
    menu.next_action.trigger()  # the kill has not been seen yet: nothing to show
    assert fired == ["chief"] and menu.panel.stage_label.text() == "stage 3 of 6"
    assert menu.panel.prompt.text() == "The next stage comes once the process is killed."
    menu.session.feed(crash_events()[5:8])  # the kill's events
    menu._show()
    assert menu.panel.stage_label.text() == "stage 4 of 6" and menu.panel.prompt.isHidden()


def test_k_after_the_end_fires_nothing_and_says_so(window, tmp_path, monkeypatch):
    """A K pressed once the demo's run had ended did nothing and showed nothing (the action
    was off and the status bar is hidden while presenting): the panel now says so."""
    fired = []
    monkeypatch.setattr(window.controller, "kill", lambda target: fired.append(target) or True)
    window.set_presenting(True)
    menu = window.demos
    menu.session = DemoSession(builtin("crash-and-recover"), tmp_path, presenter=True)
    menu.session.next_run()
    menu.session.feed(crash_events()[:5])  # at the waiting stage, never pressed
    menu.session.finish()
    menu._show()
    assert menu.fire_action.isEnabled()
    assert not menu.stop_action.isEnabled() and not menu.panel.stop_button.isEnabled()
    menu.fire_action.trigger()
    assert fired == []
    assert menu.panel.prompt.text() == "The run has ended: K fires nothing now."
    assert not menu.panel.prompt.isHidden()
    menu._show()  # a later stage's text keeps the note
    assert menu.panel.prompt.text() == "The run has ended: K fires nothing now."
