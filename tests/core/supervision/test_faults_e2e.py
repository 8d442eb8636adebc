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
def test_a_nan_never_reaches_a_checkpoint_and_the_run_rolls_back(tmp_path, baseline_losses):
    run_dir = tmp_path / "run"
    assert cli.main(["train", str(run_dir), *BASELINE_FLAGS, "--nan-at-step", "35",
                     "--quiet"]) == 0
    seen = events.read_all(run_dir)
    [poisoned] = [e for e in of_kind(seen, "step") if e["loss"] is None]
    assert poisoned["step"] == 35
    [rollback] = of_kind(seen, "rolled_back")
    assert (rollback["from_step"], rollback["to_step"]) == (35, 30)
    assert len(of_kind(seen, "process_started")) == 1  # rolled back inside the process
    for info in listing.list_checkpoints(run_dir):
        assert info.valid and math.isfinite(info.loss)
    losses = events.final_losses(seen)
    assert losses[60] == baseline_losses[60]  # finite, and to the bit the uninterrupted run
    [incident] = from_events(seen).incidents
    assert (incident.kind, incident.steps_lost) == ("nan", 5)


def test_the_fit_path_refuses_faults_it_cannot_take():
    from ftgui.core.settings.config import ConfigError, RunConfig

    with pytest.raises(ConfigError, match="^nan_at_step: the fit loop takes kill faults only"):
        RunConfig(loop="fit", nan_at_step=5).validate()
    with pytest.raises(ConfigError, match="^loop: fit runs on default, one-device or mirrored"):
        RunConfig(loop="fit", strategy="multi-worker").validate()
