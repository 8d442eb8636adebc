"""Before anything is submitted to Slurm: one line for a missing client, an unreadable
SLURM_CONF, a partition that does not exist and more tasks than the partition can run."""

from __future__ import annotations

import os

import pytest

from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.supervision.slurm import checks
from ftgui.core.supervision.slurm.checks import Partition, parse_sinfo

SLURM_RUN = dict(strategy="multi-worker", workers=2, launcher="slurm")


def test_sinfo_lines_give_each_partition_its_default_mark_nodes_and_cpus():
    text = "debug*|up|1|0/4/0/4\ngpu|up|2|8/0/0/8\ngpu|up|1|0/4/0/4\nold|down|3|0/0/12/12\n"
    assert parse_sinfo(text) == {
        "debug": Partition("debug", True, True, 1, 4),
        "gpu": Partition("gpu", False, True, 3, 12),
        "old": Partition("old", False, False, 3, 12),
    }


@pytest.mark.parametrize(("changes", "expected"), [
    (dict(strategy="mirrored", snapshot_every=10),
     "snapshot_every: the snapshots live in one machine's shared memory, which a Slurm job's "
     "next start may not run on; set it to 0 (off) with launcher slurm"),
    (dict(cluster="worker=localhost:0,localhost:0"),
     "cluster: with launcher slurm the addresses come from Slurm; leave cluster empty"),
    (dict(hang_at_step=5, watchdog_seconds=10.0),
     "hang_at_step: hang faults are not injected through Slurm; use kill or preempt"),
    (dict(strategy="parameter-server", workers=2, ps=1, slurm_nodes=2,
          slurm_tasks_per_node=1),
     "slurm_tasks_per_node: 1 per node on 2 node(s) is fewer than the run's 4 tasks"),
    (dict(slurm_nodes=3), "slurm_nodes: 3 nodes for 2 tasks leaves a node without a task"),
])
def test_settings_slurm_cannot_take_are_refused_in_one_line(changes, expected):
    with pytest.raises(ConfigError) as caught:
        RunConfig(**{**SLURM_RUN, **changes}).validate()
    assert str(caught.value) == expected


def test_no_sbatch_on_the_path_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        checks.check_environment(RunConfig(**SLURM_RUN))
    assert str(caught.value) == ("launcher: slurm needs sbatch, squeue, scontrol, scancel, sinfo "
                                 "on the PATH (Slurm's client commands); none found")


@pytest.mark.slurm
def test_an_unreadable_slurm_conf_is_one_line(slurm_conf, tmp_path):
    missing = tmp_path / "nowhere.conf"
    with pytest.raises(ConfigError) as caught:
        checks.check_environment(RunConfig(**SLURM_RUN), {"SLURM_CONF": str(missing)})
    assert str(caught.value) == f"launcher: SLURM_CONF={missing} is not a readable file"


@pytest.mark.slurm
def test_the_real_cluster_names_its_partition_and_refuses_what_it_cannot_run(slurm_conf):
    partition = checks.check_environment(RunConfig(**SLURM_RUN), dict(os.environ))
    assert partition == Partition("debug", True, True, 1, 4)  # tools/slurm-cluster's node
    with pytest.raises(ConfigError) as caught:
        checks.check_environment(RunConfig(**SLURM_RUN, slurm_partition="gpu"))
    assert str(caught.value) == ("slurm_partition: 'gpu' is not a partition of this cluster; "
                                 "sinfo lists debug")
    with pytest.raises(ConfigError) as caught:
        checks.check_environment(RunConfig(**{**SLURM_RUN, "workers": 5}))
    assert str(caught.value) == ("launcher: the run needs 5 tasks at once, partition debug can "
                                 "run 4 (one CPU each)")
