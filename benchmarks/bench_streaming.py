"""The GUI's event pipeline and loss plot: ingest rate, redraw time, opening a 1M-step run.

    python benchmarks/bench_streaming.py [--events 200000] [--reps 3] [--big 1000000]
    python benchmarks/bench_streaming.py --open-only [--reps 3]   (part 3 only, repeated)
    python benchmarks/bench_streaming.py --redraw-only             (part 2 only)

In one process, offscreen (QT_QPA_PLATFORM=offscreen), the real ftgui classes:
1. Ingest: N `step` events (the trainer's format) written to RUN/events.jsonl first; then timed:
   `ftgui.core.record.events.EventReader.read_new()` until empty, and the controller's
   `Timeline.feed(batch)` for each batch read (as the window's timer does), then a redraw of
   a `LossPlot` showing that timeline.
   Target 50,000 events/s (read + dispatch). A cProfile of one pass shows where the time goes.
2. Redraw: a shown 1200×500 LossPlot holding 100,000 and 1,000,000 points; timed: one new point
   (`add_step`), `plot.redraw()`, then a forced synchronous paint, `plot.viewport().repaint()`
   (a QGraphicsView draws its scene in its viewport: `plot.repaint()` alone was found not to
   repaint the curve), and separately `plot.grab()`; median of several. Target < 16 ms.
   PlotCurveItem.paint calls are counted, so a "repaint" that paints nothing is reported.
   Diagnostic: the same with the plot's grid turned off. The CPU time of this process for
   the same redraw + repaint is shown beside it (on a loaded machine the wall time waits for
   the other processes).
3. Open a run of 1,000,000 step events: `RunController.open(RUN)` (reading the file - through
   Supervisor.poll, or a bulk history reader where ftgui has one -, dispatch into the plot,
   first redraw) and further ticks until every event is in the plot, then a repaint; the time
   spent in each of those functions is shown. Target < 2 s. Diagnostic: the same with Python's
   cyclic GC disabled. With `--open-only`, only this part:
   `ftgui.core.record.event_history.read_history` alone and the whole open, each `--reps` times
   (median and spread), nothing else.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before Qt is imported

import argparse  # noqa: E402
import cProfile  # noqa: E402
import gc  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import pstats  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import psutil  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Table, header, median, spread  # noqa: E402

INGEST_TARGET = 50_000
REDRAW_TARGET_MS = 16.0
OPEN_TARGET_S = 2.0


def write_step_events(run_dir: Path, n: int, seed: int = 0) -> int:
    """RUN/events.jsonl with run_started, N step events (as the trainer writes them) and
    run_finished; returns the file size in bytes."""
    from ftgui.core.record.events import EVENTS_FILE

    run_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    t = time.time() - n * 0.005
    dumps = json.JSONEncoder(separators=(",", ":")).encode
    lines = [dumps({"event": "run_started", "time": t, "attempt": 0, "config": {}})]
    for step in range(1, n + 1):
        loss = 2.3 * math.exp(-step / 20000) + 0.05 + 0.05 * rng.random()
        lines.append(dumps({"event": "step", "time": t + step * 0.005, "attempt": 0,
                            "step": step, "loss": loss, "epoch": (step - 1) // 22}))
    lines.append(dumps({"event": "run_finished", "time": t + n * 0.005, "attempt": 0,
                        "step": n, "loss": loss, "seconds": n * 0.005}))
    data = ("\n".join(lines) + "\n").encode()
    (run_dir / EVENTS_FILE).write_bytes(data)
    return len(data)


def plot_points(plot) -> int:
    """Points held by the plot's training-loss curves (LossPlot.series, or .traces[*].series)."""
    if hasattr(plot, "series"):
        return sum(series.size for series in plot.series.values())
    return sum(trace.series.size for trace in plot.traces.values()
               if not getattr(trace, "overlay", False))


def make_controller(plot):
    from ftgui.qt.window.controller import RunController

    controller = RunController(plot)
    controller.timer.stop()  # we drive it by hand
    return controller


def ingest_once(app, run_dir: Path) -> dict:
    from ftgui.core.record.events import EventReader
    from ftgui.qt.plot.loss_plot import LossPlot

    plot = LossPlot()
    controller = make_controller(plot)
    reader = EventReader(run_dir)
    gc.collect()
    t0 = time.perf_counter()
    events = []
    while batch := reader.read_new():
        events.extend(batch)
    t1 = time.perf_counter()
    controller.timeline.feed(events)
    t2 = time.perf_counter()
    plot.redraw()
    t3 = time.perf_counter()
    n = sum(1 for e in events if e["event"] == "step")
    points = plot_points(plot)
    controller.deleteLater()
    plot.deleteLater()
    app.processEvents()
    return {"events": len(events), "steps": n, "points": points, "read": t1 - t0,
            "dispatch": t2 - t1, "redraw": t3 - t2, "total": t2 - t0}


