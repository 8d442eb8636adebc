"""Run history: the runs under a runs root, each summarised from its own directory, quickly.

A run directory is a folder holding `config.toml` or `events.jsonl`. Its summary (status, steps,
incidents, start time, final loss) is read from `events.jsonl` without JSON-parsing the step lines,
which make up nearly all of a long run's file: only the last one matters for a summary. Summaries
are cached per file and extended from where the last read stopped, so refreshing a list of runs
that are still being written reads only their new lines.

`read_history` (opening a run) and `read_curves` (overlays, CSV export) read every event of one
run: each line parsed by orjson, the step events gathered into numpy columns (`Points`). A line
orjson refuses, or a step event of another shape than the trainer writes, is read by
`events.parse_line`, so what is skipped is exactly what every reader skips.
"""

from __future__ import annotations

import json
import math
import os
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson
from platformdirs import user_data_path

from ftgui.core import config as configmod
from ftgui.core.config import ConfigError
from ftgui.core.events import EVENTS_FILE, is_int64, parse_line
from ftgui.core.incidents import IncidentTracker
from ftgui.core.run_lock import is_busy
from ftgui.core.run_state import is_decisive, state_from_exit

STEP_PREFIX = b'{"event":"step"'  # how EventWriter writes every step event (compact JSON)
STATUSES = ("running", "finished", "preempted", "failed", "killed", "stopped", "interrupted",
            "idle")
_CHUNK_BYTES = 4 << 20


def runs_root() -> Path:
    """Where new runs go by default: the platform's user data folder, `…/ftgui/runs`."""
    return user_data_path("ftgui") / "runs"


def new_run_dir(root: Path | None = None) -> Path:
    """A fresh, not yet existing run directory named by the local time."""
    root = root or runs_root()
    stamp = time.strftime("run-%Y%m%d-%H%M%S")
    path, n = root / stamp, 1
    while path.exists():
        n += 1
        path = root / f"{stamp}-{n}"
    return path


def is_run_dir(path: Path) -> bool:
    return (path / configmod.CONFIG_FILE).is_file() or (path / EVENTS_FILE).is_file()


@dataclass
class RunSummary:
    """One run as the run history shows it.

    `status` is one of STATUSES: `running` (another process holds the run's lock), `finished`
    (the last attempt reached the last step), `preempted` / `failed` / `killed` (how the last
    attempt's decisive process exit ended it), `interrupted` (the history stops mid-attempt:
    its supervisor died), or `idle` (configured, never started). `reason` says more.
    `steps_done` is the global step the run has reached (a resume from an older checkpoint moves
    it back); `incidents` counts as `ftgui.core.incidents` does (faults, unplanned crashes,
    NaNs); `started` is the Unix time of `run_started`; `final_loss` is the loss of the last
    step logged (None for NaN).
    """

    name: str
    path: Path
    status: str
    reason: str = ""
    strategy: str = ""
    steps_done: int = 0
    steps_planned: int | None = None
    incidents: int = 0
    attempts: int = 0
    started: float | None = None
    final_loss: float | None = None


@dataclass
class _Scan:
    """What has been learned from `events.jsonl` up to byte `offset` (complete lines only)."""

    inode: int = -1
    offset: int = 0
    last_attempt: int = -1
    finished_attempt: int = -1  # the attempt of the newest `run_finished`
    decisive_exit: dict | None = None  # the newest decisive `process_exited`
    tracker: IncidentTracker = field(default_factory=IncidentTracker)  # fed non-step events
    started: float | None = None
    first_time: float | None = None
    run_config: dict = field(default_factory=dict)  # the config recorded in `run_started`
    last_step_line: bytes = b""
    resumed_from: int | None = None  # a `resumed` after the last step line moves the position

    def feed(self, data: bytes) -> None:
        """Take in complete lines (`data` ends with a newline). Step lines as EventWriter
        writes them (STEP_PREFIX) are not parsed, except the last one."""
        lines = data.split(b"\n")[:-1]
        last_step = next((number for number in range(len(lines) - 1, -1, -1)
                          if lines[number].startswith(STEP_PREFIX)), -1)
        if last_step >= 0:
            self.last_step_line = lines[last_step]
            self.resumed_from = None
            self.last_attempt = max(self.last_attempt, _event_of(self.last_step_line).get(
                "attempt", 0))
        if self.first_time is None and lines:
            self.first_time = _event_of(lines[0]).get("time")
        for number, line in enumerate(lines):
            if not line.startswith(STEP_PREFIX):
                event = _event_of(line)
                if event:
                    self._observe(event, after_last_step=number > last_step)

    def _observe(self, event: dict, after_last_step: bool) -> None:
        kind = event["event"]
        attempt = event.get("attempt", 0)
        self.last_attempt = max(self.last_attempt, attempt)
        self.tracker.observe(event)  # counts incidents as the Incidents tab does
        if kind == "run_started":
            self.started = event.get("time")
            self.run_config = event.get("config") or {}
        elif kind == "run_finished":
            self.finished_attempt = max(self.finished_attempt, attempt)
        elif kind == "resumed" and after_last_step:
            self.resumed_from = event.get("from_step")
        elif kind == "rolled_back" and after_last_step:  # back to a checkpoint after a NaN
            self.resumed_from = event.get("to_step")
        elif kind == "process_exited":
            if is_decisive(event):
                self.decisive_exit = event


