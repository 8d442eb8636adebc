"""The spare trainer: a standby built from the settings on screen before any run exists, kept
for exactly those settings, adopted by the run whose Start asks for them (its chief), and
ended when they change. The quick tests' spare is a script that behaves like a prepared
standby (it writes `standby_ready` for its folder's configuration and records its order); the
`tf` one is the real trainer, trained to the bit as a cold start."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import of_kind, poll_until_done, until_spare_ready

from ftgui.core.record import events
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision.spare import (
    MAX_FAILURES,
    SpareTrainer,
    spare_reason,
    spares_wanted,
)
from ftgui.core.supervision.standby import StandbyPool, config_fingerprint
from ftgui.core.supervision.supervisor import Supervisor

CONFIG = RunConfig(warm_standby=True, steps=60, checkpoint_every=10)

@pytest.mark.parametrize("changes, reason", [
    ({}, ""),
    ({"strategy": "default"}, ""),
    ({"warm_standby": False}, "warm standby is off"),
    ({"max_standbys": 0}, "warm standby is off"),
    ({"loop": "fit"}, "a mirrored run with the fit loop is not built before Start"),
    ({"strategy": "multi-worker"},
     "a multi-worker run with the custom loop is not built before Start"),
    ({"launcher": "slurm"}, "the slurm launcher starts the run's tasks"),
    ({"model": "my_model.py:build"}, "your own model or data is read at Start"),
    ({"dataset": "/data/mine.npz"}, "your own model or data is read at Start"),
    ({"dataset": "mine.py:load"}, "your own model or data is read at Start"),
])
def test_which_runs_get_a_spare(changes, reason):
    assert spare_reason(CONFIG.replace(**changes)) == reason


def _keep_until_ready(spare, config, count: int) -> None:
    """Call `keep` as the window does, until `count` spares are ready."""
    while spare.ready() < count:
        spare.keep(config)
        for one in spare.spares:
            assert one.popen.poll() is None, (one.folder / "spare.log").read_text()
        time.sleep(0.02)


@pytest.mark.parametrize("changes, count", [
    ({}, 2), ({"standbys_per_task": 2}, 3), ({"standbys_per_task": 2, "max_standbys": 1}, 2),
    ({"warm_standby": False}, 0), ({"loop": "fit"}, 0),
])
def test_how_many_spares_a_run_gets_one_for_its_chief_and_one_per_standby(changes, count):
    assert spares_wanted(CONFIG.replace(**changes)) == count


def test_spares_are_built_for_the_settings_one_after_the_other(spare):
    spare.keep(CONFIG)
    [first] = spare.spares
    saved = configmod.load(first.folder)
    assert config_fingerprint(saved.to_dict()) == config_fingerprint(CONFIG.to_dict())
    _keep_until_ready(spare, CONFIG, 2)
    assert spare.pids[0] == first.popen.pid and len(spare.pids) == 2
    assert sorted(p.name for p in first.folder.iterdir()) == \
        ["config.toml", "events.jsonl", "spare.log"]
    spare.keep(CONFIG)  # as many as wanted: none more
    assert len(spare.pids) == 2


def test_the_second_spare_waits_for_the_first(spare, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_SPARE_HOLD", str(tmp_path / "go"))
    for _ in range(5):
        spare.keep(CONFIG)
        time.sleep(0.05)
    assert len(spare.pids) == 1 and spare.ready() == 0
    (tmp_path / "go").touch()
    _keep_until_ready(spare, CONFIG, 2)


def test_changed_settings_end_the_spares_and_build_others(spare):
    _keep_until_ready(spare, CONFIG, 2)
    old = [one.popen for one in spare.spares]
    folders = [one.folder for one in spare.spares]
    spare.keep(CONFIG.replace(seed=CONFIG.seed + 1))
    assert all(p.poll() is not None for p in old) and not any(f.exists() for f in folders)
    until_spare_ready(spare)
    assert configmod.load(spare.spares[0].folder).seed == CONFIG.seed + 1


def test_settings_the_state_is_not_built_from_keep_the_spares_and_take_them(spare):
    _keep_until_ready(spare, CONFIG, 2)
    pids = spare.pids
    other = CONFIG.replace(auto_recover=True, steps=500, pace=50, max_restarts=9)
    spare.keep(other)
    assert spare.pids == pids and spare.status(other) == "spare trainers ready (2 of 2)"
    handles = spare.take(other)
    assert [h.popen.pid for h in handles] == pids
    for handle in handles:
        handle.popen.stdin.close()
        handle.popen.wait(timeout=30)


def test_turning_warm_standby_off_ends_the_spares(spare):
    _keep_until_ready(spare, CONFIG, 2)
    popens = [one.popen for one in spare.spares]
    off = CONFIG.replace(warm_standby=False)
    spare.keep(off)
    assert spare.spares == [] and all(p.poll() is not None for p in popens)
    assert spare.take(off) == []
    assert spare.status(off) == "no spare trainer: warm standby is off"


def test_spares_are_taken_only_for_their_own_settings_and_only_once_ready(
    spare, tmp_path, monkeypatch
):
    monkeypatch.setenv("FAKE_SPARE_HOLD", str(tmp_path / "go"))
    spare.keep(CONFIG)
    time.sleep(0.5)
    assert spare.take(CONFIG.replace(seed=CONFIG.seed + 1)) == [] and spare.spares
    [waiting] = [one.popen for one in spare.spares]
    # not ready yet: not taken, and ended (it would compete with the cold start)
    assert spare.take(CONFIG) == [] and spare.spares == [] and waiting.poll() is not None
    spare.keep(CONFIG)
    (tmp_path / "go").touch()
    _keep_until_ready(spare, CONFIG, 2)
    assert spare.take(CONFIG.replace(seed=CONFIG.seed + 1)) == []
    assert spare.ready() == 2
    folders, pids = [one.folder for one in spare.spares], spare.pids
    handles = spare.take(CONFIG)
    assert [h.popen.pid for h in handles] == pids
    assert all(h.popen.poll() is None for h in handles)
    assert {h.prepared_for for h in handles} == {config_fingerprint(CONFIG.to_dict())}
    assert all(h.log.startswith(b"fake spare: built") for h in handles)
    assert spare.spares == [] and not any(f.exists() for f in folders)  # the run's now
    assert spare.take(CONFIG) == []
    for handle in handles:
        handle.popen.stdin.close()
        handle.popen.wait(timeout=30)


def test_a_spare_not_ready_at_start_is_ended(spare, tmp_path, monkeypatch):
    spare.keep(CONFIG)
    until_spare_ready(spare)
    monkeypatch.setenv("FAKE_SPARE_HOLD", str(tmp_path / "go"))  # the second one waits
    spare.keep(CONFIG)
    [ready, waiting] = [one.popen for one in spare.spares]
    [handle] = spare.take(CONFIG)
    assert handle.popen is ready and waiting.poll() is not None
    handle.popen.stdin.close()
    handle.popen.wait(timeout=30)


def test_an_adopted_spare_gets_the_next_order_and_writes_on_in_the_runs_log(spare, tmp_path):
    spare.keep(CONFIG)
    until_spare_ready(spare)
    [handle] = spare.take(CONFIG)
    pool = StandbyPool(tmp_path / "run", tmp_path / "run" / "logs")
    log_path = pool.adopt(handle)
    assert log_path == tmp_path / "run" / "logs" / "standby-1.log"
    assert pool.readiness(handle.popen.pid)[0] is True

    popen, given = pool.hand_order(["RUN", "--role", "chief"], {"A": "1"})
    assert (popen, given) == (handle.popen, log_path)
    assert popen.wait(timeout=30) == 0
    order = json.loads((tmp_path / "orders" / f"{popen.pid}.json").read_text())
    assert order == {"argv": ["RUN", "--role", "chief"], "env": {"A": "1"},
                     "log": str(log_path)}
    assert log_path.read_text() == "fake spare: built\nfake spare: ordered\n"


def _ordered(pool, args):
    """Order the pool's next standby with `args`; (its process, the order it read)."""
    popen, _ = pool.hand_order(args, {})
    assert popen.wait(timeout=30) == 0
    return popen, json.loads((Path(os.environ["FAKE_ORDERS"]) / f"{popen.pid}.json").read_text())


