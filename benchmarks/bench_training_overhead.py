"""Training throughput under ftgui versus the same custom loop as a bare TensorFlow script.

    python benchmarks/bench_training_overhead.py [--steps 1000] [--reps 3] [--with-dataset]
        [--workload mlp|resnet]

Variants, run interleaved (order rotated each repetition), each a fresh process under
`/usr/bin/time -v`:
  ftgui          `ftgui train RUN --steps N --quiet`: events, TensorBoard summaries and
                 checkpoints at the default interval (RunConfig().checkpoint_every, validated);
                 steps/s from RUN/events.jsonl, first to last `step` event
  bare+fetch     benchmarks/bare_loop.py: float(loss) and one printed line every step, no
                 checkpoint
  bare+ckpt      the same with `tf.train.CheckpointManager.save` at ftgui's default interval
                 (what a hand-written fault-tolerant script does; no validation)
  bare-nofetch   benchmarks/bare_loop.py --no-fetch
  bare-sliced    bare_loop.py --input sliced: the global batch handed in whole and sliced per
                 replica inside the step, as ftgui's one-process step does since 2026-12-04
                 (its input path is ~0.2 ms a step cheaper for the MLP than per-replica values):
                 ftgui / bare-sliced is what ftgui's own machinery costs, the step being equal
  bare-dataset   (only with --with-dataset) bare_loop.py --input dataset: tf.data +
                 experimental_distribute_dataset, the tf.distribute tutorial's input recipe,
                 fetch every step - for reference
All: MirroredStrategy over 2 logical CPUs, Adam 0.01, global batch 64, seed 42; `--workload
mlp` (default) the MLP on digits, `--workload resnet` the ResNet-style CNN on the synthetic
images (its steps take ~40x longer: give fewer `--steps`, e.g. 300).
steps/s = (last step - first step) / (time of last step - time of first step): the first step
(tf.function tracing) and process start are excluded; the wall time of each process is shown too.
Target (issue 28): ftgui >= 0.95 x bare+fetch steps/s for the MLP, >= 0.97 for the ResNet
(ftgui with its checkpoints and snapshots, the script without).
Diagnostic (one more process): ftgui's TrainState.train_step against the bare step on the same
model, and the per-step event write and TensorBoard scalar, in ms per call.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    HERE,
    PYTHON,
    Table,
    add_workload_argument,
    bare_step_lines,
    bootstrap_interval,
    decided,
    ftgui_train,
    header,
    interleaved,
    late_rate,
    median,
    median_interval_rate,
    rotate,
    spread,
    step_rate,
    timed,
    workload_flags,
)

TARGETS = {"mlp": 0.95, "resnet": 0.97}


def run_ftgui(work: Path, steps: int, tag: str, workload: str, extra: tuple = ()) -> dict:
    run_dir = work / f"ftgui-{tag}"
    figures = ftgui_train(run_dir, ["--steps", str(steps), *workload_flags(workload), *extra],
                          work / f"ftgui-{tag}.out", timeout=900)
    events = figures.pop("events")
    rate = step_rate(events)
    finished = next(e for e in events if e["event"] == "run_finished")
    started = next(e for e in events if e["event"] == "training_started")
    first_step = next(e for e in events if e["event"] == "step")
    final = [e for e in events if e["event"] == "step"][-1]
    figures.update(steps_per_s=rate["steps_per_s"], loop_seconds=rate["seconds"],
                   median_rate=rate["median_rate"],
                   late_rate=late_rate([(e["step"], e["time"]) for e in events
                                        if e["event"] == "step"]),
                   run_finished_seconds=finished["seconds"],
                   import_seconds=started["import_seconds"],
                   spawn_to_first_step=first_step["time"] - figures["spawn"],
                   final_loss=final["loss"])
    shutil.rmtree(run_dir, ignore_errors=True)
    return figures


def run_bare(work: Path, steps: int, tag: str, extra: list[str], workload: str) -> dict:
    out = work / f"bare-{tag}.out"
    figures = timed([PYTHON, str(HERE / "bare_loop.py"), "--steps", str(steps),
                     "--workload", workload, *extra], out, timeout=900)
    text = out.read_text()
    if figures["returncode"] != 0:
        raise RuntimeError(f"bare_loop failed: {text[-800:]}")
    summary = json.loads(text.rsplit("BENCH ", 1)[1].splitlines()[0])
    points = bare_step_lines(text)
    figures.update(steps_per_s=summary["steps_per_s"],
                   loop_seconds=summary["first_to_last_seconds"],
                   median_rate=median_interval_rate(points) if len(points) > 2 else None,
                   late_rate=late_rate(points),
                   import_seconds=summary["import_seconds"],
                   spawn_to_first_step=summary["first_step_clock"] - figures["spawn"],
                   final_loss=summary["final_loss"])
    return figures


def inprocess(blocks: int, steps: int, workload: str) -> dict:
    """Diagnostic, in one process: ms per call of ftgui's TrainState.train_step versus the bare
    step (same model, optimizer and strategy; bare_loop.py's input code), interleaved blocks,
    and of the other per-step work of ftgui's loop (step event, TensorBoard scalar)."""
    import math
    import statistics

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    from _train_state import build_state

    from ftgui.core.record.events import EventWriter

    state, dataset, batches, config = build_state(workload)
    strategy = state.strategy
    model, optimizer, gbs = state.model, state.optimizer, config.global_batch_size
    per = gbs // strategy.num_replicas_in_sync

    import bare_loop

    bare_step = bare_loop.make_step(tf, strategy, model, optimizer, state.step, gbs)
    sliced_step = bare_loop.make_step(tf, strategy, model, optimizer, state.step, gbs,
                                      sliced=True)

    distribute = strategy.experimental_distribute_values_from_function

    def part(array):
        return lambda ctx: tf.constant(array[ctx.replica_id_in_sync_group * per:
                                             (ctx.replica_id_in_sync_group + 1) * per])

    work = Path(tempfile.mkdtemp(prefix="ftgui-bench-inproc-"))
    writer = EventWriter(work, 0)
    try:
        from ftgui.training.summaries import Summaries

        summaries = Summaries(work / "tensorboard")
    except ImportError:  # an older ftgui
        summaries = None
    counter = {"step": 0}

    def ftgui_call():
        counter["step"] += 1
        idx = batches.indices(counter["step"])
        state.train_step(dataset.x_train[idx], dataset.y_train[idx])

    def bare_call():
        counter["step"] += 1
        idx = batches.indices(counter["step"])
        xg, yg = dataset.x_train[idx], dataset.y_train[idx]
        float(bare_step(distribute(part(xg)), distribute(part(yg))))

    def sliced_call():
        counter["step"] += 1
        idx = batches.indices(counter["step"])
        with tf.device("/cpu:0"):
            x, y = tf.constant(dataset.x_train[idx]), tf.constant(dataset.y_train[idx])
        float(sliced_step(x, y))

    def emit_call():
        counter["step"] += 1
        writer.emit("step", step=counter["step"], loss=0.123456789, epoch=3)

    def summary_call():
        counter["step"] += 1
        summaries.scalar("loss", 0.123456789, counter["step"])

    calls = {"ftgui TrainState.train_step": ftgui_call, "bare step + float(loss)": bare_call,
             "bare sliced step + float(loss)": sliced_call,
             "EventWriter.emit(step)": emit_call}
    if summaries is not None:
        calls["Summaries.scalar(loss)"] = summary_call
    for fn in calls.values():
        for _ in range(20):
            fn()
    times = {name: [] for name in calls}
    for block in range(blocks):
        for name in rotate(list(calls), block):
            started = time.perf_counter()
            for _ in range(steps):
                calls[name]()
            times[name].append(1000 * (time.perf_counter() - started) / steps)
    writer.close()
    shutil.rmtree(work, ignore_errors=True)
    return {name: {"median_ms": statistics.median(v), "runs": v} for name, v in times.items()
            if not any(math.isnan(x) for x in v)}


def print_rep(rep: int, name: str, r: dict) -> None:
    gap = r["median_rate"] or float("nan")
    late = f"{r['late_rate']:6.1f}" if r.get("late_rate") else "   n/a"
    print(f"   rep {rep} {name:13s} {r['steps_per_s']:7.1f} steps/s (1/median gap {gap:6.1f}, "
          f"after the first fifth {late})  "
          f"loop {r['loop_seconds']:.2f} s  wall {r['wall']:.2f} s  "
          f"import {r['import_seconds']:.2f} s  maxRSS {r['maxrss_kb'] / 1024:.0f} MB  "
          f"final loss {r['final_loss']:.6g}  other load {r['foreign_cores']:.2f} cores",
          flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--with-dataset", action="store_true",
                        help="also run bare_loop.py --input dataset (tf.data; adds ~1 min)")
    parser.add_argument("--budget", type=float, default=240,
                        help="start no new repetition after this many seconds (default 240)")
    parser.add_argument("--no-diagnostic", action="store_true",
                        help="skip the in-process per-call timing (about 40 s)")
    parser.add_argument("--parts", action="store_true",
                        help="also run ftgui without snapshots (ftgui-nosnap) and without "
                             "snapshots or checkpoints (ftgui-nosave): what each default costs")
    parser.add_argument("--inprocess", action="store_true", help=argparse.SUPPRESS)
    add_workload_argument(parser)
    args = parser.parse_args()
    block_steps = 200 if args.workload == "mlp" else 20
    if args.inprocess:
        print("INPROCESS " + json.dumps(inprocess(5, block_steps, args.workload)), flush=True)
        return 0
    from ftgui.core.settings.config import RunConfig

    header(f"training overhead ({args.workload} workload): ftgui vs bare TensorFlow loop, "
           f"{args.steps} steps, ftgui "
           f"checkpoints every {RunConfig().checkpoint_every} (its default), "
           f"{args.reps} interleaved repetitions")
    variants = {
        "ftgui": lambda w, tag: run_ftgui(w, args.steps, tag, args.workload),
        "bare+fetch": lambda w, tag: run_bare(w, args.steps, tag, [], args.workload),
        "bare+ckpt": lambda w, tag: run_bare(
            w, args.steps, tag, ["--ckpt-dir", str(w / f"ckpt-{tag}"),
                                 "--checkpoint-every", str(RunConfig().checkpoint_every)],
            args.workload),
        "bare-nofetch": lambda w, tag: run_bare(w, args.steps, tag, ["--no-fetch"],
                                                args.workload),
        "bare-sliced": lambda w, tag: run_bare(w, args.steps, tag, ["--input", "sliced"],
                                               args.workload),
    }
    if args.parts:
        variants["ftgui-nosnap"] = lambda w, tag: run_ftgui(
            w, args.steps, tag, args.workload, ("--snapshot-every", "0"))
        variants["ftgui-nosave"] = lambda w, tag: run_ftgui(
            w, args.steps, tag, args.workload,
            ("--snapshot-every", "0", "--checkpoint-every", str(args.steps + 1)))
    if args.with_dataset:
        variants["bare-dataset"] = lambda w, tag: run_bare(w, args.steps, tag,
                                                           ["--input", "dataset"], args.workload)
    began = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="ftgui-bench-overhead-"))
    try:
        results = interleaved(list(variants), args.reps, args.budget,
                              lambda name, rep: variants[name](work, f"{name}-{rep}"), print_rep)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def med_of(name, key):
        return median([r[key] for r in results[name]])

    print("\n   variant        steps/s first->last (median, spread)            "
          "1/median step gap   wall s   spawn->first step s")
    med, med_gap = {}, {}
    for name, rs in results.items():
        med[name] = med_of(name, "steps_per_s")
        med_gap[name] = med_of(name, "median_rate")
        gap = f"{med_gap[name]:7.1f}" if med_gap[name] == med_gap[name] else "    n/a"
        print(f"   {name:13s} {med[name]:7.1f}  ({spread([r['steps_per_s'] for r in rs]):28s})"
              f"   {gap}          {med_of(name, 'wall'):6.2f}   "
              f"{med_of(name, 'spawn_to_first_step'):6.2f}")
    print(f"   ftgui run_finished.seconds (loop incl. first-step trace and final save): "
          f"{med_of('ftgui', 'run_finished_seconds'):.2f} s")
    print(f"   other load on the machine while measuring: median "
          f"{median([r['foreign_cores'] for rs in results.values() for r in rs]):.2f} cores "
          f"of {os.cpu_count()}")
    target = TARGETS[args.workload]
    ratio_fetch = med["ftgui"] / med["bare+fetch"]
    ratio_nofetch = med["ftgui"] / med["bare-nofetch"]
    ratio_sliced = med["ftgui"] / med["bare-sliced"]
    ratio_sliced_gap = med_gap["ftgui"] / med_gap["bare-sliced"]
    ratio_gap = med_gap["ftgui"] / med_gap["bare+fetch"]
    print(f"\n   ratio ftgui / bare+fetch   = {ratio_fetch:.3f}   (target >= {target})")
    print(f"   ratio ftgui / bare+fetch, by median step gap = {ratio_gap:.3f}"
          "   (less sensitive to bursts of other load)")
    ratio_ckpt = med["ftgui"] / med["bare+ckpt"]
    print(f"   ratio ftgui / bare+ckpt    = {ratio_ckpt:.3f}   (both checkpoint at the same "
          "interval)")
    print(f"   ratio ftgui / bare-nofetch = {ratio_nofetch:.3f}")
    print(f"   ratio ftgui / bare-sliced  = {ratio_sliced:.3f}, by median step gap "
          f"{ratio_sliced_gap:.3f}   (the same step: what ftgui's own machinery costs)")
    print(f"   ratio bare+fetch / bare-nofetch = {med['bare+fetch'] / med['bare-nofetch']:.3f}"
          "   (what the per-step loss fetch itself costs)")
    late = {name: median([r["late_rate"] for r in rs]) for name, rs in results.items()
            if all(r.get("late_rate") for r in rs)}
    for name in late:
        if name != "ftgui" and "ftgui" in late and name.startswith("bare"):
            print(f"   ratio ftgui / {name}, after the first fifth of the steps = "
                  f"{late['ftgui'] / late[name]:.3f}   (without the one-time work of the "
                  "first steps)")
    for part, what in (("ftgui-nosnap", "no snapshots"),
                       ("ftgui-nosave", "no snapshots, no checkpoint before the last step")):
        if part in med:
            print(f"   ratio {part} / bare-sliced = {med[part] / med['bare-sliced']:.3f}, by "
                  f"median step gap {med_gap[part] / med_gap['bare-sliced']:.3f}   ({what})")
    if "bare-dataset" in med:
        print(f"   ratio ftgui / bare-dataset = {med['ftgui'] / med['bare-dataset']:.3f}")
    wall_ratio = med_of("ftgui", "wall") / med_of("bare+fetch", "wall")
    print(f"   wall time ratio ftgui / bare+fetch = {wall_ratio:.3f}  (ftgui = CLI + supervisor "
          "+ trainer process)")

    diagnostic = None
    if not args.no_diagnostic and time.perf_counter() - began < args.budget:
        print(f"\n   diagnostic, one process, interleaved blocks of {block_steps} calls (ms per "
              "call):", flush=True)
        proc = subprocess.run([PYTHON, __file__, "--inprocess", "--workload", args.workload],
                              capture_output=True, text=True, timeout=600)
        if "INPROCESS " in proc.stdout:
            diagnostic = json.loads(proc.stdout.rsplit("INPROCESS ", 1)[1])
            for name, d in diagnostic.items():
                runs = ", ".join(f"{v:.3f}" for v in d["runs"])
                print(f"   {name:30s} {d['median_ms']:7.3f} ms   ({runs})")
        else:
            print(f"   diagnostic failed: {proc.stderr.strip()[-500:]}")

    table = Table(f"bench_training_overhead --workload {args.workload}")
    for name in results:
        table.add(f"{name} steps/s (median)", f"{med[name]:.1f}")
    low, high = bootstrap_interval(lambda a, b: median(a) / median(b),
                                   [r["steps_per_s"] for r in results["ftgui"]],
                                   [r["steps_per_s"] for r in results["bare+fetch"]])
    table.add("ftgui / bare+fetch steps/s (90 % interval)",
              f"{ratio_fetch:.3f} ({low:.3f}–{high:.3f})", f">= {target}",
              decided(low, high, target))
    table.add("same, by median step gap", f"{ratio_gap:.3f}", f">= {target}",
              ratio_gap >= target)
    if "ftgui" in late and "bare+fetch" in late:
        table.add("same, after the first fifth of the steps",
                  f"{late['ftgui'] / late['bare+fetch']:.3f}")
    table.add("ftgui / bare+ckpt steps/s (same checkpoints)", f"{ratio_ckpt:.3f}")
    table.add("ftgui / bare-nofetch steps/s", f"{ratio_nofetch:.3f}")
    table.add("ftgui / bare-sliced steps/s (the same step)", f"{ratio_sliced:.3f}")
    table.add("same, by median step gap", f"{ratio_sliced_gap:.3f}")
    table.add("wall ftgui / bare+fetch", f"{wall_ratio:.3f}")
    if diagnostic:
        for name, d in diagnostic.items():
            table.add(f"in-process {name}", f"{d['median_ms']:.3f} ms/call")
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
