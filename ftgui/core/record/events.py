"""`RUN/events.jsonl`: append one JSON object per line; read incrementally, skip a torn line.

Several processes (supervisor, trainers) append to the same file. Each event is written with one
`write()` on a file opened with `O_APPEND`, so lines never interleave on a local file system.
"""

from __future__ import annotations

import enum
import json
import math
import os
import time
from pathlib import Path
from typing import Protocol

from ftgui.core import formatting
from ftgui.core.record import run_state
from ftgui.core.record.tail import Tail
from ftgui.core.settings.schema import SETTINGS

EVENTS_FILE = "events.jsonl"


def _jsonable(value):
    # JSON has no NaN/inf; a non-finite loss is written as null so readers show a gap.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _clock_id() -> str:
    """Which monotonic clock this process' `mono` values are on: this boot of this machine
    (Linux: the first 8 hex digits of its boot id; elsewhere the host name and boot time)."""
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii")
        return boot_id.strip().replace("-", "")[:8]
    except OSError:
        import socket

        import psutil

        return f"{socket.gethostname()}@{psutil.boot_time():.0f}"


CLOCK = _clock_id()


class EventWriter:
    """Appends events to `RUN/events.jsonl`.

    Every event gets `event` (its type), `time` (Unix seconds, float) and `attempt` (0 for the
    first launch, +1 per restart). Other fields come from keyword arguments; non-finite floats
    become `null`. Last come `mono`, seconds of the system-wide monotonic clock at the same
    instant as `time` (durations are differences of `mono`: the wall clock can jump), and
    `clock`, which clock that is (`CLOCK`: one boot of one machine; `mono` values of different
    clocks are never subtracted). To keep the many step lines short, only a writer's first
    `step` event names its `clock`: a step without one is on the clock of the step before it.
    An event given its own `time` gets no `mono` and `clock`.

    `folder` (a `run_folder.RunFolder`, for a writer of a run that trains): the folder is never
    created, and before the file is opened and before each event it must still be the one the
    run started in, else `RunFolderGone` is raised and nothing is written. A `step` event
    written by `emit_step` looks at the folder at most every `STEP_CHECK_SECONDS`: its line
    goes to the file this writer opened, never into a folder made anew at the same path.
    """

    # A trainer writes a step event after every global step (~1 ms for the MLP); the folder's
    # `stat` right after a step took ~14 µs of it (measured in the trainer, 2026-12-04).
    STEP_CHECK_SECONDS = 0.05

    def __init__(self, run_dir: str | os.PathLike, attempt: int, folder=None):
        self.path = Path(run_dir) / EVENTS_FILE
        self.folder = folder
        self._fd = -1
        if folder is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        else:
            folder.check()
        self.attempt = attempt
        self._clock_named = False  # a step event of this writer has named its clock
        self._next_step_check = 0.0  # monotonic time of the next folder check of `emit_step`
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._end_a_cut_line()
        # what every step line of this writer starts with, and its first one's clock field
        self._step_head = f'{{"event":"step","time":%r,"attempt":{int(attempt)},'
        self._step_clock = ',"clock":' + json.dumps(CLOCK)

    def _end_a_cut_line(self) -> None:
        """End the file's last line when it was cut short (a writer killed in the middle of a
        write, a full disk, a power cut): the next event would be glued to it and lost with
        it. Every writer writes whole lines in one `write`, so only a cut leaves one open."""
        if os.fstat(self._fd).st_size == 0:
            return
        with open(self.path, "rb") as handle:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                os.write(self._fd, b"\n")

    def emit(self, event: str, **fields) -> dict:
        """Append one event and return it as written."""
        now, mono = time.time(), time.monotonic()
        record = {"event": event, "time": now, "attempt": self.attempt}
        record.update({key: _jsonable(value) for key, value in fields.items()})
        if "time" not in fields:
            record["mono"] = round(mono, 4)
            if event != "step" or not self._clock_named:
                record["clock"] = CLOCK
                self._clock_named = self._clock_named or event == "step"
        if self.folder is not None:
            self.folder.check()  # one stat: a removed or replaced run folder gets no event
        os.write(self._fd, (json.dumps(record, separators=(",", ":")) + "\n").encode())
        return record

    def emit_step(self, step: int, loss: float, epoch: int) -> None:
        """Append the `step` event of global step `step` (its `loss`, `epoch`): the same line
        `emit("step", step=step, loss=loss, epoch=epoch)` writes (a non-finite loss as null,
        floats as `json.dumps` writes them: their shortest repr), formatted directly, in about
        a third of its time (it runs after every global step). The run folder is looked at
        when `STEP_CHECK_SECONDS` have passed since the last look (`RunFolderGone`)."""
        now, mono = time.time(), time.monotonic()
        if self.folder is not None and mono >= self._next_step_check:
            self.folder.check()
            self._next_step_check = mono + self.STEP_CHECK_SECONDS
        loss = float(loss)
        line = (self._step_head % now + f'"step":{int(step)},"loss":'
                + (repr(loss) if math.isfinite(loss) else "null")
                + f',"epoch":{int(epoch)},"mono":{round(mono, 4)!r}')
        if not self._clock_named:
            self._clock_named = True
            line += self._step_clock
        os.write(self._fd, (line + "}\n").encode())

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def emit(run_dir: str | os.PathLike, event: str, attempt: int, **fields) -> dict:
    """Append a single event (opens and closes the file); returns it."""
    with EventWriter(run_dir, attempt) as writer:
        return writer.emit(event, **fields)


