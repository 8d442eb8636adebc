"""The warm-standby pool: training processes that have imported TensorFlow and wait for an order.

A restart that hands its command line to a standby skips the 3–6 s TensorFlow import (DESIGN.md
§4). A standby is `python -m ftgui.training --standby RUN`; it writes `standby_ready` to the
run's events once imported, then reads one order from stdin, `{"argv": [...], "env": {...}}`:
the trainer's arguments and the environment of the process it becomes. EOF ends it.

For a MultiWorkerMirroredStrategy run on this machine the pool keeps a *standby cluster*
instead: one standby per worker, started together with a `TF_CONFIG` of their own (fresh local
ports), so that they form their own cluster, build the state and run its step before any order
(`training/warm_standby.py`). A cluster is used whole or not at all: the orders of a restart go
to its members by task index only when every member is alive and prepared for the run's
current configuration, else every member is ended and the restart is cold
(benchmarks/proto_standby_cluster.py: 0.08 s from the order to the first step, against 1.2 s
for standbys that only imported TensorFlow and 8.2 s for a plain restart).

Each standby is a whole trainer process: 0.7–0.9 GB resident once prepared (docs/benchmarks.md),
so the pool keeps at most `max_standbys` (a run setting) of them. A standby started `low`
(before the attempt's first step) imports and traces at `priority.STANDBY_NICE`, so that it
does not slow the attempt's own start; `raise_priority` gives it nice 0 once the attempt
trains, and a standby takes nice 0 itself on its order (`priority.restore`).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ftgui.core.supervision import fork_server, priority
from ftgui.core.supervision.cluster import free_port
from ftgui.core.supervision.processes import kill_tree, spawn, sweep_autograph_folders
from ftgui.core.supervision.trainer_command import (
    TRAINER_HASH_SEED,
    standby_args,
    standby_argv,
)

MEMBER_ENV = "FTGUI_STANDBY_MEMBER"  # set for a standby-cluster member, with its TF_CONFIG
FORK_FAILURES = 3  # forked standbys ending before they are ready, before a pool stops forking
# A fork server importing longer than this is not waited for by a restart (`server_importing`):
# an import takes 3-14 s here, 30 s at load 7; one SIGSTOPped held a warm run 70 s
STUCK_IMPORT_SECONDS = 30.0
JUST_STARTED_SECONDS = 1.0  # a fork server this young was started for the start that asks


# Settings that only the supervisor or the training loop read, from the run's own config.toml
# after the order: a prepared state built without them is the same. Not here: everything the
# build or the warm-up step reads (strategy, devices, model, data, batch, learning rate, seed).
# A planned NaN and chaos are here: a NaN is injected by a second form of the step, which the
# trainer traces after its first step when the run's own settings plan one
# (`TrainState.plan_poison`), as a cold start does. The snapshot interval is here too: a
# state prepared with snapshots on has both forms of its step traced, and a run without them
# runs the plain one; one prepared without them traces the form that returns the state at its
# first snapshot step (~0.3 s for the MLP), as a cold start does. So the guided demos that
# restore from disk (`snapshot_every = 0`) and the chaos run start on the window's spares, or
# on the standby their previous run handed back (issue 28).
NOT_BUILT = ("steps", "checkpoint_every", "keep", "pace", "auto_recover", "max_restarts",
             "restart_backoff", "warm_standby", "standbys_per_task", "max_standbys",
             "kill_at_step", "preempt_at_step", "hang_at_step", "kill_in_save_at_step",
             "kill_in_snapshot_at_step", "kill_after_seconds", "watchdog_seconds",
             "fault_target", "snapshot_every", "nan_at_step", "chaos_faults", "chaos_kinds",
             "chaos_seed")


def built_from(config: dict) -> dict:
    """What a prepared standby's state is built from: `config` (a `RunConfig.to_dict()`)
    without `NOT_BUILT`. A standby prepared for one configuration serves a run of another
    when these agree (the trainer reads the rest from the run's config.toml)."""
    return {key: value for key, value in config.items() if key not in NOT_BUILT}


def config_fingerprint(config: dict) -> str:
    """A short hash of what a run's state is built from (`built_from` of a
    `RunConfig.to_dict()`): what a prepared standby was built for, compared with the run's
    when a restart would use it. Numbers are hashed as floats, so that two configurations that
    compare equal (a backoff of 0 and 0.0) agree."""
    text = json.dumps(_numbers_as_floats(built_from(config)), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _numbers_as_floats(value):
    if isinstance(value, dict):
        return {key: _numbers_as_floats(v) for key, v in value.items()}
    if isinstance(value, list | tuple):
        return [_numbers_as_floats(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def device_env(config) -> dict[str, str]:
    """The environment a trainer of `config` needs before Python and TensorFlow start: no GPU
    for a CPU run (`gpus` 0), and a fixed `PYTHONHASHSEED` (`TRAINER_HASH_SEED`). A standby
    gets it when it is started, since its order's environment comes after Python has seeded its
    hashes and TensorFlow has chosen its devices."""
    return {**TRAINER_HASH_SEED, **({"CUDA_VISIBLE_DEVICES": "-1"} if config.gpus == 0 else {})}


def wants_cluster(config) -> bool:
    """Whether a run's warm standby is a standby cluster: a MultiWorkerMirroredStrategy run
    of the custom loop whose workers ftgui places on this machine (no `cluster` setting)."""
    return config.strategy == "multi-worker" and config.loop == "custom" and not config.cluster


@dataclass
class SpareHandle:
    """A standby handed from one owner to the next (a spare to a run, a finished run's standby
    back to the spare trainer): its process (stdin a pipe, waiting for its order), what it
    logged so far (bytes: its import and build, for the next log it writes to), the Unix time
    it was started, the `config_fingerprint` it built its state for, and whether it was started
    at `priority.STANDBY_NICE` and not raised since (`low`)."""

    popen: subprocess.Popen
    log: bytes
    born: float
    prepared_for: str
    low: bool = False


@dataclass
class Member:
    """One standby of a standby cluster: its process, log, task index and address."""

    popen: subprocess.Popen
    log_path: Path
    index: int
    address: str


class StandbyPool:
    """The standbys of one run; their output goes to `log_dir/standby-<n>.log` (a standby
    cluster's to `standby-<n>-worker-<i>.log`).

    `standbys` holds (process, log path) of those not yet handed an order, oldest first;
    `members`, the standby cluster's, by task index (empty when there is none). `fork`: its
    standbys come from this process's fork server (`fork_server`) where one can run; False:
    each is started as its own `python` process.
    """

    def __init__(self, run_dir: Path, log_dir: Path, python: str = sys.executable,
                 fork: bool = True):
        self.run_dir, self.log_dir, self.python, self.fork = run_dir, log_dir, python, fork
        self.standbys: list[tuple[subprocess.Popen, Path]] = []
        self.members: list[Member] = []  # the standby cluster, by task index
        self._started = 0
        self._ready: set[int] = set()  # pids that sent `standby_ready`
        self._prepared: dict[int, str] = {}  # pid -> fingerprint of the config it built for
        self._born: dict[int, float] = {}  # pid -> Unix time it was started
        self._low: set[int] = set()  # pids started at priority.STANDBY_NICE, not raised since
        self._adopted: set[int] = set()  # pids of spares (`standby.SpareHandle`) taken in
        self.namespace = None  # the run's loopback-only network namespace, where standbys start
        self._server = None  # the fork server its standbys come from (`fork_server`)
        self._hurried: set[int] = set()  # pids of importing servers raised to nice 0 for a restart
        self._fork_failures = 0  # forked standbys that ended before they were ready

    def mark_ready(self, pid: int | None, prepared_for: str | None = None) -> None:
        """Note a standby's `standby_ready` event: it has TensorFlow imported, and built the
        state for the configuration whose `config_fingerprint` is `prepared_for` (if given)."""
        self._ready.add(pid)
        if prepared_for:
            self._prepared[pid] = prepared_for

    def readiness(self, pid: int | None) -> tuple[bool, float | None]:
        """(whether standby `pid` has written `standby_ready`, i.e. TensorFlow is imported;
        seconds since it was started, None when not one of this pool's)."""
        born = self._born.get(pid)
        return pid in self._ready, None if born is None else max(time.time() - born, 0.0)

    def adopt(self, handle) -> Path:
        """Take in a spare trainer (`standby.SpareHandle`, ready and prepared) as the first
        standby to get an order. Its log so far is written to a new `standby-<n>.log` of this
        pool's log folder, and its order tells it to go on there. Returns that log's path."""
        self._started += 1
        log_path = self.log_dir / f"standby-{self._started}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_bytes(handle.log)
        pid = handle.popen.pid
        self._born[pid] = handle.born
        self.mark_ready(pid, handle.prepared_for)
        self._adopted.add(pid)
        if handle.low:  # raised with the pool's own when the attempt trains
            self._low.add(pid)
        self.standbys.insert(0, (handle.popen, log_path))
        return log_path

    def release(self, fingerprint: str) -> list[SpareHandle]:
        """Hand over the waiting standbys that are alive, have written `standby_ready` and built
        their state for `fingerprint` (a `config_fingerprint`), oldest first, for another run
        to adopt (`spare.SpareTrainer.take_in`): they are this pool's no more, and the order
        they get next names the log they write to (`SpareHandle.log`: what they logged so far,
        read from this pool's log). The others stay; a standby cluster is never released."""
        handles, kept = [], []
        for popen, log_path in self.standbys:
            pid = popen.pid
            if popen.poll() is None and pid in self._ready \
                    and self._prepared.get(pid) == fingerprint:
                handles.append(SpareHandle(popen, _read(log_path), self._born.get(pid, time.time()),
                                           fingerprint, pid in self._low))
                self._low.discard(pid)
            else:
                kept.append((popen, log_path))
        self.standbys = kept
        return handles

    def keep_cluster(self, workers: int, low: bool = False,
                     env: dict[str, str] | None = None) -> None:
        """Keep one standby cluster of `workers` MultiWorkerMirroredStrategy workers on fresh
        local ports: a cluster that lost a member is ended whole, and a new one is started
        (all members at once: each waits for the others to form the cluster); `low`: at
        `priority.STANDBY_NICE`. Raises `OSError` if the program cannot be started."""
        if any(m.popen.poll() is not None for m in self.members):
            self._count_fork_failures([m.popen for m in self.members
                                       if m.popen.poll() is not None])
            self._end_cluster()
        if self.members:
            return
        server = self._fork_server({**(env or {}), MEMBER_ENV: "1"})
        if server is not None and not server.ready:
            return  # importing: its members are ready sooner than ones that import now
        pick = self.namespace.free_port if self.namespace is not None else free_port
        addresses = [f"localhost:{pick()}" for _ in range(workers)]
        self._started += 1
        for index, address in enumerate(addresses):
            tf_config = {"cluster": {"worker": addresses},
                         "task": {"type": "worker", "index": index}}
            log_path = self.log_dir / f"standby-{self._started}-worker-{index}.log"
            member_env = {**(env or {}), "TF_CONFIG": json.dumps(tf_config), MEMBER_ENV: "1"}
            popen = self._spawn(log_path, member_env, low, server)
            self.members.append(Member(popen, log_path, index, address))

    def cluster_ready(self, config: dict) -> bool:
        """Whether every member of the standby cluster is alive and prepared for `config` (a
        `RunConfig.to_dict()`)."""
        wanted = config_fingerprint(config)
        return bool(self.members) and all(
            m.popen.poll() is None and self._prepared.get(m.popen.pid) == wanted
            for m in self.members)

    def hand_cluster_orders(self, orders: list[tuple[list[str], dict[str, str]]],
                            config: dict) -> list[Member] | None:
        """Give order `k` ((trainer arguments, environment)) to the member of task index `k`,
        when `cluster_ready(config)` and the sizes agree; returns the members in that order.
        Otherwise ends the standby cluster (a restart cannot mix it with cold processes) and
        returns None. A member keeps its own `TF_CONFIG`, whatever the order's."""
        if len(orders) != len(self.members) or not self.cluster_ready(config):
            self._end_cluster()
            return None
        members, self.members = self.members, []
        for member, (args, env) in zip(members, orders, strict=True):
            try:
                member.popen.stdin.write((json.dumps({"argv": args, "env": env}) + "\n").encode())
                member.popen.stdin.close()
            except OSError:  # it died in between: its peers would wait for it forever
                self.members = members
                self._end_cluster()
                return None
        return members

    def ready_for(self, config, tasks: int) -> bool:
        """Whether a restart of `tasks` tasks of `config` (a `RunConfig`) is as warm as its
        `max_standbys` allows: the standby cluster is ready for it (True when the cap keeps
        none), or `min(tasks, max_standbys)` standbys have TensorFlow imported."""
        if wants_cluster(config):
            return config.workers > config.max_standbys or self.cluster_ready(config.to_dict())
        ready = [p for p, _ in self.standbys if p.poll() is None and p.pid in self._ready]
        return len(ready) >= min(tasks, config.max_standbys)

    def keep(self, wanted: int, low: bool = False, env: dict[str, str] | None = None) -> None:
        """Forget the standbys that ended; end the newest beyond `wanted`; start one more if
        fewer than `wanted` are left (one per call: their imports should not compete with
        each other or the run), at `priority.STANDBY_NICE` when `low`. Raises `OSError` if
        the program cannot be started. After `FORK_FAILURES` forked standbys that ended
        before they were ready, the pool's standbys start cold (a fork loop must not spin)."""
        ended = [p for p, _ in self.standbys if p.poll() is not None]  # one look each: one
        self._count_fork_failures(ended)  # that ends between two looks is counted as well
        self.standbys = [(p, log) for p, log in self.standbys if p not in ended]
        while len(self.standbys) > wanted:
            _end(self.standbys.pop()[0])
        if len(self.standbys) < wanted:
            server = self._fork_server(env)
            if server is not None and not server.ready:
                return  # importing: its standbys are ready sooner than one that imports now
            self._started += 1
            log_path = self.log_dir / f"standby-{self._started}.log"
            self.standbys.append((self._spawn(log_path, env, low, server), log_path))

    def _count_fork_failures(self, ended: list) -> None:
        """Count the forked ones of `ended` (processes) that ended before they were ready;
        after `FORK_FAILURES`, this pool's standbys start cold."""
        self._fork_failures += sum(isinstance(p, fork_server.ForkedProcess)
                                   and p.pid not in self._ready for p in ended)
        if self._fork_failures >= FORK_FAILURES:
            self.fork = False

    def _fork_server(self, env: dict[str, str] | None):
        """This process's fork server for the standbys of `env`, ready or importing (started
        now if none runs; at `priority.STANDBY_NICE` where that can be undone); None when the
        pool does not fork, or where no server can run: those standbys start cold. Standbys
        of a run in its own network namespace join it after the fork."""
        if not self.fork:
            return None
        self._server = standby_server(self.python, env, self.log_dir)
        return self._server

    def start_server(self, env: dict[str, str] | None) -> None:
        """Have the fork server for processes of `env` started (importing at
        `priority.STANDBY_NICE` where that can be undone), so that a restart with no standby
        left is forked (`fork_trainer`) instead of importing TensorFlow; nothing when the
        pool does not fork."""
        self._fork_server(env)

    def cold_reason(self, env: dict[str, str] | None) -> str | None:
        """Why a trainer of `env` started now is not forked, in words, where that is news to
        the user: its fork server is not ready yet (importing), ended before it was ready
        (`fork_server.failure`), or this pool's forked standbys kept dying. None where it
        would be forked, or forking is off (`FTGUI_FORK=0`)."""
        if not fork_server.enabled():
            return None
        if not self.fork:
            return f"{FORK_FAILURES} forked standbys ended before they were ready"
        child = fork_server.child_env(env)
        failed = fork_server.failure(self.python, child)
        if failed is not None:
            return failed
        server = self._server
        if server is not None and server.alive and not server.ready:
            if server.popen.pid in self._hurried:  # a restart waited for it, and gave up
                return "the fork server was still not ready when the restart stopped waiting"
            if time.monotonic() - server.started < JUST_STARTED_SECONDS:
                return None  # started for this very start: no news (every `ftgui train` said it)
            return "the fork server was not ready yet"
        return None

    def server_importing(self, env: dict[str, str] | None, tasks: int) -> bool:
        """Whether a start of `tasks` trainers of `env` now would import TensorFlow beside a
        fork server that is importing it (alive, not ready yet): the pool forks and holds
        fewer than `tasks` live standbys (`hand_order` would start the rest cold). Its
        import is then given nice 0 (`priority.restore`, once per server: asked each poll,
        and the kernel may allow one autogroup change per 0.1 s): a restart waits for it."""
        if not self.fork or sum(p.poll() is None for p, _ in self.standbys) >= tasks:
            return False
        server = fork_server.importing(self.python, fork_server.child_env(env))
        if server is None or time.monotonic() - server.started > STUCK_IMPORT_SECONDS:
            return False  # one that imports for so long is stuck (a breaker's SIGSTOP)
        if server.popen.pid not in self._hurried:
            self._hurried.add(server.popen.pid)
            priority.restore(server.popen.pid)
        return True

    def fork_trainer(self, args: list[str], env: dict[str, str] | None, log_path: Path):
        """A trainer, `python -m ftgui.training ARGS`, forked from the ready fork server for
        `env` (in the run's network namespace, if any), its output appended to `log_path`;
        a `fork_server.ForkedProcess` with its stdin closed. None when the pool does not fork
        or its server is not ready (importing, ended, not answering): start it cold."""
        server = self._fork_server(env)
        if server is None or not server.ready:
            return None
        try:
            popen = server.fork(args, fork_server.child_env(env), log_path,
                                namespace=self.namespace)
        except OSError:
            return None
        popen.stdin.close()
        return popen

    def _spawn(self, log_path: Path, env: dict[str, str] | None, low: bool, server=None):
        """A standby forked from `server` (a ready `fork_server.ForkServer`), else started
        cold."""
        popen = start_standby(server, self.run_dir, log_path, env,
                              priority.STANDBY_NICE if low else 0, self.python, self.namespace)
        self._born[popen.pid] = time.time()
        if low:
            self._low.add(popen.pid)
        return popen

    def raise_priority(self) -> None:
        """Give every standby started `low` nice 0 (the attempt trains: its start is over).
        One that may not be raised keeps its priority until its order."""
        live = [p for p, _ in self.standbys] + [m.popen for m in self.members]
        for popen in live:  # not a pid that ended: it may be another process's by now
            if popen.pid in self._low and popen.poll() is None:
                priority.restore(popen.pid)
        self._low.clear()
        if self._server is not None and not self._server.ready and self._server.alive:
            priority.restore(self._server.popen.pid)  # its standbys are now wanted soon

    def hand_order(self, args: list[str], env: dict[str, str]):
        """Give `args` (the trainer's arguments) and `env` to a waiting standby.

        Ready ones (TensorFlow imported) go first; one still importing beats a cold start. An
        adopted spare's order also names its log (`"log"`), where it sends its output from then on.
        Returns (its process, its log path), or (None, None) when no standby is left.
        """
        self.standbys.sort(key=lambda item: item[0].pid not in self._ready)
        while self.standbys:
            popen, log_path = self.standbys.pop(0)
            if popen.poll() is not None:
                continue
            order = {"argv": args, "env": env}
            if popen.pid in self._adopted:  # a spare: its output went to its own folder
                order["log"] = str(log_path)
            try:
                popen.stdin.write((json.dumps(order) + "\n").encode())
                popen.stdin.close()
            except OSError:  # it died in between: try the next one
                kill_tree(popen.pid)
                popen.wait()
                continue
            return popen, log_path
        return None, None

    def dismiss(self) -> None:
        """End every waiting standby (the run is over, or the supervisor is closing)."""
        for popen, _ in self.standbys:
            _end(popen)
        self.standbys = []
        self._end_cluster()
        sweep_autograph_folders()

    def _end_cluster(self) -> None:
        for member in self.members:
            _end(member.popen)
        self.members = []


def standby_server(python: str, env: dict[str, str] | None, log_dir: Path):
    """This process's fork server (`fork_server.server_for`) for standbys of `python` with
    `env` (besides this process's environment), ready or importing, its log in `log_dir`;
    it imports at `priority.STANDBY_NICE` where that can be undone. None where none can
    run."""
    nice = priority.STANDBY_NICE if priority.restorable() else 0
    return fork_server.server_for(python, fork_server.child_env(env), log_dir, nice)


def start_standby(server, run_dir: Path, log_path: Path, env: dict[str, str] | None,
                  nice: int, python: str = sys.executable, namespace=None):
    """A standby of `run_dir` (`python -m ftgui.training --standby RUN`), its output appended
    to `log_path`, with `env` (besides this process's), at nice `nice`, in `namespace` (a
    `loopback_ns.LoopbackNamespace`) if given: forked from `server` (a ready
    `fork_server.ForkServer`) when there is one and it forks, else started as a process of
    its own (`processes.spawn`). Returns a `fork_server.ForkedProcess` or a `Popen`, its
    stdin a pipe for the order. Raises `OSError` if the program cannot be started."""
    if server is not None:
        try:
            return server.fork(standby_args(run_dir), fork_server.child_env(env), log_path,
                               nice, namespace=namespace)
        except OSError:
            pass
    return spawn(standby_argv(run_dir, python), log_path, env, stdin_pipe=True,
                 namespace=namespace, nice=nice)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _end(popen: subprocess.Popen) -> None:
    kill_tree(popen.pid)
    try:
        popen.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
