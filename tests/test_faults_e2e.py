"""Faults on real training runs: NaN rollback, hang + watchdog, chaos, warm standby."""

from __future__ import annotations

import math

import psutil
import pytest
from conftest import BASELINE_FLAGS, of_kind

from ftgui import cli
from ftgui.core import checkpoints, events
from ftgui.core.incidents import from_events


def _alive(pids):
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


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
    for info in checkpoints.list_checkpoints(run_dir):
        assert info.valid and math.isfinite(info.loss)
    losses = events.final_losses(seen)
    assert losses[60] == baseline_losses[60]  # finite, and to the bit the uninterrupted run
    [incident] = from_events(seen).incidents
    assert (incident.kind, incident.steps_lost) == ("nan", 5)


@pytest.fixture(scope="module")
def long_baseline(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("long") / "run"
    assert cli.main(["train", str(run_dir), "--steps", "600", "--quiet"]) == 0
    return events.final_losses(events.read_all(run_dir))


@pytest.mark.tf
def test_chaos_with_a_seed_ends_with_the_weights_of_an_uninterrupted_run(
    tmp_path, long_baseline
):
    run_dir = tmp_path / "run"
    # seed 9 plans kill@143, hang@192, nan@275, kill@384, preempt@476
    flags = ["--steps", "600", "--checkpoint-every", "10", "--chaos-faults", "5",
             "--chaos-kinds", "kill,preempt,nan,hang", "--chaos-seed", "9",
             "--watchdog-seconds", "3", "--auto-recover",
             "--max-restarts", "10", "--restart-backoff", "0", "--warm-standby", "--quiet"]
    assert cli.main(["train", str(run_dir), *flags]) == 0

    seen = events.read_all(run_dir)
    fired = [(e["kind"], e["step"]) for e in of_kind(seen, "fault_injected")]
    assert fired == [("kill", 143), ("hang", 192), ("nan", 275), ("kill", 384),
                     ("preempt", 476)]
    assert len(of_kind(seen, "hang_detected")) == 1
    incidents = from_events(seen).incidents
    assert [(i.kind, i.step, i.resumed_step) for i in incidents] == [
        ("kill", 143, 140), ("hang", 192, 190), ("nan", 275, 270), ("kill", 384, 380),
        ("preempt", 476, 476),
    ]
    assert all(i.closed for i in incidents)
    losses = events.final_losses(seen)
    assert losses[600] == long_baseline[600]  # same final weights, to the bit
    assert all(losses[s] == long_baseline[s] for s in range(1, 601))
    restarted = of_kind(seen, "process_started")[1:]
    assert len(restarted) == 4 and any(e["standby"] for e in restarted)
    assert _alive([e["pid"] for e in of_kind(seen, "process_started")]) == []
    assert _alive([e["pid"] for e in of_kind(seen, "standby_ready")]) == []


@pytest.mark.tf
def test_the_keras_fit_path_restores_only_to_the_start_of_the_epoch(tmp_path):
    run_dir = tmp_path / "run"
    # digits: 1,437 training examples / 64 = 22 steps per epoch
    assert cli.main(["train", str(run_dir), "--loop", "fit", "--steps", "44",
                     "--checkpoint-every", "10", "--kill-at-step", "30", "--auto-recover",
                     "--restart-backoff", "0", "--quiet"]) == 0
    seen = events.read_all(run_dir)
    [resumed] = of_kind(seen, "resumed")
    assert (resumed["attempt"], resumed["from_step"]) == (1, 22)  # not 30: the epoch start
    assert "epoch" in resumed["restores"]
    first_new = [e["step"] for e in of_kind(seen, "step") if e["attempt"] == 1][0]
    assert first_new == 23
    [incident] = from_events(seen).incidents
    assert incident.steps_lost == 8
    assert sorted(p.name for p in (run_dir / "fit-checkpoints").iterdir()) == [
        "epoch-001.weights.h5", "epoch-002.weights.h5",
    ]
    assert of_kind(seen, "run_finished")[0]["step"] == 44


def test_the_fit_path_refuses_faults_it_cannot_take():
    from ftgui.core.config import ConfigError, RunConfig

    with pytest.raises(ConfigError, match="^nan_at_step: the fit loop takes kill faults only"):
        RunConfig(loop="fit", nan_at_step=5).validate()
    with pytest.raises(ConfigError, match="^loop: fit runs on default, one-device or mirrored"):
        RunConfig(loop="fit", strategy="multi-worker").validate()