class EventSource(Protocol):
    """Where a view's events come from: a run's `Supervisor` (live, and a run opened from disk:
    its own events and the trainers', read from `RUN/events.jsonl` by an `EventReader`) or a
    `ReplayClock` (a finished run played back, no supervisor). `poll()` returns the new
    events in file order, as dicts."""

    def poll(self) -> list[dict]: ...


class EventReader:
    """Reads new complete events from `RUN/events.jsonl` since the last call.

    `read_new()` returns a list of dicts. A last line without its newline (a writer mid-write or
    killed mid-write) is held back until it is complete; a line that is not valid JSON is skipped.
    """

    def __init__(self, run_dir: str | os.PathLike):
        self.path = Path(run_dir) / EVENTS_FILE
        self._tail = Tail(self.path)

    @property
    def bytes_read(self) -> int:
        """How far into the file reading has got (bytes), a held-back torn line included."""
        return self._tail.bytes_read

    def seek(self, offset: int) -> None:
        """Go on reading from byte `offset` (the end of lines already read another way)."""
        self._tail.seek(offset)

    def read_new(self, max_bytes: int = 64 * 1024 * 1024) -> list[dict]:
        """The events completed since the last call, reading at most `max_bytes` more."""
        lines = self._tail.read_lines(max_bytes)
        return [event for event in map(_parse, lines) if event is not None]


def parse_line(line: bytes) -> dict | None:
    """One line of events.jsonl as an event, or None when it is not a well-formed one."""
    return _parse(line)


def _parse(line: bytes) -> dict | None:
    if not line.strip():
        return None
    try:
        event = json.loads(line)
    except RecursionError:  # a hand-made line nested too deep for the parser
        return None
    except ValueError:
        # A writer killed mid-line leaves a fragment that the next event is appended to:
        # keep that next event.
        start = line.rfind(b'{"event":')
        if start <= 0:
            return None
        return _parse(line[start:])
    return event if _well_formed(event) else None


# Fields the readers (timeline, incidents, story, report) take as they are: when present and
# not null, each has its type in every kind of event but `step` (a hand-edited line may not).
_WHOLE_FIELDS = frozenset({
    "step", "start_step", "from_step", "to_step", "last_step", "index", "pid", "restart",
    "restarts", "replicas", "exit_code", "signal", "size", "snapshot", "epoch",
    "optimizer_iterations"})
_NUMBER_FIELDS = frozenset({
    "loss", "val_loss", "val_accuracy", "delay", "mono", "seconds", "standby_age",
    "stall_seconds", "save_seconds", "restore_seconds", "persist_seconds", "import_seconds",
    "setup_seconds", "prepare_seconds", "notice_seconds"})
