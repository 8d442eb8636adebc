"""Training time stalled per checkpoint, and what one checkpoint save costs.

    python benchmarks/bench_checkpoint.py [--steps 2000] [--reps 3] [--no-breakdown]
        [--workload mlp|resnet]

`--workload resnet` measures the ResNet-style CNN on the synthetic images (a 14.5 MB checkpoint,
steps of tens of ms) instead of the MLP on digits, in every part.

1. `ftgui train --steps N` with the default `--checkpoint-every` (RunConfig's), with
   `--checkpoint-every 10` (for reference), and with `--checkpoint-every 1000000` (never, except
   after the last step), interleaved, each a fresh process. From RUN/events.jsonl: seconds from
   the first to the last `step` event. The stall per checkpoint = (T_every - T_never) /
   (checkpoints saved between those two events), shown as a percentage of one checkpoint
   interval (that many steps at the no-checkpoint rate). Target ≤ 2 % at the default interval.
   The median step gap over steps 20-100 (`EARLY`), before the default or the never runs
   checkpoint, compares the processes themselves: how far its ratio is from 1 bounds what a
   whole-run difference of this many runs can show.
   The window estimate (`window_stalls`) and the half-interval one compare parts of the same
   interval within one run. A further estimate needs no subtraction: the gap between step k
   and k+1 after a checkpoint at k, minus the median gap between ordinary steps; another is
   what the trainer itself measured
   on its step path (`stall_seconds` in `checkpoint_saved` events: the copy into the shadow
   variables; the write runs on a thread and costs CPU the other two estimates include).
2. In one process (this script re-run with --inprocess; imports TensorFlow, not ftgui): the same
   model/optimizer/strategy as bare_loop.py, `tf.train.CheckpointManager.save` alone (and
   `tf.train.Checkpoint.write`, and the validation forward pass ftgui runs after each save).
   Also `Checkpoint.write` traced once inside a `tf.function` (the cheaper save it suggests).
3. ftgui's own trainer run by benchmarks/trainer_timed.py (timers wrapped around
   `CheckpointAction.save` and what it calls; 300 steps, checkpoint every 10): median per call.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    HERE,
    PYTHON,
    WORKLOADS,
    Table,
    add_workload_argument,
    bootstrap_interval,
    decided,
    ftgui_train,
    header,
    interleaved,
    median,
    spread,
    step_rate,
    workload_flags,
)

TARGET_PCT = 2.0  # issue 14: at most 2 % of the interval at the default interval
# Steps after a checkpoint over which the window estimate sums the stall: the writer thread is
# done within them (`checkpoint_saved` comes a median 1 step after its checkpoint, 2026-12-01).
WINDOW = 10
# Steps whose gaps hold no checkpoint in the default and the never runs (the first save comes
# after step 100): their median gap tells the processes' own speeds apart from the checkpoints'
# cost (the first 20 steps still trace and warm up).
EARLY = (20, 100)
REFERENCE_INTERVAL = 10
NEVER = 1_000_000


def analyse(events: list[dict], every: int) -> dict:
    """Loop seconds, checkpoints inside the loop window, per-checkpoint step-gap stalls, and
    the half-interval estimate: (time of the first half of the interval after a checkpoint)
    - (time of its second half), median over checkpoints; it catches the writer thread's
    cost wherever it falls in the first half, and needs no second process."""
    rate = step_rate(events)
    steps = [e for e in events if e["event"] == "step"]
    t_first, t_last = steps[0]["time"], steps[-1]["time"]
    saved = [e for e in events if e["event"] == "checkpoint_saved"]
    inside = [e for e in saved if t_first <= e["time"] <= t_last]
    times = {e["step"]: e["time"] for e in steps}
    saved_steps = {e["step"] for e in inside}
    normal, after = [], []
    for s in sorted(times):
        if s + 1 in times:
            (after if s in saved_steps else normal).append(times[s + 1] - times[s])
    base = statistics.median(normal) if normal else 0.0
    early = [times[s + 1] - times[s] for s in range(*EARLY) if s in times and s + 1 in times]
    stalls = [e["stall_seconds"] for e in inside if e.get("stall_seconds") is not None]
    windows = window_stalls(times, sorted(saved_steps), every)
    half = every // 2
    halves = [(times[k + half] - times[k]) - (times[k + 2 * half] - times[k + half])
              for k in sorted(saved_steps) if half and k + 2 * half in times]
    return {"loop_seconds": rate["seconds"], "steps_per_s": rate["steps_per_s"],
            "checkpoints": len(inside),
            "gap_stall": statistics.median(after) - base if after else None,
            "normal_gap": base,
            "early_gap": statistics.median(early) if early else None,
            "half_stall": statistics.median(halves) if halves else None,
            "window_stall": statistics.median(windows) if windows else None,
            "profile": bucket_profile(times, sorted(saved_steps), every),
            "save_seconds": median([e.get("save_seconds") for e in inside]),
            "stall_seconds": median(stalls) if stalls else None,
            "background": any(e.get("background") for e in inside)}


def window_stalls(times: dict[int, float], saved: list[int], every: int) -> list[float]:
    """Per checkpoint at step k: (seconds from step k to k + WINDOW) - WINDOW x the mean step
    of the interval's second half (steps k + every/2 to k + every). Its noise is that of
    WINDOW + every/2 steps, against every steps for the half-interval estimate, so it needs
    fewer runs; it misses any stall later than WINDOW steps. [] when `every` < 4 x WINDOW."""
    if every < 4 * WINDOW:
        return []
    half = every // 2
    return [(times[k + WINDOW] - times[k]) - WINDOW * (times[k + every] - times[k + half]) / half
            for k in saved if k in times and k + every in times]


def bucket_profile(times: dict[int, float], saved: list[int], every: int) -> list[float]:
    """Where in the interval the stall falls: for the `every // WINDOW` buckets of WINDOW steps
    after a checkpoint at k, the bucket's seconds minus the mean bucket of the interval's
    second half, median over checkpoints. A stall confined to the first bucket (what the
    window estimate sums) shows as one large first value and noise around 0 after it; a cost
    spread later would show in the next buckets. [] when `every` < 4 x WINDOW."""
    if every < 4 * WINDOW:
        return []
    n = every // WINDOW
    rows = []
    for k in saved:
        if k in times and k + n * WINDOW in times:
            buckets = [times[k + WINDOW * (i + 1)] - times[k + WINDOW * i] for i in range(n)]
            base = statistics.mean(buckets[n // 2:])
            rows.append([b - base for b in buckets])
    return [statistics.median(row[i] for row in rows) for i in range(n)] if rows else []


def run_variant(work: Path, every: int, steps: int, tag: str, workload: str) -> dict:
    run_dir = work / tag
    figures = ftgui_train(run_dir, ["--steps", str(steps), "--checkpoint-every", str(every),
                                    *workload_flags(workload)], work / f"{tag}.out", timeout=900)
    figures.update(analyse(figures.pop("events"), every))
    shutil.rmtree(run_dir, ignore_errors=True)
    return figures


# ----------------------------------------------------------------------------- in-process part
def validation_rows(workload: str) -> int:
    """How many rows ftgui's validation pass of `workload` scores at each checkpoint: its
    dataset's validation split (`ftgui.training.data.load`: 20 % of the examples)."""
    if workload == "mlp":
        return 359  # 20 % of digits' 1797, as bare_loop.load_digits_split leaves them out
    from ftgui.training import data

    return len(data.load(WORKLOADS[workload]["dataset"]).x_val)


