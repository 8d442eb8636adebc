"""The processes of a run and their `TF_CONFIG`: which roles a strategy needs, on which ports.

TensorFlow's own gRPC runtime connects the processes; ftgui only writes each task's `TF_CONFIG`
(https://www.tensorflow.org/guide/distributed_training#setting_up_the_tf_config_environment_variable).

Roles, in ftgui's and TensorFlow's words:
- single-process strategies: one `chief` process (no `TF_CONFIG`);
- MultiWorkerMirroredStrategy: `worker` 0 … N-1, worker 0 is the chief (TF's job `worker`);
- ParameterServerStrategy: the coordinator is TF's `chief` task, plus `worker` and `ps` tasks.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from dataclasses import dataclass

from ftgui.core.settings.config import ConfigError, RunConfig, is_local, parse_cluster


@dataclass(frozen=True)
class Task:
    """One process of the cluster: `role` (chief, worker, ps), `index`, whether it is the chief
    (writes checkpoints and the global loss), and its TF_CONFIG (None for a single process)."""

    role: str
    index: int
    is_chief: bool
    tf_config: dict | None = None

    @property
    def address(self) -> str | None:
        if self.tf_config is None:
            return None
        return self.tf_config["cluster"][self.role][self.index]

    @property
    def local(self) -> bool:
        """True when ftgui starts this task itself (always, without a configured cluster)."""
        return self.address is None or is_local(self.address)

    @property
    def name(self) -> str:
        """The fault-target form: `chief`, `worker:I` or `ps:I`."""
        return "chief" if self.role == "chief" else f"{self.role}:{self.index}"

    @property
    def label(self) -> str:
        """How the GUI names the process: 'worker 0 (chief)', 'coordinator', 'ps 1'…"""
        if self.role == "chief" and self.tf_config is not None:
            return "coordinator (chief)"
        if self.role == "worker" and self.is_chief:
            return f"worker {self.index} (chief)"
        return self.role if self.role == "chief" else f"{self.role} {self.index}"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (bind to port 0, read it, release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def check_ports(config: RunConfig) -> None:
    """Raise `ConfigError` naming the address when a local address of `config.cluster` with a
    port other than 0 is in use: TensorFlow would fail later with only "Could not start gRPC
    server". Binds each port for a moment, on every interface as TensorFlow's server does, with
    SO_REUSEADDR so that connections of an ended run (TIME_WAIT) do not count."""
    if not config.cluster:
        return
    spec = parse_cluster(config.cluster)
    for address in (a for addresses in spec.values() for a in addresses):
        host, _, port = address.rpartition(":")
        if not is_local(address) or port == "0":
            continue
        problem = port_problem(int(port))
        if problem:
            raise ConfigError(
                f"cluster: {address}: port {port} on {host} is in use ({problem}); "
                "pick a free port, or port 0 to let ftgui pick one"
            )


def port_problem(port: int) -> str | None:
    """Why TCP `port` cannot be listened on here, on every interface as TensorFlow's server
    does (the system's reason, "Address already in use"), or None when it can. SO_REUSEADDR:
    connections of an ended run (TIME_WAIT) do not count."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("", port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def name_grpc_port(error: str, tf_config: str | None) -> str:
    """`error` (a task's one-line error) with the task's own port named when TensorFlow could
    not start its gRPC server, which it says without naming the port. `tf_config`: the task's
    `TF_CONFIG` (JSON), or None."""
    if "Could not start gRPC server" not in error or not tf_config:
        return error
    try:
        config = json.loads(tf_config)
        task = config["task"]
        address = config["cluster"][task["type"]][task["index"]]
        port = int(address.rpartition(":")[2])
    except (ValueError, KeyError, IndexError, TypeError):
        return error
    problem = port_problem(port) if port else None
    why = f"in use ({problem})" if problem else "taken, or not an address of this machine"
    return f"{error}: this task's port {port} ({address}) is {why}"


def isolated(config: RunConfig) -> bool:
    """Whether `config` is a cluster (multi-worker, parameter-server) whose tasks all run on
    this machine: its processes then run in a loopback-only network namespace
    (`ftgui.core.supervision.loopback_ns`), unreachable from any other machine."""
    if config.strategy not in ("multi-worker", "parameter-server"):
        return False
    if not config.cluster:
        return True
    spec = parse_cluster(config.cluster)
    return all(is_local(a) for addresses in spec.values() for a in addresses)


def exposure_line(spec: dict[str, list[str]]) -> str | None:
    """The sentence said once before a cluster with tasks on other machines starts: its
    TensorFlow servers listen on every interface of each machine (TensorFlow binds
    `0.0.0.0`), with no authorization. None when no task is remote (`spec`: job -> addresses,
    as `cluster_spec` gives them)."""
    addresses = [a for job in ("chief", "worker", "ps") for a in spec.get(job, [])]
    if all(is_local(a) for a in addresses):
        return None
    return (f"the cluster's ports are open to the network ({', '.join(addresses)}): "
            "TensorFlow's servers listen on every interface, accept any connection and run "
            "the graphs they are sent; use it only on a network you trust")


def cluster_spec(config: RunConfig, host: str = "localhost",
                 free_port: Callable[[], int] = free_port) -> dict[str, list[str]]:
    """Addresses per TensorFlow job for `config`: the configured `cluster` (port 0 of a local
    host becomes a free port), or every task on this machine on fresh free ports.
    `free_port` picks each (the cluster's namespace's own, for an isolated cluster)."""
    if config.cluster:
        spec = parse_cluster(config.cluster)
        for address in (a for addresses in spec.values() for a in addresses):
            if address.endswith(":0") and not is_local(address):
                raise ConfigError(f"cluster: {address} needs a port: ftgui picks free ports "
                                  "only on this machine")
        return {
            job: [f"{a.rpartition(':')[0]}:{free_port()}" if a.endswith(":0") else a
                  for a in addresses]
            for job, addresses in spec.items()
        }
    if config.strategy == "multi-worker":
        return {"worker": [f"{host}:{free_port()}" for _ in range(config.workers)]}
    if config.strategy == "parameter-server":
        return {
            "chief": [f"{host}:{free_port()}"],
            "worker": [f"{host}:{free_port()}" for _ in range(config.workers)],
            "ps": [f"{host}:{free_port()}" for _ in range(config.ps)],
        }
    return {}


def tasks(config: RunConfig, spec: dict[str, list[str]] | None = None,
          free_port: Callable[[], int] = free_port) -> list[Task]:
    """The processes `config` needs, chief first. `spec` defaults to `cluster_spec(config)`
    with ports from `free_port`."""
    if config.strategy not in ("multi-worker", "parameter-server"):
        return [Task("chief", 0, True)]
    spec = spec if spec is not None else cluster_spec(config, free_port=free_port)
    out = []
    for job in ("chief", "worker", "ps"):
        for index in range(len(spec.get(job, []))):
            is_chief = job == "chief" or (job == "worker" and index == 0 and "chief" not in spec)
            tf_config = {"cluster": spec, "task": {"type": job, "index": index}}
            out.append(Task(job, index, is_chief, tf_config))
    return out


def tf_config_env(task: Task) -> dict[str, str]:
    """Environment variables for a task's process (`TF_CONFIG` as JSON, when it has one)."""
    return {"TF_CONFIG": json.dumps(task.tf_config)} if task.tf_config is not None else {}
