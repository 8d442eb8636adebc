"""Start -> first drawn point, and an early kill -> first resumed point, in the window.

    python benchmarks/bench_window_start.py [--reps 3] [--kill-after 2] [--workload mlp]

In one process, offscreen (QT_QPA_PLATFORM=offscreen): the real `MainWindow` at 1280x720 with
the settings panel at the window's defaults (MirroredStrategy x2, warm standby on, snapshots
every step) and *Automatic recovery* ticked, 20,000 steps. Variants, interleaved:

- `spares`: the window as `ftgui` opens it, with its spare trainers
  (`ftgui.core.supervision.spare`: one for the chief, one for its standby). The benchmark
  waits until both are ready (a presenter opens the window before the talk), then clicks Start.
- `none`: a window without spares (Run -> Keep a spare trainer ready off, as every release
  before it): Start imports TensorFlow and builds the strategy; the standby the run starts
  itself begins at the attempt's start, at a low CPU priority.

`--restart-backoff` is the run's wait before its first automatic restart (the window's default
is 1 s, and it is part of what the room waits after a kill); 0 measures the recovery itself.
Timed with the monotonic clock, driving Qt's event loop by hand every 5 ms: from the click on
Start to the first point of attempt 0 drawn on the plot (`Trace.drawn > 0`); then, `--kill-after`
seconds after that point, Kill is clicked and timed to the first point of attempt 1 drawn.
Targets (issue 28): Start -> first point <= 1 s with the spares, and kill -> first resumed point
<= 1 s for a kill 2 s after the attempt's first step.
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
from _common import (  # noqa: E402
    WORKLOADS,
    Table,
    add_workload_argument,
    header,
    interleaved,
    median,
    read_events,
    spread,
)
from bench_window_recovery import phases, pump, window_at_defaults  # noqa: E402

TARGET_S = 1.0


def ready_spares(app, window, folder: Path):
    """Turn `window`'s spare trainers on (their folders under `folder`) and drive Qt until they
    are all ready: (the `SpareTrainer`, seconds it took). RuntimeError after 180 s."""
    from ftgui.core.supervision.spare import SpareTrainer, spares_wanted
    from ftgui.qt.window import controller as controller_module

    made = SpareTrainer(folder / "spares")
    controller_module.SpareTrainer = lambda: made
    window.set_spare(True)
    began = time.monotonic()
    wanted = spares_wanted(window.panel.config())
    if not pump(app, lambda: made.ready() >= wanted, 180):
        raise RuntimeError(f"{made.ready()} of {wanted} spares ready after 180 s")
    return made, time.monotonic() - began


def one_run(app, folder: Path, spares: bool, kill_after: float, workload: str,
            backoff: float) -> dict:
    """One Start and one kill in a fresh window; the figures of it."""
    window = window_at_defaults(folder, auto_recover=True, steps=20_000,
                                restart_backoff=backoff, **WORKLOADS[workload])
    run_dir = folder / "run"
    try:
        wait = ready_spares(app, window, folder)[1] if spares else None
        clicked = time.monotonic()
        window.start_button.click()
        first = _first_point(app, window, 0, clicked)
        pump(app, lambda: False, kill_after)
        killed_at = window.controller.timeline.last_step
        clicked, clicked_wall = time.monotonic(), time.time()
        window.kill_button.click()
        resumed = _first_point(app, window, 1, clicked)
        seen = read_events(run_dir)
        started = [e for e in seen if e["event"] == "process_started" and e["role"] == "chief"]
        return {"start": first, "resume": resumed, "spares_ready_after": wait,
                "killed_at": killed_at, "phases": phases(seen, clicked_wall),
                "warm": [(e.get("standby"), e.get("standby_warm")) for e in started[:2]]}
    finally:
        window.settings.setValue("quit/when_training", "kill")
        window.controller.shutdown()
        window.close()
        app.processEvents()


def _first_point(app, window, attempt: int, clicked: float) -> float:
    def drawn() -> bool:
        trace = window.plot.traces.get(attempt)
        return trace is not None and trace.drawn > 0

    if not pump(app, drawn, 120):
        raise RuntimeError(f"no point of attempt {attempt} within 120 s")
    return time.monotonic() - clicked


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--kill-after", type=float, default=2.0,
                        help="seconds from the first drawn point to the kill (default 2)")
    parser.add_argument("--budget", type=float, default=600)
    parser.add_argument("--restart-backoff", type=float, default=1.0,
                        help="the run's wait before its first automatic restart (default 1, "
                             "the window's; it is part of kill -> first resumed point)")
    add_workload_argument(parser)
    args = parser.parse_args()
    header(f"Start -> first point, and a kill {args.kill_after:g} s later, in the window "
           f"({args.workload}, restart backoff {args.restart_backoff:g} s)")

    from ftgui.qt.window.app import make_app

    app = make_app()

    def run(name: str, rep: int) -> dict:
        with tempfile.TemporaryDirectory() as folder:
            return one_run(app, Path(folder), name == "spares", args.kill_after, args.workload,
                           args.restart_backoff)

    def show(rep: int, name: str, result: dict) -> None:
        ready = result["spares_ready_after"]
        print(f"   rep {rep} {name:6} Start -> first point {result['start']:.2f} s; kill at "
              f"step {result['killed_at']} -> first resumed point {result['resume']:.2f} s "
              f"({result['phases']}; chiefs from standby, warm: {result['warm']}"
              + (f"; spares ready {ready:.1f} s after the window opened)" if ready else ")"),
              flush=True)

    results = interleaved(["spares", "none"], args.reps, args.budget, run, show)
    table = Table(f"bench_window_start ({args.workload}, restart backoff "
                  f"{args.restart_backoff:g} s)")
    for name, found in results.items():
        for key, label in (("start", "Start -> first point"),
                           ("resume", f"kill {args.kill_after:g} s in -> first resumed point")):
            values = [r[key] for r in found]
            if not values:
                table.add(f"{label}, {name}", "no result")
                continue
            print(f"   {name} {key}: median {median(values):.2f} s ({spread(values)})")
            target = name == "spares"
            table.add(f"{label}, {name}", f"{median(values):.2f} s",
                      f"<= {TARGET_S} s" if target else "",
                      median(values) <= TARGET_S if target else None)
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
