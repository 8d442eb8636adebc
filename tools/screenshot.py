"""Make the README screenshot: a real run in the real window, offscreen, killed and recovered.

Usage: python tools/screenshot.py [OUT.png]   (default resources/screenshot.png; about 40 s)
       python tools/screenshot.py --views RUN [--folder F]  (F/screenshot-normal.png and
                                                -presentation.png: RUN opened at 1280x720;
                                                F: the repository's resources/ by default)
       python tools/screenshot.py --demo       (the pictures of docs/presenting.md's guided
                                                demo: resources/stage-held.png, stage-kill,
                                                stage-resumed, screenshot-demo and
                                                stage-end; about 50 s)

The views of docs/presenting.md come from a finished run: `ftgui train RUN --strategy mirrored
--replicas 2 --steps 1200 --checkpoint-every 100 --snapshot-every 0 --auto-recover
--kill-at-step 650`, then `--views RUN`. `--demo` plays the built-in Crash-and-recover demo at
its own pace in the presentation view at 1280x720, *Faults wait for me* on, K pressed 12 s
into the hold, and grabs the window at each moment the pictures' alt texts describe.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtGui import QAction  # noqa: E402
from PySide6.QtWidgets import QTabWidget  # noqa: E402

from ftgui.core.settings.config import RunConfig  # noqa: E402
from ftgui.qt.window.app import make_app  # noqa: E402
from ftgui.qt.window.main_window import MainWindow  # noqa: E402

RESOURCES = Path(__file__).resolve().parent.parent / "resources"  # the docs' pictures


def save(window, out: Path) -> None:
    """Grab `window` into the PNG `out`; SystemExit with a one-line reason when Qt cannot."""
    if not window.grab().save(str(out)):
        raise SystemExit(f"screenshot: could not save {out} (a folder that exists, and a name "
                         "ending in .png)")


def views(run_dir: Path, folder: Path = RESOURCES) -> int:
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
        save(window, out)
        print(f"saved {out}")
    window.close()
    return 0


HOLD_SECONDS = 12.0  # K pressed this long into the hold, as docs/presenting.md says


def demo(folder: Path = RESOURCES) -> int:
    """The built-in Crash-and-recover demo played in the window at 1280x720, presentation view
    on, *Faults wait for me* on, at the demo's own pace and reading times (what a room sees),
    grabbed at each moment docs/presenting.md shows: `stage-held.png` (12 s into the hold at
    step 650, then K), `stage-kill.png` (just after the
    kill), `stage-resumed.png` (stage 5 shown, the redone steps done), `screenshot-demo.png`
    (stage 5, at step 900) and `stage-end.png` (the last stage, every claim checked)."""
    app = make_app()
    work = Path(tempfile.mkdtemp(prefix="ftgui-shot-"))
    window = MainWindow(QSettings(str(work / "settings.ini"), QSettings.Format.IniFormat))
    window.resize(1280, 720)
    window.show()
    window.plot  # noqa: B018 (created now, as after the first paint)
    window.set_presenting(True)
    menu = window.demos
    menu.runs_root = work / "runs"
    menu.presenter_action.setChecked(True)
    begun = time.monotonic()
    timeline = lambda: window.controller.timeline  # noqa: E731 (replaced on each run opened)

    def stage() -> str:
        return menu.panel.stage_label.text()

    def wait(what: str, condition, seconds: float = 180.0) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {what} after {seconds:.0f} s ({stage()}, "
                                   f"{window.top_bar.story_banner.text()!r})")
            app.processEvents()
            time.sleep(0.02)

    def settle(seconds: float) -> None:
        until = time.monotonic() + seconds
        wait("pause", lambda: time.monotonic() >= until)

    def grab(name: str) -> None:
        out = folder / name
        # the first grab after new steps lays the plot out while rendering: the inset, moved
        # a few pixels, could lose its right border in it; the second sees the settled layout
        window.grab()
        save(window, out)
        print(f"{time.monotonic() - begun:5.1f} s  saved {out}: {stage()}, step "
              f"{timeline().last_step}, story {window.top_bar.story_banner.shown_text()!r}, "
              f"prompt {menu.panel.prompt.text()!r}")

    try:
        wait("plot", lambda: window.plot_ready)
        folder.mkdir(parents=True, exist_ok=True)
        window.findChild(QAction, "demo:crash-and-recover").trigger()  # Demo → Crash and recover
        if menu.session is None:
            print(window.panel.error_label.text(), file=sys.stderr)
            return 1
        wait("hold at step 650", lambda: timeline().held == (650, "presenter")
             and menu.session.pending_wait() is not None)
        settle(HOLD_SECONDS)
        grab("stage-held.png")
        menu.fire_action.trigger()  # K
        wait("kill", lambda: stage() == "stage 4 of 6"
             and window.top_bar.story_banner.text().startswith("Killed at step 650"))
        settle(0.3)  # the marker drawn
        grab("stage-kill.png")
        wait("stage 5, past the redone steps", lambda: stage() == "stage 5 of 6"
             and timeline().last_step > 650 and len(timeline().segments) > 1)
        settle(0.5)
        grab("stage-resumed.png")
        wait("step 900", lambda: timeline().last_step >= 900)
        grab("screenshot-demo.png")
        wait("the end", lambda: menu.session.ended and menu.session.machine.caught_up
             and stage() == "stage 6 of 6" and menu.panel.result.text() != "")
        settle(1.0)  # the claims scrolled into view
        grab("stage-end.png")
        print(f"done in {time.monotonic() - begun:.0f} s: {menu.panel.result.text()!r}")
        return 0
    finally:
        menu.stop()
        window.controller.shutdown()
        window.close()
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=RESOURCES / "screenshot.png",
                        help="the README picture (default resources/screenshot.png)")
    parser.add_argument("--views", type=Path, metavar="RUN",
                        help="grab RUN at 1280x720 in the normal and the presentation view")
    parser.add_argument("--demo", action="store_true",
                        help="the guided demo's pictures of docs/presenting.md")
    parser.add_argument("--folder", type=Path, default=RESOURCES,
                        help="where --views and --demo save their pictures (default: the "
                        "repository's resources/, whose pictures the docs show)")
    args = parser.parse_args()
    if (args.views is not None or args.demo) and args.out != RESOURCES / "screenshot.png":
        parser.error("with --views or --demo, give the pictures' folder as --folder FOLDER "
                     "(each view has a picture of its own)")
    if not args.folder.is_dir():
        parser.error(f"--folder: {args.folder} is not a folder")
    if args.views is not None:
        return views(args.views, args.folder)
    if args.demo:
        return demo(args.folder)
    out = args.out
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
    save(window, out)
    print(f"saved {out} ({window.status_label.text()})")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