def profile_ingest(run_dir: Path) -> list[str]:
    from ftgui.core.record.events import EventReader
    from ftgui.qt.plot.loss_plot import LossPlot

    plot = LossPlot()
    controller = make_controller(plot)
    reader = EventReader(run_dir)
    profiler = cProfile.Profile()
    profiler.enable()
    while batch := reader.read_new():
        controller.timeline.feed(batch)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(8)
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    return lines[start:start + 9]


class PaintCounter:
    """Counts PlotCurveItem.paint calls (to prove a forced repaint really paints the curve)."""

    def __init__(self):
        import pyqtgraph as pg

        self.cls = pg.PlotCurveItem
        self.original = self.cls.paint
        self.count = 0
        counter = self

        def paint(item, *args, **kwargs):
            counter.count += 1
            return counter.original(item, *args, **kwargs)

        self.cls.paint = paint

    def restore(self):
        self.cls.paint = self.original


def redraw_times(app, counter: PaintCounter, n_points: int, reps: int, grid: bool = True) -> dict:
    """Median cost of add_step + redraw() + a forced synchronous paint at `n_points` points."""
    from ftgui.qt.plot.loss_plot import LossPlot

    plot = LossPlot()
    plot.resize(1200, 500)
    plot.show()
    if not grid:
        plot.getPlotItem().showGrid(x=False, y=False)
    app.processEvents()
    rng = random.Random(1)
    for step in range(1, n_points + 1):
        plot.add_step(0, step, 2.3 * math.exp(-step / 20000) + 0.05 + 0.05 * rng.random())
    plot.redraw()
    plot.viewport().repaint()
    app.processEvents()
    step = n_points
    result = {}
    # QGraphicsView paints its scene in its viewport widget: plot.repaint() alone does not
    # repaint the curve (checked with the paint counter), plot.viewport().repaint() does.
    forcers = {"repaint": lambda: plot.viewport().repaint(), "grab": plot.grab}
    try:
        for label, force in forcers.items():
            times, cpus, paints = [], [], []
            for i in range(reps + 2):
                step += 1
                plot.add_step(0, step, 0.05 + 0.05 * rng.random())
                before = counter.count
                t0, cpu0 = time.perf_counter(), time.process_time()
                plot.redraw()
                force()
                elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
                paints.append(counter.count - before)
                app.processEvents()
                if i >= 2:  # two warm-up rounds
                    times.append(elapsed)
                    cpus.append(cpu)
            result[label] = times
            result[f"{label}_cpu"] = cpus
            result[f"{label}_paints"] = min(paints)
        alone = []
        for _ in range(reps):  # the redraw alone (setData), without painting
            step += 1
            plot.add_step(0, step, 0.05)
            t0 = time.perf_counter()
            plot.redraw()
            alone.append(time.perf_counter() - t0)
            app.processEvents()
        result["redraw_only"] = alone
    finally:
        plot.close()
        plot.deleteLater()
        app.processEvents()
    return result


OPEN_PARTS = [  # timed during the open when they exist in this version of ftgui
    ("ftgui.core.supervision.supervisor", "Supervisor.poll"),
    ("ftgui.core.record.event_history", "read_history"),
    ("ftgui.qt.window.controller", "RunController._replay"),
    ("ftgui.qt.window.controller", "RunController._dispatch"),
    ("ftgui.core.timeline.model", "Timeline.feed"),
    ("ftgui.qt.plot.loss_plot", "LossPlot.redraw"),
]


def _wrap_parts(totals: dict) -> list:
    """Wrap OPEN_PARTS with accumulating timers (outermost calls only); returns undo info."""
    import importlib

    undo = []
    for module_name, dotted in OPEN_PARTS:
        try:
            owner = importlib.import_module(module_name)
            *path, attr = dotted.split(".")
            for part in path:
                owner = getattr(owner, part)
            original = getattr(owner, attr)
        except (ImportError, AttributeError):
            continue
        totals[dotted] = 0.0
        depth = {"n": 0}

        def timed(*args, _original=original, _name=dotted, _depth=depth, **kwargs):
            _depth["n"] += 1
            started = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                _depth["n"] -= 1
                if _depth["n"] == 0:
                    totals[_name] += time.perf_counter() - started

        setattr(owner, attr, timed)
        undo.append((owner, attr, original))
    return undo