def inprocess(reps: int, workload: str = "mlp") -> dict:
    """Time checkpoint writes for bare_loop.py's model (runs in its own process, imports TF)."""
    import cProfile
    import pstats

    import bare_loop

    b = bare_loop.build(workload=workload)
    tf, np = b.tf, b.np
    work = Path(tempfile.mkdtemp(prefix="ftgui-bench-ckpt-"))
    out = {}

    def timed_calls(fn, n):
        times = []
        for k in range(n):
            t = time.perf_counter()
            fn(k)
            times.append(time.perf_counter() - t)
        return times

    try:
        manager = tf.train.CheckpointManager(b.checkpoint, str(work / "managed"), max_to_keep=5,
                                             step_counter=b.step_var, checkpoint_name="ckpt")
        first = timed_calls(lambda k: manager.save(checkpoint_number=k), 1)
        out["manager_first_save"] = first[0]
        out["manager_save"] = timed_calls(lambda k: manager.save(checkpoint_number=10 + k), reps)
        latest = Path(manager.latest_checkpoint)
        out["bytes"] = sum(p.stat().st_size for p in latest.parent.glob(latest.name + ".*"))
        out["checkpoint_write"] = timed_calls(
            lambda k: b.checkpoint.write(str(work / "plain" / f"ckpt-{k}")), reps + 1)[1:]
        # What a traced write costs: TF walks the object graph once, at trace time.
        (work / "fn").mkdir()  # a traced write does not create its directory
        write_fn = tf.function(lambda prefix: b.checkpoint.write(prefix))
        out["function_write_trace"] = timed_calls(
            lambda k: write_fn(tf.constant(str(work / "fn" / "ckpt-trace"))), 1)[0]
        out["function_write"] = timed_calls(
            lambda k: write_fn(tf.constant(str(work / "fn" / f"ckpt-{k}"))), reps)
        # Where an eager CheckpointManager.save spends its time (share of the object-graph walk).
        profiler = cProfile.Profile()
        profiler.enable()
        for k in range(10):
            manager.save(checkpoint_number=1000 + k)
        profiler.disable()
        stats = pstats.Stats(profiler).stats
        total = sum(v[3] for k, v in stats.items() if k[2] == "save"
                    and k[0].endswith("checkpoint_management.py"))
        shares = {}
        for name in ("serialize_graph_view", "save_fn", "_record_and_sweep_state"):
            shares[name] = sum(v[3] for k, v in stats.items() if k[2] == name) / total
        out["profile_shares"] = shares

        evaluate = tf.function(lambda x: b.model(x, training=False))
        # As many rows as ftgui's validation split of the workload's dataset (20 %): digits
        # 359, the synthetic images 1000 (359 for both before 2026-12-04).
        rows = validation_rows(workload)
        x_val = tf.convert_to_tensor(np.asarray(b.x_train[:rows]))
        evaluate(x_val).numpy()
        out["evaluate"] = timed_calls(lambda k: evaluate(x_val).numpy(), reps)
        out["evaluate_rows"] = rows
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


