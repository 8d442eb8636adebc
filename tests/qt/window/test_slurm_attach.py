"""A window opened on a Slurm run that another process (`ftgui train --launcher slurm`)
supervises: it shows the run live, and its Kill and Preempt reach the job (`scancel
--signal=KILL|TERM` of the task's step); the supervising process sees the exit and recovers as
usual."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

import pytest
from conftest import of_kind

from ftgui.core.record import events
from ftgui.core.supervision.slurm import job_script

pytestmark = [pytest.mark.slurm, pytest.mark.tf]


def wait_for(qtbot, condition, timeout_s: float = 240.0) -> None:
    qtbot.waitUntil(condition, timeout=int(timeout_s * 1000))


def watch_and_act(window, qtbot, slurm_conf, run, checkpoint_every: int,
                  act: Callable[[], None]) -> tuple[list[dict], str]:
    """Train 300 steps of 2 workers through Slurm in a subprocess (auto-recover); open the
    window on the folder; once it shows step 20 with its Kill enabled, `act`; wait for both to
    finish. Returns the run's events and the job id before `act`."""
    train = subprocess.Popen(
        [sys.executable, "-m", "ftgui", "train", str(run), "--strategy", "multi-worker",
         "--workers", "2", "--steps", "300", "--checkpoint-every", str(checkpoint_every),
         "--launcher", "slurm", "--auto-recover", "--quiet"],
        env={**os.environ, "SLURM_CONF": str(slurm_conf)}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(qtbot, lambda: job_script.read_job_id(run) is not None)
        window.open_run(run)
        controller = window.controller
        assert controller.supervisor.is_busy_elsewhere()  # watched, not supervised here
        wait_for(qtbot, lambda: controller.timeline.last_step >= 20
                 and window.kill_button.isEnabled() and window.preempt_button.isEnabled())
        assert not window.checkpoint_button.isEnabled()  # only its supervisor can ask that
        job = job_script.read_job_id(run)
        act()
        wait_for(qtbot, lambda: controller.supervisor.state == "finished"
                 and controller.timeline.last_step == 300)
        output, _ = train.communicate(timeout=240)
    finally:
        if train.poll() is None:
            train.terminate()
            train.wait(60)
    assert train.returncode == 0, output
    return events.read_all(run), job


def test_a_window_watching_a_slurm_run_kills_a_worker_through_the_job(slurm_conf, window,
                                                                      qtbot, tmp_path):
    run = tmp_path / "run"
    all_events, job = watch_and_act(window, qtbot, slurm_conf, run, 50,
                                    lambda: window.controller.kill("worker:1"))
    assert not of_kind(all_events, "fault_injected")  # the supervisor did not inject it
    [lost] = of_kind(all_events, "process_exited", attempt=0, role="worker", index=1)
    assert lost["signal"] == 9  # SIGKILL through Slurm
    [resumed] = of_kind(all_events, "resumed")
    assert resumed["attempt"] == 1
    assert job_script.read_job_id(run) != job  # the recovery's new submission
    assert "Kill worker:1 sent through Slurm (job " in window.log.toPlainText()
    assert max(e["step"] for e in of_kind(all_events, "step")) == 300


def test_a_window_watching_a_slurm_run_preempts_it_through_the_job(slurm_conf, window, qtbot,
                                                                   tmp_path):
    run = tmp_path / "run"  # the Preempt button: the chief, SIGTERM of its step
    all_events, job = watch_and_act(window, qtbot, slurm_conf, run, 100,
                                    window.preempt_button.click)
    exits = of_kind(all_events, "process_exited", attempt=0)
    assert sorted(e.get("exit_code") for e in exits) == [42, 42]  # both saved and stopped
    [preempted] = of_kind(all_events, "preempted")
    [resumed] = of_kind(all_events, "resumed")
    assert resumed["from_step"] == preempted["step"]
    first = min(e["step"] for e in of_kind(all_events, "step", attempt=1))
    assert first == preempted["step"] + 1  # 0 steps lost
    assert job_script.read_job_id(run) == job  # Slurm's requeue: the same job
    assert "Preempt chief sent through Slurm (job " in window.log.toPlainText()
