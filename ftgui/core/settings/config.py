"""A run's configuration: `RunConfig` (the settings declared in `ftgui.core.settings.schema` plus
the rules between them), coercion of raw values with one-line errors, and `RUN/config.toml`."""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

import tomli_w

from ftgui.core.settings import user_code
from ftgui.core.settings.schema import (
    BUILTIN_DATASETS,
    FAULT_KINDS,
    LOOPS,
    MAX_LOGICAL_CPUS,
    MAX_PS,
    MAX_WORKERS,
    MODELS,
    ONE_PROCESS,
    SETTINGS,
    STRATEGIES,
    ConfigError,
    Settings,
    check_whole,
    split_list,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "BUILTIN_DATASETS", "CONFIG_FILE", "FAULT_KINDS", "LOOPS", "MAX_LOGICAL_CPUS", "MAX_PS",
    "MAX_WORKERS", "MODELS", "STRATEGIES", "ConfigError", "RunConfig", "from_dict", "load",
    "load_record", "load_values", "parse_cluster", "parse_target", "save",
]

CONFIG_FILE = "config.toml"
RECORD_TABLE = "user_code"  # config.toml's table of what the run's files were (not settings)
FAULT_STEPS = ("kill_at_step", "preempt_at_step", "nan_at_step", "hang_at_step",
               "kill_in_save_at_step", "kill_in_snapshot_at_step")


@dataclass
class RunConfig(Settings):
    """Everything needed to start (or restart) one training run: the fields of `Settings`
    (each declared, with its unit and range, in `ftgui.core.settings.schema.SETTINGS`).

    `replicas` is the number of replicas of a MirroredStrategy (logical CPU devices, or GPUs when
    `gpus` > 0); for multi-worker runs it is the number of workers (`workers`). Fault steps (0 =
    off) hit `fault_target`; `chaos_faults` random faults of `chaos_kinds` are drawn from
    `chaos_seed` (`ftgui.core.supervision.fault_plan.plan`). `cluster` (optional, for multi-worker
    and parameter-server) names every task's address, `job=host:port,host:port;job=…` with jobs
    chief, worker, ps: tasks on this machine are started by ftgui (port 0: any free port), the
    others are printed as commands to run there. It sets `workers` and `ps`.

    Building one checks nothing; `validate()` does, `from_dict()` also coerces types.
    """

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
        """Raise `ConfigError` naming the first bad field and its allowed values: first each
        setting against its own declaration, then the rules between settings.

        `gpus_available` (when known) bounds `gpus`. Nothing is started or written.
        """
        for setting in SETTINGS.values():
            setting.check(getattr(self, setting.name))
        if gpus_available is not None:
            check_whole("gpus", self.gpus, 0, gpus_available)
        if self.loop == "fit":
            _check_fit_loop(self)
        _check_replicas(self)
        _check_sources(self)
        _check_faults(self)
        if self.cluster:
            _check_cluster(self)
        if self.launcher == "slurm":
            _check_slurm(self)
        parse_target(self.fault_target, self)

    @property
    def num_tasks(self) -> int:
        """Training processes the run needs (Slurm tasks): 1 for a one-process strategy,
        `workers` for multi-worker, coordinator + workers + parameter servers otherwise."""
        if self.strategy == "multi-worker":
            return self.workers
        if self.strategy == "parameter-server":
            return 1 + self.workers + self.ps
        return 1

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
        """A copy with `changes` applied and coerced (unknown keys raise `ConfigError`)."""
        return from_dict({**self.to_dict(), **changes})


# ---------------------------------------------------------------- rules between settings
def _check_fit_loop(config: RunConfig) -> None:
    if config.task != "classification":
        raise ConfigError("loop: fit trains classification only; use loop custom")
    if config.strategy not in ("default", "one-device", "mirrored"):
        raise ConfigError(f"loop: fit runs on default, one-device or mirrored, not "
                          f"{config.strategy}")
    for name in ("preempt_at_step", "nan_at_step", "hang_at_step", "kill_in_save_at_step",
                 "kill_in_snapshot_at_step", "chaos_faults"):
        if getattr(config, name):
            raise ConfigError(f"{name}: the fit loop takes kill faults only; use loop custom")


def _check_replicas(config: RunConfig) -> None:
    if config.strategy == "multi-worker" and config.workers < 2:
        raise ConfigError(f"workers: multi-worker needs 2 to {MAX_WORKERS} workers")
    if config.global_batch_size % config.num_replicas:
        raise ConfigError(
            f"global_batch_size: {config.global_batch_size} is not divisible by the "
            f"{config.num_replicas} replicas of strategy {config.strategy}"
        )


def _check_sources(config: RunConfig) -> None:
    """The model and dataset name a built-in or an existing file of the right kind."""
    user_code.parse("model", config.model)
    user_code.parse("dataset", config.dataset)
    if config.task == "regression" and config.model in MODELS:
        raise ConfigError(f"task: regression needs your own model (--model PATH.py:FUNCTION), "
                          f"not the built-in {config.model}")
    if config.task == "regression" and config.dataset in BUILTIN_DATASETS:
        raise ConfigError("task: regression needs your own dataset (--dataset PATH.py:FUNCTION "
                          f"or PATH.npz), not the built-in {config.dataset}")