# ----------------------------------------------------------------------------- breakdown part
def breakdown(work: Path, steps: int, workload: str = "mlp") -> list[str]:
    """ftgui's own trainer with timers around CheckpointAction.save and what it calls."""
    from ftgui.core.settings import config as configmod
    from ftgui.core.supervision.trainer_command import trainer_args

    run_dir = work / "timed"
    configmod.save(run_dir, configmod.RunConfig(**WORKLOADS[workload]).replace(
        steps=steps, checkpoint_every=REFERENCE_INTERVAL))
    result = subprocess.run([PYTHON, str(HERE / "trainer_timed.py"), *trainer_args(run_dir)],
                            capture_output=True, text=True, timeout=900)
    if "TIMINGS " not in result.stdout:
        return [f"timed trainer failed ({result.returncode}): {result.stderr[-400:]}"]
    data = json.loads(result.stdout.rsplit("TIMINGS ", 1)[1].splitlines()[0])
    timings = data["timings"]
    lines = []
    order = ["CheckpointAction.save", "save/OneWriter.wait", "save/ShadowState.take",
             "save/train.CheckpointManager.save", "save/TrainState.evaluate",
             "CheckpointAction._complete_save", "ShadowState.write_and_evaluate", "Clerk.finish",
             "list_checkpoints", "write_metadata", "tf_files",
             "TrainState.train_step", "EventWriter.emit", "StepBatches.indices"]
    for name in order + sorted(set(timings) - set(order)):
        values = timings.get(name)
        if not values:
            continue
        per_save = ""
        if name.startswith("save/"):
            saves = len(timings.get("CheckpointAction.save", [])) or 1
            per_save = f"  {1000 * sum(values[1:]) / max(saves - 1, 1):6.2f} ms per save"
        lines.append(f"{name:42s} n={len(values):5d}  median {1000 * median(values):7.3f} ms  "
                     f"first {1000 * values[0]:7.2f} ms{per_save}")
    if data["missing"]:
        lines.append(f"(not found in this version of ftgui: {', '.join(data['missing'])})")
    return lines


