"""Picking a guided demo -> its first point drawn, with the window's spare trainers ready.

    python benchmarks/bench_demo_start.py [--reps 3] [--demo crash-and-recover]

In one process, offscreen (QT_QPA_PLATFORM=offscreen): the real `MainWindow` at 1280x720, the
settings panel at the window's defaults, its spare trainers on (one for the chief, one for its
standby; `ftgui.core.supervision.spare`). Once both are ready (a presenter opens the window
before the talk), the demo is started as its Demo menu item starts it (`DemoMenu.start`, faults on
schedule) and timed with the monotonic clock, driving Qt's event loop by hand every 5 ms, to the
first point of its first run drawn on the plot (`Trace.drawn > 0`). Variants, interleaved:

- `now`: this code, where the snapshot interval is read after the order (`standby.NOT_BUILT`),
  so a demo that restores from disk (`snapshot_every = 0`) is served by the spares built with
  snapshots every step.
- `before`: the same window with the snapshot interval counted as built (the code before,
  restored in this process only): the spares do not fit the demo, its run starts cold.

The demo's run is then shut down (this measures its start). Target (issue 28): <= 1 s with the
spares, as a run the presenter starts with Start.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before Qt is imported

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Table, header, interleaved, median, read_events, spread  # noqa: E402
from bench_window_recovery import pump, window_at_defaults  # noqa: E402
from bench_window_start import ready_spares  # noqa: E402

TARGET_S = 1.0


def one_run(app, folder: Path, variant: str, key: str) -> dict:
    """Spares made ready in a fresh window, then demo `key` started; the figures of it."""
    from ftgui.core.supervision import standby

    window = window_at_defaults(folder)
    kept = standby.NOT_BUILT
    try:
        made, ready_after = ready_spares(app, window, folder)
        if variant == "before":
            standby.NOT_BUILT = tuple(k for k in kept if k != "snapshot_every")
        clicked = time.monotonic()
        start_demo(window, folder, key)
        adopted = not made.spares
        if not pump(app, lambda: drawn(window), 120):
            raise RuntimeError("no point of the demo's first run within 120 s")
        first = time.monotonic() - clicked
        return {"first": first, "ready_after": ready_after, "adopted": adopted,
                "from_standby": chief_started(window).get("standby")}
    finally:
        standby.NOT_BUILT = kept
        close(app, window)


def start_demo(window, folder: Path, key: str) -> None:
    """Start demo `key` as its Demo menu item does (faults on schedule), its runs under
    `folder/demos`. RuntimeError if the menu refuses it."""
    menu = window.demos
    menu.runs_root = folder / "demos"
    [demo] = [d for d in menu.demos if d.key == key]
    if not menu.start(demo, presenter=False):
        raise RuntimeError(f"demo {key} did not start")


def chief_started(window) -> dict:
    """The first `process_started` of the chief of the run shown ({} when none yet)."""
    started = [e for e in read_events(window.controller.run_dir)
               if e["event"] == "process_started" and e["role"] == "chief"]
    return started[0] if started else {}


def close(app, window) -> None:
    """Stop the window's demo, end everything of its run and its spares, close it."""
    window.settings.setValue("quit/when_training", "kill")
    window.demos.stop()
    window.controller.shutdown()
    window.close()
    app.processEvents()


def drawn(window) -> bool:
    """The first point of the run shown is on the plot."""
    trace = window.plot.traces.get(0)
    return trace is not None and trace.drawn > 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--demo", default="crash-and-recover", help="a demo's key (file stem)")
    parser.add_argument("--budget", type=float, default=900)
    args = parser.parse_args()
    header(f"demo {args.demo} picked -> first point drawn, with the window's spares ready")

    from ftgui.qt.window.app import make_app

    app = make_app()

    def run(name: str, rep: int) -> dict:
        with tempfile.TemporaryDirectory() as folder:
            return one_run(app, Path(folder), name, args.demo)

    def show(rep: int, name: str, result: dict) -> None:
        print(f"   rep {rep} {name:6} picked -> first point {result['first']:.2f} s; spares "
              f"adopted: {result['adopted']}; chief from a standby: {result['from_standby']}; "
              f"spares ready {result['ready_after']:.1f} s after the window opened", flush=True)

    results = interleaved(["now", "before"], args.reps, args.budget, run, show)
    table = Table(f"bench_demo_start ({args.demo})")
    for name, found in results.items():
        values = [r["first"] for r in found]
        if not values:
            table.add(f"picked -> first point, {name}", "no result")
            continue
        print(f"   {name}: median {median(values):.2f} s ({spread(values)})")
        table.add(f"picked -> first point, {name}", f"{median(values):.2f} s",
                  f"<= {TARGET_S} s" if name == "now" else "",
                  median(values) <= TARGET_S if name == "now" else None)
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