_TEXT_FIELDS = frozenset({
    "role", "kind", "source", "reason", "why", "target", "setting", "label", "clock",
    "strategy", "restore", "address", "checkpoint", "path", "log", "by", "error",
    "signal_name", "archive", "prepared_for", "promoted_from", "saved_by"})
_STEPPED_KINDS = frozenset({"step", "validation", "checkpoint_saved"})


def _field_types_hold(event: dict) -> bool:
    for name, value in event.items():
        if value is None:
            continue
        if name in _WHOLE_FIELDS and not is_int64(value):
            return False
        if name in _NUMBER_FIELDS and (not isinstance(value, (int, float))
                                       or isinstance(value, bool)):
            return False
        if name in _TEXT_FIELDS and not isinstance(value, str):
            return False
    return isinstance(event.get("config", {}) or {}, dict)


def _well_formed(event) -> bool:
    """The fields every reader relies on have their types (a hand-edited line may not)."""
    if not isinstance(event, dict) or not isinstance(event.get("event"), str):
        return False
    attempt, when = event.get("attempt", 0), event.get("time", 0.0)
    if not is_int64(attempt) or not isinstance(when, (int, float)) or isinstance(when, bool):
        return False
    # A step line keeps its own checks below (`event_history` reads step lines the same way).
    if event["event"] != "step" and not _field_types_hold(event):
        return False
    if event["event"] in _STEPPED_KINDS and not is_int64(event.get("step")):
        return False
    if event["event"] == "step":
        loss = event.get("loss")
        return is_int64(event.get("step")) and (
            loss is None or (isinstance(loss, (int, float)) and not isinstance(loss, bool))
        )
    return True


def is_int64(value) -> bool:
    """A JSON whole number that fits in int64 (steps and attempts are stored as int64)."""
    return isinstance(value, int) and not isinstance(value, bool) and -2**63 <= value < 2**63


def read_all(run_dir: str | os.PathLike) -> list[dict]:
    """All complete events of a run, in file order."""
    reader = EventReader(run_dir)
    events: list[dict] = []
    while True:
        offset = reader.bytes_read
        events.extend(reader.read_new())
        if reader.bytes_read == offset:
            return events


def final_losses(events: list[dict], role: str = "chief") -> dict[int, float | None]:
    """Map step -> loss of the line of training that reached the end.

    A later attempt overwrites the steps an earlier, killed attempt had logged past the
    checkpoint it resumed from, so the result is the surviving curve. A step recovered from a
    just-in-time checkpoint (`from_checkpoint`) counts like a logged one: it is that step's loss.
    """
    losses: dict[int, float | None] = {}
    for event in events:
        if event["event"] == "step" and event.get("role", "chief") == role:
            losses[event["step"]] = event["loss"]
    return losses


