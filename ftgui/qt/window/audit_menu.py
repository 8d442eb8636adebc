"""Run → Audit my training… (`auditAction`): the audit of the panel's settings in the
background (`ftgui.qt.runs.audit_dialog`), its runs in a fresh audit folder under the Runs
view's folder, listed there as a group."""

from __future__ import annotations

from PySide6.QtGui import QAction

from ftgui.core.audit import plan, runner
from ftgui.core.settings.schema import ConfigError
from ftgui.qt.runs.audit_dialog import AuditDialog


class AuditMenu:
    """Adds `auditAction` to `menu` before `before`; `window` is the `MainWindow`."""

    def __init__(self, window, menu, before=None):
        self.window = window
        self.dialog: AuditDialog | None = None
        self.action = QAction("&Audit my training…", window)
        self.action.setObjectName("auditAction")
        tip = ("Train a reference run and one run per fault with these settings, and check "
               "that each recovery is exact to the bit (ftgui audit)")
        self.action.setToolTip(tip)
        self.action.setStatusTip(tip)
        self.action.triggered.connect(lambda _checked=False: self.start())
        menu.insertAction(before, self.action)

    def start(self) -> AuditDialog | None:
        """Open the dialog and start the audit; a bad setting is shown on the panel (no
        process starts). Returns the dialog (None when refused)."""
        panel = self.window.panel
        try:
            config = panel.config()
            plan.reference_config(config).validate()  # the panel's faults are the audit's
        except ConfigError as exc:
            panel.show_error(str(exc))
            return None
        dock = self.window.run_history.dock
        audit_dir = runner.new_audit_dir(dock.root().absolute())
        self.dialog = AuditDialog(audit_dir, runner.command(audit_dir, config), self.window)
        self.dialog.process.finished.connect(lambda *_: dock.refresh())
        self.dialog.process.started.connect(self.window.run_history.show_runs)
        self.dialog.show()
        self.dialog.start()
        return self.dialog
