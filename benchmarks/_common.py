"""Helpers shared by the benchmark scripts (no TensorFlow, no Qt imported here).

Only the standard library and psutil: the scripts that time whole processes must not load
TensorFlow in the measuring process.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYTHON = sys.executable
TIME = "/usr/bin/time"


# The workloads every benchmark runs on (`--workload`): ftgui's model and dataset settings.
# mlp: Flatten → Dense(64) → Dense(10) on the 8×8 digits, ~1.5 ms a step; resnet: the built-in
# ResNet-style CNN (1.2 M parameters, batch normalization) on the synthetic 32×32×3 images,
# tens of milliseconds a step (docs/command-line.md, "The realistic workload").
WORKLOADS = {"mlp": {"model": "mlp", "dataset": "digits"},
             "resnet": {"model": "resnet", "dataset": "synthetic"}}


def add_workload_argument(parser) -> None:
    """`--workload mlp|resnet` (default mlp) on a benchmark's argparse parser."""
    parser.add_argument("--workload", choices=tuple(WORKLOADS), default="mlp",
                        help="mlp: the MLP on digits (default); resnet: the ResNet-style CNN "
                             "on the synthetic 32x32x3 images")


def workload_flags(workload: str) -> list[str]:
    """The `ftgui train` flags of `workload`: ["--model", …, "--dataset", …]."""
    settings = WORKLOADS[workload]
    return ["--model", settings["model"], "--dataset", settings["dataset"]]


def ftgui_cmd() -> list[str]:
    """The `ftgui` console script if installed, else `python -m ftgui.cli`."""
    exe = shutil.which("ftgui")
    return [exe] if exe else [PYTHON, "-m", "ftgui.cli"]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def header(title: str) -> None:
    """Print what was measured where: the machine, the date, the load."""
    try:
        from importlib.metadata import version
        versions = ", ".join(f"{p} {version(p)}" for p in ("tensorflow", "PySide6", "pyqtgraph"))
    except Exception:  # noqa: BLE001 - informational only
        versions = "?"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    state = code_state()
    print(f"== {title}")
    print(f"   date {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}  "
          f"nproc {os.cpu_count()}  cpu {cpu_model()!r}")
    print(f"   python {platform.python_version()}, {versions}; load average {load}")
    print(f"   ftgui code: {state}")
    sys.stdout.flush()


def code_state() -> str:
    """The commit and the ftgui files that differ from it (read-only git queries)."""
    def git(*args):
        try:
            return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True,
                                  text=True, timeout=10).stdout.rstrip("\n")
        except (OSError, subprocess.SubprocessError):
            return ""
    head = git("rev-parse", "--short", "HEAD") or "?"
    changed = git("status", "--porcelain", "--", "ftgui").splitlines()
    if not changed:
        return f"commit {head}, ftgui/ unmodified"
    names = ", ".join(line[3:] for line in changed[:8]) + (" …" if len(changed) > 8 else "")
    return f"commit {head} + {len(changed)} uncommitted change(s) in ftgui/: {names}"


def median(values) -> float:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def spread(values) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "n/a"
    return f"min {min(values):.4g} max {max(values):.4g} n={len(values)}"


def bootstrap_interval(statistic, *samples, level: float = 0.9, reps: int = 4000,
             seed: int = 0) -> tuple[float, float]:
    """The `level` percentile bootstrap interval of `statistic(*samples)` (Efron and
    Tibshirani, An Introduction to the Bootstrap, 1993, ch. 13): each sample, a list of
    repeated measurements (one variant's steps/s per run, a ratio per round), is resampled with
    replacement on its own, `reps` times. With three runs a variant the interval is about their
    range: what three runs can show, and no more."""
    rng = random.Random(seed)
    samples = [[v for v in sample if v is not None] for sample in samples]
    values = sorted(statistic(*[rng.choices(s, k=len(s)) for s in samples])
                    for _ in range(reps))
    return values[int((1 - level) / 2 * reps)], values[int((1 + level) / 2 * reps) - 1]


