"""SlurmLauncher against the real cluster, without TensorFlow: a job that cannot start is
reported PENDING with Slurm's reason, past the limit in one line, and is cancelled at the end."""

from __future__ import annotations

import subprocess
import time

import pytest

from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision import cluster
from ftgui.core.supervision.launcher import TaskStart
from ftgui.core.supervision.slurm import watcher
from ftgui.core.supervision.slurm.launcher import SlurmLauncher
from ftgui.core.supervision.trainer_command import trainer_args

pytestmark = pytest.mark.slurm


def test_a_start_the_node_cannot_take_is_pending_with_its_reason(slurm_conf, tmp_path):
    blocker = subprocess.run(["sbatch", "--parsable", "-n", "4", "-o", "/dev/null",
                              "--wrap", "sleep 300"], capture_output=True, text=True,
                             check=True).stdout.strip()
    launcher = SlurmLauncher(tmp_path / "run", pending_limit=1.0)
    try:
        while watcher.job_info(blocker).state != "RUNNING":  # it holds every CPU of the node
            time.sleep(0.1)
        config = RunConfig(strategy="multi-worker", workers=2, steps=10, launcher="slurm")
        configmod.save(tmp_path / "run", config)
        starts = [TaskStart(task, trainer_args(tmp_path / "run", task.role, task.index), {},
                            tmp_path / "run" / "logs" / f"{task.role}-{task.index}.log", 0)
                  for task in cluster.tasks(config, free_port=lambda: 0)]
        launcher.begin_attempt(config, starts)
        handles = [launcher.start(start) for start in starts]
        job = launcher.job.job
        while launcher.job.reason != "Resources" or launcher.pending_seconds < 1.0:
            time.sleep(0.1)
            launcher.refresh(force=True)
        assert launcher.line() == f"job {job} PENDING (Resources)"
        assert launcher.pending_report() == (
            f"job {job} still PENDING after {launcher.pending_seconds:.0f} s: Resources")
        assert [h.poll() for h in handles] == [None, None]  # waiting is not an exit
        assert [h.ident for h in handles] == [f"job {job} worker:0", f"job {job} worker:1"]
        launcher.end_attempt()
        assert watcher.job_info(job).state == "CANCELLED"
        assert [h.wait(10) for h in handles] == [-9, -9]
    finally:
        subprocess.run(["scancel", blocker], check=True)