def _check_faults(config: RunConfig) -> None:
    kinds = split_list(config.chaos_kinds)
    if config.chaos_faults and not kinds:
        raise ConfigError(f"chaos_kinds: name at least one of {', '.join(FAULT_KINDS)}")
    if config.chaos_faults > max(config.steps - 2, 0):
        raise ConfigError(
            f"chaos_faults: {config.chaos_faults} faults do not fit in {config.steps} steps"
        )
    hangs = config.hang_at_step or (config.chaos_faults and "hang" in kinds)
    if hangs and not config.watchdog_seconds:
        raise ConfigError("watchdog_seconds: a hang fault needs the watchdog (e.g. 10 s)")
    for name in FAULT_STEPS:
        check_whole(name, getattr(config, name), 0, config.steps)
    _check_inside_faults(config)


def _check_inside_faults(config: RunConfig) -> None:
    """A kill inside a save or a snapshot needs the chief to save alone, and a save or a
    snapshot at its step."""
    save, snapshot = config.kill_in_save_at_step, config.kill_in_snapshot_at_step
    for name, step in (("kill_in_save_at_step", save), ("kill_in_snapshot_at_step", snapshot)):
        if step and config.strategy not in ONE_PROCESS:
            raise ConfigError(f"{name}: needs strategy {', '.join(ONE_PROCESS)}, not "
                              f"{config.strategy}")
    if save and save % config.checkpoint_every and save != config.steps:
        raise ConfigError(f"kill_in_save_at_step: step {save} gets no checkpoint; use a "
                          f"multiple of checkpoint_every ({config.checkpoint_every}) or the "
                          f"last step")
    if snapshot and not config.snapshot_every:
        raise ConfigError("kill_in_snapshot_at_step: needs in-memory snapshots "
                          "(snapshot_every above 0)")
    if snapshot and snapshot % config.snapshot_every:
        raise ConfigError(f"kill_in_snapshot_at_step: step {snapshot} gets no snapshot; use a "
                          f"multiple of snapshot_every ({config.snapshot_every})")


def _check_cluster(config: RunConfig) -> None:
    jobs = parse_cluster(config.cluster)
    if config.strategy not in ("multi-worker", "parameter-server"):
        raise ConfigError(
            f"cluster: addresses need strategy multi-worker or parameter-server, "
            f"not {config.strategy}"
        )
    wanted = {"worker": config.workers}
    if config.strategy == "parameter-server":
        wanted.update(ps=config.ps, chief=1)
    for job, count in wanted.items():
        if len(jobs.get(job, [])) != count:
            raise ConfigError(
                f"cluster: {len(jobs.get(job, []))} {job} address(es) given, the run "
                f"needs {count}"
            )
    if config.strategy == "multi-worker" and set(jobs) != {"worker"}:
        raise ConfigError("cluster: multi-worker takes only worker=… addresses")
    _refuse_shared_addresses(jobs)


def _check_slurm(config: RunConfig) -> None:
    """What launcher slurm cannot take (Slurm, not `cluster`, places the tasks; the job's tasks
    are not processes of this machine, so no standby, snapshot or process signal reaches them).
    A one-process strategy runs as a one-task job."""
    if config.snapshot_every and config.num_tasks == 1:
        raise ConfigError("snapshot_every: the snapshots live in one machine's shared memory, "
                          "which a Slurm job's next start may not run on; set it to 0 (off) "
                          "with launcher slurm")
    if config.cluster:
        raise ConfigError("cluster: with launcher slurm the addresses come from Slurm; "
                          "leave cluster empty")
    if config.hang_at_step or (config.chaos_faults and "hang" in split_list(config.chaos_kinds)):
        raise ConfigError("hang_at_step: hang faults are not injected through Slurm; "
                          "use kill or preempt")
    if config.slurm_tasks_per_node and \
            config.slurm_tasks_per_node * config.slurm_nodes < config.num_tasks:
        raise ConfigError(
            f"slurm_tasks_per_node: {config.slurm_tasks_per_node} per node on "
            f"{config.slurm_nodes} node(s) is fewer than the run's {config.num_tasks} tasks")
    if config.slurm_nodes > config.num_tasks:
        raise ConfigError(f"slurm_nodes: {config.slurm_nodes} nodes for {config.num_tasks} "
                          "tasks leaves a node without a task")


