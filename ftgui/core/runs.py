"""Run history: the runs under a runs root, each summarised from its own directory, quickly.

A run directory is a folder holding `config.toml` or `events.jsonl`. Its summary (status, steps,
incidents, start time, final loss) is read from `events.jsonl` without JSON-parsing the step lines,
which make up nearly all of a long run's file: only the last one matters for a summary. Summaries
are cached per file and extended from where the last read stopped, so refreshing a list of runs
that are still being written reads only their new lines.

`read_curves` is the other reader: every training and validation point of one run (for overlays and
CSV export). It reads the step lines column-wise with numpy rather than one `json.loads` each.
"""

from __future__ import annotations

import json
import math
import os
import time
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
        """Take in complete lines (`data` ends with a newline)."""
        lines = _Lines(data)
        step_lines = np.flatnonzero(lines.is_step)
        last_step = int(step_lines[-1]) if len(step_lines) else -1
        if last_step >= 0:
            self.last_step_line = lines.text(last_step)
            self.resumed_from = None
            self.last_attempt = max(self.last_attempt, _event_of(self.last_step_line).get(
                "attempt", 0))
        if self.first_time is None and len(lines):
            self.first_time = _event_of(lines.text(0)).get("time")
        for line_number in np.flatnonzero(~lines.is_step).tolist():
            event = _event_of(lines.text(line_number))
            if event:
                self._observe(event, after_last_step=line_number > last_step)

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


class _Lines:
    """The complete lines of a piece of `events.jsonl`, found with numpy: byte offsets `starts`
    and `ends` (at the newline) per line, and `is_step` where a line starts with STEP_PREFIX."""

    def __init__(self, data: bytes):
        self.data = data
        self.buffer = np.frombuffer(data, dtype=np.uint8)
        self.ends = np.flatnonzero(self.buffer == ord("\n"))
        self.starts = np.empty_like(self.ends)
        self.starts[:1] = 0
        self.starts[1:] = self.ends[:-1] + 1
        is_step = self.ends - self.starts >= len(STEP_PREFIX)
        candidates = self.starts[is_step]
        matches = np.ones(len(candidates), dtype=bool)
        for offset, byte in enumerate(STEP_PREFIX):  # compare the prefix column by column
            matches &= self.buffer[candidates + offset] == byte
        is_step[is_step] = matches
        self.is_step = is_step

    def __len__(self) -> int:
        return len(self.ends)

    def text(self, line: int) -> bytes:
        return self.data[self.starts[line]:self.ends[line]]


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
@dataclass
class Points:
    """Logged losses as parallel arrays, in file order: `line` (the event's line number in the
    file), `attempt`, `step`, `time` (Unix seconds) and `loss` (NaN for a null loss)."""

    line: np.ndarray
    attempt: np.ndarray
    step: np.ndarray
    time: np.ndarray
    loss: np.ndarray

    def __len__(self) -> int:
        return len(self.line)

    @classmethod
    def from_parts(cls, parts: list[Points]) -> Points:
        if not parts:
            ints, floats = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
            return cls(ints, ints, ints, floats, floats)
        joined = cls(*(np.concatenate([getattr(p, name) for p in parts])
                       for name in ("line", "attempt", "step", "time", "loss")))
        order = np.argsort(joined.line, kind="stable")
        return cls(*(getattr(joined, name)[order]
                     for name in ("line", "attempt", "step", "time", "loss")))

    @classmethod
    def from_events(cls, rows: list[tuple[int, dict]], loss_key: str) -> Points:
        """From (line, event) pairs; `loss_key` names the loss field (`loss`, `val_loss`)."""
        return cls(
            line=np.array([line for line, _ in rows], dtype=np.int64),
            attempt=np.array([e.get("attempt", 0) for _, e in rows], dtype=np.int64),
            step=np.array([e.get("step", 0) for _, e in rows], dtype=np.int64),
            time=np.array([_nan_if_none(e.get("time")) for _, e in rows], dtype=np.float64),
            loss=np.array([_nan_if_none(e.get(loss_key)) for _, e in rows], dtype=np.float64),
        )


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
    """All `step` and `validation` points of `RUN/events.jsonl` (a torn last line is skipped).

    Step lines as EventWriter writes them are read column-wise with numpy (a long run has
    millions); any other line is parsed as JSON. Raises `FileNotFoundError` without events.
    """
    train_parts: list[Points] = []
    odd_steps: list[tuple[int, dict]] = []
    validations: list[tuple[int, dict]] = []
    origin, first_line = None, 0
    with open(Path(run_dir) / EVENTS_FILE, "rb") as handle:
        for data, _ in _complete_chunks(handle):
            lines = _Lines(data)
            if origin is None and len(lines):
                origin = _event_of(lines.text(0)).get("time")
            step_lines = np.flatnonzero(lines.is_step)
            columns, parsed = _step_columns(lines, step_lines)
            train_parts.append(Points(first_line + step_lines[parsed], *columns))
            others = np.concatenate([step_lines[~parsed], np.flatnonzero(~lines.is_step)])
            for line in others.tolist():
                event = parse_line(lines.text(line)) or {}  # None: not a well-formed event
                if event.get("event") == "step":
                    odd_steps.append((first_line + line, event))
                elif event.get("event") == "validation" and is_int64(event.get("step")):
                    validations.append((first_line + line, event))
            first_line += len(lines)
    if odd_steps:
        train_parts.append(Points.from_events(odd_steps, "loss"))
    return RunCurves(train=Points.from_parts(train_parts),
                     validation=Points.from_events(validations, "val_loss"), origin=origin)


