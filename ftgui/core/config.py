"""A run's configuration: typed defaults, validation with one-line errors, and `RUN/config.toml`."""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass, fields
from pathlib import Path

import tomli_w

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

STRATEGIES = ("default", "one-device", "mirrored", "multi-worker", "parameter-server")
MODELS = ("mlp", "cnn")
FAULT_KINDS = ("kill", "preempt", "nan", "hang")
LOOPS = ("custom", "fit")
BUILTIN_DATASETS = ("digits",)
MAX_LOGICAL_CPUS = 8
MAX_WORKERS = 8
MAX_PS = 4

CONFIG_FILE = "config.toml"


class ConfigError(ValueError):
    """A configuration value is out of range; the message is one line naming the field."""


@dataclass
class RunConfig:
    """Everything needed to start (or restart) one training run.

    Units: `steps`, `checkpoint_every` and fault steps count global steps (one optimizer update
    over one global batch); `global_batch_size` counts examples per step summed over all
    replicas; `learning_rate` is Adam's step size.

    `replicas` is the number of replicas of a MirroredStrategy (logical CPU devices, or GPUs when
    `gpus` > 0); for multi-worker runs it is the number of workers (`workers`).

    Faults (0 = off): `kill_at_step`, `preempt_at_step`, `nan_at_step` (a NaN injected into the
    loss of that step) and `hang_at_step` (SIGSTOP) hit `fault_target` right after / at that
    step; `kill_after_seconds` kills it that many seconds after the first launch; `chaos_faults`
    random faults of `chaos_kinds` are drawn from `chaos_seed` (`ftgui.core.faults.plan`).
    `watchdog_seconds` > 0 kills and recovers a run that makes no progress for that long.
    `warm_standby` keeps one process per task with TensorFlow imported, waiting to replace a
    lost one, so that recovery skips the import.

    `loop` is `custom` (ftgui's loop: restores the exact step) or `fit` (Keras `model.fit` with
    `BackupAndRestore` and `ModelCheckpoint`, for comparison: it restores to the start of the
    epoch, and its logged loss is Keras' running mean over the epoch).

    `cluster` (optional, for multi-worker and parameter-server) names every task's address,
    `job=host:port,host:port;job=…` with jobs chief, worker, ps, e.g.
    `worker=localhost:0,gpu-box:2222`: tasks on this machine are started by ftgui (port 0: any
    free port), the others are printed as commands to run there. It sets `workers` and `ps`.
    """

    strategy: str = "mirrored"
    replicas: int = 2
    gpus: int = 0
    workers: int = 2
    ps: int = 1
    model: str = "mlp"
    dataset: str = "digits"
    global_batch_size: int = 64
    learning_rate: float = 0.01
    steps: int = 2000
    checkpoint_every: int = 100
    keep: int = 5
    seed: int = 42
    auto_recover: bool = False
    max_restarts: int = 3
    restart_backoff: float = 1.0
    kill_at_step: int = 0
    preempt_at_step: int = 0
    nan_at_step: int = 0
    hang_at_step: int = 0
    fault_target: str = "chief"
    kill_after_seconds: float = 0.0
    watchdog_seconds: float = 0.0
    chaos_faults: int = 0
    chaos_kinds: str = "kill,preempt,nan"
    chaos_seed: int = 0
    warm_standby: bool = False
    cluster: str = ""
    loop: str = "custom"

    @property
    def num_replicas(self) -> int:
        """Replicas in sync for one step (the divisor of the global batch)."""
        if self.strategy in ("default", "one-device"):
            return 1
        if self.strategy == "mirrored":
            return self.gpus if self.gpus > 0 else self.replicas
        if self.strategy == "multi-worker":
            return self.workers
        return 1  # parameter-server: each worker step consumes one whole global batch

    def validate(self, gpus_available: int | None = None) -> None:
        """Raise `ConfigError` naming the first bad field and its allowed values.

        `gpus_available` (when known) bounds `gpus`. Nothing is started or written.
        """
        _choice("strategy", self.strategy, STRATEGIES)
        _choice("model", self.model, MODELS)
        _choice("loop", self.loop, LOOPS)
        if self.loop == "fit":
            self._validate_fit()
        _int_range("replicas", self.replicas, 1, MAX_LOGICAL_CPUS)
        _int_range("gpus", self.gpus, 0, gpus_available if gpus_available is not None else 64)
        _int_range("workers", self.workers, 1, MAX_WORKERS)
        _int_range("ps", self.ps, 1, MAX_PS)
        _int_range("global_batch_size", self.global_batch_size, 1, 1_000_000)
        _int_range("steps", self.steps, 1, 100_000_000)
        _int_range("checkpoint_every", self.checkpoint_every, 1, 100_000_000)
        _int_range("keep", self.keep, 1, 1000)
        _int_range("seed", self.seed, 0, 2**31 - 1)
        _int_range("max_restarts", self.max_restarts, 0, 1000)
        if not (isinstance(self.learning_rate, (int, float)) and 0 < self.learning_rate <= 10):
            raise ConfigError(f"learning_rate: {self.learning_rate!r} is not in (0, 10]")
        backoff = self.restart_backoff
        if not (isinstance(backoff, (int, float)) and 0 <= backoff <= 600):
            raise ConfigError(f"restart_backoff: {backoff!r} is not in [0, 600] seconds")
        if self.strategy == "multi-worker" and self.workers < 2:
            raise ConfigError("workers: multi-worker needs 2 to 8 workers")
        if self.global_batch_size % self.num_replicas:
            raise ConfigError(
                f"global_batch_size: {self.global_batch_size} is not divisible by the "
                f"{self.num_replicas} replicas of strategy {self.strategy}"
            )
        if self.dataset not in BUILTIN_DATASETS:
            if not self.dataset.endswith(".npz"):
                raise ConfigError(
                    f"dataset: {self.dataset!r} is neither 'digits' nor a path to a .npz file"
                )
            if not Path(self.dataset).is_file():
                raise ConfigError(f"dataset: file {self.dataset!r} does not exist")
        for name in ("kill_after_seconds", "watchdog_seconds"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 <= value <= 86400):
                raise ConfigError(f"{name}: {value!r} is not in [0, 86400] seconds")
        _int_range("chaos_faults", self.chaos_faults, 0, 1000)
        _int_range("chaos_seed", self.chaos_seed, 0, 2**31 - 1)
        kinds = [k.strip() for k in self.chaos_kinds.split(",") if k.strip()]
        for kind in kinds:
            _choice("chaos_kinds", kind, FAULT_KINDS)
        if self.chaos_faults and not kinds:
            raise ConfigError(f"chaos_kinds: name at least one of {', '.join(FAULT_KINDS)}")
        if self.chaos_faults > max(self.steps - 2, 0):
            raise ConfigError(
                f"chaos_faults: {self.chaos_faults} faults do not fit in {self.steps} steps"
            )
        hangs = self.hang_at_step or (self.chaos_faults and "hang" in kinds)
        if hangs and not self.watchdog_seconds:
            raise ConfigError("watchdog_seconds: a hang fault needs the watchdog (e.g. 10 s)")
        for name in ("kill_at_step", "preempt_at_step", "nan_at_step", "hang_at_step"):
            _int_range(name, getattr(self, name), 0, self.steps)
        if self.cluster:
            jobs = parse_cluster(self.cluster)
            if self.strategy not in ("multi-worker", "parameter-server"):
                raise ConfigError(
                    f"cluster: addresses need strategy multi-worker or parameter-server, "
                    f"not {self.strategy}"
                )
            wanted = {"worker": self.workers}
            if self.strategy == "parameter-server":
                wanted.update(ps=self.ps, chief=1)
            for job, count in wanted.items():
                if len(jobs.get(job, [])) != count:
                    raise ConfigError(
                        f"cluster: {len(jobs.get(job, []))} {job} address(es) given, the run "
                        f"needs {count}"
                    )
            if self.strategy == "multi-worker" and set(jobs) != {"worker"}:
                raise ConfigError("cluster: multi-worker takes only worker=… addresses")
        parse_target(self.fault_target, self)

    def _validate_fit(self) -> None:
        if self.strategy not in ("default", "one-device", "mirrored"):
            raise ConfigError(f"loop: fit runs on default, one-device or mirrored, not "
                              f"{self.strategy}")
        for name in ("preempt_at_step", "nan_at_step", "hang_at_step", "chaos_faults"):
            if getattr(self, name):
                raise ConfigError(f"{name}: the fit loop takes kill faults only; use loop custom")

    def with_cluster_counts(self) -> RunConfig:
        """A copy whose `workers` and `ps` are the counts of the `cluster` addresses (itself
        when no cluster is named). Raises `ConfigError` for unparsable addresses."""
        if not self.cluster:
            return self
        jobs = parse_cluster(self.cluster)
        return self.replace(workers=len(jobs.get("worker", [])) or self.workers,
                            ps=len(jobs.get("ps", [])) or self.ps)

    def to_dict(self) -> dict:
        """Plain dict of all fields, in declaration order (TOML-ready)."""
        return dataclasses.asdict(self)

    def replace(self, **changes) -> RunConfig:
        """A copy with `changes` applied (unknown keys raise `ConfigError`)."""
        return from_dict({**self.to_dict(), **changes})