def _refuse_shared_addresses(jobs: dict[str, list[str]]) -> None:
    """Two tasks at one host:port (port 0 excepted: each gets its own free port) cannot both
    listen there. The names of this machine (localhost, 127.0.0.1, its host name) are one."""
    seen: dict[tuple[str, str], str] = {}
    for job, addresses in jobs.items():
        for index, address in enumerate(addresses):
            host, _, port = address.rpartition(":")
            if port == "0":
                continue
            key = ("this machine" if is_local(address) else host.lower(), port)
            task = f"{job} {index}"
            if key in seen:
                raise ConfigError(f"cluster: {seen[key]} and {task} both use port {port} on "
                                  f"{key[0]} ({address}); give each task its own port, or "
                                  "port 0 to let ftgui pick one")
            seen[key] = task


# ---------------------------------------------------------------- raw values -> RunConfig
_WHAT = {int: "a whole number", float: "a number", bool: "true or false", str: "text"}


@functools.cache
def _adapter():
    from pydantic import (
        TypeAdapter,  # on first use: keeps `import ftgui.core.settings.config` light
    )

    return TypeAdapter(RunConfig)


def from_dict(values: dict) -> RunConfig:
    """Build a `RunConfig` from a dict (a config.toml table, flags, a remembered panel),
    coercing text and numbers to each field's type with pydantic ("60" -> 60, "yes" -> True).

    Missing keys take their defaults. Raises `ConfigError` for an unknown key, or a value that
    is not of its field's type (a bool is no number; 2.5 is no whole number). Ranges are
    `RunConfig.validate`'s.
    """
    unknown = sorted(set(values) - set(SETTINGS))
    if unknown:
        raise ConfigError(f"{unknown[0]}: unknown setting; known: {', '.join(SETTINGS)}")
    if all(type(value) is SETTINGS[name].kind for name, value in values.items()):
        # Nothing to coerce (a config.toml ftgui wrote, flags): skip importing pydantic, which
        # would cost a restarting trainer ~0.3 s on the recovery path.
        return RunConfig(**values)
    from pydantic import ValidationError

    for name, value in values.items():
        kind = SETTINGS[name].kind
        if isinstance(value, bool) and kind is not bool:  # pydantic would take True as 1
            raise ConfigError(f"{name}: {value!r} is not {_WHAT[kind]}")
    try:
        return _adapter().validate_python(values)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = error["loc"][0]
        raise ConfigError(
            f"{name}: {error['input']!r} is not {_WHAT[SETTINGS[name].kind]}"
        ) from None


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


LOCAL_HOSTS = {name.lower() for name in ("localhost", "127.0.0.1", "::1", socket.gethostname(),
                                          socket.getfqdn())}


def is_local(address: str) -> bool:
    """True when `host:port` is this machine (ftgui starts the task itself): one of its names
    (compared without case, as DNS does) or a loopback address (127.0.0.0/8, `[::1]`)."""
    host = address.rpartition(":")[0].lower()
    if host in LOCAL_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:
        return False


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
    """The raw settings of `RUN/config.toml` (without its `[user_code]` record table, see
    `load_record`). Raises `FileNotFoundError`, or `ConfigError` for a file that is not TOML."""
    values = _load_toml(run_dir)
    values.pop(RECORD_TABLE, None)
    return values


def load_record(run_dir: str | os.PathLike) -> dict:
    """The `[user_code]` table of `RUN/config.toml`: the model and dataset files' paths and
    content hashes and whether exact resume is promised ({} when the run has none)."""
    try:
        return dict(_load_toml(run_dir).get(RECORD_TABLE, {}))
    except (OSError, ConfigError):
        return {}


def _load_toml(run_dir: str | os.PathLike) -> dict:
    path = Path(run_dir) / CONFIG_FILE
    with open(path, "rb") as handle:
        try:
            return tomllib.load(handle)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML ({exc})") from None
        except UnicodeDecodeError as exc:  # TOML is UTF-8; tomllib lets this one through
            byte = exc.object[exc.start]
            raise ConfigError(f"{path}: not valid TOML (not UTF-8: byte {byte:#04x} at offset "
                              f"{exc.start})") from None


def load(run_dir: str | os.PathLike) -> RunConfig:
    """Read `RUN/config.toml`. Raises `FileNotFoundError`, or `ConfigError` for bad content
    (the message names the file)."""
    try:
        return from_dict(load_values(run_dir))
    except ConfigError as exc:
        path = Path(run_dir) / CONFIG_FILE
        raise ConfigError(str(exc) if str(path) in str(exc) else f"{exc} (in {path})") from None


def save(run_dir: str | os.PathLike, config: RunConfig, record: dict | None = None) -> Path:
    """Write `RUN/config.toml` atomically (temp file + rename); returns its path. The model and
    dataset files are written as absolute paths; `record` (when given) becomes the
    `[user_code]` table, else the file's existing table is kept."""
    path = Path(run_dir) / CONFIG_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    values = config.to_dict()
    values["model"] = user_code.absolute(values["model"])
    values["dataset"] = user_code.absolute(values["dataset"])
    record = load_record(run_dir) if record is None else record
    if record:
        values[RECORD_TABLE] = record
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_bytes(tomli_w.dumps(values).encode())
    os.replace(tmp, path)
    return path
