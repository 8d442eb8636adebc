"""The files a Slurm run keeps in `RUN/slurm/`: the batch script `job.sh`, the order of the
attempt it runs (`order.json`), the job id (`job.json`) and the tasks' exit records
(`tasks.jsonl`, written by `job_step` on the node).

One batch job runs one attempt: `job.sh` starts `job_step`, which starts one `srun` step per
training process with the trainer arguments the supervisor chose for the attempt (the order).
A job requeued by Slurm (`RequeueExit=42` after a preemption) runs the order ftgui wrote for its
restart; when there is none (ftgui was not watching), `job_step` derives the next attempt itself
(`next_order`): the newest valid checkpoint, no planned faults.

Ranks: TensorFlow's `SlurmClusterResolver` numbers tasks by job name in sorted order (chief,
ps, worker) and by index within a job; a task's rank is its number there (`rank_of`).
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from ftgui.core.settings.config import RunConfig

SLURM_DIR = "slurm"
JOB_SCRIPT = "job.sh"
ORDER_FILE = "order.json"
JOB_FILE = "job.json"
TASKS_FILE = "tasks.jsonl"
JOB_OUTPUT = "job.out"


def slurm_dir(run_dir: str | os.PathLike) -> Path:
    """`RUN/slurm`."""
    return Path(run_dir) / SLURM_DIR


def jobs_layout(config: RunConfig) -> dict[str, int]:
    """TensorFlow job name -> task count for `config` (what the resolver gets as `jobs`):
    multi-worker `{'worker': N}` (worker 0 is the chief, as in a local run),
    parameter-server `{'chief': 1, 'worker': N, 'ps': M}`, a one-process strategy (default,
    one-device, mirrored: a one-task job) `{'chief': 1}`."""
    if config.strategy == "multi-worker":
        return {"worker": config.workers}
    if config.num_tasks == 1:
        return {"chief": 1}
    return {"chief": 1, "worker": config.workers, "ps": config.ps}


def rank_of(layout: dict[str, int], role: str, index: int) -> int:
    """The resolver's rank of task (`role`, `index`): jobs in sorted name order, then index.
    Raises `KeyError` for a role the layout lacks."""
    rank = 0
    for job in sorted(layout):
        if job == role:
            if not 0 <= index < layout[job]:
                raise KeyError(f"{role}:{index}")
            return rank + index
        rank += layout[job]
    raise KeyError(role)


def sbatch_options(config: RunConfig, run_dir: Path) -> list[str]:
    """The `#SBATCH` options of the run's job, one per line's text (`--ntasks=3`, …): requeue
    on, output appended to `RUN/slurm/job.out`, the run's task count, nodes, tasks per node,
    partition, time limit, then `slurm_options` (an option and its separate value kept on one
    line)."""
    options = [f"--job-name=ftgui:{run_dir.name}", f"--output={slurm_dir(run_dir) / JOB_OUTPUT}",
               "--open-mode=append", "--requeue", f"--ntasks={config.num_tasks}",
               f"--nodes={config.slurm_nodes}"]
    if config.slurm_tasks_per_node:
        options.append(f"--ntasks-per-node={config.slurm_tasks_per_node}")
    if config.slurm_partition:
        options.append(f"--partition={config.slurm_partition}")
    if config.slurm_time_limit:
        options.append(f"--time={config.slurm_time_limit}")
    extra = shlex.split(config.slurm_options)
    while extra:
        option = extra.pop(0)
        if option.startswith("-") and "=" not in option and extra and \
                not extra[0].startswith("-"):
            option = f"{option} {extra.pop(0)}"
        options.append(option)
    return options


def job_script(config: RunConfig, run_dir: Path, python: str) -> str:
    """The text of `RUN/slurm/job.sh` for `config`, run by `python` on the nodes."""
    run = shlex.quote(str(run_dir))
    header = "\n".join(f"#SBATCH {option}" for option in sbatch_options(config, run_dir))
    layout = ", ".join(f"{job} ×{count}" for job, count in sorted(jobs_layout(config).items()))
    return f"""#!/bin/bash
{header}
#
# Written by ftgui for the run in {run_dir} ({config.strategy}: {layout}).
# The run folder must be on storage every node shares: events, checkpoints and logs go there.
# Each start (and each restart Slurm makes after a requeue) runs the attempt ftgui wrote into
# slurm/order.json: job_step starts one srun step per training process, in rank order:
#   srun --ntasks=1 --nodes=1 --nodelist=HOST --exact --kill-on-bad-exit=1 \\
#        --job-name=ROLE:INDEX --output=RUN/logs/ROLE-INDEX.attempt-N.log --open-mode=append \\
#        {python} -m ftgui.training RUN --role ROLE --index INDEX --attempt N [--restore …]
# (each prints its exact command line into slurm/job.out). Every task finds its role and
# TF_CONFIG with TensorFlow's SlurmClusterResolver. The job exits 42 when its tasks were
# preempted (they saved the agreed step), which Slurm requeues under RequeueExit=42.
exec {shlex.quote(python)} -m ftgui.core.supervision.slurm.job_step {run}
"""


def write_job_script(config: RunConfig, run_dir: str | os.PathLike, python: str) -> Path:
    """Write `RUN/slurm/job.sh` (executable) and return its path. Raises `OSError`."""
    run_dir = Path(run_dir).absolute()
    path = slurm_dir(run_dir) / JOB_SCRIPT
    path.parent.mkdir(parents=True, exist_ok=True)
    (run_dir / "logs").mkdir(exist_ok=True)
    _write_atomic(path, job_script(config, run_dir, python))
    path.chmod(0o755)
    return path


def write_order(run_dir: str | os.PathLike, order: dict) -> Path:
    """Write the attempt a job (re)start runs, `order`: `attempt`, `job` (None: the next
    submission), `restart` (the `SLURM_RESTART_COUNT` it is for), `python`, `layout`
    (`jobs_layout`) and `tasks` (each `name`, `role`, `index`, `rank`, `args` after
    `python -m ftgui.training`, `env`, `log`). Atomic; raises `OSError`."""
    path = slurm_dir(run_dir) / ORDER_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(path, json.dumps(order, indent=1))
    return path


def read_order(run_dir: str | os.PathLike) -> dict | None:
    """The order last written, or None when there is none (or it does not parse)."""
    try:
        return json.loads((slurm_dir(run_dir) / ORDER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_job_id(run_dir: str | os.PathLike, job: str) -> None:
    """Record the run's current job id in `RUN/slurm/job.json` (how `ftgui open` finds it)."""
    _write_atomic(slurm_dir(run_dir) / JOB_FILE, json.dumps({"job": job}))


def read_job_id(run_dir: str | os.PathLike) -> str | None:
    """The run's current job id, or None."""
    try:
        text = (slurm_dir(run_dir) / JOB_FILE).read_text(encoding="utf-8")
        return str(json.loads(text)["job"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_task_exits(run_dir: str | os.PathLike, offset: int = 0) -> tuple[list[dict], int]:
    """The tasks' exit records after byte `offset` of `RUN/slurm/tasks.jsonl` (each `job`,
    `restart`, `attempt`, `rank`, `name`, `returncode`, `time`), and the offset after the last
    whole line (a torn last line is read next time)."""
    path = slurm_dir(run_dir) / TASKS_FILE
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return [], offset
    records = []
    end = data.rfind(b"\n") + 1
    for line in data[:end].splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records, offset + end


def append_task_exit(run_dir: str | os.PathLike, record: dict) -> None:
    """Append one exit record to `RUN/slurm/tasks.jsonl` (one write of one line)."""
    line = (json.dumps(record) + "\n").encode()
    fd = os.open(slurm_dir(run_dir) / TASKS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _write_atomic(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
