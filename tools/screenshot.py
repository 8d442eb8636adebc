"""Make the README screenshot: a real run in the real window, offscreen, killed and recovered.

Usage: python tools/screenshot.py [OUT.png]   (default resources/screenshot.png; about 40 s)
       python tools/screenshot.py --views RUN  (resources/screenshot-normal.png and
                                                -presentation.png: RUN opened at 1280x720)

The views of docs/presenting.md come from a finished run: `ftgui train RUN --strategy mirrored
--replicas 2 --steps 1200 --checkpoint-every 100 --snapshot-every 0 --auto-recover
--kill-at-step 650`, then `--views RUN`.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QTabWidget  # noqa: E402

from ftgui.core.settings.config import RunConfig  # noqa: E402
from ftgui.qt.window.app import make_app  # noqa: E402
from ftgui.qt.window.main_window import MainWindow  # noqa: E402


def views(run_dir: Path, folder: Path = Path("resources")) -> int:
    """`run_dir` opened in the window at 1280x720, grabbed in the normal view and in the
    presentation view (`screenshot-normal.png`, `screenshot-presentation.png` in `folder`)."""
    app = make_app()
    work = Path(tempfile.mkdtemp(prefix="ftgui-shot-"))
    window = MainWindow(QSettings(str(work / "settings.ini"), QSettings.Format.IniFormat))
    window.resize(1280, 720)
    window.show()
    window.open_run(run_dir)
    for name, presenting in (("normal", False), ("presentation", True)):
        window.set_presenting(presenting)
        for _ in range(20):
            app.processEvents()
            time.sleep(0.03)
        out = folder / f"screenshot-{name}.png"
        window.grab().save(str(out))
        print(f"saved {out}")
    window.close()
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--views"]:
        return views(Path(sys.argv[2]))
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "resources/screenshot.png")
    app = make_app()
    work = Path(tempfile.mkdtemp(prefix="ftgui-shot-"))
    window = MainWindow(QSettings(str(work / "settings.ini"), QSettings.Format.IniFormat))
    window.resize(1360, 820)
    window.show()
    window.panel.run_dir_edit.setText(str(work / "demo-run"))
    # In-memory snapshots off: the recovery restores checkpoint 125 and redoes steps 126-140,
    # so the picture shows the resumed curve on top of the crashed attempt's (at the default,
    # a snapshot every step, it resumes at 140 and redoes none).
    window.panel.set_config(RunConfig(steps=300, checkpoint_every=25, kill_at_step=140,
                                      auto_recover=True, restart_backoff=0.5, snapshot_every=0))
    if not window.start_run():
        print(window.panel.error_label.text(), file=sys.stderr)
        return 1
    deadline = time.time() + 240
    while time.time() < deadline and window.controller.supervisor.state != "finished":
        app.processEvents()
        time.sleep(0.02)
    for _ in range(10):
        app.processEvents()
        time.sleep(0.03)
    window.table.selectRow(window.table.model().rowCount() - 2)
    window.findChild(QTabWidget, "processTabs").setCurrentIndex(1)  # the incident's cost
    app.processEvents()
    out.parent.mkdir(parents=True, exist_ok=True)
    window.grab().save(str(out))
    print(f"saved {out} ({window.status_label.text()})")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