def test_a_finished_runs_standby_goes_back_to_the_spares_and_starts_the_next_run(
        spare, tmp_path):
    _keep_until_ready(spare, CONFIG, 2)
    first = StandbyPool(tmp_path / "run1", tmp_path / "run1" / "logs")
    for handle in spare.take(CONFIG):
        first.adopt(handle)
    chief, _ = _ordered(first, ["RUN1"])
    [waiting] = [popen for popen, _ in first.standbys]

    [handed] = first.release(config_fingerprint(CONFIG.to_dict()))
    assert (handed.popen, handed.log) == (waiting, b"fake spare: built\n")
    assert first.standbys == [] and first.hand_order(["RUN1"], {}) == (None, None)
    assert spare.take_in([handed], CONFIG.replace(checkpoint_every=100)) == 1  # not built
    assert spare.ready() == 1 and spare.pids == [waiting.pid]
    assert spare.status(CONFIG) == "building spare trainers (1 of 2 ready)"

    second = StandbyPool(tmp_path / "run2", tmp_path / "run2" / "logs")
    [again] = spare.take(CONFIG)
    log_path = second.adopt(again)
    popen, order = _ordered(second, ["RUN2"])
    assert popen is waiting and popen is not chief
    assert (order["argv"], order["log"]) == (["RUN2"], str(log_path))
    assert log_path.read_text() == "fake spare: built\nfake spare: ordered\n"


