"""The window's menus: Run, View, Faults and Help, with their actions' objectNames and shortcuts.

`WindowMenus(window)` builds them from the window's public methods; the menus are `run_menu`,
`view_menu` and `faults_menu` (and `help_menu`), so another feature adds its actions with
`window.menus.run_menu.addAction(...)`. The View menu holds Presentation (`presentAction`, F5)
and Zoom in / Zoom out / Reset zoom (Ctrl++ / Ctrl+- / Ctrl+0).
"""

from __future__ import annotations

from PySide6.QtGui import QKeySequence

from ftgui.qt.controls import named_action
from ftgui.qt.runs.run_history import RunHistory
from ftgui.qt.window.about import HelpMenu
from ftgui.qt.window.audit_menu import AuditMenu
from ftgui.qt.window.menu_actions import MenuActions
from ftgui.qt.window.recent_runs import RecentRuns


class WindowMenus:
    """The menu bar of `window` (a `MainWindow`). Attributes: the menus `run_menu`, `view_menu`,
    `faults_menu`; the actions `open_action`, `new_action`, `quit_action`, `present_action`,
    `zoom_in_action`, `zoom_out_action`, `zoom_reset_action`, `faults_actions`; and the
    helpers `recent_runs`, `run_history`, `audit`, `menu_actions`, `help` (also on the window
    under those names, but `audit`)."""

    def __init__(self, window):
        bar = window.menuBar()
        self.run_menu = bar.addMenu("&Run")
        self.run_menu.setObjectName("runMenu")
        self.open_action = named_action(window, "openRunAction", "&Open run…", window.choose_run,
                                        QKeySequence.StandardKey.Open)
        self.new_action = named_action(window, "newRunAction", "&New run", window.new_run,
                                       QKeySequence.StandardKey.New)
        # Ctrl+Q: Cmd+Q on macOS; Windows has no standard key for it
        self.quit_action = named_action(window, "quitAction", "&Quit", window.close,
                                        QKeySequence("Ctrl+Q"))
        self.recent_runs = RecentRuns(window.settings, window)
        self.recent_runs.openRequested.connect(window.open_run)
        self.run_menu.addAction(self.open_action)
        self.run_menu.addMenu(self.recent_runs.menu)
        for action in (self.new_action, window.quit_guard.forget_action, self.quit_action):
            self.run_menu.addAction(action)
        # Runs… (the Runs dock), Clear overlays, Export curves as CSV…, Export plot as PNG…
        self.run_history = RunHistory(window, self.run_menu, before=self.quit_action)
        # Audit my training… (auditAction): `ftgui audit` with the panel's settings
        self.audit = AuditMenu(window, self.run_menu, before=self.quit_action)

        self.view_menu = bar.addMenu("&View")
        self.view_menu.setObjectName("viewMenu")
        self.present_action = named_action(window, "presentAction", "&Presentation",
                                           window.set_presenting, QKeySequence("F5"))
        self.present_action.setCheckable(True)
        self.present_action.setToolTip("The loss plot and the story line fill the window, "
                                       "large enough for the back of a room (F5 again leaves)")
        self.zoom_in_action = named_action(window, "zoomInAction", "Zoom &in", window.zoom_in,
                                           QKeySequence.StandardKey.ZoomIn)
        self.zoom_in_action.setShortcuts([QKeySequence.StandardKey.ZoomIn,
                                          QKeySequence("Ctrl+=")])  # + without Shift
        self.zoom_out_action = named_action(window, "zoomOutAction", "Zoom &out", window.zoom_out,
                                            QKeySequence.StandardKey.ZoomOut)
        self.zoom_reset_action = named_action(window, "zoomResetAction", "&Reset zoom",
                                              window.zoom_reset, QKeySequence("Ctrl+0"))
        self.view_menu.addAction(self.present_action)
        self.view_menu.addSeparator()
        for action in (self.zoom_in_action, self.zoom_out_action, self.zoom_reset_action):
            self.view_menu.addAction(action)

        self.faults_menu = bar.addMenu("&Faults")
        self.faults_menu.setObjectName("faultsMenu")
        # Start … Checkpoint now, Reset to defaults, Show TensorFlow output (Run menu); Kill,
        # Preempt, Kill all, Freeze, Thaw, Inject NaN now (Faults menu): with their shortcuts
        self.menu_actions = MenuActions(window, self.run_menu, self.faults_menu)
        self.faults_actions = self.faults_menu.actions()
        self.help = HelpMenu(window)  # Open documentation, About ftgui
        self.help_menu = self.help.menu

