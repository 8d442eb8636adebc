"""No silent wait over 2 s on the console (issue 28): while a run's processes import TensorFlow
and trace their first step, `ftgui train` says so, and keeps saying so every 2 s; a blocking
helper (the user-code check, `ftgui devices`) is announced at once and then "still …" lines
follow until it returns. Driven by recorded events and a fake clock (no TensorFlow)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from ftgui import cli, waiting
from ftgui.console import Progress
from ftgui.waiting import RunWaits, notice

ROOT = Path(__file__).resolve().parents[1]


def started(time: float, pid: int, label: str = "chief", standby: bool = False, **fields):
    return {"event": "process_started", "time": time, "attempt": 0, "pid": pid,
            "label": label, "chief": label == "chief", "standby": standby, **fields}


def event(kind: str, time: float, pid: int, **fields) -> dict:
    return {"event": kind, "time": time, "attempt": 0, "pid": pid, **fields}


def lines_at(waits: RunWaits, times) -> dict[float, list[str]]:
    return {now: waits.tick(now) for now in times}


def test_a_cold_start_says_what_it_imports_and_keeps_saying_it_every_2_s():
    waits = RunWaits()
    waits.feed(started(100.0, pid=7))
    assert lines_at(waits, [100.05, 102.0, 102.1, 104.0, 104.2]) == {
        100.05: ["chief: importing TensorFlow and building the model"],
        102.0: [],
        # never 2 s unsaid (issue 28)
        102.1: ["still importing TensorFlow and building the model: chief (2 s)"],
        104.0: [],
        104.2: ["still importing TensorFlow and building the model: chief (4 s)"],
    }
    waits.feed(event("training_started", 106.5, pid=7, role="chief"))
    assert lines_at(waits, [106.6, 108.4, 108.5, 110.4, 110.5]) == {
        106.6: [], 108.4: [],
        108.5: ["still tracing the first step (2 s)"],
        110.4: [],
        110.5: ["still tracing the first step (4 s)"],
    }
    waits.feed(event("step", 112.0, pid=7, step=1, loss=2.3))
    assert lines_at(waits, [115.0, 130.0]) == {115.0: [], 130.0: []}


def test_a_start_from_the_warm_standby_imports_nothing_and_says_nothing_when_quick():
    waits = RunWaits()
    waits.feed(started(50.0, pid=9, standby=True))
    waits.feed(event("training_started", 50.1, pid=9, role="chief"))
    waits.feed(event("step", 50.3, pid=9, step=31, loss=0.2))
    assert lines_at(waits, [50.35, 55.0]) == {50.35: [], 55.0: []}


def test_a_cluster_names_every_process_still_importing():
    waits = RunWaits()
    waits.feed(started(10.0, pid=1))
    waits.feed(started(10.0, pid=2, label="worker 1", role="worker"))
    waits.feed(started(10.1, pid=3, label="ps 0", role="ps"))
    assert waits.tick(10.2) == ["chief: importing TensorFlow and building the model",
                                "worker 1: importing TensorFlow and building the model",
                                "ps 0: importing TensorFlow and building the model"]
    assert waits.tick(13.3) == [
        "still importing TensorFlow and building the model: chief, worker 1, ps 0 (3 s)"]
    waits.feed(event("training_started", 14.0, pid=1, role="chief"))
    waits.feed(event("process_exited", 14.0, pid=3, role="ps", signal=9))
    assert waits.tick(14.1) == ["still importing TensorFlow and building the model: worker 1 (4 s)"]
    waits.feed(event("training_started", 15.0, pid=2, role="worker"))
    assert waits.tick(15.1) == []  # the chief began tracing at 14.0: 1.1 s ago
    assert waits.tick(16.0) == ["still tracing the first step (2 s)"]


def test_a_restart_after_a_kill_is_said_again():
    waits = RunWaits()
    waits.feed(started(0.0, pid=1))
    waits.feed(event("training_started", 5.0, pid=1, role="chief"))
    waits.feed(event("step", 5.5, pid=1, step=1, loss=1.0))
    assert waits.tick(5.6) == []  # its import ended before the first tick: nothing to say
    waits.feed(event("process_exited", 9.0, pid=1, role="chief", signal=9))
    assert waits.tick(20.0) == []  # the backoff: the supervisor says "restarting in …"
    waits.feed(started(21.0, pid=2, restore="checkpoints/ckpt-30"))
    assert waits.tick(21.05) == ["chief: importing TensorFlow and building the model"]
    assert waits.tick(24.1) == ["still importing TensorFlow and building the model: chief (3 s)"]
    waits.feed({"event": "resumed", "time": 26.0, "attempt": 1, "from_step": 30})
    assert waits.tick(27.1) == []  # restored: the import is over; training_started comes next


def test_a_chief_killed_while_tracing_leaves_no_wait_behind():
    waits = RunWaits()
    waits.feed(started(0.0, pid=1))
    waits.feed(event("training_started", 5.0, pid=1, role="chief"))
    assert waits.tick(5.1) == []
    waits.feed(event("process_exited", 5.5, pid=1, role="chief", signal=9))
    assert waits.tick(30.0) == []


def test_the_progress_prints_the_wait_lines_unless_quiet(capsys):
    loud, quiet = Progress(), Progress(quiet=True)
    for progress in (loud, quiet):
        progress.show(started(100.0, pid=7))
        progress.tick(100.1)
        progress.tick(103.2)
    assert capsys.readouterr().out.splitlines() == [
        "chief started (pid 7)",
        "chief: importing TensorFlow and building the model",
        "still importing TensorFlow and building the model: chief (3 s)",
    ]


class FakeClock:
    """A monotonic clock one second further on each reading."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_a_blocking_wait_is_announced_at_once_then_still_lines_follow_until_it_ends():
    said: list[str] = []
    still_twice = threading.Event()

    def say(line: str) -> None:
        said.append(line)
        if sum(line.startswith("still ") for line in said) == 2:
            still_twice.set()

    with notice("checking your model", "a helper imports TensorFlow", say=say,
                clock=FakeClock()):
        assert said == ["checking your model: a helper imports TensorFlow"]
        assert still_twice.wait(timeout=60)
    count = len(said)
    assert said[1:3] == ["still checking your model (2 s)", "still checking your model (4 s)"]
    assert all(line.startswith("still checking your model (") for line in said[1:])
    threading.Event().wait(0.3)
    assert len(said) == count  # nothing after the block


