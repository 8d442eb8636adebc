"""Worker/chief clusters: TF_CONFIG per task, and real MultiWorkerMirroredStrategy and
ParameterServerStrategy runs on this machine, with processes killed on purpose."""

from __future__ import annotations

import json

import pytest
from conftest import BASELINE_FLAGS, alive, network_address, of_kind

from ftgui import cli
from ftgui.core.record import events
from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision import cluster


def test_single_process_strategies_run_one_chief_without_tf_config():
    for strategy in ("default", "one-device", "mirrored"):
        [task] = cluster.tasks(RunConfig(strategy=strategy))
        assert (task.role, task.index, task.is_chief, task.tf_config) == ("chief", 0, True, None)
        assert cluster.tf_config_env(task) == {}


def test_multi_worker_tasks_make_worker_zero_the_chief():
    spec = {"worker": ["localhost:1001", "localhost:1002", "localhost:1003"]}
    tasks = cluster.tasks(RunConfig(strategy="multi-worker", workers=3), spec)
    assert [(t.name, t.is_chief, t.label) for t in tasks] == [
        ("worker:0", True, "worker 0 (chief)"),
        ("worker:1", False, "worker 1"),
        ("worker:2", False, "worker 2"),
    ]
    assert json.loads(cluster.tf_config_env(tasks[2])["TF_CONFIG"]) == {
        "cluster": spec, "task": {"type": "worker", "index": 2},
    }


def test_parameter_server_tasks_are_coordinator_workers_and_ps():
    config = RunConfig(strategy="parameter-server", workers=2, ps=2)
    spec = cluster.cluster_spec(config)
    assert [len(spec[job]) for job in ("chief", "worker", "ps")] == [1, 2, 2]
    ports = [address.rsplit(":", 1)[1] for job in spec.values() for address in job]
    assert len(set(ports)) == 5  # every task on its own port
    tasks = cluster.tasks(config, spec)
    assert [(t.name, t.is_chief) for t in tasks] == [
        ("chief", True), ("worker:0", False), ("worker:1", False), ("ps:0", False),
        ("ps:1", False),
    ]
    assert tasks[0].label == "coordinator (chief)"
    assert tasks[4].tf_config["task"] == {"type": "ps", "index": 1}


def _pids(all_events):
    return [e["pid"] for e in of_kind(all_events, "process_started")]


@pytest.fixture(scope="module")
def multi_worker_run(tmp_path_factory):
    """A 2-worker MultiWorkerMirroredStrategy run of the baseline configuration, never killed."""
    run_dir = tmp_path_factory.mktemp("mw") / "run"
    flags = [*BASELINE_FLAGS, "--strategy", "multi-worker", "--workers", "2", "--quiet"]
    assert cli.main(["train", str(run_dir), *flags]) == 0
    return run_dir


@pytest.mark.tf
def test_two_workers_give_the_losses_of_two_mirrored_replicas(multi_worker_run, baseline_losses):
    losses = events.final_losses(events.read_all(multi_worker_run))
    assert sorted(losses) == sorted(baseline_losses) == list(range(1, 61))
    assert max(abs(losses[s] - baseline_losses[s]) for s in losses) <= 1e-6
    all_events = events.read_all(multi_worker_run)
    assert alive(_pids(all_events)) == []
    assert not (multi_worker_run / "scratch").exists()  # worker 1's saves were cleaned up
    # only the chief (worker 0) writes the loss; worker 1 sends heartbeats
    assert {e.get("role") for e in of_kind(all_events, "step")} == {None}
    assert of_kind(all_events, "heartbeat", role="worker", index=1)


