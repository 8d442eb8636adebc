"""`SlurmLauncher`: the supervisor's tasks as one Slurm batch job (the launcher seam,
`ftgui.core.supervision.launcher`).

An attempt is one job start: `begin_attempt` writes `RUN/slurm/job.sh` and the attempt's order,
then submits the job with `sbatch`, or releases the run's job that Slurm requeued (a preempted
job exits 42, `RequeueExit=42` requeues it: it waits as PENDING (BeginTime) until
`scontrol update StartTime=now`). Each task is a one-task step named after it (`worker:1`);
its handle signals it with `scancel --signal=SIG JOB.STEP` and reads its exit from the record
the job's batch step writes (`RUN/slurm/tasks.jsonl`), or from the job's end when the job
ended without one (cancelled, timed out, node lost). A parameter-server worker restarted on its
own within the attempt is a new step of the running job (`srun --jobid`), whose srun client is a
process of this machine. Slurm's view (job id, state with the pending reason, node list,
restart count) is `job` and `line()`; the seconds the attempt waited for Slurm, `waited`.

What Slurm recovers and what ftgui does: Slurm requeues a preempted job (exit 42) and reruns
it; ftgui decides every restart (a crash's: a new submission from the newest valid checkpoint,
a just-in-time one included), writes each attempt's order, and ends what is left of a job.
"""

from __future__ import annotations

import signal as signals
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ftgui.child_python import module_argv
from ftgui.core.supervision.slurm import checks, commands, job_script, watcher
from ftgui.core.supervision.slurm.commands import SlurmError
from ftgui.core.supervision.slurm.watcher import JobInfo

if TYPE_CHECKING:
    from ftgui.core.settings.config import RunConfig
    from ftgui.core.supervision.launcher import TaskStart

REFRESH_SECONDS = 0.25  # Slurm is asked at most this often (poll() is called 10-30 times/s)
PENDING_LIMIT_SECONDS = 60.0  # a start pending this long is reported with Slurm's reason