def test_ftgui_devices_says_it_waits_on_stderr_and_keeps_stdout_json(monkeypatch, capsys):
    from ftgui.core.settings import devices

    monkeypatch.setattr(waiting, "FIRST_STILL_S", 0.0)
    monkeypatch.setattr(waiting, "STILL_EVERY_S", 0.0)
    seen: list[str] = []

    def slow_listing():  # returns once a "still" line was printed
        for _ in range(600):
            seen.append(capsys.readouterr().err)
            if "still listing devices" in "".join(seen):
                break
            threading.Event().wait(0.05)
        return [{"name": "/physical_device:CPU:0", "device_type": "CPU"}]

    monkeypatch.setattr(devices, "list_devices", slow_listing)
    assert cli.main(["devices", "--json"]) == 0
    captured = capsys.readouterr()
    err = ("".join(seen) + captured.err).splitlines()
    assert err[0] == "listing devices: a helper process imports TensorFlow"
    assert err[1].startswith("still listing devices (") and err[1].endswith(" s)")
    assert json.loads(captured.out) == [{"name": "/physical_device:CPU:0",
                                         "device_type": "CPU"}]


def test_ftgui_train_says_it_checks_a_users_model_while_the_check_runs(
        monkeypatch, capsys, tmp_path):
    from ftgui.core.settings.config import ConfigError
    from ftgui.core.supervision.supervisor import Supervisor

    monkeypatch.setattr(waiting, "FIRST_STILL_S", 0.0)
    monkeypatch.setattr(waiting, "STILL_EVERY_S", 0.0)
    seen: list[str] = []

    def slow_check(self, config, resume=False, from_step=None):  # the helper process' wait
        for _ in range(600):
            seen.append(capsys.readouterr().out)
            if "still checking your model and dataset" in "".join(seen):
                break
            threading.Event().wait(0.05)
        raise ConfigError("model: refused by the fake check")

    monkeypatch.setattr(Supervisor, "start", slow_check)
    model = f"{ROOT / 'resources' / 'examples' / 'digits_cnn.py'}:build"
    assert cli.main(["train", str(tmp_path / "run"), "--model", model]) == 2
    captured = capsys.readouterr()
    out = ("".join(seen) + captured.out).splitlines()
    assert out[0] == ("checking your model and dataset: a helper process imports TensorFlow, "
                      "then tries a step, a save and a restore")
    assert out[1].startswith("still checking your model and dataset (")
    assert captured.err == "ftgui: model: refused by the fake check\n"


