"""Reading every event of one run: `read_history` (opening a run, replay, figures) and
`read_curves` (overlays, CSV export). The lines are parsed a few MB at a time by msgspec (into
small structs of the fields a step has, not dicts) and the step events are gathered into numpy
columns (`Points`). A chunk msgspec refuses is parsed line by line by orjson; a line orjson
refuses, or a step event of another shape than the trainer writes, is read by
`events.parse_line`, so what is skipped is exactly what every reader skips."""

from __future__ import annotations

import gc
import json
import math
import operator
import os
from array import array
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import orjson

from ftgui.core.record.events import EVENTS_FILE, is_int64, parse_line

_CHUNK_BYTES = 4 << 20


def complete_chunks(handle, offset: int = 0):
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


def event_of(line: bytes) -> dict:
    try:
        event = json.loads(line)
    except ValueError:
        return {}
    return event if isinstance(event, dict) and "event" in event else {}


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
    with open(Path(run_dir) / EVENTS_FILE, "rb") as handle, _no_cyclic_gc():
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
    with handle, _no_cyclic_gc():
        events = _read_events(handle)
    return History(events.steps, events.others, events.end_offset)


@contextmanager
def _no_cyclic_gc():
    """Pause Python's cyclic garbage collector while a file is read: a million parsed lines
    create a million short-lived dicts, each counting towards a collection that walks every
    object alive (bench_streaming: opening 1M steps 3.1 s with it, 2.4 s without). Dicts are
    still freed by reference counting; the collector is restored as it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


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
    for data, offset in complete_chunks(handle):
        end = offset
        stamped = b'"mono"' in data  # else a run written before `mono` existed
        if number == 0 and data:
            first_time = event_of(data[:data.find(b"\n")]).get("time")
        count = data.count(b"\n")
        fast = _chunk_columns(data, number, stamped, count)
        if fast is not None:
            columns, clocks, chunk_others = fast
            row0 = len(lines)
            targets = (lines, attempts, steps, times, losses, monos)
            for column, values in zip(targets, columns, strict=True):
                column.frombytes(values.tobytes())
            for row, clock in clocks:
                if clock != last_clock:
                    clock_marks.append((row0 + row, clock))
                    last_clock = clock
            others.extend(chunk_others)
            number += count
            continue
        for line in data.split(b"\n")[:-1]:
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


_LOSS_TYPES = {float, type(None)}


class _Line(msgspec.Struct):
    """The fields of an event line that the step columns take; a field the line lacks is None
    (`mono`: NaN, as `event.get("mono", nan)`), other fields are skipped. `attempt` and `step`
    must be JSON whole numbers or null (in any event: a chunk with another value there is read
    line by line); the others are taken as JSON has them and checked by `_chunk_columns` as
    `_read_events` checks a line."""

    event: Any = None
    time: Any = None
    attempt: int | None = None
    step: int | None = None
    loss: Any = None
    mono: Any = math.nan
    clock: Any = None


# One msgspec call per chunk into `_Line`s: 1.9x faster than orjson into dicts with the
# fields taken out (bench_streaming, 4 MB of step lines: 145 vs 279 ms at load 11); msgspec's
# floats are the bits Python's json reads (tests/core/record/test_history_parsing.py).
_decode_lines = msgspec.json.Decoder(list[_Line]).decode
_EVENT = operator.attrgetter("event")
_STEP, _ATTEMPT = operator.attrgetter("step"), operator.attrgetter("attempt")
_TIME, _LOSS = operator.attrgetter("time"), operator.attrgetter("loss")
_MONO, _CLOCK = operator.attrgetter("mono"), operator.attrgetter("clock")


def _chunk_columns(data: bytes, first_line: int, stamped: bool, count: int | None = None):
    """The fast path of `_read_events` for `data`, complete lines: all parsed by one msgspec
    call (`_Line`) and the step events' fields checked column by column (a Python loop per
    line took 4 s for 1M steps, bench_streaming). Returns ((line, attempt, step, time, loss,
    mono) arrays, [(row, clock)] of the steps naming a clock, [(line, event)] of the other
    events), or None when a line is not a JSON object or a step event is not in the trainer's
    shape: that chunk is then read line by line, so both paths keep and skip exactly the same
    lines. `count`: the number of lines in `data`, when the caller has counted them."""
    try:  # a blank line makes ",," and is read line by line
        parsed = _decode_lines(b"[" + data[:-1].replace(b"\n", b",") + b"]")
    except msgspec.DecodeError:  # also a line that is no object (ValidationError)
        return None
    if len(parsed) != (data.count(b"\n") if count is None else count):  # two values, one line
        return None
    try:
        if set(map(_EVENT, parsed)) <= {"step"}:  # the usual chunk: steps only
            rows, found = np.arange(len(parsed)), parsed
        else:
            kinds = np.fromiter(map(_EVENT, parsed), dtype=object, count=len(parsed))
            rows = np.flatnonzero(kinds == "step")
            found = [parsed[k] for k in rows.tolist()]
    except TypeError:  # an `event` that is a list or an object
        return None
    time_, loss = list(map(_TIME, found)), list(map(_LOSS, found))
    mono = list(map(_MONO, found)) if stamped else []
    if not (set(map(type, time_)) <= {float} and set(map(type, loss)) <= _LOSS_TYPES
            and set(map(type, mono)) <= {float}):
        return None
    try:  # msgspec made them int or None
        ints = [np.fromiter(map(get, found), dtype=np.int64, count=len(found))
                for get in (_STEP, _ATTEMPT)]
    except (TypeError, OverflowError):  # None (no step), or outside int64: read line by line
        return None
    losses = np.array(loss, dtype=np.float64)  # None -> NaN
    if np.count_nonzero(~np.isfinite(losses)) != loss.count(None):
        return None
    monos = np.array(mono, dtype=np.float64) if stamped else np.full(len(found), math.nan)
    columns = (rows.astype(np.int64) + first_line, ints[1], ints[0],
               np.array(time_, dtype=np.float64), losses, monos)
    clocks = [(row, clock) for row, clock in enumerate(map(_CLOCK, found))
              if clock is not None] if stamped else []
    others = []
    if len(found) == len(parsed):
        return columns, clocks, others
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)  # not a split: few lines
    not_steps = np.ones(len(parsed), dtype=bool)
    not_steps[rows] = False
    for k in np.flatnonzero(not_steps).tolist():
        event = parse_line(data[ends[k - 1] + 1 if k else 0:ends[k]])
        if event is not None:
            others.append((first_line + k, event))
    return columns, clocks, others