# ------------------------------------------------------------------------------ vocabulary
class EventKind(str, enum.Enum):
    """Every type of event ftgui writes to `RUN/events.jsonl` (the `event` field).

    `notable` kinds are shown in the window's event log and the CLI's progress lines; the rest
    (steps, heartbeats, validation points) are drawn or counted, never printed one by one.
    """

    RUN_STARTED = "run_started"  # supervisor, first launch: config
    # supervisor: role, index, pid, restore, standby (and standby_warm: it had imported
    # TensorFlow; standby_age: seconds since it was started), forked (a cold start forked
    # from the fork server: TensorFlow already imported), cold_reason (why a cold start was
    # not forked: the fork server still importing or ended before it was ready; else None)
    PROCESS_STARTED = "process_started"  # also `ident`: the launcher's name ("job 7 worker:1")
    REMOTE_TASK = "remote_task"  # supervisor: the command to start a task on another machine
    # supervisor, once before a cluster with remote tasks starts: `addresses`, `line`
    CLUSTER_EXPOSED = "cluster_exposed"
    STANDBY_READY = "standby_ready"  # a warm standby imported TensorFlow: pid, import_seconds,
    # forked (from the fork server: the import was the server's)
    # a Slurm job's batch step, at each start of the job: launcher, job, restart, nodes,
    # pending_seconds (how long it waited for Slurm since ftgui submitted or released it)
    JOB_STARTED = "job_started"
    TRAINING_STARTED = "training_started"  # trainer: role, index, start_step, strategy, replicas
    RESUMED = "resumed"  # chief: from_step, checkpoint (restored)
    # chief: step, loss, epoch. Or the supervisor, for a step a promoted just-in-time
    # checkpoint holds but the killed chief never logged: `from_checkpoint: true` (the loss is
    # the checkpoint's, not measured live; `checkpoint`: its path), in the killed attempt,
    # written after its exits (its `time` is then) and before the next attempt starts.
    STEP = "step"
    HEARTBEAT = "heartbeat"  # a worker without step events: role, index, step
    VALIDATION = "validation"  # chief: step, val_loss, val_accuracy
    CHECKPOINT_SAVED = "checkpoint_saved"  # chief: step, path, size (bytes), requested
    CHECKPOINT_REQUESTED = "checkpoint_requested"  # supervisor: step
    JUST_IN_TIME_SAVED = "just_in_time_saved"  # a worker: step, path (scratch), live_differs
    JUST_IN_TIME_SKIPPED = "just_in_time_skipped"  # a worker: step, reason
    COLLECTIVES_ABORTED = "collectives_aborted"  # a worker told a peer is gone: reason
    FAULT_INJECTED = "fault_injected"  # kind, target, step, source (user, schedule, timer)
    PREEMPTED = "preempted"  # chief: step, checkpoint (saved on SIGTERM)
    NON_FINITE_LOSS = "non_finite_loss"  # chief: step
    ROLLED_BACK = "rolled_back"  # chief: from_step, to_step, checkpoint, source (memory/disk)
    HANG_DETECTED = "hang_detected"  # supervisor's watchdog: role, index, seconds, last_step
    THAWED = "thawed"  # supervisor: target, step
    # a trainer waits at a step boundary until the supervisor lets it go
    # (`ftgui.core.supervision.holds`):
    # step, role, index, why (presenter, standby, or the target of a fault the supervisor fires)
    HELD = "held"
    HOLD_RELEASED = "hold_released"  # the trainer goes on: step, role, index, seconds, by
    TRAINING_ERROR = "training_error"  # trainer: role, index, error
    PROCESS_EXITED = "process_exited"  # supervisor: role, index, exit_code or signal, decisive
    RECOVERY_SCHEDULED = "recovery_scheduled"  # supervisor: delay (s), restart
    RECOVERY_CANCELLED = "recovery_cancelled"  # supervisor stopped with a restart pending
    # a due restart waits for the launcher: waits_for (in words), seconds (the most it waits)
    RECOVERY_WAITING = "recovery_waiting"
    FORKED = "forked"  # supervisor: from_step, archived_steps, archive
    SETTING_CHANGED = "setting_changed"  # setting (its name), old, new, step (from which)
    DETERMINISM_WARNING = "determinism_warning"  # supervisor: reason, ops (exact resume at risk)
    RUN_FINISHED = "run_finished"  # chief: step, loss
    # chief with in-memory snapshots, after run_finished: step, snapshots (count), seconds
    # (summed on the step path), first_seconds (the first: a read of the state traced where
    # the step does not return it), size (bytes)
    SNAPSHOT_STATS = "snapshot_stats"

    @property
    def notable(self) -> bool:
        """Whether the event gets a line of its own in the event log and the CLI."""
        return self not in _QUIET


_QUIET = {EventKind.STEP, EventKind.HEARTBEAT, EventKind.VALIDATION,
          EventKind.SNAPSHOT_STATS}  # a figure for reports, not news
NOTABLE = frozenset(kind.value for kind in EventKind if kind.notable)


def is_notable(kind: str) -> bool:
    """True for an event type that gets its own line (unknown types: True, they are news)."""
    return kind not in {quiet.value for quiet in _QUIET}


def who(event: dict) -> str:
    """The process an event is about, as a person names it: `chief`, `worker 1`, `ps 0`."""
    role = event.get("role", "chief")
    return "chief" if role == "chief" else f"{role} {event.get('index', 0)}"