def test_a_pool_standby_of_its_own_is_released_with_its_log_once_ready(spare, tmp_path):
    pool = StandbyPool(tmp_path / "run", tmp_path / "logs", python=spare.python, fork=False)
    configmod.save(tmp_path / "run", CONFIG)
    fingerprint = config_fingerprint(CONFIG.to_dict())
    pool.keep(1)
    [(popen, log_path)] = pool.standbys
    assert pool.release(fingerprint) == []  # not ready yet: it stays
    reader = events.EventReader(tmp_path / "run")
    while not of_kind(reader.read_new(), "standby_ready"):
        assert popen.poll() is None, log_path.read_text()
        time.sleep(0.02)
    pool.mark_ready(popen.pid, "other settings")
    assert pool.release(fingerprint) == [] and len(pool.standbys) == 1
    pool.mark_ready(popen.pid, fingerprint)
    [handle] = pool.release(fingerprint)
    assert (handle.popen, handle.log, handle.prepared_for) == (
        popen, b"fake spare: built\n", fingerprint)
    assert pool.standbys == []
    assert spare.take_in([handle], CONFIG) == 1
    [again] = spare.take(CONFIG)
    second = StandbyPool(tmp_path / "run2", tmp_path / "run2" / "logs")
    second.adopt(again)
    _, order = _ordered(second, ["RUN2"])
    assert order["log"] == str(tmp_path / "run2" / "logs" / "standby-1.log")


def _three_ready(spare) -> list:
    """Three ready spares of CONFIG taken from `spare`, as a finished run would hand them."""
    _keep_until_ready(spare, CONFIG, 2)
    handles = spare.take(CONFIG)
    _keep_until_ready(spare, CONFIG, 1)
    return handles + spare.take(CONFIG)


@pytest.mark.parametrize("settings, kept", [
    (CONFIG, 2),  # spares_wanted: the chief's and one standby's
    (CONFIG.replace(standbys_per_task=2, max_standbys=2), 3),
    (CONFIG.replace(warm_standby=False), 0),
    (CONFIG.replace(loop="fit"), 0),
])
def test_at_most_the_spares_wanted_are_taken_in_the_newest_beyond_are_ended(
        spare, settings, kept):
    handles = _three_ready(spare)
    for handle in handles:
        handle.prepared_for = config_fingerprint(settings.to_dict())
    assert spare.take_in(handles, settings) == kept
    assert spare.pids == [h.popen.pid for h in handles[:kept]]
    assert [h.popen.wait(timeout=30) is not None for h in handles[kept:]] == \
        [True] * (3 - kept)


