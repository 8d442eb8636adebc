"""What the supervisor and its collaborators (`task_launch.AttemptTasks`,
`fault_injection.FaultInjection`) share about a run: its state and current attempt
(`SupervisionState`), and the writer of the supervisor's own events (`Journal`).

Each collaborator is given these objects in its constructor; they are plain data with public
fields, so that no object needs another's private attributes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ftgui.core.record.events import EventWriter
from ftgui.core.record.run_folder import RunFolder
from ftgui.core.supervision.training_process import TrainingProcess


@dataclass
class SupervisionState:
    """The run as the supervisor follows it.

    `state`, `reason`: see `Supervisor`; `attempt`: the newest attempt seen (-1: none);
    `last_step`: the newest global step seen; `processes`: the current attempt's processes
    (`TrainingProcess`); `task_names`: its tasks' names, local or not (`chief`, `worker:1`);
    `restore`: the checkpoint it restores (`CheckpointInfo` or None); `memory`: the in-memory
    snapshot it restores (or None); `forked`: it restores the checkpoint the user picked;
    `progress_seen`: a step was seen in it (arms the watchdog); `settled`: its outcome is known
    (later exits are only recorded); `user_stop`: `kill` / `preempt` / `hang` / `shutdown`
    while a stop is in flight ('' otherwise); `stop_reason`: why the supervisor itself ended it
    (the watchdog); `line`: (attempt, newest step its line of training has a `step` event
    for, or the step it restored); `finished_attempt`: the attempt that wrote `run_finished`
    (-1: none); `held`: (step, why) while the attempt is held; `held_since`: monotonic seconds
    a standby hold was first seen; `starts`: task name -> process starts seen in the run."""

    state: str = "idle"
    reason: str = ""
    attempt: int = -1
    last_step: int = 0
    processes: list[TrainingProcess] = field(default_factory=list)
    task_names: list[str] = field(default_factory=list)
    restore: object = None
    memory: object = None
    forked: bool = False
    progress_seen: bool = False
    settled: bool = False
    user_stop: str = ""
    stop_reason: str = ""
    line: tuple[int, int] = (-1, 0)
    finished_attempt: int = -1
    held: tuple[int, str] | None = None
    held_since: float | None = None
    starts: dict[str, int] = field(default_factory=dict)

    def chief(self) -> TrainingProcess | None:
        """The live chief of the attempt (None when it is not running here)."""
        return next((p for p in self.processes if p.is_chief and p.alive), None)

    def set_state(self, state: str, reason: str) -> None:
        self.state, self.reason = state, reason


class Journal:
    """Writes the supervisor's own events into `RUN/events.jsonl`, as the current attempt
    (`state.attempt`). `folder`: the run folder the run was started in (`RunFolder`), whose
    loss stops the writes (None before a start)."""

    def __init__(self, run_dir: str | os.PathLike, state: SupervisionState):
        self.run_dir = Path(run_dir)
        self.state = state
        self.folder: RunFolder | None = None

    def writer(self) -> EventWriter:
        """A writer of events of the current attempt (a context manager)."""
        return EventWriter(self.run_dir, self.state.attempt, folder=self.folder)

    def emit(self, event: str, /, **fields) -> None:
        """Write one event of the supervisor's own."""
        with self.writer() as writer:
            writer.emit(event, **fields)
