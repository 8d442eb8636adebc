"""File → Open Recent: the last runs opened, remembered in QSettings, and runs dropped onto the
window (a run folder, or its `events.jsonl`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent, QMimeData, QObject, QSettings, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QWidget

from ftgui.core.record.events import EVENTS_FILE
from ftgui.core.record.runs import is_run_dir

MAX_RECENT = 10
SETTINGS_KEY = "recent_runs"  # a JSON list of absolute folder paths, newest first


class RecentRuns(QObject):
    """The Open Recent menu (`menu`, objectName `recentRunsMenu`) over `settings`.

    `remember(run_dir)` puts a run first; the menu lists at most `MAX_RECENT`, newest first,
    each with its folder path as tooltip; a folder that no longer exists is listed greyed out
    (disabled) with "not found" in its tooltip. Choosing one emits `openRequested(Path)`.
    """

    openRequested = Signal(Path)

    def __init__(self, settings: QSettings, parent: QWidget | None = None):
        super().__init__(parent)
        self.settings = settings
        self.menu = QMenu("Open &Recent", parent)
        self.menu.setObjectName("recentRunsMenu")
        self.menu.setToolTipsVisible(True)
        self.menu.aboutToShow.connect(self.rebuild)  # folders may have gone since last time
        self.rebuild()

    def paths(self) -> list[Path]:
        """The remembered run folders, newest first (at most `MAX_RECENT`)."""
        try:
            names = json.loads(self.settings.value(SETTINGS_KEY, "[]") or "[]")
        except (TypeError, ValueError):
            return []
        if not isinstance(names, list):
            return []
        return [Path(name) for name in names if isinstance(name, str)][:MAX_RECENT]

    def remember(self, run_dir: Path) -> None:
        """Put `run_dir` first in the list (once), dropping the oldest beyond `MAX_RECENT`."""
        path = Path(run_dir).expanduser().absolute()
        kept = [path] + [p for p in self.paths() if p != path]
        self._store(kept[:MAX_RECENT])

    def clear(self) -> None:
        self._store([])

    def _store(self, paths: list[Path]) -> None:
        self.settings.setValue(SETTINGS_KEY, json.dumps([str(p) for p in paths]))
        self.rebuild()

    def rebuild(self) -> None:
        """Fill the menu from the settings, checking which folders still exist."""
        self.menu.clear()
        paths = self.paths()
        for number, path in enumerate(paths, start=1):
            mnemonic = f"&{number % 10}" if number <= 10 else ""
            action = QAction(f"{mnemonic} {path.name}", self.menu)
            exists = path.is_dir()
            action.setEnabled(exists)
            action.setToolTip(str(path) if exists else f"{path} (not found)")
            action.setStatusTip(action.toolTip())
            action.triggered.connect(lambda _=False, p=path: self.openRequested.emit(p))
            self.menu.addAction(action)
        if not paths:
            empty = self.menu.addAction("(no recent runs)")
            empty.setEnabled(False)
        self.menu.addSeparator()
        clear = self.menu.addAction("&Clear list")
        clear.setEnabled(bool(paths))
        clear.triggered.connect(self.clear)


def run_dir_from_mime(mime: QMimeData) -> Path | None:
    """The run a drag carries: the first local folder that is a run (has config.toml or
    events.jsonl), or the folder of a dropped `events.jsonl`; None when there is none."""
    for url in mime.urls():
        if not url.isLocalFile():
            continue
        path = Path(url.toLocalFile())
        if path.name == EVENTS_FILE and path.is_file():
            return path.parent
        if path.is_dir() and is_run_dir(path):
            return path
    return None


class RunDrop(QObject):
    """Lets `window` take drops: a drag carrying a run (see `run_dir_from_mime`) is accepted,
    anything else refused, and a dropped run is given to `open_run(Path)`."""

    def __init__(self, window: QWidget, open_run: Callable[[Path], None]):
        super().__init__(window)
        self.open_run = open_run
        window.setAcceptDrops(True)
        window.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt's name)
        kind = event.type()
        if kind not in (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop):
            return False
        run_dir = run_dir_from_mime(event.mimeData())
        if run_dir is None:
            event.ignore()
            return True
        event.acceptProposedAction()
        if kind == QEvent.Type.Drop:
            self.open_run(run_dir)
        return True
