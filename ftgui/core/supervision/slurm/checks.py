"""What must hold before a run is submitted to Slurm, each refused in one line naming the
field: the client commands on the PATH, `SLURM_CONF` readable, the partition existing (from
`sinfo`) and able to run the run's tasks at once."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.supervision.slurm import commands
from ftgui.core.supervision.slurm.commands import SlurmError

CLIENTS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo")


@dataclass(frozen=True)
class Partition:
    """One partition as `sinfo` reports it: its name, whether it is the default, whether it is
    up, its node count and CPUs over all its nodes (a task takes one CPU)."""

    name: str
    default: bool
    up: bool
    nodes: int
    cpus: int


def parse_sinfo(text: str) -> dict[str, Partition]:
    """Partitions from `sinfo -h -o '%P|%a|%D|%C'` (name, availability, nodes and
    allocated/idle/other/total CPUs per line; a node set of a partition per line, summed).
    The default partition's name ends in `*` there."""
    partitions: dict[str, Partition] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 4:
            continue
        name, avail, nodes, cpus = parts
        default = name.endswith("*")
        name = name.rstrip("*")
        total = int(cpus.split("/")[-1]) if cpus.split("/")[-1].isdigit() else 0
        before = partitions.get(name)
        partitions[name] = Partition(
            name, default or bool(before and before.default),
            avail == "up" or bool(before and before.up),
            int(nodes) + (before.nodes if before else 0), total + (before.cpus if before else 0))
    return partitions


def partitions() -> dict[str, Partition]:
    """The cluster's partitions (`sinfo`). Raises `SlurmError`."""
    return parse_sinfo(commands.run(["sinfo", "-h", "-o", "%P|%a|%D|%C"]))


def check_environment(config: RunConfig, env: dict[str, str] | None = None) -> Partition:
    """Raise `ConfigError` (one line naming the field) unless `config` can be submitted now:
    Slurm's clients on the PATH, `SLURM_CONF` (when set) readable, the partition (or the
    default one) existing and up, with enough nodes and CPUs for the run's tasks at once.
    Returns that partition. Nothing is submitted."""
    env = os.environ if env is None else env
    missing = [name for name in CLIENTS if not commands.have(name)]
    if missing:
        raise ConfigError(f"launcher: slurm needs {', '.join(missing)} on the PATH "
                          "(Slurm's client commands); none found")
    conf = env.get("SLURM_CONF")
    if conf and not os.access(conf, os.R_OK):
        raise ConfigError(f"launcher: SLURM_CONF={conf} is not a readable file")
    try:
        found = partitions()
    except SlurmError as exc:
        raise ConfigError(f"launcher: cannot reach the Slurm cluster: {exc}") from None
    if config.slurm_partition:
        partition = found.get(config.slurm_partition)
        if partition is None:
            raise ConfigError(f"slurm_partition: {config.slurm_partition!r} is not a partition "
                              f"of this cluster; sinfo lists {', '.join(found) or 'none'}")
    else:
        partition = next((p for p in found.values() if p.default), None)
        if partition is None:
            raise ConfigError("slurm_partition: the cluster has no default partition; name "
                              f"one of {', '.join(found) or 'none'}")
    if not partition.up:
        raise ConfigError(f"slurm_partition: {partition.name} is not up (sinfo)")
    if config.slurm_nodes > partition.nodes:
        raise ConfigError(f"slurm_nodes: {config.slurm_nodes} nodes asked, partition "
                          f"{partition.name} has {partition.nodes}")
    if config.num_tasks > partition.cpus:
        raise ConfigError(f"launcher: the run needs {config.num_tasks} tasks at once, partition "
                          f"{partition.name} can run {partition.cpus} (one CPU each)")
    return partition