def _complete_chunks(handle, offset: int = 0):
    """Yield (data, end offset) for the complete lines from `offset` on, a few MB at a time;
    a torn last line (no newline yet) is left for the next read."""
    handle.seek(offset)
    partial = b""
    while chunk := handle.read(_CHUNK_BYTES):
        data = partial + chunk
        complete = data.rfind(b"\n") + 1
        if complete:
            offset += complete
            yield data[:complete], offset
        partial = data[complete:]


def _event_of(line: bytes) -> dict:
    try:
        event = json.loads(line)
    except ValueError:
        return {}
    return event if isinstance(event, dict) and "event" in event else {}


_scans: dict[Path, _Scan] = {}


def _scan(run_dir: Path) -> _Scan:
    """The run's events scanned so far, extended by what was appended since the last call."""
    path = run_dir / EVENTS_FILE
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        _scans.pop(path, None)
        return _Scan()
    with handle:
        stat = os.fstat(handle.fileno())
        scan = _scans.get(path)
        if scan is None or scan.inode != stat.st_ino or stat.st_size < scan.offset:
            scan = _scans[path] = _Scan(inode=stat.st_ino)
        for data, offset in _complete_chunks(handle, scan.offset):
            scan.feed(data)
            scan.offset = offset
    return scan


def summarize(run_dir: str | os.PathLike) -> RunSummary:
    """The summary of one run directory (see `RunSummary`)."""
    run_dir = Path(run_dir)
    scan = _scan(run_dir)
    summary = RunSummary(name=run_dir.name, path=run_dir, status="idle",
                         reason="configured, never started")
    summary.attempts = scan.last_attempt + 1
    summary.started = scan.started if scan.started is not None else scan.first_time
    summary.incidents = len(scan.tracker.incidents)
    try:
        run_config = configmod.load(run_dir).to_dict()
    except (OSError, ConfigError):
        run_config = scan.run_config
    summary.strategy = str(run_config.get("strategy", ""))
    summary.steps_planned = run_config.get("steps")
    if scan.last_step_line:
        last = _event_of(scan.last_step_line)
        summary.steps_done = last.get("step", 0)
        loss = last.get("loss")
        finite = isinstance(loss, (int, float)) and math.isfinite(loss)
        summary.final_loss = loss if finite else None
    if scan.resumed_from is not None:
        summary.steps_done = scan.resumed_from
    summary.status, summary.reason = _status(run_dir, scan)
    return summary


def _status(run_dir: Path, scan: _Scan) -> tuple[str, str]:
    if is_busy(run_dir):
        return "running", "another process supervises it"
    if scan.last_attempt < 0:
        return "idle", "configured, never started"
    if scan.finished_attempt == scan.last_attempt:
        return "finished", "reached the last step"
    exit_event = scan.decisive_exit
    if exit_event is not None and exit_event.get("attempt", 0) == scan.last_attempt:
        state, reason = state_from_exit(exit_event)
        if exit_event.get("reason"):
            reason = exit_event["reason"]
        if not exit_event.get("chief", exit_event.get("role") == "chief"):
            reason = f"{exit_event.get('role')} {exit_event.get('index', 0)} {reason}"
        return state, reason
    return "interrupted", f"attempt {scan.last_attempt} ended without a recorded exit"


