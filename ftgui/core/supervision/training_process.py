"""One training process of a run's current attempt, as the supervisor follows it: its task, the
launcher's handle on it (`launcher.TaskHandle`), and what the supervisor knows of it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ftgui.core.supervision.cluster import Task
from ftgui.core.supervision.launcher import TaskHandle


def _of(part: str, name: str) -> property:
    return property(lambda self: getattr(getattr(self, part), name),
                    doc=f"The {part}'s `{name}`.")


@dataclass
class TrainingProcess:
    """One training process of the current attempt (`restarts`: how often this task was
    started before in the run, by earlier attempts or on its own; `rejoins`: how often it was
    restarted on its own within the attempt, as parameter-server workers are; `last_step`: the
    global step it last reported, or the step it restores until it reports one;
    `returncode`: its exit status once the supervisor recorded its exit, `Popen`'s convention).
    `role`, `index`, `is_chief`, `label`, `name` are its task's; `pid`, `log_path`, `standby`
    (a warm standby was handed its order) and `frozen` its handle's."""

    task: Task
    handle: TaskHandle
    started: float = field(default_factory=time.time)
    returncode: int | None = None
    last_step: int = 0
    last_heartbeat: float = field(default_factory=time.time)
    restarts: int = 0
    rejoins: int = 0
    ended_by_supervisor: bool = False  # killed to clean up (cluster broken, run over, shutdown)
    killed_by_fault: bool = False  # a Kill (the user's or scheduled) was sent to it
    preempted_at: float | None = None  # Unix time a Preempt (SIGTERM) was sent to it

    role = _of("task", "role")
    index = _of("task", "index")
    is_chief = _of("task", "is_chief")
    label = _of("task", "label")
    name = _of("task", "name")
    pid = _of("handle", "pid")
    log_path = _of("handle", "log_path")
    standby = _of("handle", "standby")
    frozen = _of("handle", "frozen")

    def matches(self, target: str) -> bool:
        """True for `all`, for `chief` on the chief, and for its own `role:index`."""
        return target in ("all", self.name) or (target == "chief" and self.is_chief)

    @property
    def alive(self) -> bool:
        """True until the supervisor recorded its exit."""
        return self.returncode is None
