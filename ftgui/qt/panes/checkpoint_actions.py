"""What the checkpoint table's right-click menu does: inspect and evaluate a checkpoint, export
it as a Keras model (both in a helper process, never blocking the window) and delete it."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog, QMessageBox

from ftgui.core.checkpoints import tools
from ftgui.qt.panes.checkpoint_dialog import CheckpointDialog, CheckpointJob

MESSAGE_MS = 10000  # how long a status-bar message stays


class CheckpointActions(QObject):
    """Connects `window.table`'s inspect / export / delete requests. Uses the window's
    `controller`, `table`, `statusBar()` and `_refuse(exc)` (a refusal shown in the panel)."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.jobs: list[CheckpointJob] = []
        window.table.inspectRequested.connect(self.inspect)
        window.table.exportRequested.connect(self.export)
        window.table.deleteRequested.connect(self.delete)

    def inspect(self, step: int, export: Path | None = None) -> CheckpointJob:
        """Inspect (and evaluate, or export to `export`) checkpoint `step` in a helper
        process; the result opens in a dialog (or the status bar says where the model went)."""
        window = self.window
        status = window.statusBar()
        job = CheckpointJob(window.controller.run_dir, step,
                            evaluate=export is None, export=export, parent=window)
        job.failed.connect(lambda reason: window._refuse(RuntimeError(reason)))
        if export is None:
            job.done.connect(lambda result: CheckpointDialog(result, window).show())
        else:
            job.done.connect(lambda result: status.showMessage(
                f"checkpoint {step} exported to {result['exported']}", MESSAGE_MS))
        status.showMessage(f"reading checkpoint {step} in a helper process…", MESSAGE_MS)
        job.start()
        self.jobs = [j for j in self.jobs if j.process.state()] + [job]
        return job

    def export(self, step: int) -> None:
        """Ask where to write checkpoint `step` as a .keras model, then export it."""
        path, _ = QFileDialog.getSaveFileName(
            self.window, "Export model", str(Path.home() / f"ckpt-{step}.keras"),
            "Keras model (*.keras)",
        )
        if path:
            self.inspect(step, export=Path(path))

    def delete(self, step: int) -> None:
        """Delete checkpoint `step`'s files after asking."""
        window = self.window
        run_dir = window.controller.run_dir
        answer = QMessageBox.question(
            window, "Delete checkpoint",
            f"Delete checkpoint {step} of {run_dir.name}? Its files are removed from disk.",
        )
        if answer != QMessageBox.StandardButton.Yes:
            return
        try:
            names = tools.delete(run_dir, step)
        except (LookupError, OSError) as exc:
            window._refuse(exc)
            return
        window.statusBar().showMessage(f"deleted {', '.join(names)}", MESSAGE_MS)
        window.table.refresh(run_dir)