def describe(event: dict, step: int | None = None, settled: bool = False) -> str:
    """One sentence for `event`, e.g. "worker 1 lost (killed) at step 352".

    `step` is the global step the run had reached when the event happened, as the timeline
    knows it (the step events before it in the file); it is used where the event's own step is
    the writer's view, which can lag (a `fault_injected` the supervisor wrote, a
    `process_exited`). `settled`: the event's attempt already had its outcome (a
    `process_exited` is then the clean-up of the rest of a cluster, not a loss). Unknown event
    types are shown as `type: key=value, …`.
    """
    kind = event.get("event", "")
    if kind == "process_exited":
        return _process_exited(event, step, settled)
    describer = _DESCRIBERS.get(kind)
    if describer is None:
        skip = {"event", "time", "attempt", "config", "mono", "clock"}
        details = ", ".join(f"{k}={_short(v)}" for k, v in event.items() if k not in skip)
        return f"{kind}: {details}" if details else kind
    return describer(event, step)


def _short(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def short_value(value) -> str:
    """A setting's value in a few characters: floats to 4 significant digits."""
    return _short(value)


def setting_label(name: str) -> str:
    """A setting as the panel names it, in lower case ("learning rate"); unknown: `name`."""
    setting = SETTINGS.get(name)
    return setting.label.lower() if setting is not None else name


def _setting_changed(event, step):
    at = event.get("step", step)
    return (f"{setting_label(event.get('setting', '?'))} changed from "
            f"{_short(event.get('old'))} to {_short(event.get('new'))} at step {at}")


def restart_words(restart: int | None, delay: float | None) -> str:
    """How an automatic restart is announced: "restarting in 0.5 s" for the first one since
    training last went on, "restart 2 in a row, in 1.0 s" for a further one (restarts count
    in a row: each run of `max_restarts` starts again once training goes on). `delay`: in
    seconds."""
    if not restart or restart <= 1:
        return f"restarting in {formatting.seconds(delay)}"
    return f"restart {restart} in a row, in {formatting.seconds(delay)}"


def waiting_words(waits_for: str | None, limit: float | None) -> str:
    """How a restart that waits is announced: "restart waits up to 10 s for the fork
    server's import of TensorFlow". `waits_for`: what, in words (`recovery_waiting`);
    `limit`: the most it waits, in seconds."""
    most = f"up to {limit:g} s " if limit else ""
    return f"restart waits {most}for {waits_for or 'the launcher'}"


def waiting_reason(limit: float | None) -> str:
    """The state's reason while a restart waits (`recovery_waiting`), short enough for the
    state label beside the run buttons: "waiting to restart (up to 10 s)"; the story line
    and the event's line say what for (the full sentence took the label to three lines in
    the presentation view, and the plot moved down)."""
    return "waiting to restart" + (f" (up to {limit:g} s)" if limit else "")


def _loss(value) -> str:
    # an event's null loss is a non-finite one (JSON has no NaN)
    return "nan" if value is None else formatting.loss(value)


def _size(size) -> str:
    if not isinstance(size, (int, float)) or isinstance(size, bool):
        return ""
    return f" ({formatting.size(size)})"


def _run_started(event, step):
    config = event.get("config") or {}
    if not config:
        return "run started"
    return f"run started: {config.get('strategy', '?')}, {config.get('steps', '?')} steps"


# what a `resumed` event's `source` restored, in words
_RESTORE_SOURCES = {"memory": "the in-memory snapshot of step",
                    "just_in_time": "the just-in-time checkpoint of step",
                    "disk": "checkpoint"}


def _process_started(event, step):
    where = f"pid {event.get('pid')}" if event.get("pid") is not None else event.get("ident")
    text = f"{who(event)} started ({where})"  # a Slurm task: "job 17 worker:1"
    if event.get("snapshot") is not None:
        text += f", restoring step {event['snapshot']} from memory"
    elif event.get("restore"):
        text += f", restoring {event['restore'].rsplit('/', 1)[-1]}"
    if event.get("standby"):
        text += ", from a warm standby"
        if event.get("standby_warm") is False:
            age = event.get("standby_age")
            # its age: the process began that long ago (its own import time, said when it
            # ends, counts from the interpreter's start, later)
            began = f" (started {formatting.seconds(age)} ago)" \
                if isinstance(age, (int, float)) else ""
            text += f" still getting ready{began}"  # importing, or building
    elif event.get("forked"):
        text += ", forked with TensorFlow imported"
    elif event.get("cold_reason"):
        text += f", importing TensorFlow: {event['cold_reason']}"
    return text


def _training_started(event, step):
    start = event.get("start_step")
    replicas = event.get("replicas")
    tail = f", {replicas} replica{'s' if replicas != 1 else ''}" if replicas else ""
    if event.get("loop") == "fit":  # BackupAndRestore decides the start step inside fit
        return f"{who(event)} training with model.fit ({event.get('strategy', '?')}{tail})"
    if start is None:
        return f"{who(event)} serving ({event.get('strategy', '?')})"
    return f"{who(event)} training from step {start} ({event.get('strategy', '?')}{tail})"


def _checkpoint_saved(event, step):
    late = " just in time" if event.get("just_in_time") else ""
    text = f"checkpoint {event.get('step')} saved{late}{_size(event.get('size'))}"
    if event.get("source") == "memory":  # off the interval: the restored snapshot, on disk
        text += " from the restored in-memory snapshot"
    return text + (" on request" if event.get("requested") else "")


def _training_error(e: dict, step: int | None) -> str:
    # A multi-worker survivor's collective failing because a peer is gone is the expected
    # first half of a recovery (its just-in-time save follows), not a fault of its own.
    error = e.get("error", "")
    if error.startswith(("UnavailableError", "CancelledError")):
        return f"{who(e)} lost contact with a peer ({error.split(':', 1)[0]})"
    return f"{who(e)} error: {error}"


def _fault_injected(event, step):
    at = max(event.get("step") or 0, step or 0)
    target = event.get("target", "chief")
    source = event.get("source") or "user"
    # a preemption is a request: the process saves the step it is on (often the next) and stops
    what = {"kill": f"kill of {target}", "preempt": f"preemption of {target} requested",
            "hang": f"freeze of {target}", "nan": "NaN in the loss",
            "kill-in-save": f"kill of {target} inside a checkpoint save",
            "kill-in-snapshot": f"kill of {target} inside a snapshot"}.get(
        event.get("kind"), f"{event.get('kind')} of {target}")
    planned = event.get("step")
    if source == "schedule" and planned is not None and at > planned:
        # steps arrive in chunks (parameter server) or a poll late: say which step was asked
        source = f"schedule: step {planned}"
    return f"{what} at step {at} ({source})"


_HOLD_ENDS = {"presenter": "the presenter moved on", "fault": "the fault was fired",
              "standby": "the warm standby is ready", "preemption": "asked to stop",
              "standby-timeout": "no warm standby was ready in time"}


def _held(event: dict) -> str:
    why = event.get("why", "")
    reason = {"presenter": "for the presenter", "standby": "until the warm standby is ready"}
    return (f"{who(event)} held after step {event.get('step')} "
            f"{reason.get(why, f'until the fault of {why} is fired')}")


def _process_exited(event, step, settled=False):
    at = step if step is not None else event.get("last_step", 0)
    name = who(event)
    state, reason = run_state.state_from_exit(event)
    reason = event.get("reason") or reason
    if event.get("shutdown"):
        return f"{name} stopped by ftgui"
    if state == "finished":
        return f"{name} finished at step {at}"
    if settled and not run_state.is_decisive(event):  # the rest of a cluster, after the outcome
        if reason.startswith("ended by ftgui"):
            return f"{name} {reason}"
        return f"{name} ended ({reason})"
    how = state if state in ("killed", "preempted") else "failed"
    text = f"{name} {how}" if run_state.is_chief(event) else f"{name} lost ({how})"
    text += f" at step {at}"
    return text + (f": {reason}" if how == "failed" else "")


def _standby_ready(e: dict, s: dict | None = None) -> str:
    who_ = (f"the warm standby that took over (pid {e.get('pid')}) is ready"
            if e.get("took_over") else "warm standby ready")
    if not e.get("forked"):
        return f"{who_} (TensorFlow imported in {formatting.seconds(e.get('import_seconds'))})"
    built = e.get("prepare_seconds")
    return f"{who_} (forked with TensorFlow imported" + (
        f", built in {formatting.seconds(built)})" if built is not None else ")")


_DESCRIBERS = {
    "run_started": _run_started,
    "process_started": _process_started,
    "remote_task": lambda e, s: f"start {who(e)} on {e.get('address')}: {e.get('command')}",
    "cluster_exposed": lambda e, s: e.get("line") or "the cluster's ports are open to the network",
    "standby_ready": _standby_ready,
    "training_started": _training_started,
    "job_started": lambda e, s: f"Slurm job {e.get('job')} started on {e.get('nodes')}"
    + (f", restart {e.get('restart')}" if e.get("restart") else "")
    + (f" after {formatting.seconds(e.get('pending_seconds'))} waiting for Slurm"
       if e.get("pending_seconds") is not None else ""),
    "resumed": lambda e, s: f"restarted from step {e.get('from_step')} (no checkpoint yet)"
    if e.get("source") == "none" else
    f"resumed from {_RESTORE_SOURCES.get(e.get('source'), 'checkpoint')} {e.get('from_step')}",
    "step": lambda e, s: f"step {e.get('step')}: loss {_loss(e.get('loss'))}",
    "heartbeat": lambda e, s: f"{who(e)} at step {e.get('step')}",
    "validation": lambda e, s: f"validation at step {e.get('step')}: loss "
    f"{_loss(e.get('val_loss'))}",
    "checkpoint_saved": _checkpoint_saved,
    "just_in_time_saved": lambda e, s: f"{who(e)} saved step {e.get('step')} just in time "
    f"({e.get('error')})",
    "just_in_time_skipped": lambda e, s: f"{who(e)}: no just-in-time checkpoint, "
    f"{e.get('reason')}",
    "collectives_aborted": lambda e, s: f"{who(e)} stopped waiting for its peers "
    f"({e.get('reason')})",
    "checkpoint_requested": lambda e, s: "checkpoint requested after step "
    f"{max(e.get('step') or 0, s or 0)}",
    "fault_injected": _fault_injected,
    "preempted": lambda e, s: f"preempted: checkpoint {e.get('step')} saved, stopping",
    "non_finite_loss": lambda e, s: f"loss not finite at step {e.get('step')}",
    "rolled_back": lambda e, s: f"rolled back from step {e.get('from_step')} to "
    + (f"step {e.get('to_step')} from memory" if e.get("source") == "memory"
       else f"checkpoint {e.get('to_step')}"),
    "hang_detected": lambda e, s: f"{who(e)} hung: no progress for "
    f"{formatting.seconds(e.get('seconds'))} at step {e.get('last_step')}",
    "held": lambda e, s: _held(e),
    "hold_released": lambda e, s: f"{who(e)} goes on after step {e.get('step')} "
    f"({_HOLD_ENDS.get(e.get('by'), e.get('by'))}, held {formatting.seconds(e.get('seconds'))})",
    "thawed": lambda e, s: f"{e.get('target', 'chief')} thawed at step "
    f"{max(e.get('step') or 0, s or 0)}",
    "training_error": _training_error,
    "recovery_scheduled": lambda e, s: restart_words(e.get("restart"), e.get("delay")),
    "recovery_cancelled": lambda e, s: "automatic restart cancelled: ftgui stopped",
    "recovery_waiting": lambda e, s: waiting_words(e.get("waits_for"), e.get("seconds")),
    "forked": lambda e, s: f"forked from checkpoint {e.get('from_step')}; newer checkpoints "
    f"{', '.join(map(str, e.get('archived_steps') or [])) or 'none'} kept in {e.get('archive')}",
    "setting_changed": _setting_changed,
    "determinism_warning": lambda e, s: "exact resume is not guaranteed: "
    f"{e.get('reason', '')}",
    "run_finished": lambda e, s: f"run finished at step {e.get('step')}, final loss "
    f"{_loss(e.get('loss'))}",
}
