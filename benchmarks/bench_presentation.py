"""Redraw of the presentation view at 100,000 points: thick pens, large fonts, the y focus.

    python benchmarks/bench_presentation.py [--points 100000] [--reps 15]

In one process, offscreen (QT_QPA_PLATFORM=offscreen), the real window: a `MainWindow` at
1280×720 showing a run of `--points` step events in two lines of training (killed at 55 % of
the steps, resumed from the checkpoint 5,000 steps earlier: a redone range, a crash and a
resume marker), fed to the controller's `Timeline`. Timed, per round: one new step event fed to
the timeline, `LossPlot.redraw()` (which in the presentation view also fits the y axis to the
redone range, `ftgui.qt.plot.focus`) and a forced synchronous paint of the plot
(`plot.viewport().repaint()`); median of `--reps` rounds after two warm-up rounds, in CPU time
of this process (the figure checked: on a machine shared with other jobs the wall clock
measures them too) and in wall-clock time. Target ≤ 16 ms (60 frames a second). The same in the
normal view, and — diagnostic, to show why the plot downsamples — the presentation view with
pyqtgraph's downsampling and clip-to-view off.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before Qt is imported

import argparse  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Table, header, median, spread  # noqa: E402

TARGET_MS = 16.0
T0 = 1_700_000_000.0
REDONE_STEPS = 5_000


def run_events(points: int) -> list[dict]:
    """`points` step events in two attempts, with the kill and the resume between them."""
    rng = random.Random(3)
    killed = int(points * 0.55)
    resumed = killed - REDONE_STEPS

    def step(attempt: int, number: int, seconds: float) -> dict:
        loss = 2.3 * math.exp(-number / 8000) + 0.05 + 0.03 * rng.random()
        return {"event": "step", "time": seconds, "attempt": attempt, "step": number,
                "loss": loss}

    chief = {"role": "chief", "index": 0, "chief": True}
    events = [{"event": "run_started", "time": T0, "attempt": 0}]
    events += [step(0, n, T0 + 0.01 * n) for n in range(1, killed + 1)]
    stop = T0 + 0.01 * killed
    events += [
        {"event": "fault_injected", "time": stop, "attempt": 0, "kind": "kill",
         "target": "chief", "step": killed, "source": "user"},
        {"event": "process_exited", "time": stop + 0.1, "attempt": 0, "pid": 1,
         "last_step": killed, "signal": 9, "decisive": True, "shutdown": False, **chief},
        {"event": "resumed", "time": stop + 5, "attempt": 1, "from_step": resumed,
         "checkpoint": f"checkpoints/ckpt-{resumed}"},
    ]
    last = resumed + (points - killed)
    events += [step(1, n, stop + 5 + 0.01 * (n - resumed)) for n in range(resumed + 1, last + 1)]
    return events


def time_rounds(app, window, reps: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds per round: one new step fed, redraw, forced paint (after two
    warm-ups). The paint is synchronous and in this process (offscreen raster), so its CPU time
    is the work itself, which other processes on a shared machine do not inflate."""
    timeline, plot = window.controller.timeline, window.plot
    times, cpu = [], []
    for i in range(reps + 2):
        number = timeline.last_step + 1
        event = {"event": "step", "time": T0 + 1e6 + i, "attempt": timeline.attempt,
                 "step": number, "loss": 0.06}
        t0, c0 = time.perf_counter(), time.process_time()
        timeline.feed([event])
        plot.redraw()
        plot.viewport().repaint()
        elapsed, used = time.perf_counter() - t0, time.process_time() - c0
        app.processEvents()
        if i >= 2:
            times.append(elapsed)
            cpu.append(used)
    return times, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    header("presentation view redraw")

    from PySide6.QtCore import QSettings

    from ftgui.qt.window.app import make_app
    from ftgui.qt.window.main_window import MainWindow

    app = make_app()
    with tempfile.TemporaryDirectory() as folder:
        window = MainWindow(QSettings(str(Path(folder) / "s.ini"), QSettings.Format.IniFormat))
        window.resize(1280, 720)
        window.show()
        window.controller.timer.stop()  # driven by hand
        window.controller.timeline.feed(run_events(args.points))
        plot = window.plot
        window.set_presenting(True)
        plot.redraw()
        app.processEvents()
        points = sum(trace.series.size for trace in plot.traces.values())
        print(f"plot {plot.width()}×{plot.height()} px, {points:,} points in "
              f"{len(plot.traces)} lines of training, curve pens "
              f"{plot.traces[1].raw.opts['pen'].widthF():g} px")

        cases = {"presentation view": time_rounds(app, window, args.reps)}
        window.set_presenting(False)
        app.processEvents()
        cases["normal view"] = time_rounds(app, window, args.reps)
        window.set_presenting(True)
        item = plot.getPlotItem()
        item.setDownsampling(auto=False)
        item.setClipToView(False)
        app.processEvents()
        cases["presentation, no downsampling (diagnostic)"] = time_rounds(app, window, 3)
        window.controller.shutdown()
        window.close()

    table = Table("bench_presentation")
    for name, (times, cpu) in cases.items():
        ms, cpu_ms = [1000 * t for t in times], [1000 * t for t in cpu]
        print(f"{name}: wall median {median(ms):.2f} ms ({spread(ms)}); CPU median "
              f"{median(cpu_ms):.2f} ms ({spread(cpu_ms)})")
        diagnostic = "diagnostic" in name
        table.add(f"redraw + paint, {name}, {points:,} points, CPU",
                  f"{median(cpu_ms):.2f} ms", "" if diagnostic else f"≤ {TARGET_MS:g} ms",
                  None if diagnostic else median(cpu_ms) <= TARGET_MS)
        table.add(f"  the same, wall clock (load: {os.getloadavg()[0]:.1f})",
                  f"{median(ms):.2f} ms")
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