def stall_figures(results: dict[str, list[dict]], name: str, interval_steps: int) -> dict:
    """Stall per checkpoint of variant `name` against `never` (see the module docstring)."""
    t_every = median([r["loop_seconds"] for r in results[name]])
    t_never = median([r["loop_seconds"] for r in results["never"]])
    rate_never = median([r["steps_per_s"] for r in results["never"]])
    n_ckpt = median([r["checkpoints"] for r in results[name]])
    per_ckpt = (t_every - t_never) / n_ckpt if n_ckpt else float("nan")
    interval = interval_steps / rate_never
    gap = median([r["gap_stall"] for r in results[name]])
    half = median([r["half_stall"] for r in results[name]])
    window = median([r["window_stall"] for r in results[name]])  # nan: interval too short
    # Each run against its own interval: step rates differ by up to 2x between runs of the
    # same code here, and a run's stall grows with its step time.
    own = [100 * r["window_stall"] * r["steps_per_s"] / interval_steps
           for r in results[name] if r["window_stall"] is not None]
    stalls = [r["stall_seconds"] for r in results[name] if r["stall_seconds"] is not None]
    cpu = {variant: median([r.get("user", 0.0) + r.get("sys", 0.0) for r in results[variant]])
           for variant in (name, "never")}
    return {"interval_steps": interval_steps, "interval": interval, "checkpoints": n_ckpt,
            "cpu_per_ckpt": (cpu[name] - cpu["never"]) / n_ckpt if n_ckpt else float("nan"),
            "per_ckpt": per_ckpt, "pct": 100 * per_ckpt / interval,
            "gap": gap, "gap_pct": 100 * gap / interval,
            "half": half, "half_pct": 100 * half / interval,
            "window": window, "window_pct": 100 * window / interval,
            "window_own_pct": median(own) if own else float("nan"),
            "window_own_range": (min(own), max(own)) if own else None,
            "window_own_interval": bootstrap_interval(median, own) if own else None,
            "noise": (max(r["loop_seconds"] for r in results["never"])
                      - min(r["loop_seconds"] for r in results["never"])) / n_ckpt
            if n_ckpt else float("nan"),
            "step_path": median(stalls) if stalls else None,
            "write": median([r["save_seconds"] for r in results[name]]),
            "background": any(r["background"] for r in results[name]),
            "rate": median([r["steps_per_s"] for r in results[name]]), "rate_never": rate_never}


def early_speeds(results: dict[str, list[dict]]) -> dict | None:
    """Per run, the median step gap over EARLY (ms) of the default and the never runs, and
    the steps/s ratio default / never of their medians there and over the whole loop; None
    without both."""
    gaps = {name: [r["early_gap"] for r in results.get(name, []) if r.get("early_gap")]
            for name in ("default", "never")}
    if not all(gaps.values()):
        return None
    rate = {name: median([r["steps_per_s"] for r in results[name]]) for name in gaps}
    return {**{name: ", ".join(f"{1000 * g:.1f}" for g in values)
               for name, values in gaps.items()},
            "ratio": median(gaps["never"]) / median(gaps["default"]),
            "whole": rate["default"] / rate["never"]}