def test_cluster_addresses_are_parsed_and_checked():
    from ftgui.core.settings.config import ConfigError, parse_cluster

    assert parse_cluster("chief=localhost:0; worker=a:1,b:2 ;ps=c:3") == {
        "chief": ["localhost:0"], "worker": ["a:1", "b:2"], "ps": ["c:3"],
    }
    config = RunConfig(strategy="multi-worker", cluster="worker=localhost:0,gpu-box:2222")
    assert config.with_cluster_counts().workers == 2
    with pytest.raises(ConfigError, match="^cluster: 3 worker address"):
        RunConfig(strategy="multi-worker", workers=2, cluster="worker=a:1,b:2,c:3").validate()
    with pytest.raises(ConfigError, match="^cluster: 'gpu-box' is not host:port"):
        parse_cluster("worker=gpu-box")
    remote_any_port = RunConfig(strategy="multi-worker", cluster="worker=localhost:0,far:0")
    with pytest.raises(ConfigError, match="^cluster: far:0 needs a port"):
        cluster.cluster_spec(remote_any_port)


def as_this_python(command: str) -> tuple[list[str], dict]:
    """`TF_CONFIG=… ftgui worker ARGS` as (`[sys.executable, "-m", "ftgui", "worker", ARGS]`,
    environment): the same command, started without looking `ftgui` up on PATH."""
    import os
    import re
    import shlex
    import sys

    words = shlex.split(command)
    env = dict(os.environ)
    while re.match(r"[A-Z_]+=", words[0]):  # the shell's VAR=value before the program
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words[0] == "ftgui"
    return [sys.executable, "-m", "ftgui", *words[1:]], {"env": env}


def test_a_printed_remote_command_runs_with_this_python_not_a_path_lookup():
    import sys

    argv, options = as_this_python("TF_CONFIG='{\"a\": 1}' ftgui worker '/r un' --role worker")
    assert argv == [sys.executable, "-m", "ftgui", "worker", "/r un", "--role", "worker"]
    assert options["env"]["TF_CONFIG"] == '{"a": 1}'


@pytest.mark.tf
def test_a_task_on_another_machine_joins_with_the_command_ftgui_prints(tmp_path, baseline_losses):
    import shlex
    import subprocess
    import time

    from ftgui.core.supervision.supervisor import Supervisor

    # this machine's network address, not a loopback one (127.0.0.0/8 and [::1] are this
    # machine to ftgui): the task there stands for another machine's
    address = network_address()
    far = f"{address}:{cluster.free_port(address)}"
    config = RunConfig(strategy="multi-worker", steps=60, checkpoint_every=10,
                       cluster=f"worker=localhost:0,{far}").with_cluster_counts()
    supervisor = Supervisor(tmp_path / "run")
    supervisor.start(config)
    remote = None
    try:
        seen = []
        while not of_kind(seen, "remote_task"):
            seen += supervisor.poll()
        [task] = of_kind(seen, "remote_task")
        assert (task["role"], task["index"], task["address"]) == ("worker", 1, far)
        # said once, before the tasks start: the local worker's port is open to the network
        [exposed] = of_kind(seen, "cluster_exposed")
        assert seen.index(exposed) < seen.index(of_kind(seen, "process_started")[0])
        assert exposed["line"].startswith("the cluster's ports are open to the network (")
        assert far in exposed["addresses"]
        assert task["command"].startswith("PYTHONHASHSEED=0 TF_CONFIG=")
        assert [p.name for p in supervisor.processes] == ["worker:0"]  # only the local task
        # play the other machine: run the printed command, its `ftgui` as this Python's
        # (a virtual environment that is not activated has no `ftgui` on PATH)
        argv, options = as_this_python(task["command"])
        remote = subprocess.Popen(argv, **options, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        while supervisor.live:
            seen += supervisor.poll()
            time.sleep(0.05)
        seen += supervisor.poll()
        assert supervisor.state == "finished"
        assert remote.wait(timeout=60) == 0
        losses = events.final_losses(events.read_all(tmp_path / "run"))
        assert max(abs(losses[s] - baseline_losses[s]) for s in range(1, 61)) <= 1e-6
        assert of_kind(seen, "heartbeat", role="worker", index=1)  # its events reached the run
    finally:
        supervisor.shutdown()
        if remote is not None and remote.poll() is None:
            remote.kill()
    assert shlex.split(task["command"])[2:4] == ["ftgui", "worker"]
