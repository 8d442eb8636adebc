"""Faults on real training runs: NaN rollback to the bit of an uninterrupted run; faults the fit
loop refuses. (Chaos, the fit loop's epoch-start resume and the worker losses run to the bit in
test_demos.py, as the guided demos that show them.)"""

from __future__ import annotations

import math

import pytest
from conftest import BASELINE_FLAGS, of_kind

from ftgui import cli
from ftgui.core.checkpoints import listing
from ftgui.core.record import events
from ftgui.core.record.incidents import from_events


@pytest.mark.tf
@pytest.mark.parametrize("snapshot_every, to_step, source", [("0", 30, "disk"),
                                                              ("1", 34, "memory")])
def test_a_nan_never_reaches_a_checkpoint_and_the_run_rolls_back(
        tmp_path, baseline_losses, snapshot_every, to_step, source):
    # with snapshots (the default) to the step before, from memory; else to checkpoint 30
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), *BASELINE_FLAGS, "--nan-at-step", "35",
                     "--snapshot-every", snapshot_every, "--quiet"]) == 0
    seen = events.read_all(run_dir)
    [poisoned] = [e for e in of_kind(seen, "step") if e["loss"] is None]
    assert poisoned["step"] == 35
    [rollback] = of_kind(seen, "rolled_back")
    assert (rollback["from_step"], rollback["to_step"], rollback["source"]) == (
        35, to_step, source)
    assert len(of_kind(seen, "process_started")) == 1  # rolled back inside the process
    for info in listing.list_checkpoints(run_dir):
        assert info.valid and math.isfinite(info.loss)
    losses = events.final_losses(seen)
    assert losses == baseline_losses  # finite, and to the bit the uninterrupted run, each step
    [incident] = from_events(seen).incidents
    assert (incident.kind, incident.steps_lost, incident.restore_source) == (
        "nan", 35 - to_step, source)


def test_the_fit_path_refuses_faults_it_cannot_take():
    from ftgui.core.settings.config import ConfigError, RunConfig

    with pytest.raises(ConfigError, match="^nan_at_step: the fit loop takes kill faults only"):
        RunConfig(loop="fit", nan_at_step=5).validate()
    with pytest.raises(ConfigError, match="^loop: fit runs on default, one-device or mirrored"):
        RunConfig(loop="fit", strategy="multi-worker").validate()


@pytest.mark.tf
def test_a_fit_run_killed_before_its_first_backup_is_told_restarted_from_step_0(
        tmp_path, capsys):
    # its story stayed "killed at step 15 → restarting: importing TensorFlow" after the
    # finish, and its chief "serving" (a new user's findings)
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), "--loop", "fit", "--steps", "30",
                     "--kill-at-step", "15", "--auto-recover", "--restart-backoff", "0"]) == 0
    out = capsys.readouterr().out
    assert "chief training with model.fit (mirrored, 2 replicas)" in out
    assert "serving" not in out
    assert ("Finished at step 30 · killed at step 15 → restarted from step 0 (no checkpoint "
            "yet) → resumed: 15 steps redone") in out
    [incident] = from_events(events.read_all(run_dir)).incidents
    assert (incident.restore_source, incident.resumed_step, incident.steps_lost) == (
        "none", 0, 15)