_STEP_FIELDS = (b'"time":', b'"attempt":', b'"step":', b'"loss":', b'"epoch":')


@dataclass
class History:
    """A run's events for opening it: the step events as columns (`steps`), every other event
    parsed, with its line number (`others`, in file order), and the byte offset where the
    complete lines end (`end_offset`: read on from there)."""

    steps: Points
    others: list[tuple[int, dict]]
    end_offset: int


def read_history(run_dir: str | os.PathLike) -> History:
    """Read `RUN/events.jsonl` the fast way: step lines column-wise with numpy, the rest as
    JSON (a run of a million steps has a million step lines and a few hundred others).
    A missing file gives an empty history."""
    parts: list[Points] = []
    others: list[tuple[int, dict]] = []
    odd_steps: list[tuple[int, dict]] = []
    first_line, end = 0, 0
    try:
        handle = open(Path(run_dir) / EVENTS_FILE, "rb")
    except FileNotFoundError:
        return History(Points.from_parts([]), [], 0)
    with handle:
        for data, offset in _complete_chunks(handle):
            end = offset
            lines = _Lines(data)
            step_lines = np.flatnonzero(lines.is_step)
            columns, parsed = _step_columns(lines, step_lines)
            parts.append(Points(first_line + step_lines[parsed], *columns))
            rest = np.concatenate([step_lines[~parsed], np.flatnonzero(~lines.is_step)])
            for line in np.sort(rest).tolist():
                event = parse_line(lines.text(line))
                if event is None:
                    continue
                target = odd_steps if event["event"] == "step" else others
                target.append((first_line + line, event))
            first_line += len(lines)
    if odd_steps:
        parts.append(Points.from_events(odd_steps, "loss"))
    return History(Points.from_parts(parts), others, end)


