"""The replay clock: a finished run's events, handed out as their recorded times come due.

`ReplayClock` is an event source like the supervisor: `poll()` returns the events that are due
now, in file order, unchanged (their recorded `time` fields too, so incidents, markers and
redone ranges come out exactly as when the run is opened). Time is compressed by `speed`
(1 = real time, 20 = twenty times faster); a pause longer than `max_gap` recorded seconds
(a run left preempted overnight, then resumed) is shortened to `max_gap` before the speed-up.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ftgui.core.record import event_history
from ftgui.core.record import events as eventsmod
from ftgui.core.settings.schema import ConfigError

MAX_SPEED = 1000.0
MAX_GAP_SECONDS = 10.0  # a longer idle gap in the recording plays as this many recorded seconds


def check_speed(speed) -> float:
    """`speed` as a float; raises `ConfigError` (one line) unless 0 < speed ≤ MAX_SPEED."""
    number = isinstance(speed, (int, float)) and not isinstance(speed, bool)
    if not number or not 0 < speed <= MAX_SPEED:
        raise ConfigError(f"speed (--speed): {speed!r} is not in (0, {MAX_SPEED:g}] "
                          "(1 plays in real time, 20 twenty times faster)")
    return float(speed)


def schedule(times, max_gap: float = MAX_GAP_SECONDS) -> np.ndarray:
    """Recorded seconds from the first event to each event (float64, non-decreasing), with
    every gap longer than `max_gap` cut to `max_gap`. `times`: Unix seconds per event in file
    order; a time earlier than one before it (writers' clocks differ slightly) counts as no gap,
    so file order is kept."""
    times = np.asarray(times, dtype=np.float64)
    if not len(times):
        return np.empty(0, dtype=np.float64)
    gaps = np.diff(np.fmax.accumulate(np.nan_to_num(times, nan=times[0])), prepend=times[0])
    return np.cumsum(np.clip(gaps, 0.0, max_gap))


def check_run(run_dir: str | os.PathLike) -> Path:
    """`RUN/events.jsonl` of a run that can be replayed; raises `ConfigError` (one line) when
    `run_dir` is no directory or has no events."""
    path = Path(run_dir) / eventsmod.EVENTS_FILE
    if not Path(run_dir).is_dir():
        raise ConfigError(f"run_dir: {run_dir} is not a directory")
    if not path.is_file() or path.stat().st_size == 0:
        raise ConfigError(f"run_dir: {run_dir} has no events to replay ({path.name} is "
                          "missing or empty)")
    return path


class HistoryEvents:
    """A run's `event_history.History` as its events in file order, made into dicts only when sliced
    (a run of a million steps stays a few numpy columns until its steps come due).

    `len()`, `[start:end]` → list of event dicts (a step as `{"event": "step", "time",
    "attempt", "step", "loss"}`, loss None where it was not finite), and `times`: the Unix
    time of each event (float64)."""

    def __init__(self, history: event_history.History):
        self._steps = history.steps
        self._others = [event for _, event in history.others]
        other_lines = np.fromiter((line for line, _ in history.others), np.int64,
                                  len(self._others))
        self._order = np.argsort(np.concatenate([self._steps.line, other_lines]), kind="stable")
        other_times = np.fromiter((_time_of(e) for e in self._others), np.float64,
                                  len(self._others))
        self.times = np.concatenate([self._steps.time, other_times])[self._order]

    def __len__(self) -> int:
        return len(self._order)

    def __getitem__(self, part: slice) -> list[dict]:
        steps, count = self._steps, len(self._steps)
        batch = []
        for index in self._order[part].tolist():
            if index >= count:
                batch.append(self._others[index - count])
                continue
            loss = float(steps.loss[index])
            event = {"event": "step", "time": float(steps.time[index]),
                     "attempt": int(steps.attempt[index]), "step": int(steps.step[index]),
                     "loss": loss if np.isfinite(loss) else None}
            mono = float(steps.mono[index])
            if np.isfinite(mono):  # durations are measured by it
                event["mono"], event["clock"] = mono, steps.clock[index]
            batch.append(event)
        return batch


def _time_of(event: dict) -> float:
    when = event.get("time")
    return float(when) if isinstance(when, (int, float)) else np.nan


class ReplayClock:
    """Hands out `events` (dicts in file order, a list or `HistoryEvents`) as their times
    come due at `speed`.

    `poll()` → the events due since the last call (a list, possibly empty). The first call
    starts the clock. `done` once every event was handed out; `duration` is the wall seconds
    the whole replay takes; `end_offset` the size of the events file read (`from_run`);
    `recorded_now()` the Unix time of the recording the replay stands at (for rates). `now`
    is the wall clock (monotonic seconds), replaceable in tests.
    Raises `ConfigError` for a bad `speed`.
    """

    def __init__(self, events: list[dict], speed: float = 1.0,
                 max_gap: float = MAX_GAP_SECONDS,
                 now: Callable[[], float] = time.monotonic):
        self.speed = check_speed(speed)
        self.events = events
        self._times = events.times if isinstance(events, HistoryEvents) else np.fromiter(
            (_time_of(e) for e in events), np.float64, len(events))
        self._due = schedule(self._times, max_gap) / self.speed  # wall seconds after start
        self._now = now
        self._started: float | None = None
        self.position = 0  # events handed out so far
        self.end_offset = 0  # bytes of events.jsonl read (`from_run`): where live reading goes on

    @classmethod
    def from_run(cls, run_dir: str | os.PathLike, speed: float = 1.0,
                 **options) -> ReplayClock:
        """The clock for `RUN/events.jsonl`, read the fast way (`event_history.read_history`);
        raises `ConfigError` for a bad speed or a run without events (checked before anything is
        read)."""
        speed = check_speed(speed)
        check_run(run_dir)
        history = event_history.read_history(run_dir)
        events = HistoryEvents(history)
        if not len(events):
            raise ConfigError(f"run_dir: {run_dir} holds no events to replay")
        clock = cls(events, speed, **options)
        clock.end_offset = history.end_offset
        return clock

    @property
    def done(self) -> bool:
        return self.position >= len(self.events)

    @property
    def duration(self) -> float:
        """Wall seconds from the first event to the last at this speed."""
        return float(self._due[-1]) if len(self._due) else 0.0

    def elapsed(self) -> float:
        """Wall seconds since the first `poll` (0 before it)."""
        return 0.0 if self._started is None else self._now() - self._started

    def poll(self) -> list[dict]:
        """The events whose time has come, in file order."""
        if self._started is None:
            self._started = self._now()
        end = int(np.searchsorted(self._due, self.elapsed(), side="right"))
        batch = self.events[self.position:end]
        self.position = max(self.position, end)
        return batch

    def recorded_now(self) -> float:
        """The recorded Unix time the replay stands at: the last handed-out event's time plus
        the recorded seconds played since (NaN before the first event)."""
        if self.position == 0:
            return float("nan")
        last = self.position - 1
        return float(self._times[last] + (self.elapsed() - self._due[last]) * self.speed)