def decided(low: float, high: float, target: float, at_least: bool = True) -> str:
    """The table's "met" for a figure whose interval is [`low`, `high`]: "yes" when all of it
    meets `target` (at least it, or at most it when not `at_least`), "NO" when none of it
    does, else "undecided" (the runs cannot tell)."""
    if not at_least:
        low, high, target = -high, -low, -target
    if low >= target:
        return "yes"
    return "NO" if high < target else "undecided"


def require_time() -> None:
    if not os.access(TIME, os.X_OK):
        sys.exit(f"{TIME} is missing: apt-get install -y time")


def parse_time_v(text: str) -> dict:
    """Wall seconds, max RSS (kB) and exit status from `/usr/bin/time -v` output."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Elapsed (wall clock) time"):
            value = line.rsplit(": ", 1)[1]
            parts = [float(p) for p in value.split(":")]
            seconds = 0.0
            for p in parts:
                seconds = seconds * 60 + p
            out["wall"] = seconds
        elif line.startswith("Maximum resident set size"):
            out["maxrss_kb"] = int(line.rsplit(": ", 1)[1])
        elif line.startswith("Exit status"):
            out["exit"] = int(line.rsplit(": ", 1)[1])
        elif line.startswith("User time"):
            out["user"] = float(line.rsplit(": ", 1)[1])
        elif line.startswith("System time"):
            out["sys"] = float(line.rsplit(": ", 1)[1])
    return out


def cpu_busy_seconds() -> float:
    """Seconds of CPU time the whole machine has spent busy since boot (all cores, /proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def timed(argv: list[str], stdout_path: Path | None = None, env: dict | None = None,
          timeout: float = 240) -> dict:
    """Run `argv` under `/usr/bin/time -v`; returns its figures plus `spawn` (Unix time of spawn)
    and `perf_wall` (perf_counter wall time seen by this process)."""
    require_time()
    with tempfile.NamedTemporaryFile("r", suffix=".time", delete=False) as tf:
        time_path = tf.name
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    try:
        busy0 = cpu_busy_seconds()
        spawn, started = time.time(), time.perf_counter()
        proc = subprocess.run([TIME, "-v", "-o", time_path, *argv], stdout=out,
                              stderr=subprocess.STDOUT, env=env, timeout=timeout)
        perf_wall = time.perf_counter() - started
        busy = cpu_busy_seconds() - busy0
    finally:
        if stdout_path:
            out.close()
    figures = parse_time_v(Path(time_path).read_text())
    os.unlink(time_path)
    figures.update(spawn=spawn, perf_wall=perf_wall, returncode=proc.returncode)
    # CPU the rest of the machine used meanwhile, in cores (other people's tests = noise).
    own = figures.get("user", 0.0) + figures.get("sys", 0.0)
    figures["foreign_cores"] = max(busy - own, 0.0) / perf_wall if perf_wall > 0 else 0.0
    return figures


def read_events(run_dir: Path) -> list[dict]:
    events = []
    with open(run_dir / "events.jsonl", "rb") as handle:
        for line in handle:
            try:
                events.append(json.loads(line))
            except ValueError:
                pass
    return events


def step_rate(events: list[dict], attempt: int | None = None) -> dict:
    """steps/s between the first and the last `step` event (of `attempt` when given)."""
    steps = [e for e in events if e["event"] == "step"
             and (attempt is None or e.get("attempt") == attempt)]
    first, last = steps[0], steps[-1]
    seconds = last["time"] - first["time"]
    return {"first_step": first["step"], "last_step": last["step"], "seconds": seconds,
            "steps_per_s": (last["step"] - first["step"]) / seconds if seconds > 0 else None,
            "median_rate": median_interval_rate([(e["step"], e["time"]) for e in steps])}


def median_interval_rate(points: list[tuple[int, float]]) -> float | None:
    """1 / median time between consecutive steps: robust to bursts of other load (a median)."""
    pairs = zip(points, points[1:], strict=False)
    gaps = [(t1 - t0) / (s1 - s0) for (s0, t0), (s1, t1) in pairs if s1 > s0]
    gaps = [g for g in gaps if g > 0]
    return 1.0 / statistics.median(gaps) if gaps else None


def late_rate(points: list[tuple[int, float]], skip: float = 0.2) -> float | None:
    """steps/s from the step `skip` of the way through `points` ((step, time) pairs) to the
    last one: the rate once a trainer's one-time work after its first step (tracing the
    background save, ~0.7 s of CPU for the ResNet) is over."""
    if len(points) < 3:
        return None
    first, last = points[0][0], points[-1][0]
    start = next(p for p in points if p[0] >= first + skip * (last - first))
    seconds = points[-1][1] - start[1]
    return (last - start[0]) / seconds if seconds > 0 and last > start[0] else None


def bare_step_lines(text: str) -> list[tuple[int, float]]:
    """(step, unix time) of the `step N TIME LOSS` lines bare_loop.py prints."""
    points = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "step":
            points.append((int(parts[1]), float(parts[2])))
    return points


class Table:
    """The summary rows each script ends with: figure, value, target, met?"""

    def __init__(self, bench: str):
        self.bench = bench
        self.rows: list[tuple[str, str, str, str]] = []

    def add(self, figure: str, value: str, target: str = "",
            met: bool | str | None = None) -> None:
        """One row; `met`: True, False, None (no target) or the words (`decided`)."""
        if not isinstance(met, str):
            met = "" if met is None else ("yes" if met else "NO")
        self.rows.append((figure, value, target, met))

    def print(self) -> None:
        print(f"\n-- summary: {self.bench}")
        widths = [max(len(r[i]) for r in self.rows + [("figure", "value", "target", "met")])
                  for i in range(4)]
        for row in [("figure", "value", "target", "met")] + self.rows:
            print("   " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        sys.stdout.flush()


def rotate(items: list, k: int) -> list:
    """`items` rotated by k: interleaved repetitions do not always run a variant first."""
    k %= len(items)
    return items[k:] + items[:k]


RUN_ERRORS = (RuntimeError, KeyError, ValueError, IndexError, StopIteration, OSError,
              subprocess.TimeoutExpired)


def interleaved(names: list[str], reps: int, budget: float, run, show) -> dict[str, list]:
    """Run every variant `reps` times, interleaved, the order rotated each repetition; no new
    repetition starts after `budget` seconds (scaled so the last one fits). `run(name, rep)`
    measures one (a failure is printed and skipped), `show(rep, name, result)` prints it.
    Returns {name: [result, ...]}."""
    results: dict[str, list] = {name: [] for name in names}
    began = time.perf_counter()
    for rep in range(reps):
        if rep and time.perf_counter() - began > budget * rep / (rep + 1):
            print(f"   (time budget: stopping after {rep} repetitions)")
            break
        for name in rotate(list(names), rep):
            try:
                result = run(name, rep)
            except RUN_ERRORS as exc:
                print(f"   rep {rep} {name}: FAILED: {exc}", flush=True)
                continue
            results[name].append(result)
            show(rep, name, result)
    return results


def ftgui_train(run_dir: Path, flags: list[str], out: Path, timeout: float = 240,
                env: dict | None = None) -> dict:
    """`ftgui train RUN FLAGS --quiet` under `/usr/bin/time -v` (with environment `env`,
    default this one's); figures plus the run's events.

    Raises RuntimeError (with the output's tail) when the run does not finish.
    """
    figures = timed([*ftgui_cmd(), "train", str(run_dir), *flags, "--quiet"], out, env=env,
                    timeout=timeout)
    if figures["returncode"] != 0:
        tail = out.read_text(errors="replace")[-600:] if out.exists() else ""
        raise RuntimeError(f"ftgui train exited {figures['returncode']}: {tail.strip()}")
    figures["events"] = read_events(run_dir)
    return figures


def poll_until(supervisor, condition, timeout: float = 300) -> list[dict]:
    """Poll like `ftgui train` until `condition(events so far)` holds; the events."""
    seen: list[dict] = []
    deadline = time.monotonic() + timeout
    while not condition(seen):
        if time.monotonic() > deadline:
            raise RuntimeError("timed out waiting for the run")
        seen += supervisor.poll()
        time.sleep(0.02)
    return seen
