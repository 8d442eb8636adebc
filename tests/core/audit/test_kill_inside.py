"""Kills inside a checkpoint save and inside an in-memory snapshot: the settings' rules, the
audit's plan of them, the trainer's hook that fires them, and the torn snapshot slot they leave."""

from __future__ import annotations

import signal

import numpy as np
import pytest

from ftgui.core.audit import plan
from ftgui.core.checkpoints import snapshots
from ftgui.core.record import events
from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.supervision import fault_plan
from ftgui.core.supervision.fault_plan import PlannedFault
from ftgui.training.actions import StepOutput
from ftgui.training.actions.fault_hooks import FaultHooks, Faults, KillInside
from ftgui.training.signals import Requests

AUDITED = RunConfig(steps=200, checkpoint_every=20, snapshot_every=10)  # the plan's rules


# ---------------------------------------------------------------- settings
@pytest.mark.parametrize(("settings", "line"), [
    ({"kill_in_save_at_step": 30},
     "kill_in_save_at_step: step 30 gets no checkpoint; use a multiple of checkpoint_every "
     "(20) or the last step"),
    ({"kill_in_snapshot_at_step": 35},
     "kill_in_snapshot_at_step: step 35 gets no snapshot; use a multiple of snapshot_every (10)"),
    ({"kill_in_snapshot_at_step": 40, "snapshot_every": 0},
     "kill_in_snapshot_at_step: needs in-memory snapshots (snapshot_every above 0)"),
    ({"kill_in_save_at_step": 40, "strategy": "multi-worker"},
     "kill_in_save_at_step: needs strategy default, one-device, mirrored, not multi-worker"),
    ({"kill_in_save_at_step": 40, "loop": "fit"},
     "kill_in_save_at_step: the fit loop takes kill faults only; use loop custom"),
])
def test_a_kill_inside_needs_a_save_or_a_snapshot_at_its_step(settings, line):
    with pytest.raises(ConfigError) as raised:
        AUDITED.replace(**settings).validate()
    assert str(raised.value) == line


def test_a_kill_inside_a_snapshot_says_when_every_snapshot_step_gets_a_checkpoint():
    # "needs a snapshot step after the first one" of snapshots every 10 in 60 steps misled:
    # there are such steps, but each also gets a checkpoint (a breaker's audit)
    config = AUDITED.replace(steps=60, checkpoint_every=10, snapshot_every=10)
    assert plan.supported(config, "kill-in-snapshot") == (
        "faults: kill-in-snapshot needs a snapshot step after the first one and before the "
        "last step that gets no checkpoint (--snapshot-every 10 and --checkpoint-every 10 "
        "give none): a checkpoint of the same step would make where the run restarts luck")


def test_kills_inside_go_to_the_chiefs_command_line_and_back():
    config = AUDITED.replace(kill_in_save_at_step=40, kill_in_snapshot_at_step=70)
    config.validate()
    faults = fault_plan.plan(config, ["chief"])
    assert faults == [PlannedFault(40, "kill-in-save", "chief"),
                      PlannedFault(70, "kill-in-snapshot", "chief")]
    assert [fault_plan.parse_arg(f.arg) for f in faults] == [("kill-in-save", 40),
                                                             ("kill-in-snapshot", 70)]


# ---------------------------------------------------------------- the audit's plan
def test_the_audit_kills_inside_a_later_save_with_snapshots_off_and_inside_a_later_snapshot():
    kinds, left_out = plan.parse_kinds(None, AUDITED)
    assert kinds == ["kill", "preempt", "hang", "nan", "kill-in-save", "kill-in-snapshot"]
    runs = {r.name: r for r in plan.plan(AUDITED, kinds)}
    save, snapshot = runs["kill-in-save"], runs["kill-in-snapshot"]
    # a checkpoint step after the first checkpoint: a valid one is left to restore
    assert save.step % 20 == 0 and 40 <= save.step < 200
    assert (save.config.kill_in_save_at_step, save.config.snapshot_every) == (save.step, 0)
    # a snapshot step after the first snapshot: the other slot holds a valid one
    assert snapshot.step % 10 == 0 and snapshot.step % 20 and 20 <= snapshot.step < 200
    assert (snapshot.config.kill_in_snapshot_at_step, snapshot.config.snapshot_every) == (
        snapshot.step, 10)
    assert all(r.config.auto_recover for r in (save, snapshot))
    assert runs["reference"].config.kill_in_save_at_step == 0


