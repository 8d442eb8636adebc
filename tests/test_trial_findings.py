"""What the new-user and breaker trials found, each as the behaviour it should have been."""

from __future__ import annotations

import io
import sys

import pytest

from ftgui import cli
from ftgui.console import Progress
from ftgui.core.checkpoints.resume_check import training_changed as _training_changed
from ftgui.core.settings.config import ConfigError, RunConfig


def test_a_resume_that_changes_how_training_runs_does_not_restore_from_memory():
    # the in-memory snapshot records no settings: a changed learning rate or batch size must
    # come through a disk checkpoint, where the change is applied and recorded
    before = RunConfig(steps=40)
    assert _training_changed(before, before.replace(learning_rate=0.001))
    assert _training_changed(before, before.replace(global_batch_size=32))
    assert not _training_changed(before, before.replace(steps=80, auto_recover=True))
    assert not _training_changed(None, before)


def test_a_fork_with_nothing_to_train_is_refused_before_anything_starts(finished_run):
    with pytest.raises(ConfigError, match=r"^steps \(--steps\): a fork from step 30 has nothing "
                                          r"to train with --steps 30; give --steps N with N > 30"):
        cli.cmd_train(cli.build_parser().parse_args(
            ["train", str(finished_run), "--resume", "--from-step", "30", "--steps", "30"]))


class _ClosedPipe(io.StringIO):
    def write(self, text):
        raise BrokenPipeError


def test_progress_goes_quiet_when_the_reader_of_its_output_leaves(monkeypatch):
    # `ftgui train RUN | head -1`: training must go on, not die with the pipe
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    progress = Progress()
    progress.show({"event": "run_started", "time": 1.0, "attempt": 0})
    progress.show({"event": "step", "time": 5.0, "attempt": 0, "step": 1, "loss": 0.5})
    assert progress.quiet
    assert progress.last_loss == 0.5
    assert not isinstance(sys.stdout, _ClosedPipe)


def test_the_window_says_it_is_checking_user_code_while_it_waits(qtbot, tmp_path, monkeypatch):
    from pathlib import Path

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from ftgui.core.supervision.supervisor import Supervisor
    from ftgui.qt.window.main_window import MainWindow

    window = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.open_run(tmp_path / "run")
    seen = []
    monkeypatch.setattr(Supervisor, "start", lambda self, *a, **k: seen.append(
        (window.status_label.text(), QApplication.overrideCursor() is not None)))
    examples = Path(__file__).resolve().parents[1] / "resources" / "examples"
    config = RunConfig(model=f"{examples / 'digits_cnn.py'}:build")
    window.controller.start(config)
    assert seen == [("checking your model and data in a helper process…", True)]
    assert QApplication.overrideCursor() is None  # restored after the check
    window.controller.shutdown()
