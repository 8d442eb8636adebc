"""The window keeps a spare trainer for the settings it shows (Run → Keep a spare trainer
ready), builds another when they change, hands it to the run Start begins, and keeps none
while a run is live or once the user turns it off. The spare here is the suite's fake
(`conftest.FAKE_SPARE`: no TensorFlow); test_spare.py trains on a real one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings

from ftgui.core.supervision.standby import config_fingerprint
from ftgui.qt.window import controller as controller_module
from ftgui.qt.window.main_window import MainWindow

WAIT_MS = 30_000  # a bound for a loaded machine, not a speed requirement


@pytest.fixture
def spare_window(window, spare, monkeypatch, tmp_path):
    """The window with its spare trainer on, the spare the fake one."""
    monkeypatch.setattr(controller_module, "SpareTrainer", lambda: spare)
    window.panel.run_dir_edit.setText(str(tmp_path / "run"))
    window.panel.run_dir_edit.editingFinished.emit()
    window.set_spare(True)
    return window


def _built_for(window) -> str:
    return config_fingerprint(window.panel.config().to_dict())


def test_the_spare_is_built_for_the_settings_shown(spare_window, qtbot):
    spare = spare_window.controller.spare
    qtbot.waitUntil(lambda: spare.ready() == 2, timeout=WAIT_MS)  # the chief's, a standby's
    assert spare.fingerprint == _built_for(spare_window)
    assert spare_window.menu_actions.spare.isChecked()
    qtbot.waitUntil(lambda: "spare trainers ready (2 of 2)"
                    in spare_window.status_label.text(), timeout=WAIT_MS)


def test_changed_settings_get_a_new_spare(spare_window, qtbot):
    spare = spare_window.controller.spare
    qtbot.waitUntil(lambda: spare.ready() == 1, timeout=WAIT_MS)
    [old] = [one.popen for one in spare.spares]
    spare_window.panel.widgets["seed"].setValue(1234)
    qtbot.waitUntil(lambda: spare.fingerprint == _built_for(spare_window), timeout=WAIT_MS)
    assert old.poll() is not None
    qtbot.waitUntil(lambda: spare.ready() == 1, timeout=WAIT_MS)


def test_start_hands_the_run_to_the_spares(spare_window, qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_SPARE_LINGER", "5")  # the chief stays while it is looked at
    spare = spare_window.controller.spare
    qtbot.waitUntil(lambda: spare.ready() == 2, timeout=WAIT_MS)
    pids = spare.pids
    assert spare_window.start_run()
    [standby] = spare_window.controller.supervisor.standbys  # the other: the run's standby
    assert spare.spares == []
    orders = tmp_path / "orders"
    qtbot.waitUntil(lambda: any(orders.iterdir()), timeout=WAIT_MS)
    [order] = [json.loads(p.read_text()) for p in orders.iterdir()]
    assert {int(next(orders.iterdir()).stem), standby[0].pid} == set(pids)
    assert order["argv"][0] == str(tmp_path / "run")
    assert order["argv"][1:5] == ["--role", "chief", "--index", "0"]
    assert order["log"].startswith(str(tmp_path / "run" / "logs" / "standby-"))
    started = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").open()
               if '"process_started"' in line]
    assert (started[0]["pid"], started[0]["standby"]) == (int(next(orders.iterdir()).stem),
                                                          True)


@pytest.mark.parametrize("key", ["crash-and-recover", "checkpoint-interval", "preemption",
                                 "chaos", "bad-numerics"])
def test_a_guided_demo_at_the_window_defaults_starts_on_the_spares(
        spare_window, qtbot, tmp_path, monkeypatch, key):
    """These demos differ from the window's defaults only in what is read after the order
    (steps, pace, faults, recovery; `snapshot_every = 0`, `standby.NOT_BUILT`): their first
    run starts on the spares instead of importing TensorFlow in front of the room."""
    monkeypatch.setenv("FAKE_SPARE_LINGER", "5")
    spare = spare_window.controller.spare
    qtbot.waitUntil(lambda: spare.ready() == 2, timeout=WAIT_MS)
    menu = spare_window.demos
    menu.runs_root = tmp_path / "demos"
    [demo] = [d for d in menu.demos if d.key == key]
    assert menu.start(demo, presenter=False)
    assert spare.spares == []  # both adopted: the chief and the run's standby
    orders = tmp_path / "orders"
    qtbot.waitUntil(lambda: any(orders.iterdir()), timeout=WAIT_MS)
    [order] = [json.loads(p.read_text()) for p in orders.iterdir()]
    assert order["argv"][0] == str(spare_window.controller.run_dir)
    assert spare_window.controller.run_dir.parent == tmp_path / "demos"


def test_a_demo_s_second_run_starts_on_the_standby_its_first_run_kept(
        spare_window, qtbot, tmp_path):
    """The checkpoint-interval demo's runs differ only in `checkpoint_every`, read after the
    order: run 1's standby, never used, goes back to the spare trainer when run 1 finishes,
    and run 2's chief is that process (its order names run 2's folder)."""
    spare = spare_window.controller.spare
    qtbot.waitUntil(lambda: spare.ready() == 2, timeout=WAIT_MS)
    menu = spare_window.demos
    menu.runs_root = tmp_path / "demos"
    menu.reading_seconds = 0.0  # run 2 at once: no newer spare is built meanwhile
    [demo] = [d for d in menu.demos if d.key == "checkpoint-interval"]
    assert menu.start(demo, presenter=False)
    first_run = spare_window.controller.run_dir
    [(standby, _)] = spare_window.controller.supervisor.standbys
    orders = tmp_path / "orders"
    qtbot.waitUntil(lambda: (orders / f"{standby.pid}.json").exists(), timeout=WAIT_MS)
    order = json.loads((orders / f"{standby.pid}.json").read_text())
    second_run = spare_window.controller.run_dir
    assert second_run != first_run and order["argv"][0] == str(second_run)
    assert order["argv"][1:3] == ["--role", "chief"]
    assert order["log"].startswith(str(second_run / "logs" / "standby-"))
    assert len(list(orders.iterdir())) == 2  # run 1's chief, then its standby as run 2's
    log = Path(order["log"]).read_text()
    assert log == "fake spare: built\nfake spare: ordered\n"


def test_turned_off_during_a_run_the_run_s_standby_ends_with_it(
        spare_window, qtbot, monkeypatch):
    """Spares turned off while a run trains: the finished run's waiting standby is ended, not
    handed back to a spare trainer nothing tends any more (a helper found it kept, and a
    later resume started on it)."""
    monkeypatch.setenv("FAKE_SPARE_LINGER", "1")
    spare = spare_window.controller.spare
    qtbot.waitUntil(lambda: spare.ready() == 2, timeout=WAIT_MS)
    assert spare_window.start_run()
    [(standby, _)] = spare_window.controller.supervisor.standbys
    spare_window.set_spare(False)
    supervisor = spare_window.controller.supervisor
    qtbot.waitUntil(lambda: not supervisor.live, timeout=WAIT_MS)
    assert standby.wait(timeout=30) is not None
    assert spare.spares == [] and supervisor.standbys == []


def test_turned_off_it_keeps_none_and_remembers(spare_window, qtbot, tmp_path):
    spare = spare_window.controller.spare
    qtbot.waitUntil(lambda: bool(spare.spares), timeout=WAIT_MS)
    [popen] = [one.popen for one in spare.spares]
    spare_window.menu_actions.spare.trigger()  # unchecks it
    assert not spare_window.menu_actions.spare.isChecked()
    assert popen.poll() is not None and spare.spares == []
    qtbot.wait(2 * controller_module.SPARE_CHECK_MS)
    assert spare.spares == []
    again = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(again)
    assert again.spare_wanted() is False
    again.controller.shutdown()


def test_a_window_made_without_it_keeps_no_spare(window):
    assert window.controller.spare is None
    assert window.spare_wanted() is True  # the `ftgui` window turns it on when it opens