def main() -> int:
    from ftgui.core.settings.config import RunConfig

    default_interval = RunConfig().checkpoint_every
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=RunConfig().steps)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-breakdown", action="store_true",
                        help="skip the timed trainer run (step 3)")
    parser.add_argument("--inprocess", type=int, metavar="N", help=argparse.SUPPRESS)
    parser.add_argument("--budget", type=float, default=200,
                        help="start no new repetition after this many seconds (default 200)")
    add_workload_argument(parser)
    args = parser.parse_args()
    if args.inprocess:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        print("INPROCESS " + json.dumps(inprocess(args.inprocess, args.workload)))
        return 0

    header(f"checkpoint stall ({args.workload} workload): ftgui train, {args.steps} steps, "
           f"checkpoint every {default_interval} (default) / {REFERENCE_INTERVAL} / never, "
           f"{args.reps} interleaved repetitions")
    work = Path(tempfile.mkdtemp(prefix="ftgui-bench-ckpt-"))
    variants = {"default": default_interval, f"every{REFERENCE_INTERVAL}": REFERENCE_INTERVAL,
                "never": NEVER}
    figures, early = {}, None

    def show(rep, name, r):
        stall = r["gap_stall"]
        print(f"   rep {rep} {name:8s} {r['steps_per_s']:7.1f} steps/s  loop "
              f"{r['loop_seconds']:.2f} s  checkpoints in loop {r['checkpoints']:3d}  "
              f"gap after ckpt - normal gap "
              f"{'n/a' if stall is None else f'{1000 * stall:.1f} ms'}  "
              f"wall {r['wall']:.1f} s  other load {r['foreign_cores']:.2f} cores", flush=True)

    try:
        results = interleaved(
            list(variants), args.reps, args.budget,
            lambda name, rep: run_variant(work, variants[name], args.steps, f"{name}-{rep}",
                                          args.workload),
            show)
        loops = {name: spread([r["loop_seconds"] for r in rs]) for name, rs in results.items()}
        print("\n   loop seconds: " + ", ".join(
            f"{name} {median([r['loop_seconds'] for r in rs]):.2f} ({loops[name]})"
            for name, rs in results.items()))
        early = early_speeds(results)
        if early:
            print(f"   median step gap over steps {EARLY[0]}-{EARLY[1]}, before any checkpoint "
                  f"in either: default {early['default']} ms, never {early['never']} ms; "
                  f"steps/s ratio default / never there {early['ratio']:.3f} (against "
                  f"{early['whole']:.3f} over the whole loop; how far the first is from 1 is how "
                  f"far processes differ before any checkpoint)")
        for name, every in variants.items():
            if every == NEVER:
                continue
            f = figures[name] = stall_figures(results, name, every)
            print(f"\n   checkpoint every {every} steps ({name}): {f['rate']:.1f} steps/s vs "
                  f"never {f['rate_never']:.1f} (ratio {f['rate'] / f['rate_never']:.3f})")
            print(f"   stall per checkpoint, half-interval estimate (first {every // 2} steps "
                  f"after a checkpoint - the next {every // 2}): {1000 * f['half']:.1f} ms = "
                  f"{f['half_pct']:.1f} % of one {every}-step interval "
                  f"({1000 * f['interval']:.1f} ms)")
            if math.isfinite(f["window"]):
                print(f"   stall per checkpoint, window estimate (first {WINDOW} steps after a "
                      f"checkpoint - {WINDOW} x the mean step of the interval's second half): "
                      f"{1000 * f['window']:.1f} ms = {f['window_pct']:.1f} %; each run "
                      f"against its own interval: median {f['window_own_pct']:.1f} %, "
                      f"{f['window_own_range'][0]:.1f}–{f['window_own_range'][1]:.1f} %")
                profiles = [r["profile"] for r in results[name] if r["profile"]]
                profile = [median([p[i] for p in profiles]) for i in range(len(profiles[0]))]
                print(f"   where it falls, per {WINDOW} steps after a checkpoint (excess over "
                      f"the second half's mean, ms): "
                      + " ".join(f"{1000 * x:.2f}" for x in profile))
            print(f"   stall per checkpoint (difference of loop times / {f['checkpoints']:.0f} "
                  f"checkpoints): {1000 * f['per_ckpt']:.1f} ms = {f['pct']:.1f} % "
                  f"(process-to-process noise: the never runs' loop times spread "
                  f"{1000 * f['noise']:.1f} ms per checkpoint)")
            print(f"   CPU per checkpoint (user+sys of the whole `ftgui train`, difference "
                  f"/ checkpoints): {1000 * f['cpu_per_ckpt']:.1f} ms")
            print(f"   stall per checkpoint (gap after a checkpointed step - median step gap): "
                  f"{1000 * f['gap']:.1f} ms = {f['gap_pct']:.1f} % of the interval")
            print(f"   the write itself (save_seconds in checkpoint_saved events): "
                  f"{1000 * f['write']:.1f} ms, "
                  f"{'on a writer thread' if f['background'] else 'on the step path'}")
            if f["step_path"] is not None:
                print(f"   time the step path spent in CheckpointAction.save (stall_seconds in "
                      f"the events): {1000 * f['step_path']:.2f} ms")

        # 2. in-process CheckpointManager.save
        print("\n   in one process (bare_loop.py's model, 2-replica MirroredStrategy):", flush=True)
        proc = subprocess.run([PYTHON, __file__, "--inprocess", "30", "--workload",
                               args.workload], capture_output=True, text=True, timeout=600,
                              cwd=str(HERE))
        inproc = None
        if proc.returncode == 0 and "INPROCESS " in proc.stdout:
            inproc = json.loads(proc.stdout.rsplit("INPROCESS ", 1)[1])
            ms = {k: 1000 * median(v) for k, v in inproc.items() if isinstance(v, list)}
            print(f"   checkpoint size {inproc['bytes']} bytes")
            print(f"   CheckpointManager.save: first {1000 * inproc['manager_first_save']:.1f} ms, "
                  f"then median {ms['manager_save']:.2f} ms "
                  f"({spread([1000 * v for v in inproc['manager_save']])} ms)")
            shares = ", ".join(f"{k} {100 * v:.0f} %" for k, v in inproc["profile_shares"].items())
            print(f"     cProfile shares of its time: {shares}")
            print(f"   Checkpoint.write (eager, no manager bookkeeping): median "
                  f"{ms['checkpoint_write']:.2f} ms")
            print(f"   Checkpoint.write inside a tf.function (traced once, "
                  f"{1000 * inproc['function_write_trace']:.0f} ms): median "
                  f"{ms['function_write']:.2f} ms")
            print(f"   validation forward pass ({inproc['evaluate_rows']} rows) + numpy: median "
                  f"{ms['evaluate']:.2f} ms")
        else:
            print(f"   in-process timing failed: {proc.stderr[-500:]}")

        # 3. what ftgui's CheckpointAction.save spends, per call
        breakdown_lines = []
        if not args.no_breakdown:
            print("\n   ftgui's trainer with timers (benchmarks/trainer_timed.py, 300 steps, "
                  f"checkpoint every {REFERENCE_INTERVAL}):", flush=True)
            breakdown_lines = breakdown(work, 300 if args.workload == "mlp" else 60,
                                        args.workload)
            for line in breakdown_lines:
                print(f"   {line}")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    table = Table(f"bench_checkpoint --workload {args.workload}")
    for name, f in figures.items():
        every = f["interval_steps"]
        target = name == "default"
        table.add(f"every {every}{' (default)' if target else ''}: steps/s vs never",
                  f"{f['rate']:.1f} / {f['rate_never']:.1f}")
        table.add("  stall per checkpoint (half-interval)", f"{1000 * f['half']:.1f} ms")
        table.add(f"  as % of a {every}-step interval", f"{f['half_pct']:.1f} %",
                  f"< {TARGET_PCT:.0f} %" if target else "",
                  f["half_pct"] < TARGET_PCT if target else None)
        if math.isfinite(f["window"]):
            table.add(f"  stall per checkpoint (window of {WINDOW} steps)",
                      f"{1000 * f['window']:.1f} ms = {f['window_pct']:.1f} %",
                      f"< {TARGET_PCT:.0f} %" if target else "",
                      f["window_pct"] < TARGET_PCT if target else None)
            low, high = f["window_own_interval"]
            table.add("    each run against its own interval (median; 90 % interval)",
                      f"{f['window_own_pct']:.1f} % ({low:.1f}–{high:.1f} %)",
                      f"< {TARGET_PCT:.0f} %" if target else "",
                      decided(low, high, TARGET_PCT, at_least=False) if target else None)
        table.add("  stall per checkpoint (loop-time diff)",
                  f"{1000 * f['per_ckpt']:.1f} ms = {f['pct']:.1f} % "
                  f"(noise ±{1000 * f['noise']:.0f} ms)")
        table.add("  stall per checkpoint (step gap)", f"{1000 * f['gap']:.1f} ms",
                  "", None)
        if f["step_path"] is not None:
            table.add("  step path inside save() (events)", f"{1000 * f['step_path']:.2f} ms")
    if early:
        table.add(f"steps/s default / never, steps {EARLY[0]}-{EARLY[1]} (no checkpoint yet)",
                  f"{early['ratio']:.3f} (whole loop {early['whole']:.3f})")
    if inproc:
        table.add("CheckpointManager.save alone (median)",
                  f"{1000 * median(inproc['manager_save']):.2f} ms")
        table.add("Checkpoint.write in tf.function (median)",
                  f"{1000 * median(inproc['function_write']):.2f} ms")
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
