"""Runs launched through a real Slurm cluster (`tools/slurm-cluster`): a worker killed through
Slurm recovers to the bit, a preempted job is requeued by Slurm and resumes at the next step.
Each compares with the same run launched locally and never killed."""

from __future__ import annotations

import re

import pytest
from conftest import of_kind

from ftgui import cli
from ftgui.core.record import events

pytestmark = [pytest.mark.slurm, pytest.mark.tf]

# The run: 2 workers, 400 steps, a checkpoint every 100.
SCHEDULE = ["--strategy", "multi-worker", "--workers", "2", "--steps", "400",
            "--checkpoint-every", "100", "--quiet"]


@pytest.fixture(scope="module")
def local_losses(tmp_path_factory) -> dict[int, float]:
    run = tmp_path_factory.mktemp("local") / "run"
    assert cli.main(["train", str(run), *SCHEDULE]) == 0
    return events.final_losses(events.read_all(run))


def job_ids(all_events: list[dict]) -> dict[int, set[str]]:
    """attempt -> the Slurm job ids its processes were started in."""
    ids: dict[int, set[str]] = {}
    for event in of_kind(all_events, "process_started"):
        match = re.match(r"job (\d+)", event.get("ident", ""))
        ids.setdefault(event["attempt"], set()).add(match.group(1) if match else "")
    return ids


def test_a_worker_killed_through_slurm_recovers_to_the_bit(slurm_conf, local_losses, tmp_path):
    run = tmp_path / "run"
    assert cli.main(["train", str(run), *SCHEDULE, "--launcher", "slurm", "--kill-at-step",
                     "250", "--fault-target", "worker:1", "--auto-recover"]) == 0
    all_events = events.read_all(run)
    [fault] = of_kind(all_events, "fault_injected")
    assert (fault["kind"], fault["target"], fault["step"]) == ("kill", "worker:1", 250)
    [lost] = of_kind(all_events, "process_exited", attempt=0, role="worker", index=1)
    assert lost["signal"] == 9
    [resumed] = of_kind(all_events, "resumed")
    assert resumed["attempt"] == 1 and resumed["from_step"] >= 250
    assert events.final_losses(all_events) == local_losses  # every step's loss, to the bit
    ids = job_ids(all_events)
    assert len(ids[0]) == len(ids[1]) == 1 and ids[0] != ids[1]  # a new job for the crash


def test_a_job_preempted_through_slurm_is_requeued_and_loses_no_step(slurm_conf, local_losses,
                                                                     tmp_path):
    run = tmp_path / "run"
    assert cli.main(["train", str(run), *SCHEDULE, "--launcher", "slurm", "--preempt-at-step",
                     "150", "--auto-recover"]) == 0
    all_events = events.read_all(run)
    [fault] = of_kind(all_events, "fault_injected")
    assert (fault["kind"], fault["step"]) == ("preempt", 150)
    exits = of_kind(all_events, "process_exited", attempt=0)
    assert sorted(e.get("exit_code") for e in exits) == [42, 42]
    # SIGTERM came through Slurm while the workers held at 150; they agreed to stop after the
    # step they were in and saved it
    assert requeued_losing_no_step(all_events, local_losses) in (150, 151)


def requeued_losing_no_step(all_events: list[dict], reference: dict[int, float]) -> int:
    """Assert that the preempted run resumed at the step it saved, trained on from the next
    one (0 steps lost) in the same job again (Slurm's requeue), every loss equal to
    `reference`'s; returns the saved step."""
    [preempted] = of_kind(all_events, "preempted")
    [resumed] = of_kind(all_events, "resumed")
    assert resumed["from_step"] == preempted["step"]
    first = min(e["step"] for e in of_kind(all_events, "step", attempt=1))
    assert first == preempted["step"] + 1  # 0 steps lost
    assert events.final_losses(all_events) == reference
    ids = job_ids(all_events)
    assert ids[0] == ids[1] and len(ids[0]) == 1  # Slurm's requeue: the same job again
    return preempted["step"]


def test_a_parameter_server_run_under_slurm_survives_a_worker_kill(slurm_conf, tmp_path):
    run = tmp_path / "run"
    assert cli.main(["train", str(run), "--strategy", "parameter-server", "--workers", "2",
                     "--ps", "1", "--steps", "120", "--checkpoint-every", "40",
                     "--launcher", "slurm", "--kill-at-step", "60", "--fault-target",
                     "worker:1", "--auto-recover", "--quiet"]) == 0
    all_events = events.read_all(run)
    [fault] = of_kind(all_events, "fault_injected")
    assert (fault["kind"], fault["target"], fault["step"]) == ("kill", "worker:1", 60)
    lost = of_kind(all_events, "process_exited", role="worker", index=1)[0]
    assert lost["signal"] == 9 and not lost["decisive"]
    starts = of_kind(all_events, "process_started", role="worker", index=1)
    assert [e["attempt"] for e in starts] == [0, 0]  # started again within the attempt
    assert not of_kind(all_events, "resumed")  # TensorFlow rescheduled, nothing restored
    assert max(e["step"] for e in of_kind(all_events, "step")) == 120


def test_a_one_process_strategy_runs_as_a_one_task_job_and_recovers_to_the_bit(
        slurm_conf, baseline_losses, tmp_path):
    from conftest import BASELINE_FLAGS

    run = tmp_path / "run"  # the baseline's MirroredStrategy run, as a one-task job
    assert cli.main(["train", str(run), *BASELINE_FLAGS, "--launcher", "slurm",
                     "--snapshot-every", "0", "--kill-at-step", "35", "--auto-recover",
                     "--quiet"]) == 0
    all_events = events.read_all(run)
    [fault] = of_kind(all_events, "fault_injected")
    assert (fault["kind"], fault["target"], fault["step"]) == ("kill", "chief", 35)
    [lost] = of_kind(all_events, "process_exited", attempt=0)
    assert (lost["role"], lost["signal"]) == ("chief", 9)
    [resumed] = of_kind(all_events, "resumed")
    assert (resumed["attempt"], resumed["from_step"]) == (1, 30)
    assert events.final_losses(all_events) == baseline_losses  # to the bit
    ids = job_ids(all_events)
    assert len(ids[0]) == len(ids[1]) == 1 and ids[0] != ids[1]  # a new job for the crash
    assert sorted(e["role"] for e in of_kind(all_events, "process_started")) == ["chief"] * 2


def test_a_one_task_job_preempted_is_requeued_and_loses_no_step(slurm_conf, baseline_losses,
                                                               tmp_path):
    from conftest import BASELINE_FLAGS

    run = tmp_path / "run"
    assert cli.main(["train", str(run), *BASELINE_FLAGS, "--launcher", "slurm",
                     "--snapshot-every", "0", "--preempt-at-step", "35", "--auto-recover",
                     "--quiet"]) == 0
    all_events = events.read_all(run)
    [exited] = of_kind(all_events, "process_exited", attempt=0)
    assert exited.get("exit_code") == 42
    assert requeued_losing_no_step(all_events, baseline_losses) in (35, 36)
