"""The standby cluster of a multi-worker run is used whole or not at all (no TensorFlow: its
members here are small scripts that record the order they are given)."""

from __future__ import annotations

import json
import stat
import time

import pytest

from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision.standby import StandbyPool, config_fingerprint, wants_cluster

CONFIG = RunConfig(strategy="multi-worker", workers=2, warm_standby=True).to_dict()


@pytest.fixture
def pool(tmp_path):
    """A pool whose 'python' is a script: it writes its TF_CONFIG task index and the order it
    reads to ORDERS/<pid>.json, then exits."""
    orders = tmp_path / "orders"
    orders.mkdir()
    fake = tmp_path / "fake-python"
    fake.write_text(f"""#!/usr/bin/env python3
import json, os, sys
order = sys.stdin.readline()
index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
path = "{orders}/%d.json" % os.getpid()
with open(path + ".tmp", "w") as out:
    json.dump({{"index": index, "member": os.environ.get("FTGUI_STANDBY_MEMBER"),
               "order": order}}, out)
os.replace(path + ".tmp", path)  # the test reads the file as soon as it exists
""")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    standbys = StandbyPool(tmp_path / "run", tmp_path / "logs", python=str(fake), fork=False)
    yield standbys
    standbys.dismiss()


def recorded(pool, pid: int) -> dict:
    path = pool.log_dir.parent / "orders" / f"{pid}.json"
    deadline = time.monotonic() + 30
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return json.loads(path.read_text())


def ready(pool, fingerprints) -> None:
    for member, fingerprint in zip(pool.members, fingerprints, strict=True):
        pool.mark_ready(member.popen.pid, fingerprint)


ORDERS = [(["RUN", "--role", "worker", "--index", str(i)], {"TF_CONFIG": "run's"})
          for i in (0, 1)]


def test_a_ready_cluster_gets_each_order_at_its_own_task_index(pool):
    pool.keep_cluster(2)
    addresses = [m.address for m in pool.members]
    assert len(set(addresses)) == 2 and all(a.startswith("localhost:") for a in addresses)
    ready(pool, [config_fingerprint(CONFIG)] * 2)
    assert pool.cluster_ready(CONFIG)
    members = pool.hand_cluster_orders(ORDERS, CONFIG)
    assert [m.index for m in members] == [0, 1] and pool.members == []
    for member, (args, env) in zip(members, ORDERS, strict=True):
        got = recorded(pool, member.popen.pid)
        assert (got["index"], got["member"]) == (member.index, "1")
        assert json.loads(got["order"]) == {"argv": args, "env": env}


@pytest.mark.parametrize("fingerprints", [
    [None, None],                                            # still building
    ["x", None],                                             # one still building
    [config_fingerprint(CONFIG), config_fingerprint({})],    # one built for another config
])
def test_a_cluster_not_ready_for_the_run_is_ended_and_the_restart_is_cold(pool, fingerprints):
    pool.keep_cluster(2)
    ready(pool, fingerprints)
    processes = [m.popen for m in pool.members]
    assert pool.hand_cluster_orders(ORDERS, CONFIG) is None
    assert pool.members == [] and all(p.poll() is not None for p in processes)


def test_a_cluster_that_lost_a_member_is_replaced_whole(pool):
    pool.keep_cluster(2)
    first = [m.popen for m in pool.members]
    first[1].kill()
    first[1].wait()
    pool.keep_cluster(2)
    assert all(p.poll() is not None for p in first)
    assert [m.index for m in pool.members] == [0, 1]
    assert not {m.popen.pid for m in pool.members} & {p.pid for p in first}
    assert [m.log_path.name for m in pool.members] == [
        "standby-2-worker-0.log", "standby-2-worker-1.log"]


def test_only_a_local_multi_worker_custom_loop_run_keeps_a_standby_cluster():
    assert wants_cluster(RunConfig(strategy="multi-worker", workers=2))
    assert not wants_cluster(RunConfig(strategy="mirrored"))
    assert not wants_cluster(RunConfig(strategy="parameter-server"))
    assert not wants_cluster(RunConfig(strategy="multi-worker", loop="fit"))


def test_numbers_that_compare_equal_give_one_fingerprint():
    assert config_fingerprint({"backoff": 0, "n": [1]}) == config_fingerprint(
        {"backoff": 0.0, "n": [1.0]})
    assert config_fingerprint({"flag": True}) != config_fingerprint({"flag": 1})