def list_runs(root: str | os.PathLike) -> list[RunSummary]:
    """Every run directory directly under `root`, newest start first (never-started runs last).

    A missing or unreadable `root` gives an empty list.
    """
    root = Path(root)
    try:
        children = [path for path in root.iterdir() if path.is_dir()]
    except OSError:
        return []
    runs = [summarize(path) for path in sorted(children) if is_run_dir(path)]
    runs.sort(key=lambda run: (run.started is None, -(run.started or 0.0), run.name))
    return runs


# ------------------------------------------------------------------------------ curves
_COLUMNS = ("line", "attempt", "step", "time", "loss", "mono", "clock")


@dataclass
class Points:
    """Logged losses as parallel arrays, in file order: `line` (the event's line number in the
    file), `attempt`, `step`, `time` (Unix seconds), `loss` (NaN for a null loss), `mono`
    (seconds of the writer's monotonic clock, NaN when the event has none) and `clock` (which
    clock, a str or None, an object array; a step that names none is on the clock of the step
    before it, see `events.EventWriter`)."""

    line: np.ndarray
    attempt: np.ndarray
    step: np.ndarray
    time: np.ndarray
    loss: np.ndarray
    mono: np.ndarray
    clock: np.ndarray

    def __len__(self) -> int:
        return len(self.line)

    @classmethod
    def from_parts(cls, parts: list[Points]) -> Points:
        if not parts:
            ints, floats = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
            return cls(ints, ints, ints, floats, floats, floats, np.empty(0, dtype=object))
        if len(parts) == 1:
            return parts[0]
        joined = cls(*(np.concatenate([getattr(p, name) for p in parts]) for name in _COLUMNS))
        order = np.argsort(joined.line, kind="stable")
        return cls(*(getattr(joined, name)[order] for name in _COLUMNS))

    @classmethod
    def from_events(cls, rows: list[tuple[int, dict]], loss_key: str) -> Points:
        """From (line, event) pairs; `loss_key` names the loss field (`loss`, `val_loss`)."""
        clocks = np.empty(len(rows), dtype=object)
        clocks[:] = [_clock_of(e) for _, e in rows]
        return cls(
            line=np.array([line for line, _ in rows], dtype=np.int64),
            attempt=np.array([e.get("attempt", 0) for _, e in rows], dtype=np.int64),
            step=np.array([e.get("step", 0) for _, e in rows], dtype=np.int64),
            time=np.array([_nan_if_none(e.get("time")) for _, e in rows], dtype=np.float64),
            loss=np.array([_nan_if_none(e.get(loss_key)) for _, e in rows], dtype=np.float64),
            mono=np.array([_seconds_or_nan(e.get("mono")) for _, e in rows], dtype=np.float64),
            clock=clocks,
        )


def _clock_column(marks: list[tuple[int, object]], count: int) -> np.ndarray:
    """The `clock` of `count` rows, from the rows where it changes (rows before the first mark:
    None); a clock that is not a str counts as None."""
    column = np.full(count, None, dtype=object)
    for number, (row, clock) in enumerate(marks):
        stop = marks[number + 1][0] if number + 1 < len(marks) else count
        column[row:stop] = clock if isinstance(clock, str) else None
    return column


def _clock_of(event: dict) -> str | None:
    clock = event.get("clock")
    return clock if isinstance(clock, str) else None


def _seconds_or_nan(value) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(value) else math.nan


