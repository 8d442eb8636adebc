"""Run names and notes: kept in RUN/run.toml (never in events.jsonl), editable in the Runs dock
(double-click the name; the notes field), shown in the Runs view with why each run ended."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QAbstractItemView, QLineEdit
from recorded import crash_and_recovery

from ftgui.core.record import run_notes
from ftgui.core.record.events import EventWriter
from ftgui.core.record.run_notes import RunNotes
from ftgui.core.settings.config import RunConfig
from ftgui.core.settings.config import save as save_config
from ftgui.qt.runs.runs_dock import COLUMNS, RunsDock


# ------------------------------------------------------------------------------ the file
def test_names_and_notes_round_trip_in_run_toml_and_keep_other_keys(tmp_path):
    run_dir = crash_and_recovery(tmp_path / "run")
    events_before = (run_dir / "events.jsonl").read_bytes()
    assert run_notes.load(run_dir) == RunNotes()
    (run_dir / "run.toml").write_text('colour = "teal"\n')
    run_notes.save(run_dir, RunNotes("  crash demo ", 'line one\nline "two"'))
    assert run_notes.load(run_dir) == RunNotes("crash demo", 'line one\nline "two"')
    assert 'colour = "teal"' in (run_dir / "run.toml").read_text()
    assert run_notes.rename(run_dir, "renamed") == RunNotes("renamed", 'line one\nline "two"')
    assert run_notes.annotate(run_dir, "") == RunNotes("renamed", "")
    assert "notes" not in (run_dir / "run.toml").read_text()  # an empty field is left out
    assert (run_dir / "events.jsonl").read_bytes() == events_before


def test_a_name_over_one_line_is_refused_and_a_broken_file_reads_as_empty(tmp_path):
    with pytest.raises(ValueError, match="^name: one line"):
        run_notes.save(tmp_path, RunNotes("two\nlines"))
    (tmp_path / "run.toml").write_text("name = [unclosed")
    assert run_notes.load(tmp_path) == RunNotes()
    (tmp_path / "run.toml").write_text("name = 3\nnotes = 'fine'")
    assert run_notes.load(tmp_path) == RunNotes("", "fine")


# ------------------------------------------------------------------------------ the dock
def killed_run(root, name):
    run_dir = root / name
    save_config(run_dir, RunConfig(steps=5))
    with EventWriter(run_dir, 0) as writer:
        writer.emit("run_started", time=1_700_000_100.0)
        writer.emit("step", time=1_700_000_101.0, step=1, loss=1.0, epoch=0)
        writer.emit("process_exited", time=1_700_000_102.0, role="chief", index=0, pid=1,
                    decisive=True, signal=9, signal_name="SIGKILL")
    return run_dir


@pytest.fixture
def dock(qtbot, tmp_path):
    crash_and_recovery(tmp_path / "runs" / "alpha")
    killed_run(tmp_path / "runs", "beta")
    widget = RunsDock(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(widget)
    widget.show()
    widget.set_root(tmp_path / "runs")
    return widget


def double_click(qtbot, dock, index) -> None:
    """A user's double-click: press and release, then the second press (QTest sends only
    that as a double-click)."""
    where = dock.table.visualRect(index).center()
    qtbot.mouseClick(dock.table.viewport(), Qt.MouseButton.LeftButton, pos=where)
    qtbot.mouseDClick(dock.table.viewport(), Qt.MouseButton.LeftButton, pos=where)


def cell(dock, name, column):
    model = dock.table.model()
    for row in range(model.rowCount()):
        if dock.model_.rows[model.mapToSource(model.index(row, 0)).row()].path.name == name:
            return model.index(row, COLUMNS.index(column))
    raise LookupError(name)


def test_why_each_run_ended_is_shown(dock):
    assert cell(dock, "alpha", "why it ended").data() == "reached the last step"
    assert cell(dock, "beta", "why it ended").data() == "ended by SIGKILL"


def test_double_clicking_the_name_renames_the_run_in_its_folder(dock, qtbot, tmp_path):
    index = cell(dock, "alpha", "run")
    opened = []
    dock.openRequested.connect(opened.append)
    assert index.flags() & Qt.ItemFlag.ItemIsEditable
    assert not cell(dock, "alpha", "status").flags() & Qt.ItemFlag.ItemIsEditable
    double_click(qtbot, dock, index)  # the name column: edits, does not open
    assert opened == []
    assert dock.table.state() == QAbstractItemView.State.EditingState
    editor = dock.table.findChild(QLineEdit)
    assert editor.text() == "alpha"
    editor.setText("crash at 12")
    qtbot.keyClick(editor, Qt.Key.Key_Return)  # Qt commits it from its event queue
    qtbot.waitUntil(lambda: run_notes.load(tmp_path / "runs" / "alpha").name == "crash at 12")
    dock.refresh()
    assert cell(dock, "alpha", "run").data() == "crash at 12"
    assert cell(dock, "alpha", "run").data(Qt.ItemDataRole.ToolTipRole).startswith(
        str((tmp_path / "runs" / "alpha").absolute()))
    double_click(qtbot, dock, cell(dock, "alpha", "status"))  # elsewhere: opens
    assert opened == [(tmp_path / "runs" / "alpha").absolute()]
    assert dock.table.model().setData(cell(dock, "alpha", "run"), "alpha")  # back: no name
    assert run_notes.load(tmp_path / "runs" / "alpha").name == ""


def test_the_notes_field_saves_the_selected_runs_notes(dock, tmp_path):
    beta = (tmp_path / "runs" / "beta").absolute()
    assert not dock.notes_edit.isEnabled()
    dock.select_paths({beta})
    assert dock.notes_edit.isEnabled() and dock.notes_edit.text() == ""
    dock.notes_edit.setText("killed on purpose")
    dock.notes_edit.editingFinished.emit()
    assert run_notes.load(beta).notes == "killed on purpose"
    assert cell(dock, "beta", "notes").data() == "killed on purpose"
    dock.select_paths({(tmp_path / "runs" / "alpha").absolute()})
    assert dock.notes_edit.text() == ""
    dock.select_paths({beta})
    assert dock.notes_edit.text() == "killed on purpose"