def open_big_run(app, run_dir: Path, gc_off: bool = False) -> dict:
    """RunController.open + ticks until all step events are plotted + repaint.

    `gc_off`: a diagnostic, Python's cyclic garbage collector disabled meanwhile."""
    from ftgui.qt.plot.loss_plot import LossPlot

    plot = LossPlot()
    plot.resize(1200, 500)
    plot.show()
    app.processEvents()
    controller = make_controller(plot)
    totals: dict[str, float] = {}
    undo = _wrap_parts(totals)
    rss0 = psutil.Process().memory_info().rss
    gc.collect()
    if gc_off:
        gc.disable()
    try:
        t0 = time.perf_counter()
        controller.open(run_dir)
        t_first_tick = time.perf_counter() - t0
        ticks = 1
        while True:  # later ticks read whatever the first ones left
            before = plot_points(plot)
            controller.tick()
            ticks += 1
            if plot_points(plot) == before:
                break
        t_ticks = time.perf_counter() - t0
        plot.viewport().repaint()
        total = time.perf_counter() - t0
    finally:
        gc.enable()
        for owner, attr, original in undo:
            setattr(owner, attr, original)
    points = plot_points(plot)
    rss = psutil.Process().memory_info().rss
    controller.shutdown()
    plot.close()
    return {"total": total, "first_tick": t_first_tick, "ticks_done": t_ticks, "ticks": ticks,
            "parts": totals, "repaint": total - t_ticks, "points": points,
            "rss_growth_mb": (rss - rss0) / 2**20}


def open_only(app, work: Path, n: int, reps: int, table) -> None:
    """Part 3 alone, repeated: read_history by itself, then the whole open (median, spread)."""
    from ftgui.core.record import event_history

    big = work / "big"
    size = write_step_events(big, n)
    print(f"   big run: {n:,} step events, {size / 2**20:.0f} MB", flush=True)
    reads, read_cpus, opens, open_cpus = [], [], [], []
    for rep in range(reps):
        gc.collect()
        t0, cpu0 = time.perf_counter(), time.process_time()
        history = event_history.read_history(big)
        reads.append(time.perf_counter() - t0)
        read_cpus.append(time.process_time() - cpu0)
        assert len(history.steps) == n, len(history.steps)
        del history
        cpu0 = time.process_time()
        r = open_big_run(app, big)
        open_cpus.append(time.process_time() - cpu0)
        opens.append(r["total"])
        print(f"   rep {rep}: read_history {reads[-1]:.2f} s (CPU {read_cpus[-1]:.2f} s); open "
              f"{r['total']:.2f} s (CPU {open_cpus[-1]:.2f} s; {r['points']:,} points; load "
              f"{os.getloadavg()[0]:.1f})", flush=True)
    print(f"   read_history: median {median(reads):.2f} s ({spread(reads)}), CPU median "
          f"{median(read_cpus):.2f} s ({spread(read_cpus)})")
    print(f"   open: median {median(opens):.2f} s ({spread(opens)}), CPU median "
          f"{median(open_cpus):.2f} s ({spread(open_cpus)})")
    table.add(f"read_history, {n:,} steps", f"{median(reads):.2f} s")
    table.add(f"open run of {n:,} steps", f"{median(opens):.2f} s", f"< {OPEN_TARGET_S:.0f} s",
              median(opens) < OPEN_TARGET_S)


