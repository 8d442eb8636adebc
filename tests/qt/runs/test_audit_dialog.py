"""Run → Audit my training… in the window: the dialog runs the audit command in a QProcess,
moves its progress bar with the runs done, and ends on a table of the verdicts."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import sys
import textwrap

from PySide6.QtWidgets import QLabel, QProgressBar, QTableView

from ftgui.core.audit import runner
from ftgui.qt.runs.audit_dialog import AuditDialog

PROCESS_MS = 60_000


def stand_in_audit(audit_dir) -> list[str]:
    """A process that prints `ftgui audit`'s progress lines, writes a summary of two faults
    (one exact, one not) where the audit writes it, and exits 1 as the audit then does."""
    summary = {"faults": [
        {"name": "kill", "step": 37, "status": "exact", "steps_redone": 7, "time_lost": 4.25,
         "source": "disk", "difference": "", "weights_differ": [], "reason": ""},
        {"name": "nan", "step": 12, "status": "differs", "steps_redone": 2, "time_lost": 0.5,
         "source": "memory", "difference": "step 11: loss 0.25 (attempt 0), reference 0.5",
         "weights_differ": ["step"], "reason": ""}]}
    script = textwrap.dedent(f"""
        import json, pathlib
        for line in ("run 1 of 3: starting reference: never interrupted",
                     "1 of 3 runs done: reference finished at step 40",
                     "2 of 3 runs done: kill finished at step 40",
                     "3 of 3 runs done: nan finished at step 40"):
            print(line, flush=True)
        folder = pathlib.Path({str(audit_dir)!r})
        folder.mkdir(parents=True)
        (folder / "audit.json").write_text(json.dumps({summary!r}))
        raise SystemExit(1)
    """)
    return [sys.executable, "-c", script]


def test_the_run_menu_offers_the_audit_before_quit(window):
    menu = window.menuBar().actions()[0].menu()
    texts = [action.text() for action in menu.actions() if not action.isSeparator()]
    assert texts.index("&Audit my training…") < texts.index("&Quit")
    assert window.findChild(object, "auditAction") is not None


def test_the_dialog_shows_the_runs_done_and_ends_on_the_verdicts(qtbot, tmp_path):
    audit_dir = tmp_path / "audit"
    dialog = AuditDialog(audit_dir, stand_in_audit(audit_dir))
    qtbot.addWidget(dialog)
    bar = dialog.findChild(QProgressBar, "auditProgressBar")
    seen = []
    bar.valueChanged.connect(lambda value: seen.append((value, bar.maximum())))
    with qtbot.waitSignal(dialog.process.finished, timeout=PROCESS_MS):
        dialog.start()
    runs = [pair for pair in seen if pair[1] == 3]  # while the audit ran: of 3 runs
    assert runs == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert bar.text() == "3 of 3 runs done"
    table = dialog.findChild(QTableView, "auditVerdictTable")
    model = table.model()
    rows = [[model.index(r, c).data() for c in range(model.columnCount())]
            for r in range(model.rowCount())]
    assert rows == [
        ["kill", "37", "✓ exact", "7", "4.2 s", "disk", "—"],
        ["nan", "12", "✗ differs", "2", "0.5 s", "memory",
         "step 11: loss 0.25 (attempt 0), reference 0.5, final weights: step"]]
    status = dialog.findChild(QLabel, "auditStatusLabel").text()
    assert status.startswith("Audit done: not every fault recovered exactly (exit status 1)")
    assert dialog.exit_code == 1


def test_a_refused_audit_says_why_in_one_line(qtbot, tmp_path):
    from ftgui.core.settings.config import RunConfig

    audit_dir = tmp_path / "audit"
    command = runner.command(audit_dir, RunConfig(steps=50)) + ["--faults", "meteor"]
    dialog = AuditDialog(audit_dir, command)
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.process.finished, timeout=PROCESS_MS):
        dialog.start()
    assert dialog.exit_code == 2
    assert dialog.findChild(QLabel, "auditStatusLabel").text() == (
        "Audit ended: the audit refused its settings: ftgui: faults: 'meteor' is not one of "
        "kill, preempt, hang, nan, worker-loss, kill-in-save, "
        "kill-in-snapshot")
    assert not dialog.findChild(QTableView, "auditVerdictTable").isVisibleTo(dialog)
    assert not audit_dir.exists()  # refused before anything was written


def test_the_menu_audits_the_panels_settings_into_the_runs_folder(window, tmp_path,
                                                                  monkeypatch):
    from ftgui.core.settings.config import RunConfig

    started = []
    monkeypatch.setattr(AuditDialog, "start", lambda dialog: started.append(dialog))
    window.run_history.dock.set_root(tmp_path / "runs")
    # a hang without a watchdog: the audit sets its own faults, so this is no refusal
    window.panel.set_config(RunConfig(steps=120, hang_at_step=5, replicas=4))
    dialog = window.menus.audit.start()
    assert started == [dialog]
    arguments = dialog.process.arguments()
    audit_dir = arguments[arguments.index("audit") + 1]
    assert audit_dir.startswith(str((tmp_path / "runs" / "audit-").absolute()))
    assert arguments[arguments.index("audit") + 2:] == ["--replicas", "4", "--steps", "120"]
    dialog.close()


def test_a_setting_the_audit_cannot_train_is_shown_on_the_panel(window):
    from ftgui.core.settings.config import RunConfig

    window.panel.set_config(RunConfig(global_batch_size=63))
    assert window.menus.audit.start() is None
    assert window.panel.error_label.text() == (
        "global_batch_size: 63 is not divisible by the 2 replicas of strategy mirrored")
