"""The job a Slurm run is submitted as: its script, the ranks TensorFlow's resolver gives the
tasks, where each rank runs, its exit status; and what `scontrol` / `squeue` say about it."""

from __future__ import annotations

from pathlib import Path

from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision.slurm import job_script, job_step, watcher
from ftgui.core.supervision.slurm.watcher import JobInfo

PS_RUN = RunConfig(strategy="parameter-server", workers=2, ps=1, launcher="slurm")


def test_ranks_follow_the_resolvers_sorted_job_names():
    layout = job_script.jobs_layout(PS_RUN)
    assert layout == {"chief": 1, "worker": 2, "ps": 1}
    ranks = {f"{role}:{index}": job_script.rank_of(layout, role, index)
             for role, index in (("chief", 0), ("ps", 0), ("worker", 0), ("worker", 1))}
    assert ranks == {
        "chief:0": 0, "ps:0": 1, "worker:0": 2, "worker:1": 3}
    assert job_script.jobs_layout(RunConfig(strategy="multi-worker", workers=3)) == {"worker": 3}
    for strategy in ("default", "one-device", "mirrored"):  # a one-task job
        one = RunConfig(strategy=strategy, launcher="slurm", snapshot_every=0)
        assert job_script.jobs_layout(one) == {"chief": 1}
        assert job_script.rank_of({"chief": 1}, "chief", 0) == 0
        assert "--ntasks=1" in job_script.sbatch_options(one, Path("run"))


def test_the_job_script_requeues_appends_and_carries_the_settings(tmp_path):
    config = PS_RUN.replace(slurm_partition="gpu", slurm_nodes=2, slurm_tasks_per_node=2,
                            slurm_time_limit=30, slurm_options="--account ml --qos=high")
    path = job_script.write_job_script(config, tmp_path / "run", "/opt/py/bin/python")
    text = path.read_text()
    header = [line.removeprefix("#SBATCH ") for line in text.splitlines()
              if line.startswith("#SBATCH")]
    assert header == ["--job-name=ftgui:run", f"--output={tmp_path}/run/slurm/job.out",
                      "--open-mode=append", "--requeue", "--ntasks=4", "--nodes=2",
                      "--ntasks-per-node=2", "--partition=gpu", "--time=30", "--account ml",
                      "--qos=high"]
    assert text.splitlines()[-1] == (
        f"exec /opt/py/bin/python -m ftgui.core.supervision.slurm.job_step {tmp_path}/run")
    assert "--kill-on-bad-exit=1" in text and path.stat().st_mode & 0o111


def test_ranks_are_packed_on_sorted_hosts_as_the_resolver_packs_them():
    assert job_step.expand_tasks_per_node("2(x2),1") == [2, 2, 1]
    assert job_step.placement(["n2", "n1", "n3"], [2, 2, 1]) == ["n1", "n1", "n2", "n2", "n3"]


def test_a_tasks_srun_status_and_the_jobs_exit_status():
    assert job_step.returncode(137) == -9 and job_step.returncode(42) == 42
    order = {"tasks": [{"name": "worker:0", "chief": True}, {"name": "worker:1"}]}
    assert job_step.job_status(order, {"worker:0": 0, "worker:1": 0}) == 0
    assert job_step.job_status(order, {"worker:0": 42, "worker:1": 42}) == 42
    assert job_step.job_status(order, {"worker:0": 1, "worker:1": -9}) == 1
    assert job_step.job_status(order, {"worker:1": -9}) == 137


def test_an_order_nobody_wrote_for_a_restart_is_the_next_attempt_from_the_newest_checkpoint(
        tmp_path):
    from conftest import fake_checkpoint

    run = tmp_path / "run"
    fake_checkpoint(run, 200)
    order = {"attempt": 3, "job": "17", "restart": 0, "tasks": [
        {"name": "worker:1", "role": "worker", "index": 1, "rank": 1, "args": [], "log": ""}]}
    job_script.write_order(run, {**order, "taken": {"job": "17", "restart": 0}})
    taken = job_step.take_order(run, "17", 1)
    assert taken["attempt"] == 4 and taken["derived"] and taken["restart"] == 1
    assert taken["tasks"][0]["args"] == [str(run), "--role", "worker", "--index", "1",
                                         "--attempt", "4", "--restore", "checkpoints/ckpt-200"]
    assert taken["tasks"][0]["log"] == str(run / "logs/worker-1.attempt-4.log")
    assert job_script.read_order(run)["taken"]["restart"] == 1


SCONTROL = ("JobId=17 JobName=ftgui:run UserId=root(0) Priority=0 JobState=PENDING "
            "Reason=BeginTime Dependency=(null) Requeue=1 Restarts=2 BatchFlag=1 "
            "ExitCode=0:0 NodeList=(null) StdOut=/r/slurm/job.out\n")


def test_scontrol_lines_give_state_reason_nodes_restarts_and_exit():
    info = watcher.parse_job(SCONTROL)
    assert info == JobInfo("17", "PENDING", "BeginTime", "(null)", 2, 0, 0, held=True)
    assert info.line() == "job 17 PENDING (BeginTime), restart 2"
    running = watcher.parse_job(SCONTROL.replace("PENDING", "RUNNING").replace(
        "Priority=0", "Priority=1").replace("NodeList=(null)", "NodeList=node[1-2]"))
    assert running.line() == "job 17 RUNNING on node[1-2], restart 2" and running.active
    failed = watcher.parse_job("JobId=9 JobState=FAILED ExitCode=1:0 NodeList=localhost")
    assert failed.line() == "job 9 FAILED, exit 1" and not failed.active
    assert watcher.parse_steps("17.0|worker:0\n17.2|worker:1\n17.batch|batch\n") == {
        "worker:0": "17.0", "worker:1": "17.2"}


def test_task_exit_records_are_read_whole_lines_only(tmp_path):
    (tmp_path / "slurm").mkdir()
    job_script.append_task_exit(tmp_path, {"name": "worker:1", "returncode": -9})
    with open(Path(tmp_path) / "slurm" / "tasks.jsonl", "a") as handle:
        handle.write('{"name": "worker:0"')  # torn: its writer is not done
    records, offset = job_script.read_task_exits(tmp_path)
    assert records == [{"name": "worker:1", "returncode": -9}]
    assert job_script.read_task_exits(tmp_path, offset) == ([], offset)