@dataclass
class RunCurves:
    """Every training (`train`) and validation point of one run; `origin` is the time of the
    run's first event (wall-clock x values are seconds since then)."""

    train: Points
    validation: Points
    origin: float | None

    def surviving_train(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(steps, times, losses) of the line of training that stands: a step logged again
        (by a restart from an older checkpoint, or after a rollback) replaces the earlier one.
        Sorted by step, float64, NaN where a loss or time is unknown."""
        count = len(self.train)
        steps, first_from_end = np.unique(self.train.step[::-1], return_index=True)
        last = count - 1 - first_from_end
        return steps.astype(np.float64), self.train.time[last], self.train.loss[last]


def _nan_if_none(value) -> float:
    """A JSON number as float: None is NaN, a whole number too large for float is ±inf."""
    if value is None:
        return math.nan
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def read_curves(run_dir: str | os.PathLike) -> RunCurves:
    """All `step` and `validation` points of `RUN/events.jsonl` (a torn last line is skipped);
    `origin` is the `time` of the file's first line. Raises `FileNotFoundError` without events.
    """
    with open(Path(run_dir) / EVENTS_FILE, "rb") as handle:
        events = _read_events(handle)
    validations = [(line, event) for line, event in events.others
                   if event["event"] == "validation" and is_int64(event.get("step"))]
    return RunCurves(train=events.steps, validation=Points.from_events(validations, "val_loss"),
                     origin=events.first_time)


@dataclass
class History:
    """A run's events for opening it: the step events as columns (`steps`), every other event
    parsed, with its line number (`others`, in file order), and the byte offset where the
    complete lines end (`end_offset`: read on from there)."""

    steps: Points
    others: list[tuple[int, dict]]
    end_offset: int


def read_history(run_dir: str | os.PathLike) -> History:
    """Every complete event of `RUN/events.jsonl` (a run of a million steps has a million step
    lines and a few hundred others). A missing file gives an empty history."""
    try:
        handle = open(Path(run_dir) / EVENTS_FILE, "rb")
    except FileNotFoundError:
        return History(Points.from_parts([]), [], 0)
    with handle:
        events = _read_events(handle)
    return History(events.steps, events.others, events.end_offset)


@dataclass
class _Events:
    steps: Points
    others: list[tuple[int, dict]]  # (line number, event) of every well-formed non-step event
    end_offset: int
    first_time: float | None  # the `time` of the first line, whatever its kind


_INT64 = range(-2**63, 2**63)


def _read_events(handle) -> _Events:
    """Read a whole events file from `handle`, as `read_history` describes.

    The loop is the hot path of opening a long run: a step event in the trainer's shape
    (int `attempt` and `step` in int64, float `time`, finite float or null `loss`, float `mono`
    or none, str `clock` or none) goes straight into columns; anything else is decided by
    `events.parse_line`.
    """
    lines, attempts, steps = array("q"), array("q"), array("q")  # int64, no Python objects
    times, losses, monos = array("d"), array("d"), array("d")
    clock_marks: list[tuple[int, object]] = []  # (row, clock) where the steps' clock changes
    last_clock = None
    odd_steps: list[tuple[int, dict]] = []
    others: list[tuple[int, dict]] = []
    number, end, first_time = 0, 0, None
    loads, decode_error, isfinite = orjson.loads, orjson.JSONDecodeError, math.isfinite
    nan = math.nan
    for data, offset in _complete_chunks(handle):
        end = offset
        chunk = data.split(b"\n")[:-1]
        stamped = b'"mono"' in data  # else a run written before `mono` existed
        if number == 0 and chunk:
            first_time = _event_of(chunk[0]).get("time")
        for line in chunk:
            try:
                event = loads(line)
            except decode_error:
                event = None
            if type(event) is dict and event.get("event") == "step":
                step, attempt = event.get("step"), event.get("attempt")
                time_, loss = event.get("time"), event.get("loss")
                if (type(step) is int and type(attempt) is int and type(time_) is float
                        and (loss is None or (type(loss) is float and isfinite(loss)))
                        and step in _INT64 and attempt in _INT64
                        and (not stamped or type(event.get("mono", nan)) is float)):
                    if stamped:
                        monos.append(event.get("mono", nan))
                        clock = event.get("clock")  # only a writer's first step names it
                        if clock is not None and clock != last_clock:
                            clock_marks.append((len(lines), clock))
                            last_clock = clock
                    lines.append(number)
                    attempts.append(attempt)
                    steps.append(step)
                    times.append(time_)
                    losses.append(nan if loss is None else loss)
                    number += 1
                    continue
            event = parse_line(line)
            if event is not None:
                (odd_steps if event["event"] == "step" else others).append((number, event))
            number += 1
        if not stamped:  # runs written before `mono` existed: none, without a step per row
            monos.extend(array("d", [nan]) * (len(lines) - len(monos)))
    parts = [Points(*(np.frombuffer(column, dtype=np.int64) for column in (lines, attempts, steps)),
                    *(np.frombuffer(column, dtype=np.float64) for column in (times, losses, monos)),
                    _clock_column(clock_marks, len(lines)))]
    if odd_steps:
        parts.append(Points.from_events(odd_steps, "loss"))
    return _Events(Points.from_parts(parts), others, end, first_time)