def test_a_freeze_is_said_while_the_watchdog_waits():
    """A chaos run went 4.1 s silent between "freeze of chief at step 192" and "chief hung"."""
    waits = RunWaits()
    waits.feed(started(0.0, pid=1, standby=True))
    waits.feed(event("training_started", 0.1, pid=1, role="chief"))
    waits.feed(event("step", 0.2, pid=1, step=1, loss=1.0))
    waits.feed({"event": "fault_injected", "time": 10.0, "attempt": 0, "kind": "hang",
                "target": "chief", "step": 192})
    assert lines_at(waits, [11.9, 12.1, 14.2]) == {
        11.9: [], 12.1: ["still waiting for the watchdog: chief frozen (2 s)"],
        14.2: ["still waiting for the watchdog: chief frozen (4 s)"]}
    waits.feed(event("hang_detected", 14.5, pid=1, role="chief", seconds=3.0))
    assert waits.tick(20.0) == []


def test_a_process_forked_from_the_fork_server_is_said_to_build_not_to_import():
    waits = RunWaits()
    waits.feed(started(0.0, pid=1, forked=True))
    assert waits.tick(0.05) == ["chief: building the model (forked: TensorFlow already imported)"]
    assert waits.tick(2.1) == [
        "still building the model (forked: TensorFlow already imported): chief (2 s)"]
    # one of them importing: the run waits for an import
    waits.feed(started(2.5, pid=2, label="worker 1", forked=False))
    assert waits.tick(2.6) == ["worker 1: importing TensorFlow and building the model"]
    assert waits.tick(4.7) == ["still importing TensorFlow and building the model: chief, "
                               "worker 1 (4 s)"]


def test_a_restart_that_waits_and_a_hold_for_the_standby_are_said_every_2_s():
    """A breaker's run: "restart waits up to 10 s for the fork server's import of TensorFlow",
    then 10 s without a line; a chief held until the warm standby was ready, 60 s silent."""
    waits = RunWaits()
    waits.feed(started(0.0, pid=1, standby=True))
    waits.feed(event("training_started", 0.1, pid=1, role="chief"))
    waits.feed(event("step", 0.2, pid=1, step=1, loss=1.0))
    waits.feed(event("held", 0.3, pid=None, step=2, role="chief", index=0, why="standby"))
    assert lines_at(waits, [2.0, 2.4]) == {
        2.0: [], 2.4: ["still held for the warm standby to be ready (2 s)"]}
    waits.feed(event("hold_released", 3.0, pid=None, step=2, by="standby", seconds=2.7))
    waits.feed(event("process_exited", 3.5, pid=1, role="chief"))
    waits.feed({"event": "recovery_scheduled", "time": 3.5, "attempt": 0, "delay": 1.0})
    waits.feed({"event": "recovery_waiting", "time": 4.5, "attempt": 0, "seconds": 10.0,
                "waits_for": "the fork server's import of TensorFlow"})
    assert lines_at(waits, [6.0, 6.6, 8.7]) == {
        6.0: [],
        6.6: ["still waiting to restart: the fork server's import of TensorFlow (2 s)"],
        8.7: ["still waiting to restart: the fork server's import of TensorFlow (4 s)"]}
    waits.feed(started(9.0, pid=2, forked=True))
    assert waits.tick(9.1) == ["chief: building the model (forked: TensorFlow already imported)"]
    waits.feed({"event": "recovery_cancelled", "time": 9.5, "attempt": 0})
    waits.feed(event("process_exited", 9.6, pid=2, role="chief"))
    assert waits.tick(30.0) == []