def _step_columns(lines: _Lines, step_lines: np.ndarray):
    """Read step lines laid out exactly as the trainer writes them,
    `{"event":"step","time":T,"attempt":A,"step":S,"loss":L,"epoch":E}`, column-wise.

    Returns ((attempt, step, time, loss) arrays for those lines, and a mask over `step_lines`
    of them); every other line (another layout, a value that is not a plain JSON number of its
    kind, anything after the epoch) is left for the JSON parse, so the result is what
    `events.parse_line` reads. Values are cut out between their key and the next `,` (`}`
    after the epoch); the whole numbers are read from their digits, time and loss parsed as
    one JSON array by orjson (a correctly rounded parse: the same bits as `float()`); a null
    loss is NaN.
    """
    buffer, last_byte = lines.buffer, len(lines.buffer) - 1
    parsed = np.ones(len(step_lines), dtype=bool)
    delimiters = np.flatnonzero((buffer == ord(",")) | (buffer == ord("}")))
    position = lines.starts[step_lines] + len(STEP_PREFIX)
    ends = lines.ends[step_lines]
    spans = []
    for number, key in enumerate(_STEP_FIELDS):
        parsed &= buffer[np.minimum(position, last_byte)] == ord(",")
        for offset, byte in enumerate(key):
            parsed &= buffer[np.minimum(position + 1 + offset, last_byte)] == byte
        value_start = position + 1 + len(key)
        found = np.searchsorted(delimiters, value_start)
        value_end = delimiters[np.minimum(found, max(len(delimiters) - 1, 0))] if len(
            delimiters) else value_start
        parsed &= (found < len(delimiters)) & (value_start < value_end)
        if number == len(_STEP_FIELDS) - 1:  # the epoch ends the line: `}` and nothing else
            parsed &= (value_end == ends - 1) & (buffer[np.minimum(value_end, last_byte)]
                                                 == ord("}"))
        else:
            parsed &= value_end < ends
        spans.append((value_start, value_end))
        position = value_end
    (time_span, attempt_span, step_span, loss_span, epoch_span) = spans
    attempt, attempt_ok = _whole_numbers(buffer, *attempt_span)
    step, step_ok = _whole_numbers(buffer, *step_span)
    _, epoch_ok = _whole_numbers(buffer, *epoch_span)
    parsed &= attempt_ok & step_ok & epoch_ok
    first = buffer[np.minimum(time_span[0], last_byte)]
    parsed &= np.isin(first, _NUMBER_STARTS)
    loss_start, loss_end = loss_span
    null = _is_null(buffer, loss_start, loss_end)
    parsed &= np.isin(buffer[np.minimum(loss_start, last_byte)], _NUMBER_STARTS) | null
    count = int(parsed.sum())
    if count == 0:
        empty_int, empty_float = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        return (empty_int, empty_int, empty_float, empty_float), parsed
    # time and loss of line 1, then of line 2, ... cut out into one JSON array for orjson
    starts = np.stack([time_span[0][parsed], loss_start[parsed]], axis=1).ravel()
    widths = np.stack([time_span[1][parsed], loss_end[parsed]], axis=1).ravel() - starts
    cells = _cells(buffer, starts, widths)
    null_rows = np.flatnonzero(null[parsed])
    cells[null_rows * 2 + 1, :4] = np.frombuffer(b"0   ", dtype=np.uint8)  # NaN below
    cells[-1, -1] = ord("]")  # instead of the last value's trailing comma
    try:
        values = np.array(orjson.loads(b"[" + cells.tobytes()), dtype=np.float64)
    except (orjson.JSONDecodeError, TypeError, ValueError, OverflowError):
        values = np.empty(0)
    if len(values) != 2 * count:  # a value that is no number (`1x`): JSON reads every line
        return _step_columns(lines, step_lines[:0])[0], np.zeros(len(step_lines), dtype=bool)
    values = values.reshape(count, 2)
    values[null_rows, 1] = math.nan
    return (attempt[parsed], step[parsed], values[:, 0].copy(), values[:, 1].copy()), parsed


_NUMBER_STARTS = np.frombuffer(b"-0123456789", dtype=np.uint8)
_MAX_DIGITS = 18  # below 2**63: no overflow in int64


def _is_null(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Where buffer[starts[i]:ends[i]] is exactly `null`."""
    last = len(buffer) - 1
    null = ends - starts == 4
    for offset, byte in enumerate(b"null"):
        null &= buffer[np.minimum(starts + offset, last)] == byte
    return null


def _cells(buffer: np.ndarray, starts: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """buffer[starts[i]:starts[i] + widths[i]] as rows of one width, padded with spaces and
    ended by a comma: shape (len(starts), max(widths) + 1), uint8."""
    width = int(widths.max())
    columns = np.arange(width)
    cells = buffer[np.minimum(starts[:, None] + columns, len(buffer) - 1)]
    cells[columns >= widths[:, None]] = ord(" ")
    return np.concatenate([cells, np.full((len(cells), 1), ord(","), dtype=np.uint8)], axis=1)


def _whole_numbers(buffer: np.ndarray, starts: np.ndarray,
                   ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The whole numbers written in buffer[starts[i]:ends[i]], and where the text is one
    (JSON's form: decimal digits, no leading zero, at most 18 of them); elsewhere the value is
    meaningless and the mask False."""
    lengths = np.clip(ends - starts, 1, _MAX_DIGITS)
    ok = (ends - starts >= 1) & (ends - starts <= _MAX_DIGITS)
    if not len(starts):
        return np.empty(0, dtype=np.int64), ok
    firsts = np.cumsum(lengths) - lengths
    positions = np.arange(int(lengths.sum())) - np.repeat(firsts, lengths) + np.repeat(
        starts, lengths
    )
    digits = buffer[np.minimum(positions, len(buffer) - 1)].astype(np.int64) - ord("0")
    bad = (digits < 0) | (digits > 9)
    ok &= np.add.reduceat(bad, firsts) == 0
    ok &= (digits[firsts] != 0) | (lengths == 1)  # 007 is not JSON
    digits[bad] = 0
    powers = np.repeat(starts + lengths, lengths) - positions - 1
    return np.add.reduceat(digits * (10 ** powers), firsts), ok