def test_standbys_built_for_other_settings_or_dead_are_not_taken_in(spare, tmp_path):
    ready = _three_ready(spare)
    ready[0].prepared_for = "other settings"
    ready[1].popen.kill()
    ready[1].popen.wait()
    assert spare.take_in(ready, CONFIG) == 1
    assert spare.pids == [ready[2].popen.pid] and ready[0].popen.wait(timeout=30) is not None
    spare.keep(CONFIG)  # another is built for the chief's standby
    assert len(spare.spares) == 2 and spare.pids[0] == ready[2].popen.pid


def test_taken_in_for_new_settings_the_old_spares_end(spare):
    _keep_until_ready(spare, CONFIG, 1)
    handles = spare.take(CONFIG)
    spare.keep(CONFIG)  # one building for CONFIG
    [building] = [one.popen for one in spare.spares]
    other = CONFIG.replace(seed=CONFIG.seed + 1)
    handles[0].prepared_for = config_fingerprint(other.to_dict())
    assert spare.take_in(handles, other) == 1
    assert building.wait(timeout=30) is not None
    assert spare.fingerprint == config_fingerprint(other.to_dict()) and spare.ready() == 1


def test_a_pool_standby_of_its_own_gets_no_log_in_its_order(spare, tmp_path):
    pool = StandbyPool(tmp_path / "run", tmp_path / "logs", python=spare.python, fork=False)
    configmod.save(tmp_path / "run", CONFIG)
    pool.keep(1)
    popen, _ = pool.hand_order(["RUN"], {})
    assert popen.wait(timeout=30) == 0
    assert "log" not in json.loads((tmp_path / "orders" / f"{popen.pid}.json").read_text())


def test_settings_whose_spares_keep_dying_get_no_more(spare, monkeypatch):
    monkeypatch.setenv("FAKE_SPARE_DIES", "1")
    spare.keep(CONFIG)
    for _ in range(MAX_FAILURES):
        spare.spares[0].popen.wait(timeout=30)
        spare.keep(CONFIG)  # notices it died, starts another while under the cap
    assert spare.spares == []
    spare.keep(CONFIG)
    assert spare.spares == []
    assert spare.status(CONFIG) == ("spare trainers: 0 of 2 ready; 2 died or could not build "
                                    "these settings, no more are started until they change")
    spare.keep(CONFIG.replace(seed=CONFIG.seed + 1))  # other settings get their chance
    assert len(spare.spares) == 1


def test_a_ready_spare_stays_when_its_sibling_keeps_dying(spare, monkeypatch):
    spare.keep(CONFIG)
    until_spare_ready(spare)
    [ready] = [one.popen for one in spare.spares]
    monkeypatch.setenv("FAKE_SPARE_DIES", "1")
    for _ in range(MAX_FAILURES + 1):
        spare.keep(CONFIG)
        if len(spare.spares) == 2:
            spare.spares[1].popen.wait(timeout=30)
    spare.keep(CONFIG)
    assert [one.popen for one in spare.spares] == [ready] and ready.poll() is None
    assert spare.status(CONFIG).startswith("spare trainers: 1 of 2 ready; 2 died")
    [handle] = spare.take(CONFIG)
    assert handle.popen is ready
    handle.popen.stdin.close()
    handle.popen.wait(timeout=30)


def test_the_status_says_what_the_spares_do(spare, tmp_path, monkeypatch):
    assert spare.status(None) == "no spare trainer: the settings shown are not valid"
    assert spare.status(CONFIG.replace(loop="fit")) == (
        "no spare trainer: a mirrored run with the fit loop is not built before Start")
    assert spare.status(CONFIG) == "building spare trainers (0 of 2 ready)"
    monkeypatch.setenv("FAKE_SPARE_HOLD", str(tmp_path / "go"))
    spare.keep(CONFIG)
    assert spare.status(CONFIG) == "building spare trainers (0 of 2 ready)"
    (tmp_path / "go").touch()
    _keep_until_ready(spare, CONFIG, 2)
    assert spare.status(CONFIG) == "spare trainers ready (2 of 2)"


