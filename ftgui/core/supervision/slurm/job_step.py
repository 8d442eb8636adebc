"""The batch step of a run's Slurm job: `python -m ftgui.core.supervision.slurm.job_step RUN`.

Started by `RUN/slurm/job.sh` on the job's first node, once per (re)start of the job. It reads
the attempt's order (`job_script.write_order`), starts one `srun` step per task (1 task, 1
node, `--exact`, `--kill-on-bad-exit=1`, named after the task: `worker:1`) with the job's
layout in the task's environment for TensorFlow's `SlurmClusterResolver`
(`ftgui.training.slurm_task`), appends each task's exit to `RUN/slurm/tasks.jsonl` and exits:
0 when the chief finished, 42 (`exitcodes.PREEMPTED`) when every task that ended was preempted
(Slurm requeues the job under `RequeueExit=42`), else the first failing task's status. A
parameter-server cluster's servers never end on their own: once its coordinator has ended the
others are ended. It decides no recovery: that is ftgui's supervisor's (or Slurm's requeue).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from ftgui.child_python import module_argv
from ftgui.core.checkpoints import listing
from ftgui.core.record import exitcodes
from ftgui.core.supervision.slurm import job_script
from ftgui.core.supervision.trainer_command import TRAINER_MODULE, trainer_args

POLL_SECONDS = 0.05
PORT_BASE_LOW, PORT_SPAN, PORT_SLOTS = 20000, 16, 2000  # base ports 20000 + 16·k, k < 2000
# the job's layout, for the resolver inside a one-task step (whose own SLURM_* describe it)
RANK_ENV, NTASKS_ENV, NODELIST_ENV, TASKS_PER_NODE_ENV, PORT_BASE_ENV = (
    "FTGUI_SLURM_RANK", "FTGUI_SLURM_NTASKS", "FTGUI_SLURM_NODELIST",
    "FTGUI_SLURM_TASKS_PER_NODE", "FTGUI_SLURM_PORT_BASE")


def expand_tasks_per_node(text: str) -> list[int]:
    """Slurm's tasks-per-node list, `2(x3),1` -> [2, 2, 2, 1] (as TensorFlow's resolver reads
    it). Raises `ValueError` for other text."""
    counts = []
    for part in text.split(","):
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if not match:
            raise ValueError(f"tasks per node {text!r}")
        counts += [int(match.group(1))] * int(match.group(2) or 1)
    return counts


def placement(hosts: list[str], tasks_per_node: list[int]) -> list[str]:
    """The node of each rank, packed as TensorFlow's `SlurmClusterResolver.cluster_spec`
    packs them: hosts in sorted order, each filled with its tasks."""
    nodes = []
    for host, count in sorted(zip(hosts, tasks_per_node, strict=True)):
        nodes += [host] * count
    return nodes


def port_base(job: str, restart: int) -> int:
    """The first port of the job's tasks on each node: its own per job and restart, so that a
    restart does not meet the old attempt's sockets."""
    return PORT_BASE_LOW + PORT_SPAN * ((int(job) * 7 + restart) % PORT_SLOTS)


def next_order(run_dir: Path, order: dict, job: str, restart: int) -> dict:
    """The order for a restart nobody wrote one for (Slurm requeued the job while ftgui was
    not watching): the next attempt, from the newest valid checkpoint, without planned faults."""
    attempt = order["attempt"] + 1
    restore = listing.newest_valid(run_dir)
    tasks = []
    for task in order["tasks"]:
        args = trainer_args(run_dir, task["role"], task["index"], attempt,
                            restore.relpath if restore else None)
        log = f"logs/{task['role']}-{task['index']}.attempt-{attempt}.log"
        tasks.append({**task, "args": args, "log": str(run_dir / log)})
    return {**order, "attempt": attempt, "job": job, "restart": restart, "tasks": tasks,
            "derived": True}


def take_order(run_dir: Path, job: str, restart: int) -> dict:
    """The order this (re)start runs, marked as taken. Raises `LookupError` when there is none."""
    order = job_script.read_order(run_dir)
    if order is None:
        raise LookupError(f"no order in {job_script.slurm_dir(run_dir)}: submit the run with "
                          "ftgui (ftgui train RUN --launcher slurm)")
    taken = order.get("taken")
    fresh = taken is None and order.get("restart", 0) == restart and order.get("job") in (
        None, job)
    if not fresh:
        order = next_order(run_dir, order, job, restart)
        print(f"ftgui: no order for restart {restart} of job {job}: running attempt "
              f"{order['attempt']} from the newest valid checkpoint", flush=True)
    order["taken"] = {"job": job, "restart": restart, "time": time.time()}
    job_script.write_order(run_dir, order)
    return order


def task_env(task: dict, env: dict, rank_hosts: list[str], base: int) -> dict[str, str]:
    """The environment of a task's `srun`: the job's, the order's extra variables, and the
    job's layout for the resolver."""
    return {**env, **task.get("env", {}), RANK_ENV: str(task["rank"]),
            NTASKS_ENV: str(len(rank_hosts)), NODELIST_ENV: env["SLURM_JOB_NODELIST"],
            TASKS_PER_NODE_ENV: env["SLURM_TASKS_PER_NODE"], PORT_BASE_ENV: str(base),
            "PYTHONUNBUFFERED": "1"}


