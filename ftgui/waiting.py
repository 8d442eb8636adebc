"""What the console says while `ftgui` waits: no silent wait over 2 s (issue 28).

Two kinds of wait. A run's processes importing TensorFlow and building the model, or tracing
their first step, are seen in the run's events: `RunWaits` takes them with the time of each and
says, on `tick(now)`, one line when an import begins and "still …" lines every `STILL_EVERY_S`.
A blocking call in this process (the user-code check, the device listing: helper processes
that import TensorFlow) is wrapped in `notice(what)`, which says `what` at once and "still …"
lines from a thread until the call returns. Plain lines, no carriage returns: a pipe, a log
file and a terminal read the same.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

FIRST_STILL_S = 2.0  # the longest a wait goes unsaid
STILL_EVERY_S = 2.0  # then one "still …" line this often: never 2 s unsaid
IMPORT_WHAT = "importing TensorFlow and building the model"  # a process started cold
FORKED_WHAT = "building the model (forked: TensorFlow already imported)"  # from the fork server
HOLD_WORDS = {"presenter": "the presenter", "standby": "the warm standby to be ready"}  # `held`


@dataclass
class Wait:
    """One wait: what it waits for (`what`: "importing TensorFlow: chief"), since when (Unix
    seconds) and when a line last said so (None: never)."""

    what: str
    since: float
    said: float | None = None

    def line(self, now: float) -> str | None:
        """The "still WHAT (N s)" line due at `now` (seconds since `since`, whole), or None:
        the first at `FIRST_STILL_S` after `since` unless the wait was said, then every
        `STILL_EVERY_S` after the last line."""
        due = self.since + FIRST_STILL_S if self.said is None else self.said + STILL_EVERY_S
        if now < due:
            return None
        self.said = now
        return f"still {self.what} ({int(now - self.since)} s)"


class RunWaits:
    """The waits of a live run from its events (`feed`, in file order): a process started cold
    (not from a warm standby) imports TensorFlow and builds its model until its
    `training_started` (one forked from the fork server only builds it: `FORKED_WHAT`);
    then the run waits for its first step (tracing the step function).
    A chief's `resumed` (it restored, after its import) ends its import too. A process that
    exits waits for nothing more. A freeze (`fault_injected` of kind hang) waits for the
    watchdog's `hang_detected` (or a thaw); a restart that waits (`recovery_waiting`) for its
    `process_started`; a chief held at a step boundary (`held`, e.g. until the warm standby
    is ready) for its `hold_released`. `tick(now)` gives the lines due."""

    def __init__(self) -> None:
        self._importing: dict[int, tuple[str, float, bool]] = {}  # pid -> (label, since, forked)
        self._announce: list[int] = []  # pids whose import began since the last tick
        self._chiefs: set[int] = set()  # pids of the chief processes
        self._first_step_since: float | None = None
        self._frozen: tuple[str, float] | None = None  # (target, since) of a freeze not ended
        self._restart: tuple[str, float] | None = None  # (what for, since) of a restart's wait
        self._held: tuple[str, float] | None = None  # (why, since) of a hold not released
        self._wait: Wait | None = None
        self._phase = ""

    def feed(self, event: dict) -> None:
        """Take one event of the run."""
        kind, pid = event["event"], event.get("pid")
        if kind == "process_started":
            if event.get("chief"):
                self._chiefs.add(pid)
            if not event.get("standby"):
                label = event.get("label") or event.get("role", "process")
                self._importing[pid] = (label, event["time"], bool(event.get("forked")))
                self._announce.append(pid)
        elif kind == "training_started":
            self._importing.pop(pid, None)
            if pid in self._chiefs:
                self._first_step_since = event["time"]
        elif kind == "resumed":  # the chief restored: its import is over (the event has no pid)
            for chief in self._chiefs:
                self._importing.pop(chief, None)
        elif kind == "process_exited":
            self._importing.pop(pid, None)
            if pid in self._chiefs:
                self._first_step_since = None
        elif kind == "step":
            self._first_step_since = None
        if kind == "recovery_waiting":
            self._restart = (event.get("waits_for") or "the launcher", event["time"])
        elif kind in ("process_started", "recovery_cancelled", "recovery_scheduled"):
            self._restart = None
        if kind == "held":
            self._held = (HOLD_WORDS.get(event.get("why"), "a fault"), event["time"])
        elif kind in ("hold_released", "process_exited"):
            self._held = None
        if kind == "fault_injected" and event.get("kind") == "hang":
            self._frozen = (event.get("target") or "chief", event["time"])
        elif kind in ("hang_detected", "thawed", "process_exited"):
            self._frozen = None  # the watchdog saw it, it was thawed, or it died

    def tick(self, now: float) -> list[str]:
        """The lines due at `now` (Unix seconds): one per import begun since the last tick and
        not over ("chief: importing TensorFlow and building the model"), then at most one
        "still …"."""
        lines = [f"{self._importing[pid][0]}: "
                 f"{FORKED_WHAT if self._importing[pid][2] else IMPORT_WHAT}"
                 for pid in self._announce if pid in self._importing]
        self._announce = []
        phase, since = self._current()
        if phase != self._phase:
            self._phase = phase
            self._wait = Wait(phase, since, said=now if lines else None) if phase else None
        still = self._wait.line(now) if self._wait is not None else None
        return lines + ([still] if still else [])

    def _current(self) -> tuple[str, float]:
        """(what the run waits for, since when); ("", 0) when for nothing known."""
        if self._importing:
            waits = self._importing.values()
            labels = ", ".join(label for label, _, _ in waits)
            what = FORKED_WHAT if all(forked for _, _, forked in waits) else IMPORT_WHAT
            return f"{what}: {labels}", min(since for _, since, _ in waits)
        if self._first_step_since is not None:
            return "tracing the first step", self._first_step_since
        if self._frozen is not None:
            target, since = self._frozen
            return f"waiting for the watchdog: {target} frozen", since
        if self._restart is not None:
            what, since = self._restart
            return f"waiting to restart: {what}", since
        if self._held is not None:
            why, since = self._held
            return f"held for {why}", since
        return "", 0.0


@contextmanager
def notice(what: str, why: str, say: Callable[[str], None] | None = None,
           clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    """Say "WHAT: WHY" at once (e.g. "listing devices: a helper process imports TensorFlow"),
    then "still WHAT (N s)" every `STILL_EVERY_S` from a daemon thread until the block ends.
    `say` prints one line (default: to stderr, so that stdout keeps only a command's answer,
    e.g. `ftgui devices --json`)."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    say(f"{what}: {why}")
    began = clock()
    wait = Wait(what, began, said=began)
    done = threading.Event()

    def keep_saying() -> None:
        while not done.wait(0.1):
            line = wait.line(clock())
            if line:
                say(line)

    thread = threading.Thread(target=keep_saying, name="ftgui-wait-notice", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