def test_dismiss_ends_the_spares_and_deletes_their_folders(spare):
    _keep_until_ready(spare, CONFIG, 2)
    popens, folders = [one.popen for one in spare.spares], [one.folder for one in spare.spares]
    spare.dismiss()
    assert all(p.poll() is not None for p in popens) and not any(f.exists() for f in folders)
    assert spare.spares == [] and spare.fingerprint is None


def test_a_dead_spare_ahead_of_a_ready_one_does_not_hide_it_from_the_run(spare):
    _keep_until_ready(spare, CONFIG, 2)
    [first, second] = [one.popen for one in spare.spares]
    first.kill()
    first.wait()
    [handle] = spare.take(CONFIG)
    assert handle.popen is second and spare.spares == []
    handle.popen.stdin.close()
    handle.popen.wait(timeout=30)


def test_a_spare_that_could_not_build_the_state_is_ended_and_counted(spare, monkeypatch):
    monkeypatch.setenv("FAKE_SPARE_UNPREPARED", "1")
    spare.keep(CONFIG)
    [first] = [one.popen for one in spare.spares]
    while not spare.spares[0].failed:
        spare.ready()
        time.sleep(0.02)
    assert spare.take(CONFIG) == [] and first.poll() is not None  # ended, not adopted
    for _ in range(MAX_FAILURES):
        spare.keep(CONFIG)
        while spare.spares and not spare.spares[0].failed:
            spare.ready()
            time.sleep(0.02)
    spare.keep(CONFIG)
    assert spare.spares == []


def test_folders_of_windows_that_are_gone_are_deleted_when_a_trainer_is_made(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    root = tmp_path / "spares"
    for name in (f"{gone.pid}-1", f"{os.getpid()}-7", "notes"):
        (root / name).mkdir(parents=True)
    SpareTrainer(root)
    assert sorted(p.name for p in root.iterdir()) == [f"{os.getpid()}-7", "notes"]


def test_a_cpu_run_s_spare_sees_no_gpu_and_the_trainers_hash_seed(spare, tmp_path):
    spare.keep(CONFIG)
    until_spare_ready(spare)
    pid = spare.pids[0]
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert b"CUDA_VISIBLE_DEVICES=-1" in environ
    assert b"PYTHONHASHSEED=0" in environ  # set order as in every other attempt


def test_spares_adopted_for_a_start_that_fails_are_ended(spare, tmp_path, monkeypatch):
    _keep_until_ready(spare, CONFIG, 2)
    popens = [one.popen for one in spare.spares]
    supervisor = Supervisor(tmp_path / "run")
    supervisor.spare = spare

    def fail(*_args, **_kwargs):
        raise OSError("no more processes")

    monkeypatch.setattr(supervisor, "_launch", fail)
    with pytest.raises(OSError):
        supervisor.start(CONFIG)
    assert [p.wait(timeout=30) is not None for p in popens] == [True, True]
    assert supervisor.standbys == []
    supervisor.shutdown()


@pytest.mark.tf
def test_a_run_started_on_its_spare_trains_to_the_bit_as_a_cold_start(
    tmp_path, baseline_run, baseline_losses
):
    config = configmod.load(baseline_run).replace(warm_standby=True)
    spare = SpareTrainer(tmp_path / "spares")
    try:
        _keep_until_ready(spare, config, 1)  # forked once this process's fork server is ready
        [pid], [folder] = spare.pids, [one.folder for one in spare.spares]
        supervisor = Supervisor(tmp_path / "run")
        supervisor.spare = spare
        supervisor.start(config)
        seen = poll_until_done(supervisor)
        supervisor.shutdown()
    finally:
        spare.dismiss()
    [chief] = [e for e in of_kind(seen, "process_started") if e["role"] == "chief"]
    assert (chief["pid"], chief["standby"], chief["standby_warm"]) == (pid, True, True)
    log = (tmp_path / "run" / chief["log"]).read_text()
    assert "standby: ready after" in log and "standby: activated" in log
    assert "starting cold" not in log
    assert not folder.exists()
    assert events.final_losses(events.read_all(tmp_path / "run")) == baseline_losses
    shutil.rmtree(tmp_path / "spares", ignore_errors=True)