def srun_argv(task: dict, host: str, python: str) -> list[str]:
    """The `srun` command line of one task."""
    return ["srun", "--ntasks=1", "--nodes=1", f"--nodelist={host}", "--exact",
            "--kill-on-bad-exit=1", f"--job-name={task['name']}", f"--output={task['log']}",
            "--open-mode=append", *module_argv(TRAINER_MODULE, python), *task["args"]]


def returncode(srun_status: int) -> int:
    """A task's exit status in `Popen.returncode` terms from its srun's: srun exits 128+N for
    a task ended by signal N (137: SIGKILL), which becomes -N."""
    if srun_status > 128 and srun_status - 128 in {s.value for s in signal.Signals}:
        return -(srun_status - 128)
    return srun_status


def job_status(order: dict, codes: dict[str, int]) -> int:
    """The batch script's exit status once the tasks ended (`codes`: name -> returncode):
    0 when the chief finished, 42 when each ended task was preempted (or ended by the cleanup
    after the coordinator), else the first non-zero status (a signal -N as 128+N)."""
    chief = next(t["name"] for t in order["tasks"] if t.get("chief"))
    if codes.get(chief) == exitcodes.FINISHED:
        return 0
    if codes.get(chief) == exitcodes.PREEMPTED:
        return exitcodes.PREEMPTED
    for task in order["tasks"]:
        code = codes.get(task["name"], 0)
        if code:
            return 128 - code if code < 0 else code
    return 1


def record_start(run_dir: Path, order: dict, job: str, restart: int, nodes: str) -> None:
    """Write the job's start as the attempt's `job_started` event: `job`, `restart`, `nodes`
    and `pending_seconds`, how long the start waited for Slurm since ftgui submitted or
    released it (the order's `ordered` time; None for an order the job derived itself)."""
    from ftgui.core.record.events import EventWriter

    ordered = None if order.get("derived") else order.get("ordered")
    pending = max(time.time() - ordered, 0.0) if isinstance(ordered, (int, float)) else None
    with EventWriter(run_dir, order["attempt"]) as writer:
        writer.emit("job_started", launcher="slurm", job=job, restart=restart, nodes=nodes,
                    pending_seconds=pending)


def run(run_dir: Path, env: dict) -> int:
    job, restart = env["SLURM_JOB_ID"], int(env.get("SLURM_RESTART_COUNT", "0") or 0)
    order = take_order(run_dir, job, restart)
    hosts = subprocess.run(["scontrol", "show", "hostnames", env["SLURM_JOB_NODELIST"]],
                           capture_output=True, text=True, encoding="utf-8",
                           check=True).stdout.split()
    rank_hosts = placement(hosts, expand_tasks_per_node(env["SLURM_TASKS_PER_NODE"]))
    base = port_base(job, restart)
    python = order.get("python") or sys.executable
    record_start(run_dir, order, job, restart, env["SLURM_JOB_NODELIST"])
    print(f"ftgui: job {job} restart {restart}: attempt {order['attempt']} on "
          f"{env['SLURM_JOB_NODELIST']} ({len(order['tasks'])} tasks, ports from {base})",
          flush=True)
    layout_env = task_env({"rank": 0}, env, rank_hosts, base)
    order["taken"]["layout_env"] = {k: v for k, v in layout_env.items()
                                    if k.startswith("FTGUI_SLURM_") and k != RANK_ENV}
    job_script.write_order(run_dir, order)  # for a task restarted on its own (`srun --jobid`)
    running: dict[str, subprocess.Popen] = {}
    for task in sorted(order["tasks"], key=lambda t: t["rank"]):
        argv = srun_argv(task, rank_hosts[task["rank"]], python)
        print("ftgui: " + shlex.join(argv), flush=True)
        running[task["name"]] = subprocess.Popen(
            argv, env=task_env(task, env, rank_hosts, base), stdin=subprocess.DEVNULL)
    codes: dict[str, int] = {}
    coordinated = order.get("layout", {}).get("chief") is not None
    chief = next(t["name"] for t in order["tasks"] if t.get("chief"))
    while running:
        for name, popen in list(running.items()):
            status = popen.poll()
            if status is None:
                continue
            del running[name]
            codes[name] = returncode(status)
            task = next(t for t in order["tasks"] if t["name"] == name)
            job_script.append_task_exit(run_dir, {
                "job": job, "restart": restart, "attempt": order["attempt"], "rank": task["rank"],
                "name": name, "returncode": codes[name], "time": time.time()})
            print(f"ftgui: {name} ended with status {codes[name]}", flush=True)
        if coordinated and chief in codes and running:
            for popen in running.values():  # the servers of an ended coordinator
                popen.send_signal(signal.SIGKILL)  # srun passes it on; the job's end does too
            for popen in running.values():
                popen.wait()
            break
        time.sleep(POLL_SECONDS)
    status = job_status(order, codes)
    print(f"ftgui: job {job} restart {restart} exits {status}", flush=True)
    return status


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m ftgui.core.supervision.slurm.job_step RUN", file=sys.stderr)
        return 2
    try:
        return run(Path(argv[0]).absolute(), dict(os.environ))
    except (LookupError, KeyError, OSError, ValueError, subprocess.CalledProcessError) as exc:
        print(f"ftgui: error: {exc}", file=sys.stderr, flush=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
