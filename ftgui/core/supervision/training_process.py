"""One training process of a run's current attempt, and how it is started (warm or cold)."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from ftgui.core.supervision.cluster import Task
from ftgui.core.supervision.processes import spawn
from ftgui.core.supervision.standby import StandbyPool
from ftgui.core.supervision.trainer_command import trainer_argv


@dataclass
class TrainingProcess:
    """One training process of the current attempt (`restarts`: how often this task was
    started before in the run, by earlier attempts or on its own; `rejoins`: how often it was
    restarted on its own within the attempt, as parameter-server workers are; `standby`: it
    was a warm standby handed its order; `last_step`: the global step it last reported, or the
    step it restores until it reports one)."""

    task: Task
    popen: subprocess.Popen
    log_path: Path
    started: float = field(default_factory=time.time)
    returncode: int | None = None
    last_step: int = 0
    last_heartbeat: float = field(default_factory=time.time)
    restarts: int = 0
    rejoins: int = 0
    ended_by_supervisor: bool = False  # killed to clean up (cluster broken, run over, shutdown)
    standby: bool = False

    @property
    def role(self) -> str:
        return self.task.role

    @property
    def index(self) -> int:
        return self.task.index

    @property
    def is_chief(self) -> bool:
        return self.task.is_chief

    @property
    def label(self) -> str:
        return self.task.label

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def name(self) -> str:
        return self.task.name

    def matches(self, target: str) -> bool:
        """True for `all`, for `chief` on the chief, and for its own `role:index`."""
        return target in ("all", self.name) or (target == "chief" and self.is_chief)

    @property
    def alive(self) -> bool:
        return self.returncode is None

    @property
    def frozen(self) -> bool:
        """True while the process is stopped (SIGSTOP: a hang injected or real)."""
        try:
            return psutil.Process(self.pid).status() == psutil.STATUS_STOPPED
        except psutil.Error:
            return False


def start(task: Task, args: list[str], env: dict[str, str], log_path: Path,
          standbys: StandbyPool, python: str = sys.executable,
          restarts: int = 0, rejoins: int = 0, start_step: int = 0,
          handed: tuple | None = None, namespace=None) -> TrainingProcess:
    """Start `task` with the trainer's `args` and extra `env`: hand them to a warm standby of
    `standbys` (whose log it keeps), else start `python -m ftgui.training` logging to
    `log_path`. `handed`: (process, log path) of a standby already given this order (a
    standby cluster's member). `restarts`, `rejoins`, `start_step`: see `TrainingProcess`
    (`start_step` is its first `last_step`). `namespace`: the cluster's loopback-only network
    namespace, which a cold start joins (the standbys are already in it). Raises `OSError` if
    the program cannot be started."""
    popen, standby_log = handed or standbys.hand_order(args, env)
    if popen is None:
        popen = spawn(trainer_argv(args, python), log_path, env, namespace=namespace)
    return TrainingProcess(task, popen, standby_log or log_path, restarts=restarts,
                           rejoins=rejoins, last_step=start_step,
                           standby=standby_log is not None)
