"""The Run menu's run-history entries and what they do: Runs… (the Runs dock: open a run, overlay
other runs' loss curves on the plot), Clear overlays, Compare (the comparison view), Replay…,
Export curves as CSV…, Export plot as PNG… (a chosen size and DPI), Export plot as SVG…
(`ftgui.qt.plot.export`) and Export report….

`RunHistory` uses only the window's public side: `open_run(path)`, `replay_run(path, speed)`,
`run_dir()`, `plot`, `settings`, its dock area and its status bar.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMenu

from ftgui.core.record import run_notes, runs
from ftgui.core.record.runs import RunSummary
from ftgui.core.reports import csv_export, report
from ftgui.core.settings.config import ConfigError
from ftgui.core.timeline.replay import MAX_SPEED
from ftgui.qt.controls import named_action
from ftgui.qt.plot.overlays import overlay_runs
from ftgui.qt.runs.runs_dock import RunsDock

MESSAGE_MS = 10000  # how long a status-bar message stays
DOCK_HEIGHT = 230  # pixels, when the dock is first shown


class RunHistory:
    """The window's run-history features: the Runs dock (hidden until Run → Runs…), the
    comparison view (`compare_view`, created when first asked for) and the Run menu entries
    `runsAction`, `clearOverlaysAction`, `compareAction`, `replayAction`, `exportCsvAction`,
    `exportPngAction`, `exportSvgAction` and `exportReportAction`, inserted into `menu` before
    the action `before`."""

    def __init__(self, window, menu: QMenu, before: QAction | None = None):
        self.window = window
        self.dock = RunsDock(window.settings, window, open_run_dir=window.run_dir)
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
        self.dock.hide()
        self.dock.openRequested.connect(self.open)
        self.dock.overlayRequested.connect(self.overlay)
        self.dock.clearOverlaysRequested.connect(self.clear_overlays)
        self.dock.compareRequested.connect(self.compare)
        self.compare_view = None

        self.runs_action = named_action(window, "runsAction", "&Runs…", self.show_runs,
                                        QKeySequence("Ctrl+R"))
        self.clear_action = named_action(window, "clearOverlaysAction", "C&lear overlays",
                                         self.clear_overlays)
        self.csv_action = named_action(window, "exportCsvAction", "Export curves as &CSV…",
                                       self._ask_csv)
        self.png_action = named_action(window, "exportPngAction", "Export plot as &PNG…",
                                       self._ask_png)
        self.compare_action = named_action(window, "compareAction", "Co&mpare",
                                           self._compare_selected)
        self.replay_action = named_action(window, "replayAction", "Re&play…", self._ask_replay)
        self.report_action = named_action(window, "exportReportAction", "Export &report…",
                                          self._ask_report)
        self.svg_action = named_action(window, "exportSvgAction", "Export plot as S&VG…",
                                       self._ask_svg)
        self._png_size = None  # the last PNG size chosen, offered again
        menu.insertSeparator(before)
        for action in (self.runs_action, self.clear_action, self.compare_action,
                       self.replay_action):
            menu.insertAction(before, action)
        menu.insertSeparator(before)
        for action in (self.csv_action, self.png_action, self.svg_action,
                       self.report_action):
            menu.insertAction(before, action)
        menu.insertSeparator(before)

    # ------------------------------------------------------------ the dock and overlays
    def show_runs(self) -> None:
        """Show the Runs dock (first time: DOCK_HEIGHT pixels high) with a fresh list: of the
        open run's folder when the dock's own folder holds no runs (`ftgui open runs/demo`
        showed an empty default folder, "this folder does not exist yet")."""
        if self.dock.isHidden():
            self.window.resizeDocks([self.dock], [DOCK_HEIGHT], Qt.Orientation.Vertical)
        shown = self.window.run_dir()
        if shown is not None and Path(shown).parent != self.dock.root() \
                and not runs.holds_runs(self.dock.root()):
            self.dock.set_root(Path(shown).parent)
        self.dock.show()
        self.dock.raise_()
        self.dock.refresh()

    def open(self, run_dir: Path) -> None:
        """Show `run_dir` in the window; its row in the dock turns bold."""
        self.window.open_run(run_dir)
        self.dock.refresh()

    def overlay(self, selected: list[RunSummary]) -> None:
        """Overlay the `selected` runs on the plot; runs that cannot be shown are named in the
        status bar."""
        # The plot is asked for when used: the window creates it after its first paint.
        problems = overlay_runs(self.window.plot, selected)
        if problems:
            self._say("; ".join(problems))

    def clear_overlays(self, *_checked) -> None:
        self.window.plot.clear_overlays()

    # ------------------------------------------------------------ compare and replay
    def compare(self, selected: list[RunSummary]):
        """Show `selected` in the comparison view (created on first use); returns the view."""
        from ftgui.qt.runs.compare_view import CompareView  # pyqtgraph, when first asked for

        if self.compare_view is None:
            self.compare_view = CompareView(self.window)
            self.compare_view.backRequested.connect(self.end_stage_compare)
            self.window.controller.stateChanged.connect(self._live_again)
            self.window.presentation.looks.append(self._compare_look)
        problems = self.compare_view.show_runs(selected)
        if problems:
            self._say("; ".join(problems))
        self._compare_look(self.window.presenting, asked=True)
        return self.compare_view

    def _compare_look(self, presenting: bool, asked: bool = False) -> None:
        """Presenting: the comparison in the window, in the plot's place, at the presentation's
        sizes (a separate window covered the banner and the demo's claims); else its own
        window. On a view switch only when the comparison is on screen (or `asked` for)."""
        view, pane = self.compare_view, self.window.plot_pane
        if view is None or not (asked or view.isVisible()):
            return
        splitter = self.window.right_splitter
        if presenting:
            if view.parent() is not splitter:
                splitter.insertWidget(0, view)  # a child of the window: no longer a window
            pane.hide()
        else:
            if view.parent() is splitter:
                view.setParent(self.window, Qt.WindowType.Window)
            pane.show()
        view.set_presenting(presenting)
        view.show()
        view.raise_()
        self._name_the_story(presenting)

    def _name_the_story(self, on: bool) -> None:
        """While the comparison of several runs takes the plot's place, the story line over it
        names the run it tells ("model.fit: Finished at step 220 · …"): a room read its
        goodput as the comparison's."""
        shown = self.window.run_dir() if on else None
        name = None if shown is None else run_notes.load(shown).name or Path(shown).name
        if name != self.window.top_bar.story_owner:
            self.window.top_bar.story_owner = name
            self.window.refresh_story()

    def _live_again(self, state: str, _reason: str = "") -> None:
        """A run trains again (the next demo, a resume): its plot comes back in place."""
        if state in ("running", "recovering"):
            self.end_stage_compare()

    def end_stage_compare(self) -> None:
        """Back from the comparison to the run's plot (the presentation view's Back button)."""
        view = self.compare_view
        if view is not None and view.parent() is self.window.right_splitter:
            view.hide()
            view.setParent(self.window, Qt.WindowType.Window)
            view.set_presenting(False)
            self.window.plot_pane.show()
        self._name_the_story(False)

    def _compare_selected(self) -> None:
        selected = self.dock.selected_runs() if self.dock.isVisible() else []
        if len(selected) >= 2:
            self.compare(selected)
            return
        self.show_runs()
        self._say("select two or more runs in the Runs dock, then press Compare")

    def replay(self, run_dir: Path, speed: float) -> bool:
        """Play `run_dir` into the window at `speed` (read-only); False if refused."""
        ok = self.window.replay_run(run_dir, speed)
        if ok:
            self._say(f"replaying {run_dir.name} at ×{speed:g}; open it to stop the replay")
        return ok

    def _ask_replay(self) -> None:
        start = self.window.run_dir() or runs.runs_root()
        path = QFileDialog.getExistingDirectory(self.window, "Replay run", str(start))
        if not path:
            return
        speed, ok = QInputDialog.getDouble(self.window, "Replay", "Speed (× real time):",
                                           1.0, 0.01, MAX_SPEED, 2)
        if ok:
            self.replay(Path(path), speed)

    # ------------------------------------------------------------ export
    def export_csv(self, path: Path) -> bool:
        """Write the open run's curves to `path` (see `ftgui.core.reports.csv_export`); False if
        refused."""
        return self._write_for_run(lambda run_dir: csv_export.write_curves_csv(run_dir, path),
                                   "nothing exported",
                                   lambda rows: f"wrote {rows} points to {path}",
                                   missing="it has no events yet")

    def export_png(self, path: Path, size=None) -> bool:
        """Save the plot as shown (overlays, smoothing, zoom) to `path`: a PNG of `size` (a
        `ftgui.qt.plot.export.ImageSize`, pixels and DPI; default 1920 × 1080 at 192 dpi), legend
        beside the data."""
        from ftgui.qt.plot import (
            export as plot_export,  # pyqtgraph: imported with the plot, not at start
        )

        size = size or plot_export.ImageSize()
        ok = plot_export.export_png(self.window.plot, path, size)
        self._say(f"saved the plot to {path} ({size.width} × {size.height} px, {size.dpi} dpi)"
                  if ok else f"could not write {path}")
        return ok

    def export_svg(self, path: Path) -> bool:
        """Save the plot as shown to `path` as SVG, legend beside the data."""
        from ftgui.qt.plot import export as plot_export

        ok = plot_export.export_svg(self.window.plot, path)
        self._say(f"saved the plot to {path}" if ok else f"could not write {path}")
        return ok

    def export_report(self, path: Path) -> bool:
        """Write the open run's HTML report (`ftgui.core.reports.report`) to `path`; False if
        refused."""
        return self._write_for_run(lambda run_dir: report.write_report(run_dir, path),
                                   "no report written",
                                   lambda written: f"wrote the report to {written}")

    def _write_for_run(self, write, refused: str, done, missing: str | None = None) -> bool:
        """Call `write(run dir)` for the open run and say `done(what it returned)`; with no run
        open, or when `write` raises OSError or ConfigError, say "`refused`: why" and return
        False. `missing`, when given, is the why of a missing file and of no run open."""
        run_dir = self.window.run_dir()
        try:
            if run_dir is None:
                raise ConfigError("no run is open")
            result = write(run_dir)
        except (ConfigError, OSError) as exc:
            lost = run_dir is None or isinstance(exc, FileNotFoundError)
            self._say(f"{refused}: {missing if missing is not None and lost else exc}")
            return False
        self._say(done(result))
        return True

    def _ask_report(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Export report",
                                              self._suggested("-report.html"),
                                              "HTML (*.html)")
        if path:
            self.export_report(Path(path))

    def _say(self, message: str) -> None:
        self.window.statusBar().showMessage(message, MESSAGE_MS)

    def _suggested(self, suffix: str) -> str:
        run_dir = self.window.run_dir()
        if run_dir is None:
            return str(Path.home() / f"ftgui{suffix}")
        return str(run_dir.parent / f"{run_dir.name}{suffix}")

    def _ask_csv(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Export curves as CSV",
                                              self._suggested("-curves.csv"), "CSV (*.csv)")
        if path:
            self.export_csv(Path(path))

    def _ask_png(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Export plot as PNG",
                                              self._suggested("-loss.png"), "PNG image (*.png)")
        if not path:
            return
        from ftgui.qt.plot.export import ExportSizeDialog, ImageSize

        dialog = ExportSizeDialog(self.window, self._png_size or ImageSize())
        if dialog.exec() == ExportSizeDialog.DialogCode.Accepted:
            self._png_size = dialog.size_chosen()
            self.export_png(Path(path), self._png_size)

    def _ask_svg(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Export plot as SVG",
                                              self._suggested("-loss.svg"), "SVG image (*.svg)")
        if path:
            self.export_svg(Path(path))

