"""Fault plans: explicit faults by step and target, chaos schedules from a seed, faults fired
read back from events, and the checks on fault settings (no TensorFlow)."""

from __future__ import annotations

import pytest

from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.supervision import fault_plan
from ftgui.core.supervision.fault_plan import PlannedFault


def test_explicit_faults_hit_the_configured_target_by_step():
    config = RunConfig(steps=100, kill_at_step=40, nan_at_step=20, preempt_at_step=60,
                       hang_at_step=80, watchdog_seconds=5, fault_target="chief")
    assert fault_plan.plan(config, ["chief"]) == [
        PlannedFault(20, "nan", "chief"), PlannedFault(40, "kill", "chief"),
        PlannedFault(60, "preempt", "chief"), PlannedFault(80, "hang", "chief"),
    ]
    assert PlannedFault(40, "kill", "worker:1").key == "kill@40:worker:1"


def test_chaos_is_the_same_schedule_for_the_same_seed():
    config = RunConfig(steps=600, chaos_faults=5, chaos_kinds="kill,preempt,nan,hang",
                       chaos_seed=9, watchdog_seconds=3)
    names = ["worker:0", "worker:1"]
    first = fault_plan.plan(config, names)
    assert first == fault_plan.plan(config, names)
    assert len(first) == 5 and len({f.step for f in first}) == 5
    assert all(2 <= f.step < 600 for f in first)
    assert [f.kind for f in first] == ["kill", "hang", "nan", "kill", "preempt"]
    assert all(f.target == "chief" for f in first if f.kind in ("nan", "preempt"))
    assert fault_plan.plan(config.replace(chaos_seed=10), names) != first


def test_fired_faults_are_read_back_from_their_events():
    history = [
        {"event": "fault_injected", "kind": "kill", "step": 35, "target": "chief",
         "source": "schedule"},
        {"event": "fault_injected", "kind": "kill", "step": 50, "target": "chief",
         "source": "user"},
    ]
    assert fault_plan.fired(history) == {"kill@35:chief"}


def test_a_hang_fault_needs_the_watchdog():
    with pytest.raises(ConfigError, match="^watchdog_seconds: a hang fault needs the watchdog"):
        RunConfig(hang_at_step=10).validate()
    with pytest.raises(ConfigError, match="^chaos_kinds: 'boom' is not one of kill, preempt"):
        RunConfig(chaos_faults=2, chaos_kinds="kill,boom").validate()