@dataclass
class SlurmTask:
    """The handle of one task of the run's job (see `ftgui.core.supervision.launcher.
    TaskHandle`): `pid` is None (the task runs on a node; a rejoined task's is its srun's)."""

    launcher: SlurmLauncher
    name: str
    attempt: int
    log_path: Path
    job: str
    popen: subprocess.Popen | None = None  # a rejoin's srun client, on this machine
    address: str | None = None
    standby: bool = False
    standby_warm: bool | None = None
    standby_age: float | None = None
    forked: bool = False
    returncode: int | None = field(default=None, repr=False)

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen is not None else None

    @property
    def ident(self) -> str:
        step = self.launcher.step_of(self.name, self.job)
        return f"job {self.job} step {step}" if step else f"job {self.job} {self.name}"

    @property
    def frozen(self) -> bool:
        return False  # no hang is injected through Slurm (the config refuses it)

    def poll(self) -> int | None:
        if self.returncode is None:
            self.launcher.refresh()
            self.returncode = self.launcher.exit_of(self)
        return self.returncode

    def wait(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            self.launcher.refresh(force=True)
        return self.returncode

    def signal(self, sig: int, tree: bool = True) -> bool:
        """`scancel --signal=SIG` of the task's step (its every process: Slurm signals them
        all, so `tree` changes nothing). False when the task has ended or has no step yet."""
        if self.poll() is not None:
            return False
        return self.launcher.signal_step(self.name, self.job, sig)

    def kill(self, timeout: float = 10.0) -> int | None:
        if not self.signal(signals.SIGKILL) and self.poll() is None:
            self.launcher.cancel_job()  # no step (yet): the job is all there is to end
        return self.wait(timeout)


class SlurmLauncher:
    """Runs a supervisor's attempts as starts of one Slurm batch job (see the module).

    `python`: the interpreter the nodes run (the same path there: shared software); `env`
    for the Slurm commands is this process's (`SLURM_CONF`); `pending_limit`: seconds a start
    may wait for Slurm before `pending_report` says so."""

    standbys: list = []  # noqa: RUF012 (no warm standbys: a restart is a job start)

    def __init__(self, run_dir: str | Path, python: str = sys.executable,
                 pending_limit: float = PENDING_LIMIT_SECONDS):
        self.run_dir = Path(run_dir).absolute()
        self.python = python
        self.pending_limit = pending_limit  # seconds: see `pending_report`
        self.job: JobInfo | None = None
        self.waited: float | None = None  # seconds the current attempt was PENDING
        self._pending_since: float | None = None
        self._steps: dict[str, str] = {}
        self._exits: dict[tuple[int, str], int] = {}
        self._offset = 0
        self._asked = 0.0
        self._order_restart = 0
        self._started = False  # this launcher submitted or released the job (not another's)
        known = job_script.read_job_id(self.run_dir)  # the run's job of an earlier session:
        if known is not None:  # a requeued one is released for the next attempt, not left
            self.job = JobInfo(known, "UNKNOWN")
            self._order_restart = (job_script.read_order(self.run_dir) or {}).get("restart", 0)

    # ------------------------------------------------------------- the seam
    @property
    def isolated(self) -> bool:
        return False  # the nodes' TensorFlow servers listen on the cluster's network

    def hold_namespace(self) -> None:
        """Nothing to hold: the tasks run on Slurm's nodes (the docs' checklist: ports)."""

    def release_namespace(self) -> None:
        """Nothing held."""

    def free_port(self) -> int:
        return 0  # each task's port comes from the resolver on its node (`slurm_task`)

    def begin_attempt(self, config: RunConfig, starts: list[TaskStart]) -> None:
        """Write the job script and the attempt's order, then submit the job, or release the
        run's job Slurm requeued. Raises `OSError` (a Slurm check or command failing, in one
        line)."""
        from ftgui.core.settings.config import ConfigError

        try:
            checks.check_environment(config)
        except ConfigError as exc:
            raise OSError(str(exc)) from None
        layout = job_script.jobs_layout(config)
        job_script.write_job_script(config, self.run_dir, self.python)
        reuse = self._requeued_job()
        restart = reuse.restarts if reuse else 0
        order = {
            "attempt": starts[0].attempt, "job": reuse.job if reuse else None,
            "restart": restart, "python": self.python, "layout": layout,
            "ordered": time.time(),  # the job's start says how long Slurm kept it waiting
            "tasks": [{"name": s.task.name, "role": s.task.role, "index": s.task.index,
                       "chief": s.task.is_chief,
                       "rank": job_script.rank_of(layout, s.task.role, s.task.index),
                       "args": list(s.args), "log": str(s.log_path),
                       "env": {k: v for k, v in s.env.items() if k != "TF_CONFIG"}}
                      for s in starts]}
        job_script.write_order(self.run_dir, order)
        self._order_restart = restart
        self._steps = {}
        self._pending_since, self.waited = time.monotonic(), None
        try:
            if reuse:
                if reuse.held:
                    commands.run(["scontrol", "release", reuse.job])
                commands.run(["scontrol", "update", f"JobId={reuse.job}", "StartTime=now"])
                job = reuse.job
            else:
                script = job_script.slurm_dir(self.run_dir) / job_script.JOB_SCRIPT
                job = commands.run(["sbatch", "--parsable", str(script)]).strip().split(";")[0]
        except SlurmError as exc:
            raise OSError(str(exc)) from None
        job_script.write_job_id(self.run_dir, job)
        self.job = JobInfo(job, "PENDING", restarts=restart)
        self._started = True
        self.refresh(force=True)

    def start(self, request: TaskStart) -> SlurmTask:
        """The handle of a task of the job just submitted, or (`request.rejoins` > 0) a new
        step of the running job for a task restarted on its own. Raises `OSError`."""
        if self.job is None:
            raise OSError("no Slurm job: begin_attempt first")
        if not request.rejoins:
            return SlurmTask(self, request.task.name, request.attempt, request.log_path,
                             self.job.job)
        order = job_script.read_order(self.run_dir) or {}
        task = next(t for t in order.get("tasks", []) if t["name"] == request.task.name)
        argv = ["srun", f"--jobid={self.job.job}", "--ntasks=1", "--nodes=1", "--exact",
                "--overlap", f"--job-name={request.task.name}", f"--output={request.log_path}",
                "--open-mode=append", *module_argv("ftgui.training", self.python), *request.args]
        env = _rejoin_env(task, order.get("taken", {}).get("layout_env", {}), request.env)
        popen = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
        return SlurmTask(self, request.task.name, request.attempt, request.log_path,
                         self.job.job, popen=popen)

    def end_attempt(self) -> None:
        """End what is left of the attempt's job; a job Slurm requeued is held for the next
        attempt instead (it would otherwise start on its own after its BeginTime). A job this
        launcher did not start (a run another ftgui supervises) is left alone."""
        if self.job is None or not self._started:
            return
        self.refresh(force=True)
        if self._requeued_job() is not None:
            try:
                commands.run(["scontrol", "hold", self.job.job])
            except SlurmError:
                pass
        elif self.job.active:
            self.cancel_job()

    def keep_standbys(self, config, tasks: int) -> None:
        """No standbys: a restart is a job start on whatever node Slurm gives."""

    def standbys_ready(self, config, tasks: int) -> bool:
        return True

    def mark_standby_ready(self, pid, prepared_for=None) -> None:
        """No standbys."""

    def dismiss_standbys(self) -> None:
        """No standbys."""

    # ------------------------------------------------------------- Slurm's view
    def line(self) -> str:
        """The job as a person reads it (`job 17 RUNNING on localhost, restart 1`, and once
        it left PENDING, how long this start waited for Slurm), '' before the first
        submission."""
        if self.job is None:
            return ""
        waited = (f" (waited {self.waited:.1f} s for Slurm)"
                  if self.waited is not None and self.job.state == "RUNNING" else "")
        return self.job.line() + waited

    def current_line(self) -> str:
        """`line()` after asking Slurm (at most every `REFRESH_SECONDS`) while the job is
        active, and once for a job of an earlier session; a job that ended is not asked
        again."""
        if self.job is not None and (self.job.active or not self._asked):
            self.refresh()
        return self.line()

    @property
    def pending_seconds(self) -> float | None:
        """How long the current start has been PENDING so far (None once it left PENDING)."""
        if self._pending_since is None:
            return None
        return time.monotonic() - self._pending_since

    def pending_report(self) -> str:
        """Once a start has been PENDING past `pending_limit` seconds: the line saying so
        with Slurm's reason (`job 7 still PENDING after 61 s: Resources`); '' otherwise."""
        waited = self.pending_seconds
        if waited is None or waited < self.pending_limit or self.job is None:
            return ""
        return f"job {self.job.job} still PENDING after {waited:.0f} s: {self.job.reason}"

    def refresh(self, force: bool = False) -> None:
        """Ask Slurm about the job and read the tasks' new exit records, at most every
        `REFRESH_SECONDS` unless `force`."""
        now = time.monotonic()
        if self.job is None or (not force and now - self._asked < REFRESH_SECONDS):
            return
        self._asked = now
        records, self._offset = job_script.read_task_exits(self.run_dir, self._offset)
        for record in records:
            if record.get("job") == self.job.job:
                self._exits[(record["attempt"], record["name"])] = record["returncode"]
                self._steps.pop(record["name"], None)  # a rejoin gets a step of its own
        try:
            info = watcher.job_info(self.job.job)
            if info is not None and info.active:
                self._steps.update(watcher.steps(self.job.job))
        except SlurmError:
            return  # asked again at the next refresh
        if info is not None:
            self.job = info
        if self._pending_since is not None and self.job.state != "PENDING":
            self.waited = now - self._pending_since
            self._pending_since = None

    def step_of(self, name: str, job: str) -> str | None:
        """The step id of task `name` in `job` (`17.1`), None while it has none."""
        step = self._steps.get(name)
        return step if step and step.split(".")[0] == job else None

    def signal_step(self, name: str, job: str, sig: int) -> bool:
        """`scancel --signal=SIG` of task `name`'s step in `job` (Slurm signals its every
        process). False when the task has no step there (not started yet, or ended)."""
        self.refresh(force=True)
        step = self.step_of(name, job)
        if step is None:
            return False
        try:
            commands.run(["scancel", f"--signal={signals.Signals(sig).name[3:]}", step])
        except SlurmError:
            return False
        return True

    def signal_attached(self, target: str, sig: int) -> bool:
        """Signal `target`'s steps (`chief`, `worker:I`, `ps:I` or `all`) in the run's job
        when another process supervises the run (a window opened on its folder): the job is
        the one `RUN/slurm/job.json` names now (a recovery's resubmission writes a new one),
        the tasks those of the attempt's order. That process sees the exits as its own tasks'
        and recovers as usual. False when no such task has a step."""
        known = job_script.read_job_id(self.run_dir)
        if known is None:
            return False
        if self.job is None or self.job.job != known:
            self.job, self._steps, self._exits = JobInfo(known, "UNKNOWN"), {}, {}
        order = job_script.read_order(self.run_dir) or {}
        names = [t["name"] for t in order.get("tasks", [])
                 if target in ("all", t["name"]) or (target == "chief" and t["chief"])]
        return any([self.signal_step(name, known, sig) for name in names])

    def exit_of(self, task: SlurmTask) -> int | None:
        """A task's exit status: its exit record, a rejoin's srun status, or -9 when the job
        ended or was requeued without a record for it (Slurm ended its step)."""
        if task.popen is not None:
            status = task.popen.poll()
            return None if status is None else _status(status)
        code = self._exits.get((task.attempt, task.name))
        if code is not None:
            return code
        info = self.job
        if info is None or info.job != task.job:
            return None
        if not info.active or info.restarts > self._order_restart:
            self.refresh(force=True)  # the record may have come with the end
            code = self._exits.get((task.attempt, task.name))
            if code is not None:
                return code
            # no record: the task was still running when the job ended or was requeued, and
            # Slurm ended its step (SIGKILL after KillWait)
            return -int(signals.SIGKILL)
        return None

    def cancel_job(self) -> None:
        """`scancel` the run's job (its steps get SIGKILL after Slurm's KillWait)."""
        if self.job is not None:
            try:
                commands.run(["scancel", "--signal=KILL", "--full", self.job.job])
                commands.run(["scancel", self.job.job])
            except SlurmError:
                pass

    def _requeued_job(self) -> JobInfo | None:
        """The run's job when Slurm requeued it and it waits to run again."""
        if self.job is None:
            return None
        try:
            info = watcher.job_info(self.job.job)
        except SlurmError:
            return None
        if info is not None and info.state == "PENDING" and info.restarts > self._order_restart:
            return info
        return None


def launcher_for(config: RunConfig, run_dir: str | Path,
                 python: str = sys.executable) -> SlurmLauncher | None:
    """The launcher a run of `config` needs: a `SlurmLauncher` for launcher slurm, after the
    checks before a submission (`checks.check_environment`: `ConfigError` in one line), else
    None (the supervisor's own local launcher)."""
    if config.launcher != "slurm":
        return None
    checks.check_environment(config)
    return SlurmLauncher(run_dir, python)


def _status(srun_status: int) -> int:
    from ftgui.core.supervision.slurm.job_step import returncode

    return returncode(srun_status)


def _rejoin_env(task: dict, layout: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """A rejoined task's environment: this process's, the request's, and the job's layout as
    the batch step gave it to the attempt's tasks (`layout`, from the order)."""
    import os

    from ftgui.core.supervision.slurm import job_step

    env = {**os.environ, **{k: v for k, v in extra.items() if k != "TF_CONFIG"}, **layout}
    env[job_step.RANK_ENV] = str(task["rank"])
    env["PYTHONUNBUFFERED"] = "1"
    return env
