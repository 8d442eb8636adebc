"""Run history: the runs under a runs root, each summarised from its own directory, quickly.

A run directory is a folder holding `config.toml` or `events.jsonl`. Its summary (status, steps,
incidents, start time, final loss) is read from `events.jsonl` without JSON-parsing the step lines,
which make up nearly all of a long run's file: only the last one matters for a summary. Summaries
are cached per file and extended from where the last read stopped, so refreshing a list of runs
that are still being written reads only their new lines.

Reading every event of one run (`read_history`, `read_curves`) is
`ftgui.core.record.event_history`'s job.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from platformdirs import user_data_path

from ftgui.core.record.event_history import complete_chunks, event_of
from ftgui.core.record.events import EVENTS_FILE
from ftgui.core.record.incidents import IncidentTracker
from ftgui.core.record.run_lock import is_busy
from ftgui.core.record.run_state import is_decisive, state_from_exit
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import ConfigError

STEP_PREFIX = b'{"event":"step"'  # how EventWriter writes every step event (compact JSON)
AUDIT_PLAN = "audit-plan.json"  # marks an `ftgui audit` folder: its runs are listed as a group
STATUSES = ("running", "finished", "preempted", "failed", "killed", "stopped", "interrupted",
            "idle")


def runs_root() -> Path:
    """Where new runs go by default: the platform's user data folder, `…/ftgui/runs`."""
    return user_data_path("ftgui") / "runs"


def new_run_dir(root: Path | None = None, prefix: str = "run") -> Path:
    """A fresh, not yet existing run directory named by the local time (`prefix`-YYYYmmdd-…)."""
    root = root or runs_root()
    stamp = time.strftime(f"{prefix}-%Y%m%d-%H%M%S")
    path, n = root / stamp, 1
    while path.exists():
        n += 1
        path = root / f"{stamp}-{n}"
    return path


def is_run_dir(path: Path) -> bool:
    return (path / configmod.CONFIG_FILE).is_file() or (path / EVENTS_FILE).is_file()


def check_new_run_folder(path: Path) -> None:
    """Raise `ConfigError` (one line) when a new run would be started in a folder that holds
    runs (`ftgui train .` among them) or inside a started run's folder (its `checkpoints/`):
    a tester's runs landed there, their files among other runs'. A folder with only a
    `config.toml` (a project's own) is no started run; runs two levels down count
    (`nest/deep/r`). For `ftgui train` and the window's Start, before anything is made in
    `path`."""
    def started_run(folder: Path) -> bool:
        return (folder / configmod.CONFIG_FILE).is_file() and (folder / EVENTS_FILE).is_file()

    host = next((parent for parent in path.absolute().parents if started_run(parent)), None)
    if host is not None:
        raise ConfigError(f"run_dir: {path} is inside the run {host}; give a folder of its own")
    if not path.is_dir() or is_run_dir(path):
        return
    runs = _runs_below(path)
    if runs:
        raise ConfigError(f"run_dir: {path} holds runs ({', '.join(runs[:4])}"
                          f"{', …' if len(runs) > 4 else ''}); give a new folder for this one")


def other_files_note(path: Path) -> str | None:
    """A line for a new run started in an existing folder that is no run and holds other
    files ("run_dir: shots already holds 3 entries (a.png, b.png, c.png); the run's files go
    beside them"), None for a missing, empty or run folder. A new user's `ftgui train shots`
    trained among their screenshots without a word; a folder of one's own files (a model)
    is allowed, so it is said, not refused."""
    if not path.is_dir() or is_run_dir(path):
        return None
    names = sorted(entry.name for entry in path.iterdir() if not entry.name.startswith("."))
    if not names:
        return None
    shown = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
    return (f"run_dir: {path} already holds {len(names)} "
            f"{'entry' if len(names) == 1 else 'entries'} ({shown}); the run's files go "
            "beside them")


def holds_runs(path: Path) -> bool:
    """Whether `path` has a run folder directly in it (nothing read but their names and
    files' existence; False for a missing folder)."""
    return bool(_runs_below(path, depth=1, most=2000, first=True))


def _runs_below(path: Path, depth: int = 2, most: int = 2000,
                first: bool = False) -> list[str]:
    """The runs in `path`'s folders down to `depth` levels ("a", "nest/deep"), sorted; it
    stops after looking into `most` folders (a home folder's tree is not walked whole), or
    at the `first` run found."""
    found, level, looked = [], [path], 0
    for _ in range(depth):
        below = []
        for folder in level:
            try:
                children = sorted(c for c in folder.iterdir()
                                  if c.is_dir() and not c.name.startswith("."))
            except OSError:
                continue
            for child in children:
                looked += 1
                if is_run_dir(child):
                    found.append(child.relative_to(path).as_posix())
                    if first:
                        return found
                else:
                    below.append(child)
                if looked >= most:
                    return sorted(found)
        level = below
    return sorted(found)


@dataclass
class RunSummary:
    """One run as the run history shows it.

    `status` is one of STATUSES: `running` (another process holds the run's lock), `finished`
    (the last attempt reached the last step), `preempted` / `failed` / `killed` (how the last
    attempt's decisive process exit ended it), `interrupted` (the history stops mid-attempt:
    its supervisor died), or `idle` (configured, never started). `reason` says more.
    `steps_done` is the global step the run has reached (a resume from an older checkpoint moves
    it back); `incidents` counts as `ftgui.core.record.incidents` does (faults, unplanned crashes,
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
    group: str = ""  # the audit folder the run belongs to ('' for a run of its own)


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
            self.last_attempt = max(self.last_attempt, event_of(self.last_step_line).get(
                "attempt", 0))
        if self.first_time is None and lines:
            self.first_time = event_of(lines[0]).get("time")
        for number, line in enumerate(lines):
            if not line.startswith(STEP_PREFIX):
                event = event_of(line)
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
        for data, offset in complete_chunks(handle, scan.offset):
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
        last = event_of(scan.last_step_line)
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

    The runs of an audit folder (`ftgui audit`: a folder holding `AUDIT_PLAN`) are listed as a
    group, one after the other by name, at the place of the group's newest start; each is named
    `AUDIT › RUN` and has `group` AUDIT. A missing or unreadable `root` gives an empty list.
    """
    root = Path(root)
    try:
        children = [path for path in root.iterdir() if path.is_dir()]
    except OSError:
        return []
    runs = [summarize(path) for path in sorted(children) if is_run_dir(path)]
    for folder in sorted(children):
        if (folder / AUDIT_PLAN).is_file():
            runs += _group(folder)
    newest: dict[str, float] = {}
    for run in runs:
        if run.group and run.started is not None:
            newest[run.group] = max(newest.get(run.group, run.started), run.started)

    def order(run: RunSummary):
        started = newest.get(run.group, run.started) if run.group else run.started
        return (started is None, -(started or 0.0), run.group, run.name)

    runs.sort(key=order)
    return runs


def _group(folder: Path) -> list[RunSummary]:
    members = []
    for path in sorted(p for p in folder.iterdir() if p.is_dir() and is_run_dir(p)):
        run = summarize(path)
        run.name, run.group = f"{folder.name} › {path.name}", folder.name
        members.append(run)
    return members