def redraw_part(app, counter: PaintCounter, args, table) -> None:
    """Part 2: redraw + repaint at 100,000 and 1,000,000 points, with and without the grid."""
    for n in (100_000, 1_000_000):
        for grid in (True, False):
            r = redraw_times(app, counter, n, args.redraw_reps, grid=grid)
            rep_ms = median(r["repaint"]) * 1000
            grab_ms = median(r["grab"]) * 1000
            only_ms = median(r["redraw_only"]) * 1000
            what = "" if grid else " [diagnostic: grid off]"
            cpu_ms = median(r["repaint_cpu"]) * 1000
            print(f"   {n:>9,} points{what}: redraw()+viewport().repaint() {rep_ms:6.2f} ms "
                  f"(CPU {cpu_ms:.2f} ms; {spread([t * 1000 for t in r['repaint']])}; curve paints "
                  f"{r['repaint_paints']}), redraw()+grab() {grab_ms:6.2f} ms (paints "
                  f"{r['grab_paints']}), redraw() alone {only_ms:.2f} ms", flush=True)
            if not r["repaint_paints"]:
                print("   WARNING: the forced repaint did not paint the curve")
            if grid:
                table.add(f"redraw+repaint {n:,} points", f"{rep_ms:.2f} ms",
                          f"< {REDRAW_TARGET_MS:.0f} ms", rep_ms < REDRAW_TARGET_MS)
                table.add("  same, CPU time of this process", f"{cpu_ms:.2f} ms")
                table.add(f"redraw+grab {n:,} points", f"{grab_ms:.2f} ms")
            else:
                table.add("  same, grid off (diagnostic)", f"{rep_ms:.2f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--big", type=int, default=1_000_000)
    parser.add_argument("--redraw-reps", type=int, default=15)
    parser.add_argument("--no-gc-diagnostic", action="store_true",
                        help="skip opening the big run a second time with the GC disabled")
    parser.add_argument("--open-only", action="store_true",
                        help="only part 3 (read_history and the whole open), --reps times")
    parser.add_argument("--redraw-only", action="store_true", help="only part 2 (redraw)")
    args = parser.parse_args()
    header(f"streaming: ingest {args.events} events x{args.reps}, LossPlot redraw, open a "
           f"{args.big}-step run")
    from ftgui.qt.window.app import make_app

    app = make_app()
    counter = PaintCounter()  # before any curve exists, so every curve paint is counted
    work = Path(tempfile.mkdtemp(prefix="ftgui-bench-stream-"))
    table = Table("bench_streaming")
    if args.open_only:
        try:
            open_only(app, work, args.big, args.reps, table)
        finally:
            counter.restore()
            shutil.rmtree(work, ignore_errors=True)
        table.print()
        return 0
    try:
        if args.redraw_only:
            redraw_part(app, counter, args, table)
            table.print()
            return 0
        # 1. ingest
        small = work / "small"
        size = write_step_events(small, args.events)
        print(f"   events file: {args.events} step events, {size / 2**20:.1f} MB", flush=True)
        runs = []
        for rep in range(args.reps):
            r = ingest_once(app, small)
            runs.append(r)
            print(f"   rep {rep}: read+parse {r['read']:.3f} s, dispatch {r['dispatch']:.3f} s, "
                  f"then redraw {r['redraw'] * 1000:.1f} ms; {r['events'] / r['total']:,.0f} "
                  f"events/s  ({r['points']} points plotted)", flush=True)
        rate = median([r["events"] / r["total"] for r in runs])
        read_rate = median([r["events"] / r["read"] for r in runs])
        dispatch_rate = median([r["events"] / r["dispatch"] for r in runs])
        print(f"   ingest: {rate:,.0f} events/s (read+parse alone {read_rate:,.0f}/s, dispatch "
              f"alone {dispatch_rate:,.0f}/s)   target {INGEST_TARGET:,}/s   "
              f"ratio to target {rate / INGEST_TARGET:.2f}")
        print("   cProfile of one ingest pass (by own time):")
        for line in profile_ingest(small):
            print(f"     {line}")
        table.add("ingest read+dispatch", f"{rate:,.0f} events/s", f">= {INGEST_TARGET:,}/s",
                  rate >= INGEST_TARGET)

        redraw_part(app, counter, args, table)

        # 3. open a big run
        big = work / "big"
        size = write_step_events(big, args.big)
        print(f"   big run: {args.big:,} step events, {size / 2**20:.0f} MB", flush=True)
        for gc_off in (False, True):
            if gc_off and args.no_gc_diagnostic:
                continue
            r = open_big_run(app, big, gc_off=gc_off)
            what = " [diagnostic: cyclic GC disabled]" if gc_off else ""
            print(f"   open{what}: {r['total']:.2f} s until all {r['points']:,} points are "
                  f"plotted and painted ({r['ticks']} ticks; first tick {r['first_tick']:.2f} s)")
            parts = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in r["parts"].items())
            print(f"     of which {parts}; final repaint {r['repaint'] * 1000:.0f} ms; memory "
                  f"+{r['rss_growth_mb']:.0f} MB", flush=True)
            if gc_off:
                table.add("  same, GC disabled (diagnostic)", f"{r['total']:.2f} s")
            else:
                table.add(f"open run of {args.big:,} steps", f"{r['total']:.2f} s",
                          f"< {OPEN_TARGET_S:.0f} s", r["total"] < OPEN_TARGET_S)
    finally:
        counter.restore()
        shutil.rmtree(work, ignore_errors=True)
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
