"""Under Slurm the supervisor sends a planned kill or preempt through Slurm: no trainer fires
it itself, and every task holds at its step until it is sent."""

from __future__ import annotations

from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision import cluster
from ftgui.core.supervision.fault_schedule import FaultSchedule


def test_a_planned_kill_under_slurm_is_armed_and_every_worker_holds_at_its_step():
    config = RunConfig(strategy="multi-worker", workers=2, steps=400, kill_at_step=250,
                       fault_target="worker:1", launcher="slurm")
    tasks = cluster.tasks(config, free_port=lambda: 0)
    names = [task.name for task in tasks]
    schedule = FaultSchedule()
    args = {task.name: schedule.args_for(config, task, names) for task in tasks}
    assert args == {"worker:0": ["hold@250:worker:1"], "worker:1": ["hold@250:worker:1"]}
    assert [fault.key for fault in schedule.armed] == ["kill@250:worker:1"]
    local = FaultSchedule()
    local_args = {task.name: local.args_for(config.replace(launcher="local"), task, names)
                  for task in tasks}
    assert local_args == {"worker:0": [], "worker:1": ["kill@250:worker:1"]}
    assert local.armed == []