def test_the_kills_inside_leave_the_other_kinds_steps_as_the_seed_gave_them():
    before = plan.plan(AUDITED, ["kill", "preempt", "hang", "nan"])
    after = plan.plan(AUDITED, ["kill", "preempt", "hang", "nan", "kill-in-save",
                                "kill-in-snapshot"])
    assert [r.step for r in after[:5]] == [r.step for r in before]
    assert [r.step for r in after] == [r.step for r in plan.plan(AUDITED, plan.KINDS[:4] + (
        "kill-in-save", "kill-in-snapshot"))]


def test_a_kill_inside_a_snapshot_needs_snapshots():
    with pytest.raises(ConfigError) as raised:
        plan.parse_kinds("kill-in-snapshot", AUDITED.replace(snapshot_every=0))
    assert str(raised.value) == ("faults: kill-in-snapshot: kill_in_snapshot_at_step: needs "
                                 "in-memory snapshots (snapshot_every above 0)")


# ---------------------------------------------------------------- the trainer's side
def test_a_kill_inside_reports_then_kills_at_its_step_only(tmp_path):
    sent = []
    with events.EventWriter(tmp_path, attempt=0) as writer:
        inside = KillInside(Faults([("kill-in-save", 40, "chief")]), writer, sent.append)
        assert inside.planned("kill-in-save", 40)
        assert not inside.planned("kill-in-snapshot", 40)
        inside.fire("kill-in-save", 20)
        inside.fire("kill-in-snapshot", 40)
        assert sent == []
        inside.fire("kill-in-save", 40)
    assert sent == [signal.SIGKILL]
    [fault] = events.read_all(tmp_path)
    assert (fault["event"], fault["kind"], fault["step"], fault["target"], fault["source"]) == (
        "fault_injected", "kill-in-save", 40, "chief", "schedule")


def test_after_a_step_whose_save_holds_a_kill_the_loop_waits_for_that_save(tmp_path):
    waited = []
    with events.EventWriter(tmp_path, attempt=0) as writer:
        hooks = FaultHooks(Faults([("kill-in-save", 40, "chief")]), writer, Requests(),
                           wait_for_save=lambda: waited.append("waited"),
                           send_signal=waited.append)
        hooks(StepOutput(39, 0.5))
        assert waited == []
        hooks(StepOutput(40, 0.5))
    assert waited == ["waited"]  # no signal from here: the save itself kills
    assert hooks.planned_after(39) == [40]


def test_a_torn_snapshot_slot_leaves_the_previous_snapshot_the_newest(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    made = snapshots.SnapshotFile.create(snapshots.snapshot_path(run_dir), 7, 4096, run_dir)
    try:
        old = np.arange(4096, dtype=np.uint8) % 251
        made.write(0, 10, 0.5, old)
        made.write(1, 20, 0.4, old[::-1].copy())
        made.write_partial(0, np.full(4096, 9, dtype=np.uint8), 2048)  # step 30, killed
        opened = snapshots.SnapshotFile.open(snapshots.snapshot_path(run_dir))
        newest = opened.newest()
        assert (newest.index, newest.step) == (1, 20)
        assert opened.slot(0).reason == "empty or being written"
        torn = bytes(opened._data[snapshots._slot_offset(0, 4096) + snapshots.SLOT_HEADER.size:][
            :4096])
        assert torn == bytes([9] * 2048) + old[2048:].tobytes()  # half copied, then killed
    finally:
        made.close()
        snapshots.discard(run_dir)


def test_a_kill_inside_a_snapshot_prefers_a_step_whose_previous_snapshot_beats_the_disk():
    config = RunConfig(steps=200, checkpoint_every=30, snapshot_every=10)
    steps = plan.fault_steps(config, "kill-in-snapshot")
    assert steps[:4] == [20, 50, 80, 110]  # 10 > 0, 40 > 30, …: restored from memory
    assert plan.fault_steps(AUDITED, "kill-in-snapshot")[:3] == [30, 50, 70]
