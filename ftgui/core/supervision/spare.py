"""Spare trainers: warm standbys built from the settings on screen before any run exists.

A standby of the pool (`standby.StandbyPool`) belongs to a run folder, so the first attempt of
every run started cold: 4-6 s of importing TensorFlow and building the strategy in front of the
room (issue 28), and a fault in its first seconds found no standby ready. The window keeps
*spares* instead while no run is live, each `python -m ftgui.training --standby SPARE` where
`SPARE` is a scratch folder of its own
(`platformdirs.user_cache_path('ftgui') / 'spare' / '<pid>-<n>'`) holding only `config.toml`
with the panel's settings. It imports TensorFlow, builds the state and runs its step once, like
a prepared standby (`ftgui.training.warm_standby`), and writes `standby_ready` to the folder's
events. There are `spares_wanted(config)` of them: one for the run's chief, and one for each
standby the run keeps (`standbys_per_task`, capped by `max_standbys`), so that a fault in the
first seconds finds a prepared standby too; the next is started once the ones before are ready.
When Start asks for exactly those settings, the run's launcher adopts the ready ones
(`LocalLauncher.adopt_standby`): one becomes the run's chief, the others its standbys. An order
names the run's folder and a log file in it, and the trainer checks the run's own
`config.toml` against what it built (a mismatch starts cold, same pid). Settings changed on
screen end the spares and build others. A run that finishes (or whose folder is closed) hands
its waiting standbys built for its settings back (`SpareTrainer.take_in`), so that the next run
of those settings (a demo's next run, Start pressed again) starts on one too.

Only runs whose state a standby can build before its order get a spare: one-process strategies
(default, one-device, mirrored) of the custom loop on this machine (the local launcher), with
the built-in models and datasets (a
user's model file could change between building and Start), outside a network namespace
(`cluster.isolated`), with `warm_standby` on and `max_standbys` >= 1. Each costs what a
prepared standby costs, 0.7-0.9 GB resident (docs/benchmarks.md); once used they are the run's
chief and its standbys, so a live run still has at most `max_standbys` standbys besides its
own tasks, and no spare is kept while a run is live. Started at `priority.STANDBY_NICE` where
they may be raised back (a chief takes nice 0 on its order, a standby when the run trains),
they die with the window (`PR_SET_PDEATHSIG`, or the lifeline of one forked from the fork
server; and EOF on their stdin).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ftgui.core.record.events import EventReader
from ftgui.core.settings import config as configmod
from ftgui.core.settings import user_code
from ftgui.core.settings.config import BUILTIN_DATASETS
from ftgui.core.supervision import cluster, priority
from ftgui.core.supervision.processes import (
    kill_tree,
    running,
    sweep_autograph_folders,
)
from ftgui.core.supervision.standby import (
    SpareHandle,
    config_fingerprint,
    device_env,
    standby_server,
    start_standby,
)

SPARE_STRATEGIES = ("default", "one-device", "mirrored")  # = warm_standby.PREPARED_STRATEGIES
MAX_FAILURES = 2  # spares of one configuration that may fail before no more are started


@dataclass
class _Spare:
    popen: subprocess.Popen
    folder: Path | None  # its own scratch folder; None for a finished run's standby taken in
    reader: EventReader | None
    born: float
    low: bool
    ready: bool = False  # it wrote `standby_ready`, prepared for the trainer's fingerprint
    failed: bool = False  # it wrote `standby_ready` but could not build that state
    log: bytes = b""  # a standby taken in: what it logged in the run it came from

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None


def spare_reason(config) -> str:
    """Why `config` (a `RunConfig`) gets no spare, in a few words; '' when it gets some."""
    if not config.warm_standby or config.max_standbys < 1:
        return "warm standby is off"
    if config.launcher != "local":
        return f"the {config.launcher} launcher starts the run's tasks"
    if config.strategy not in SPARE_STRATEGIES or config.loop != "custom":
        return f"a {config.strategy} run with the {config.loop} loop is not built before Start"
    if user_code.is_user_code(config) or config.dataset not in BUILTIN_DATASETS:
        return "your own model or data is read at Start"
    if cluster.isolated(config):
        return "the run trains in its own network namespace"
    return ""


def spares_wanted(config) -> int:
    """How many spares `config` gets: 0 when `spare_reason` says why, else one for the chief
    and `min(standbys_per_task, max_standbys)` for the standbys of its one task."""
    if spare_reason(config):
        return 0
    return 1 + min(config.standbys_per_task, config.max_standbys)


class SpareTrainer:
    """The spares for the last configuration `keep` was given (`spares`, oldest first).

    `root`: where the spares' folders go (default `platformdirs.user_cache_path('ftgui') /
    'spare'`; the folders of windows that are gone are deleted when one is made); `python`:
    the interpreter; `fork`: spares forked from this process's fork server
    (`fork_server`, its log in `root/<pid>-fork-server/`), as the runs' standbys are, so
    that TensorFlow is imported once for all of them. Call `keep` now and then (it replaces
    what died and starts the next spare once those before are ready); `take` hands them
    over; `dismiss` ends them.
    """

    def __init__(self, root: Path | None = None, python: str = sys.executable,
                 fork: bool = True):
        if root is None:
            from platformdirs import user_cache_path

            root = user_cache_path("ftgui") / "spare"
        self.root, self.python, self.fork = Path(root), python, fork
        self.spares: list[_Spare] = []
        self.fingerprint: str | None = None  # of the configuration they are built for
        self._failures = 0  # spares of `fingerprint` that died or could not build its state
        self._started = 0
        _sweep(self.root)
        sweep_autograph_folders()  # of spares of a window that died without closing

    @property
    def pids(self) -> list[int]:
        """The spares' process ids, oldest first."""
        return [spare.popen.pid for spare in self.spares]

    def keep(self, config) -> None:
        """Have `spares_wanted(config)` spares for `config` (a valid `RunConfig`): none when
        `spare_reason` says why; those built for other settings (`config_fingerprint`) are
        ended; one that died or could not build the state is ended and counted (after
        `MAX_FAILURES`, no new one is started until the settings change; those ready stay);
        one more is started when every live one is ready. Raises `OSError` if the program
        cannot be started."""
        if spare_reason(config):
            self.dismiss()
            return
        wanted = config_fingerprint(config.to_dict())
        if wanted != self.fingerprint:
            self.dismiss()
            self.fingerprint, self._failures = wanted, 0
        self.ready()
        for spare in [s for s in self.spares if s.failed or not s.alive]:
            self._failures += 1
            self._end(spare)
        if self._failures >= MAX_FAILURES:
            return
        if len(self.spares) < spares_wanted(config) and self.ready() == len(self.spares):
            server = self._fork_server(config)
            if server is None or server.ready:  # else importing: it is quicker to wait
                self.spares.append(self._spawn(config, server))

    def _fork_server(self, config):
        """This process's fork server for `config`'s spares, ready or importing; None when
        not forking, or where no server can run."""
        if not self.fork:
            return None
        return standby_server(self.python, device_env(config),
                              self.root / f"{os.getpid()}-fork-server")

    def status(self, config) -> str:
        """A few words on the spares for `config` (a `RunConfig`, or None when the settings
        shown do not validate), for the status bar: "spare trainers ready (2 of 2)",
        "building spare trainers (1 of 2 ready)", "no spare trainer: <why>"."""
        if config is None:
            return "no spare trainer: the settings shown are not valid"
        reason = spare_reason(config)
        if reason:
            return f"no spare trainer: {reason}"
        wanted, ready = spares_wanted(config), self.ready()
        if config_fingerprint(config.to_dict()) != self.fingerprint:
            return f"building spare trainers (0 of {wanted} ready)"
        if self._failures >= MAX_FAILURES and ready < wanted:
            return (f"spare trainers: {ready} of {wanted} ready; {self._failures} died or "
                    "could not build these settings, no more are started until they change")
        if ready >= wanted:
            return f"spare trainers ready ({ready} of {wanted})"
        return f"building spare trainers ({ready} of {wanted} ready)"

    def ready(self) -> int:
        """How many spares are alive and have built their state (reads their
        `standby_ready`: one that says it could not build this state is `failed`)."""
        for spare in self.spares:
            if spare.ready or spare.failed:
                continue
            for event in spare.reader.read_new():
                if event.get("event") == "standby_ready" and event.get("pid") == spare.popen.pid:
                    spare.ready = event.get("prepared_for") == self.fingerprint
                    spare.failed = not spare.ready
        return sum(spare.ready and spare.alive for spare in self.spares)

    def take(self, config) -> list[SpareHandle]:
        """The spares that are alive, ready and built for exactly `config`, for a run of it
        to adopt, oldest first; the others of those settings are ended (they would compete
        with the run's start). Empty for other settings: the spares stay. Those taken are
        this object's no more, and their folders are deleted (a spare writes nothing there
        after `standby_ready`)."""
        if spare_reason(config) or config_fingerprint(config.to_dict()) != self.fingerprint:
            return []
        self.ready()
        handles = []
        for spare in list(self.spares):
            if spare.ready and spare.alive:
                log = spare.log if spare.folder is None else _read(spare.folder / "spare.log")
                handles.append(SpareHandle(spare.popen, log, spare.born, self.fingerprint,
                                           spare.low))
                if spare.folder is not None:
                    shutil.rmtree(spare.folder, ignore_errors=True)
                self.spares.remove(spare)
            else:
                self._end(spare)
        return handles

    def take_in(self, handles: list[SpareHandle], config) -> int:
        """Keep the standbys a finished run hands on (`StandbyPool.release`, built for
        `config`, the run's `RunConfig`) as spares, ahead of those still building, so that the
        next run of these settings starts on them instead of waiting for new ones to be
        built: a demo's second run, Start pressed again. At most `spares_wanted(config)` are
        kept (the newest beyond are ended, those not ready first), none when `spare_reason`
        says why; spares built for other settings are ended. Returns how many were kept."""
        wanted = config_fingerprint(config.to_dict())
        incoming = [_Spare(h.popen, None, None, h.born, h.low, log=h.log,
                           ready=h.prepared_for == wanted) for h in handles]
        if spare_reason(config):
            self.spares += incoming
            for spare in incoming:
                self._end(spare)
            return 0
        if wanted != self.fingerprint:
            self.dismiss()
            self.fingerprint, self._failures = wanted, 0
        self.ready()
        self.spares = incoming + self.spares
        for spare in [s for s in incoming if not (s.ready and s.alive)]:
            self._end(spare)
        self.spares.sort(key=lambda s: not (s.ready and s.alive))  # stable: those taken in first
        for spare in self.spares[spares_wanted(config):]:
            self._end(spare)
        return sum(spare in self.spares for spare in incoming)

    def dismiss(self) -> None:
        """End every spare and delete its folder."""
        for spare in list(self.spares):
            self._end(spare)
        self.fingerprint = None

    def _spawn(self, config, server=None) -> _Spare:
        """A spare forked from `server` (a ready `fork_server.ForkServer`), else started
        cold."""
        self._started += 1
        folder = self.root / f"{os.getpid()}-{self._started}"
        shutil.rmtree(folder, ignore_errors=True)  # of an earlier window with this pid
        configmod.save(folder, config)
        low = priority.restorable()
        nice = priority.STANDBY_NICE if low else 0
        try:
            popen = start_standby(server, folder, folder / "spare.log", device_env(config),
                                  nice, self.python)
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return _Spare(popen, folder, EventReader(folder), time.time(), low)

    def _end(self, spare: _Spare) -> None:
        if spare.alive:  # not a pid that was reaped: it may be another process's by now
            kill_tree(spare.popen.pid)
        try:
            spare.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if spare.popen.stdin is not None:
            spare.popen.stdin.close()
        if spare.folder is not None:
            shutil.rmtree(spare.folder, ignore_errors=True)
        self.spares.remove(spare)
        sweep_autograph_folders()


def _sweep(root: Path) -> None:
    """Delete the spare folders of windows that no longer run (named `<pid>-<n>`)."""
    for folder in root.glob("*-*"):
        pid = folder.name.partition("-")[0]
        if pid.isdigit() and not running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""
