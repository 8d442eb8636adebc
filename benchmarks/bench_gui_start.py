"""GUI start-up: from spawning the process to the window painted and to its plot ready, its
memory, and no TensorFlow.

    python benchmarks/bench_gui_start.py [--reps 5]

Each variant is a fresh process (`/usr/bin/time -v python benchmarks/gui_launcher.py MODE`,
QT_QPA_PLATFORM=offscreen, fresh XDG config/data folders so no saved settings are restored),
run interleaved:
  ftgui          the real start-up path (`ftgui.cli.main([])` → run_app → MainWindow.show)
  bare           `import PySide6.QtWidgets` + an empty 1360×820 QMainWindow (the baseline)
Two times are taken, both minus the time this script spawned the process:
  window painted  the first paint pass of the window has finished (a zero-timer after its first
                  Paint event). The ftgui window shows "loading plot…" in the plot area then:
                  pyqtgraph is imported and the LossPlot created right after this paint.
  plot ready      the same for the first paint of the real LossPlot (objectName lossPlot):
                  what it takes until the whole window, plot included, is on screen.
RSS = VmRSS of the GUI process at each moment (and max RSS from /usr/bin/time). Targets: window
painted < 1.5 s, no tensorflow module. An import-time profile (`python -X importtime`) of the
ftgui start-up ends the report, split into what is imported before the window is painted and
what after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, PYTHON, Table, header, median, rotate, spread, timed  # noqa: E402

TARGET_S = 1.5
MODES = ("ftgui", "bare")


def clean_env(work: Path) -> dict:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(work / "config"),
               XDG_DATA_HOME=str(work / "data"), XDG_CACHE_HOME=str(work / "cache"))
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    return env


def launch(mode: str, work: Path, tag: str) -> dict:
    out = work / f"{tag}.out"
    figures = timed([PYTHON, str(HERE / "gui_launcher.py"), mode, "0.5"], out,
                    env=clean_env(work / tag), timeout=120)
    text = out.read_text(errors="replace")
    if "SHOWN " not in text:
        raise RuntimeError(f"{mode}: no SHOWN line (exit {figures['returncode']}): {text[-500:]}")
    shown = json.loads(text.rsplit("SHOWN ", 1)[1].splitlines()[0])
    spawn = figures["spawn"]
    marks = {k: v - spawn for k, v in shown.get("marks", {}).items()}

    def after_spawn(key):
        return shown[key] - spawn if key in shown else None

    plot_rss = shown.get("rss_kb_plot_ready")
    return {"to_shown": shown["shown"] - spawn, "to_first_paint": shown["first_paint"] - spawn,
            "to_plot_paint": after_spawn("plot_first_paint"),
            "to_plot_ready": after_spawn("plot_ready"),
            "interpreter": shown["launcher_start"] - spawn, "marks": marks,
            "rss_mb": shown["rss_kb_shown"] / 1024,
            "rss_plot_mb": None if plot_rss is None else plot_rss / 1024,
            "maxrss_mb": figures["maxrss_kb"] / 1024,
            "tf_shown": shown["tensorflow_at_shown"], "tf_end": shown["tensorflow_at_end"],
            "tf_plot": shown.get("tensorflow_at_plot_ready", False),
            "pyqtgraph": shown.get("pyqtgraph_at_shown"), "numpy": shown.get("numpy_at_shown"),
            "modules": shown["modules_at_shown"],
            "modules_plot": shown.get("modules_at_plot_ready"),
            "wall": figures["wall"], "foreign_cores": figures["foreign_cores"]}


PLOT_IMPORTS = """
import time, PySide6.QtWidgets
t = time.perf_counter(); import numpy; t1 = time.perf_counter(); import pyqtgraph
print("PLOTIMPORT", t1 - t, time.perf_counter() - t1)
"""


def plot_import_cost(work: Path, reps: int = 3) -> tuple[float, float]:
    """Median seconds to import numpy, then pyqtgraph, in a fresh process that already has
    PySide6.QtWidgets (what creating the plot after the first paint starts with)."""
    numpy_s, pyqtgraph_s = [], []
    for _ in range(reps):
        proc = subprocess.run([PYTHON, "-c", PLOT_IMPORTS], capture_output=True, text=True,
                              env=clean_env(work / "plotimport"), timeout=60)
        if "PLOTIMPORT" in proc.stdout:
            a, b = proc.stdout.rsplit("PLOTIMPORT", 1)[1].split()[:2]
            numpy_s.append(float(a))
            pyqtgraph_s.append(float(b))
    return median(numpy_s), median(pyqtgraph_s)


PAINTED_MARK = "FTGUI-WINDOW-PAINTED"  # gui_launcher.py writes it to stderr once painted


def import_profile(work: Path) -> list[str]:
    """Cumulative import times of the biggest modules on ftgui's start-up path, before the
    window is painted and after it (until the plot is ready)."""
    env = clean_env(work / "importtime")
    proc = subprocess.run([PYTHON, "-X", "importtime", str(HERE / "gui_launcher.py"), "ftgui",
                           "0"], capture_output=True, text=True, env=env, timeout=120)
    rows, phase = [], "before"
    for line in proc.stderr.splitlines():
        if line.startswith(PAINTED_MARK):
            phase = "after"
            continue
        if not line.startswith("import time:") or "|" not in line:
            continue
        try:
            _, cumulative, name = line.split("|")
            cumulative_us = int(cumulative.strip())
        except ValueError:
            continue
        depth = (len(name) - len(name.lstrip())) // 2
        rows.append((cumulative_us, depth, name.strip(), phase))
    if phase != "after":
        return ["(the launcher never reported the window painted: no profile)"]
    interesting = ["ftgui.cli", "ftgui.qt.window.app", "PySide6.QtWidgets", "PySide6.QtCore",
                   "ftgui.qt.window.main_window", "ftgui.qt.plot.loss_plot", "pyqtgraph",
                   "pyqtgraph.Qt", "numpy", "ftgui.core.supervision.supervisor", "psutil",
                   "ftgui.qt.panes.config_panel", "platformdirs", "ftgui.qt.panes.checkpoint_table",
                   "ftgui.qt.plot.pending_plot"]
    found = {name: (us, ph) for us, _d, name, ph in rows if name in interesting}
    lines = [f"{found[n][0] / 1000:8.1f} ms  {n:24s} ({found[n][1]} the window was painted)"
             for n in interesting if n in found]
    for ph in ("before", "after"):
        top = sorted((r for r in rows if r[3] == ph and r[1] == 0), reverse=True)[:6]
        total = sum(r[0] for r in rows if r[3] == ph and r[1] == 0)
        lines.append(f"top-level imports {ph} the window was painted: {total / 1000:.0f} ms; "
                     "largest: " + ", ".join(f"{n} {us / 1000:.0f} ms" for us, _, n, _ in top))
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    header(f"GUI start-up: spawn to window painted and to plot ready, {args.reps} interleaved "
           "repetitions")
    work = Path(tempfile.mkdtemp(prefix="ftgui-bench-gui-"))
    results: dict[str, list[dict]] = {m: [] for m in MODES}
    try:
        for rep in range(args.reps):
            for mode in rotate(list(MODES), rep):
                try:
                    r = launch(mode, work, f"{mode}-{rep}")
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    print(f"   rep {rep} {mode}: FAILED: {exc}", flush=True)
                    continue
                results[mode].append(r)
                plot = ("" if mode == "bare" else
                        "  plot ready " + ("MISSING" if r["to_plot_ready"] is None
                                           else f"{r['to_plot_ready']:.3f} s"))
                print(f"   rep {rep} {mode:6s} window painted {r['to_shown']:.3f} s{plot}  "
                      f"(interpreter up {r['interpreter']:.3f} s)  RSS {r['rss_mb']:.0f} MB  "
                      f"tensorflow loaded: {r['tf_shown'] or r['tf_plot'] or r['tf_end']}  "
                      f"other load {r['foreign_cores']:.2f} cores", flush=True)
        profile = import_profile(work)
        numpy_s, pyqtgraph_s = plot_import_cost(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    med = {m: median([r["to_shown"] for r in rs]) for m, rs in results.items()}
    rss = {m: median([r["rss_mb"] for r in rs]) for m, rs in results.items()}
    ftgui = results["ftgui"]
    ready = [r["to_plot_ready"] for r in ftgui]
    plot_ready = median(ready)
    plot_missing = sum(1 for v in ready if v is None)
    rss_plot = median([r["rss_plot_mb"] for r in ftgui])
    print("\n   mode    spawn->window painted s (median, spread)   spawn->plot ready s "
          "(median, spread)   RSS MB  maxRSS MB  modules")
    for mode, rs in results.items():
        if mode == "bare":
            plot_col = f"{'—':>6s}   {'':30s}"
        else:
            plot_col = f"{plot_ready:6.3f}   ({spread(ready):28s})"
        print(f"   {mode:6s} {med[mode]:6.3f}   ({spread([r['to_shown'] for r in rs]):28s})    "
              f"{plot_col}  {rss[mode]:6.0f}  {median([r['maxrss_mb'] for r in rs]):8.0f}  "
              f"{median([r['modules'] for r in rs]):7.0f}")
    if ftgui:
        print("\n   ftgui start-up phases (median seconds after spawn):")
        names = ["cli_imported", "qt_app_imported", "app_created", "main_window_imported",
                 "window_constructed", "show_called"]
        phases = {n: median([r["marks"].get(n) for r in ftgui]) for n in names}
        phases["first_paint_event"] = median([r["to_first_paint"] for r in ftgui])
        phases["window painted"] = med["ftgui"]
        for name in ("plot_create_start", "plot_created"):
            phases[name] = median([r["marks"].get(name) for r in ftgui])
        phases["plot_first_paint_event"] = median([r["to_plot_paint"] for r in ftgui])
        phases["plot ready"] = plot_ready
        previous = median([r["interpreter"] for r in ftgui])
        print(f"   {previous:6.3f}  interpreter started, launcher running")
        for name, value in phases.items():
            print(f"   {value:6.3f}  {name:26s} (+{value - previous:.3f})")
            previous = value
        print(f"   pyqtgraph loaded when the window was painted: "
              f"{any(r['pyqtgraph'] for r in ftgui)}, numpy: {any(r['numpy'] for r in ftgui)}; "
              f"modules then {median([r['modules'] for r in ftgui]):.0f}, at plot ready "
              f"{median([r['modules_plot'] for r in ftgui]):.0f}")
    print(f"\n   importing numpy then pyqtgraph after PySide6.QtWidgets (fresh process, median "
          f"of 3): numpy {numpy_s:.3f} s + pyqtgraph {pyqtgraph_s:.3f} s")
    print("\n   import times on the ftgui path (python -X importtime, one run):")
    for line in profile:
        print(f"   {line}")
    tf_any = any(r["tf_shown"] or r["tf_plot"] or r["tf_end"] for r in ftgui)
    ratio = med["ftgui"] / med["bare"]
    print(f"\n   ratio ftgui window painted / bare = {ratio:.2f}; ftgui plot ready / bare = "
          f"{plot_ready / med['bare']:.2f}")

    table = Table("bench_gui_start")
    table.add("ftgui spawn->window painted", f"{med['ftgui']:.3f} s", f"< {TARGET_S} s",
              med["ftgui"] < TARGET_S)
    table.add("ftgui spawn->plot ready", f"{plot_ready:.3f} s"
              + (f" ({plot_missing} run(s) without a plot)" if plot_missing else ""),
              "plot painted", not plot_missing and bool(ftgui))
    table.add("bare PySide6 window", f"{med['bare']:.3f} s")
    table.add("ratio ftgui window painted / bare", f"{ratio:.2f}")
    table.add("numpy + pyqtgraph import", f"{numpy_s + pyqtgraph_s:.3f} s")
    table.add("ftgui RSS at window painted / plot ready / bare",
              f"{rss['ftgui']:.0f} / {rss_plot:.0f} / {rss['bare']:.0f} MB")
    table.add("pyqtgraph imported before the window painted",
              "yes" if any(r["pyqtgraph"] for r in ftgui) else "no")
    table.add("tensorflow imported by the GUI", "yes" if tf_any else "no", "no", not tf_any)
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
