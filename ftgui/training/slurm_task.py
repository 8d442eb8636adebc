"""A training process started by a Slurm job (`ftgui.core.supervision.slurm.job_step`): its
`TF_CONFIG` from TensorFlow's `SlurmClusterResolver`.

Each task runs in its own one-task `srun` step, so its own `SLURM_STEP_*` variables describe
that step only; `job_step` passes the job's layout (rank, task count, node list, tasks per
node, port base) as `FTGUI_SLURM_*`, and the resolver is given them as the `SLURM_*` variables
it reads. On a node without GPUs the resolver cannot be asked as it is: by default it runs
`nvidia-smi` (absent: FileNotFoundError) and `gpus_per_node=0` fails (`range() arg 3 must not
be zero`); its accelerator count is then overridden to 0 (`CpuSlurmClusterResolver`), which the
task says in its log.
"""

from __future__ import annotations

import json
import os
import shutil

from tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver import (
    SlurmClusterResolver,
    expand_tasks_per_node,
    get_num_gpus,
)

from ftgui.core.supervision.slurm import job_script
from ftgui.core.supervision.slurm.job_step import (
    NODELIST_ENV,
    NTASKS_ENV,
    PORT_BASE_ENV,
    RANK_ENV,
    TASKS_PER_NODE_ENV,
)


class CpuSlurmClusterResolver(SlurmClusterResolver):
    """`SlurmClusterResolver` for nodes without GPUs: it sets no `CUDA_VISIBLE_DEVICES` and
    reports 0 accelerators (the resolver's own GPU arithmetic is given one pretend GPU per
    task, which nothing uses)."""

    def __init__(self, jobs: dict[str, int], port_base: int, tasks_per_node: int):
        super().__init__(jobs=jobs, port_base=port_base, gpus_per_node=tasks_per_node,
                         gpus_per_task=1, auto_set_gpu=False)

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        return {"GPU": 0}


def under_slurm() -> bool:
    """Whether this process was started by a run's Slurm job."""
    return RANK_ENV in os.environ


def configure(config, role: str, index: int) -> dict:
    """Set `TF_CONFIG` (and, without GPUs, `CUDA_VISIBLE_DEVICES=-1`) for this task from the
    resolver and return it; a one-process strategy's one task gets none (no cluster). Raises
    `ValueError` when the resolver's task is not (`role`, `index`), the task the supervisor
    ordered (the job's layout and the order disagree)."""
    env = os.environ
    env.update(SLURM_PROCID=env[RANK_ENV], SLURM_STEP_NUM_TASKS=env[NTASKS_ENV],
               SLURM_STEP_NODELIST=env[NODELIST_ENV],
               SLURM_STEP_TASKS_PER_NODE=env[TASKS_PER_NODE_ENV])
    layout = job_script.jobs_layout(config)
    base = int(env[PORT_BASE_ENV])
    gpus = get_num_gpus() if shutil.which("nvidia-smi") else 0
    if gpus:
        resolver = SlurmClusterResolver(jobs=layout, port_base=base, gpus_per_node=gpus)
        print(f"slurm: {gpus} GPU(s) on this node, handed out by SlurmClusterResolver",
              flush=True)
    else:
        most = max(expand_tasks_per_node(env[TASKS_PER_NODE_ENV]))
        resolver = CpuSlurmClusterResolver(layout, base, most)
        env["CUDA_VISIBLE_DEVICES"] = "-1"
        print("slurm: no GPU on this node (no nvidia-smi): SlurmClusterResolver's accelerator "
              "count overridden to 0", flush=True)
    spec = resolver.cluster_spec().as_dict()
    task_type, task_id = resolver.get_task_info()
    if (task_type, task_id) != (role, index):
        raise ValueError(f"slurm: rank {env[RANK_ENV]} is {task_type}:{task_id} for "
                         f"SlurmClusterResolver, but was ordered as {role}:{index}")
    tf_config = {"cluster": spec, "task": {"type": task_type, "index": task_id}}
    if config.num_tasks == 1:  # a one-process strategy is no cluster: as in a local run
        print("slurm: one-task job of a one-process strategy: no TF_CONFIG", flush=True)
        return tf_config
    env["TF_CONFIG"] = json.dumps(tf_config)
    print(f"slurm: job {env.get('SLURM_JOB_ID')} step {env.get('SLURM_STEP_ID')} rank "
          f"{env[RANK_ENV]}: {task_type}:{task_id} at {spec[task_type][task_id]}", flush=True)
    return tf_config
