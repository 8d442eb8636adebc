"""`RUN/events.jsonl`: append one JSON object per line; read incrementally, skip a torn line.

Several processes (supervisor, trainers) append to the same file. Each event is written with one
`write()` on a file opened with `O_APPEND`, so lines never interleave on a local file system.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

from ftgui.core.tail import Tail

EVENTS_FILE = "events.jsonl"


def _jsonable(value):
    # JSON has no NaN/inf; a non-finite loss is written as null so readers show a gap.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class EventWriter:
    """Appends events to `RUN/events.jsonl`.

    Every event gets `event` (its type), `time` (Unix seconds, float) and `attempt` (0 for the
    first launch, +1 per restart). Other fields come from keyword arguments; non-finite floats
    become `null`.
    """

    def __init__(self, run_dir: str | os.PathLike, attempt: int):
        self.path = Path(run_dir) / EVENTS_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.attempt = attempt
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def emit(self, event: str, **fields) -> dict:
        """Append one event and return it as written."""
        record = {"event": event, "time": time.time(), "attempt": self.attempt}
        record.update({key: _jsonable(value) for key, value in fields.items()})
        os.write(self._fd, (json.dumps(record, separators=(",", ":")) + "\n").encode())
        return record

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
    except ValueError:
        # A writer killed mid-line leaves a fragment that the next event is appended to:
        # keep that next event.
        start = line.rfind(b'{"event":')
        if start <= 0:
            return None
        return _parse(line[start:])
    return event if _well_formed(event) else None


def _well_formed(event) -> bool:
    """The fields every reader relies on have their types (a hand-edited line may not)."""
    if not isinstance(event, dict) or not isinstance(event.get("event"), str):
        return False
    attempt, when = event.get("attempt", 0), event.get("time", 0.0)
    if not is_int64(attempt) or not isinstance(when, (int, float)) or isinstance(when, bool):
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
    checkpoint it resumed from, so the result is the surviving curve.
    """
    losses: dict[int, float | None] = {}
    for event in events:
        if event["event"] == "step" and event.get("role", "chief") == role:
            losses[event["step"]] = event["loss"]
    return losses