def from_dict(values: dict) -> RunConfig:
    """Build a `RunConfig` from a dict, coercing types; unknown keys raise `ConfigError`."""
    known = {f.name: f for f in fields(RunConfig)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(f"{unknown[0]}: unknown setting; known: {', '.join(known)}")
    kwargs = {}
    defaults = RunConfig()
    for name, value in values.items():
        kind = type(getattr(defaults, name))
        kwargs[name] = _coerce(name, value, kind)
    return RunConfig(**kwargs)


def _coerce(name: str, value, kind: type):
    if kind is not bool and isinstance(value, bool):
        what = "a whole number" if kind is int else "a number" if kind is float else "text"
        raise ConfigError(f"{name}: {value!r} is not {what}")
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{name}: {value!r} is not true or false")
    try:
        if kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        if kind is float:
            return float(value)
    except (TypeError, ValueError):
        what = "a whole number" if kind is int else "a number"
        raise ConfigError(f"{name}: {value!r} is not {what}") from None
    return str(value)


def _choice(name: str, value, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name}: {value!r} is not one of {', '.join(allowed)}")


def _int_range(name: str, value, low: int, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ConfigError(f"{name}: {value!r} is not a whole number from {low} to {high}")


def parse_cluster(text: str) -> dict[str, list[str]]:
    """Parse `job=host:port,host:port;job=…` into {job: [address, …]}.

    Jobs are chief, worker and ps; a port is a number from 0 (any free port, local hosts only)
    to 65535. Raises `ConfigError` naming the bad part.
    """
    jobs: dict[str, list[str]] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        job, _, addresses = part.partition("=")
        job = job.strip()
        if job not in ("chief", "worker", "ps") or not addresses.strip():
            raise ConfigError(f"cluster: {part!r} is not chief|worker|ps=host:port,…")
        for address in addresses.split(","):
            host, _, port = address.strip().rpartition(":")
            if not host or not port.isdigit() or int(port) > 65535:
                raise ConfigError(f"cluster: {address.strip()!r} is not host:port")
            jobs.setdefault(job, []).append(f"{host}:{int(port)}")
    if not jobs:
        raise ConfigError("cluster: no addresses; use job=host:port,…")
    return jobs


def parse_target(target: str, config: RunConfig | None = None) -> tuple[str, int]:
    """Parse a fault target `chief`, `worker:I` or `ps:I` into (role, index).

    Raises `ConfigError` for other forms, or an index beyond the config's workers / ps.
    """
    role, _, index_text = target.partition(":")
    if role == "chief" and not index_text:
        return "chief", 0
    if role in ("worker", "ps") and index_text.isdigit():
        index = int(index_text)
        if config is not None:
            count = config.workers if role == "worker" else config.ps
            if config.strategy not in ("multi-worker", "parameter-server") or index >= count:
                raise ConfigError(f"fault_target: {target!r} does not exist; strategy "
                                  f"{config.strategy} has {_targets(config)}")
        return role, index
    raise ConfigError(f"fault_target: {target!r} is not one of chief, worker:I, ps:I")


def _targets(config: RunConfig) -> str:
    """The fault targets a config's cluster has, for messages."""
    if config.strategy == "multi-worker":  # worker 0 is the chief
        return f"chief, worker:0 … worker:{config.workers - 1}"
    if config.strategy == "parameter-server":
        return (f"chief (the coordinator), worker:0 … worker:{config.workers - 1}, "
                f"ps:0 … ps:{config.ps - 1}")
    return "only chief (one process)"


def load_values(run_dir: str | os.PathLike) -> dict:
    """The raw table of `RUN/config.toml`. Raises `FileNotFoundError`, or `ConfigError` for a
    file that is not TOML."""
    path = Path(run_dir) / CONFIG_FILE
    with open(path, "rb") as handle:
        try:
            return tomllib.load(handle)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML ({exc})") from None


def load(run_dir: str | os.PathLike) -> RunConfig:
    """Read `RUN/config.toml`. Raises `FileNotFoundError`, or `ConfigError` for bad content
    (the message names the file)."""
    try:
        return from_dict(load_values(run_dir))
    except ConfigError as exc:
        path = Path(run_dir) / CONFIG_FILE
        raise ConfigError(str(exc) if str(path) in str(exc) else f"{exc} (in {path})") from None


def save(run_dir: str | os.PathLike, config: RunConfig) -> Path:
    """Write `RUN/config.toml` atomically (temp file + rename); returns its path."""
    path = Path(run_dir) / CONFIG_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_bytes(tomli_w.dumps(config.to_dict()).encode())
    os.replace(tmp, path)
    return path
