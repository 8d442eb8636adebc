"""Nothing ftgui starts for a cluster on this machine can be reached from another machine: its
processes run in a loopback-only network namespace. Checked by connecting through this
machine's own network address, as a neighbour on the workshop's Wi-Fi would."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import psutil
import pytest
from conftest import network_address, of_kind

from ftgui.core.record import events
from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.supervision import cluster
from ftgui.core.supervision.loopback_ns import LoopbackNamespace

LISTENER = """
import socket, sys
server = socket.socket()
server.bind(("0.0.0.0", 0))  # every interface, as TensorFlow's gRPC server binds
server.listen()
print(server.getsockname()[1], flush=True)
inside = socket.create_connection(("127.0.0.1", server.getsockname()[1]), timeout=5)
print("loopback ok", flush=True)
sys.stdin.read()
"""


def reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=3):
            return True
    except OSError:  # refused, unreachable or timed out
        return False


def test_a_listener_on_every_interface_inside_the_namespace_is_reachable_only_inside():
    outside = network_address()
    namespace = LoopbackNamespace.create()
    try:
        child = subprocess.Popen([sys.executable, "-c", LISTENER], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, encoding="utf-8",
                                 preexec_fn=namespace.join)
        port = int(child.stdout.readline())
        assert child.stdout.readline() == "loopback ok\n"  # loopback works inside
        assert not reachable(outside, port)
        assert not reachable("127.0.0.1", port)  # this machine's own loopback is another one
        child.stdin.close()
        assert child.wait(timeout=10) == 0
    finally:
        namespace.close()


def test_the_same_port_twice_in_a_cluster_is_refused_naming_both_tasks():
    config = RunConfig(strategy="multi-worker",
                       cluster="worker=localhost:2222,127.0.0.1:2222").with_cluster_counts()
    with pytest.raises(ConfigError, match=r"^cluster: worker 0 and worker 1 both use port "
                       r"2222 on this machine \(127.0.0.1:2222\); give each task its own port"):
        config.validate()
    ps = RunConfig(strategy="parameter-server", cluster="chief=far:1;worker=far:2,near:2;"
                   "ps=far:2").with_cluster_counts()
    with pytest.raises(ConfigError, match=r"^cluster: worker 0 and ps 0 both use port 2 on far "):
        ps.validate()
    shouted = RunConfig(strategy="multi-worker",
                        cluster="worker=LocalHost:2222,localhost:2222").with_cluster_counts()
    with pytest.raises(ConfigError, match=r"^cluster: worker 0 and worker 1 both use port 2222"):
        shouted.validate()  # host names have no case
    any_port = RunConfig(strategy="multi-worker", cluster="worker=localhost:0,localhost:0")
    any_port.with_cluster_counts().validate()  # port 0: each task gets its own free port


def test_which_clusters_run_isolated_and_which_say_their_ports_are_open():
    assert cluster.isolated(RunConfig(strategy="multi-worker", workers=2))
    assert cluster.isolated(RunConfig(strategy="parameter-server", workers=2, ps=1))
    assert not cluster.isolated(RunConfig(strategy="mirrored"))  # no server at all
    local = RunConfig(strategy="multi-worker", cluster="worker=localhost:0,127.0.0.1:0")
    assert cluster.isolated(local.with_cluster_counts())
    mixed = RunConfig(strategy="multi-worker", cluster="worker=localhost:0,far:2222")
    assert not cluster.isolated(mixed.with_cluster_counts())
    assert cluster.exposure_line({"worker": ["localhost:1", "localhost:2"]}) is None
    assert cluster.exposure_line({"worker": ["localhost:1", "far:2222"]}) == (
        "the cluster's ports are open to the network (localhost:1, far:2222): TensorFlow's "
        "servers listen on every interface, accept any connection and run the graphs they "
        "are sent; use it only on a network you trust")


def test_a_loopback_address_spelled_otherwise_is_this_machine():
    """Found while trying to break issue 25: `[::1]` and `127.0.0.2` were taken for remote
    tasks, so an all-local cluster was not isolated and was said to be open to the network."""
    for spec in ("worker=[::1]:0,[::1]:0", "worker=127.0.0.2:0,localhost:0"):
        config = RunConfig(strategy="multi-worker", cluster=spec).with_cluster_counts()
        assert cluster.isolated(config), spec
    assert cluster.is_local("[::1]:2222") and cluster.is_local("127.1.2.3:2222")
    assert not cluster.is_local("[2001:db8::1]:2222") and not cluster.is_local("10.0.0.1:1")
    assert not cluster.is_local("0.0.0.0:2222")  # every interface, not an address to reach


def _net_namespace(pid: int) -> str:
    import os

    return os.readlink(f"/proc/{pid}/ns/net")


@pytest.mark.tf
@pytest.mark.parametrize(("strategy", "processes"), [("multi-worker", 2), ("parameter-server", 4)])
def test_the_tasks_of_a_local_cluster_cannot_be_reached_from_the_network(tmp_path, strategy,
                                                                        processes):
    from ftgui.core.supervision.supervisor import Supervisor

    outside = network_address()
    # long enough that no task has finished (and left /proc) while its namespace is read
    config = RunConfig(strategy=strategy, workers=2, ps=1, steps=600, checkpoint_every=300)
    supervisor = Supervisor(tmp_path / "run")
    supervisor.start(config)
    seen: list[dict] = []
    try:
        while not of_kind(seen, "step") and supervisor.live:  # every server is up by then
            seen += supervisor.poll()
            time.sleep(0.05)
        started = of_kind(seen, "process_started")
        ports = [int(e["address"].rpartition(":")[2]) for e in started]
        assert len(ports) == processes
        for port in ports:  # TensorFlow's servers listen on them, inside the namespace
            assert not reachable(outside, port)
            assert not reachable("127.0.0.1", port)
        own = _net_namespace(psutil.Process().pid)
        assert {_net_namespace(e["pid"]) for e in started} != {own}
        assert len({_net_namespace(e["pid"]) for e in started}) == 1  # one namespace for both
        while supervisor.live:
            seen += supervisor.poll()
            time.sleep(0.05)
        seen += supervisor.poll()
    finally:
        supervisor.shutdown()
    assert supervisor.state == "finished"  # they trained together over the loopback inside
    assert max(events.final_losses(events.read_all(tmp_path / "run"))) == 600
    assert not of_kind(seen, "cluster_exposed")


@pytest.mark.tf
def test_a_port_taken_on_this_machine_between_a_crash_and_the_restart_is_not_the_clusters(
        tmp_path):
    """An explicit all-local `--cluster`: its ports live in the cluster's namespace, so another
    program taking one of them on this machine cannot make the restart fail."""
    from ftgui.core.supervision.supervisor import Supervisor

    ports = [cluster.free_port(), cluster.free_port()]
    config = RunConfig(strategy="multi-worker", steps=30, checkpoint_every=10,
                       kill_at_step=15, fault_target="worker:1", auto_recover=True,
                       cluster=f"worker=localhost:{ports[0]},localhost:{ports[1]}"
                       ).with_cluster_counts()
    supervisor = Supervisor(tmp_path / "run")
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    seen: list[dict] = []
    try:
        supervisor.start(config)
        while not of_kind(seen, "fault_injected") and supervisor.live:
            seen += supervisor.poll()
            time.sleep(0.05)
        squatter.bind(("", ports[1]))  # another program takes worker 1's port
        squatter.listen()
        while supervisor.live:
            seen += supervisor.poll()
            time.sleep(0.05)
        seen += supervisor.poll()
    finally:
        supervisor.shutdown()
        squatter.close()
    assert supervisor.state == "finished", supervisor.reason
    restarted = [e["address"] for e in of_kind(seen, "process_started") if e["attempt"] == 1]
    assert sorted(restarted) == sorted(f"localhost:{p}" for p in ports)


def test_tensorflows_could_not_start_grpc_server_gets_the_tasks_port_named():
    with socket.socket() as taken:
        taken.bind(("", 0))
        taken.listen()
        port = taken.getsockname()[1]
        tf_config = json.dumps({"cluster": {"worker": ["localhost:1", f"localhost:{port}"]},
                                "task": {"type": "worker", "index": 1}})
        assert cluster.name_grpc_port("UnknownError: Could not start gRPC server", tf_config) == (
            f"UnknownError: Could not start gRPC server: this task's port {port} "
            f"(localhost:{port}) is in use (Address already in use)")
    assert cluster.name_grpc_port("ValueError: bad shape", tf_config) == "ValueError: bad shape"
    assert cluster.name_grpc_port("UnknownError: Could not start gRPC server", None) == (
        "UnknownError: Could not start gRPC server")


def test_a_restart_of_a_cluster_with_remote_tasks_names_the_local_port_another_program_took(
        tmp_path):
    """Its local tasks listen on this machine's network: before each restart the supervisor
    checks their ports, and names the one taken since the crash."""
    from ftgui.core.record.events import EventWriter
    from ftgui.core.supervision.supervisor import StartError, Supervisor

    free = cluster.free_port()
    config = RunConfig(strategy="multi-worker",
                       cluster=f"worker=localhost:{free},far:2222").with_cluster_counts()
    supervisor = Supervisor(tmp_path / "run")
    supervisor._config = config
    tasks = cluster.tasks(config)
    (tmp_path / "run").mkdir()
    with EventWriter(tmp_path / "run", 1) as writer, socket.socket() as squatter:
        supervisor.tasks.isolate(tasks, writer, first=False)  # free: the restart goes ahead
        squatter.bind(("", free))
        squatter.listen()
        with pytest.raises(StartError) as raised:
            supervisor.tasks.isolate(tasks, writer, first=False)
    assert str(raised.value) == (
        f"cannot restart: cluster: localhost:{free}: port {free} on localhost is in use "
        "(Address already in use); pick a free port, or port 0 to let ftgui pick one")
    assert not supervisor.launcher.isolated  # a cluster with remote tasks is not isolated


def test_a_local_cluster_where_no_namespace_can_be_made_is_refused_before_anything_starts(
        tmp_path, monkeypatch):
    from ftgui.core.supervision import loopback_ns
    from ftgui.core.supervision.supervisor import StartError, Supervisor

    def refused(*args, **kwargs):
        raise loopback_ns.NamespaceError(1, "the system refuses a network namespace (unshare: "
                                            "Operation not permitted)")

    monkeypatch.setattr(loopback_ns.LoopbackNamespace, "create", refused)
    supervisor = Supervisor(tmp_path / "run")
    with pytest.raises(StartError) as raised:
        supervisor.start(RunConfig(strategy="multi-worker", workers=2))
    assert str(raised.value) == (
        "cannot keep the cluster's TensorFlow servers off the network: the system refuses a "
        "network namespace (unshare: Operation not permitted); ftgui starts a cluster of this "
        "machine only in a loopback-only network namespace (as root, or with unprivileged user "
        "namespaces allowed: sysctl kernel.unprivileged_userns_clone=1)")
    assert not (tmp_path / "run" / "config.toml").exists()
    assert supervisor.processes == []
