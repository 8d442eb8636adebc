"""A fully warm standby: built and traced before its order, it trains exactly as a cold start
would; when the run's configuration changed since it was built, it starts cold instead."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from conftest import of_kind

from ftgui.core.record import events
from ftgui.core.settings import config as configmod
from ftgui.core.supervision.trainer_command import standby_argv, trainer_args


def _ready_standby(run_dir, log_path):
    """Start a standby of `run_dir` and wait for its `standby_ready` event."""
    log = open(log_path, "wb")
    standby = subprocess.Popen(standby_argv(run_dir, sys.executable), stdin=subprocess.PIPE,
                               stdout=log, stderr=subprocess.STDOUT)
    reader = events.EventReader(run_dir)
    while True:
        ready = [e for e in reader.read_new() if e["event"] == "standby_ready"]
        if ready:
            return standby, ready[0]
        if standby.poll() is not None:
            raise AssertionError(f"standby ended: {log_path.read_text()}")
        time.sleep(0.2)


def _order(standby, run_dir, log_path, attempt: int = 1, faults=()) -> str:
    """Give `standby` its order (attempt `attempt` of `run_dir`, the planned `faults`), wait
    for it to end and return its log; AssertionError with the log if it failed."""
    order = {"argv": trainer_args(run_dir, attempt=attempt, faults=faults), "env": {}}
    standby.stdin.write((json.dumps(order) + "\n").encode())
    standby.stdin.close()
    code = standby.wait(timeout=600)
    log = log_path.read_text()
    assert code == 0, f"the standby exited with {code}:\n{log}"
    return log


@pytest.mark.tf
def test_a_prepared_standby_trains_to_the_bit_as_a_cold_start(
    fresh_copy_of_baseline, baseline_losses, tmp_path
):
    run_dir = fresh_copy_of_baseline
    standby, ready = _ready_standby(run_dir, tmp_path / "standby.log")
    assert ready["prepared"] is True and ready["prepare_seconds"] > 0

    log = _order(standby, run_dir, tmp_path / "standby.log")

    seen = events.read_all(run_dir)
    [started] = of_kind(seen, "training_started")
    assert started["pid"] == standby.pid
    assert "standby: activated" in log and "starting cold" not in log
    # its warm-up step was undone: the run from step 0 is the cold run, every loss to the bit
    assert events.final_losses(seen) == baseline_losses


@pytest.mark.tf
def test_a_standby_ordered_before_it_is_ready_skips_its_warm_up_and_trains_to_the_bit(
    fresh_copy_of_baseline, baseline_losses, tmp_path
):
    """The order is on stdin before the imports end (a second kill right after a restart
    takes the replacement standby while it imports): it builds as a cold start would, without
    the warm-up step, restore and shadow copy that only save time after a later order (the
    ResNet's second restart took 13-15 s with them, 7.5-7.8 s without, 2026-12-06)."""
    run_dir = fresh_copy_of_baseline
    log_path = tmp_path / "standby.log"
    with open(log_path, "wb") as log:
        standby = subprocess.Popen(standby_argv(run_dir, sys.executable),
                                   stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)

    text = _order(standby, run_dir, log_path)

    assert "ordered or dismissed before it was ready" in text and "and tracing" not in text
    seen = events.read_all(run_dir)
    [ready] = of_kind(seen, "standby_ready")
    assert ready["prepared"] is False and ready["prepare_seconds"] is None
    [started] = of_kind(seen, "training_started")
    assert started["pid"] == standby.pid
    assert events.final_losses(seen) == baseline_losses


@pytest.mark.tf
def test_a_standby_dismissed_while_it_imports_builds_nothing(fresh_copy_of_baseline, tmp_path):
    run_dir = fresh_copy_of_baseline
    log_path = tmp_path / "standby.log"
    with open(log_path, "wb") as log:
        standby = subprocess.Popen(standby_argv(run_dir, sys.executable),
                                   stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
    standby.stdin.close()  # what the supervisor does to a standby it no longer needs
    assert standby.wait(timeout=300) == 0
    [ready] = of_kind(events.read_all(run_dir), "standby_ready")
    assert ready["prepared"] is False and "s building" not in log_path.read_text()


@pytest.mark.tf
def test_a_standby_whose_run_changed_what_it_builds_starts_cold_with_the_new_configuration(
    fresh_copy_of_baseline, baseline_losses, tmp_path
):
    run_dir = fresh_copy_of_baseline
    standby, ready = _ready_standby(run_dir, tmp_path / "standby.log")
    assert ready["prepared"] is True
    base = configmod.load(run_dir)
    configmod.save(run_dir, base.replace(steps=20, learning_rate=base.learning_rate * 2))

    log = _order(standby, run_dir, tmp_path / "standby.log")

    assert "configuration changed since it was built" in log
    seen = events.read_all(run_dir)
    [started] = of_kind(seen, "training_started")
    assert started["pid"] == standby.pid  # the same process, started over
    losses = events.final_losses(seen)
    assert sorted(losses) == list(range(1, 21))
    assert losses[1] == baseline_losses[1] and losses[2] != baseline_losses[2]  # the new rate


@pytest.mark.tf
def test_a_standby_serves_a_run_whose_other_settings_changed(
    fresh_copy_of_baseline, baseline_losses, tmp_path
):
    """Steps, pace, recovery, planned kills and a planned NaN are read from the run's own
    config.toml after the order (`standby.NOT_BUILT`): the prepared state serves the run (its
    NaN step rolled back), to the bit; the chaos demo's chaos run starts on the standby its
    uninterrupted run handed back."""
    run_dir = fresh_copy_of_baseline
    standby, _ = _ready_standby(run_dir, tmp_path / "standby.log")
    configmod.save(run_dir, configmod.load(run_dir).replace(
        steps=20, auto_recover=True, pace=500, max_restarts=7, nan_at_step=13))

    log = _order(standby, run_dir, tmp_path / "standby.log", faults=["nan@13"])

    assert "standby: activated" in log and "starting cold" not in log
    seen = events.read_all(run_dir)
    [rolled] = of_kind(seen, "rolled_back")
    assert (rolled["from_step"], rolled["to_step"]) == (13, 10)  # to checkpoint 10
    assert events.final_losses(seen) == {step: baseline_losses[step] for step in range(1, 21)}


@pytest.mark.tf
@pytest.mark.parametrize("prepared_every, run_every", [(1, 0), (0, 1)])
def test_a_standby_serves_a_run_with_another_snapshot_interval(
    fresh_copy_of_baseline, baseline_losses, tmp_path, prepared_every, run_every
):
    """The snapshot interval is read after the order (`standby.NOT_BUILT`): a spare the
    window built with snapshots every step serves a guided demo that restores from disk
    (`snapshot_every = 0`), and one built without them a run that takes them; to the bit."""
    run_dir = fresh_copy_of_baseline
    base = configmod.load(run_dir)
    configmod.save(run_dir, base.replace(snapshot_every=prepared_every))
    standby, ready = _ready_standby(run_dir, tmp_path / "standby.log")
    assert ready["prepared"] is True
    configmod.save(run_dir, base.replace(steps=20, snapshot_every=run_every))

    log = _order(standby, run_dir, tmp_path / "standby.log")

    assert "standby: activated" in log and "starting cold" not in log
    seen = events.read_all(run_dir)
    assert events.final_losses(seen) == {step: baseline_losses[step] for step in range(1, 21)}
    stats = of_kind(seen, "snapshot_stats")
    if run_every:  # every step's state came out of the step itself, traced after the order
        assert [(s["snapshots"], s["fused"]) for s in stats] == [(20, 20)]
    else:
        assert stats == []
