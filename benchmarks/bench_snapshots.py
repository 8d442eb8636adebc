"""Training throughput with in-memory snapshots at several intervals against none.

    python benchmarks/bench_snapshots.py [--rounds 7] [--block 300] [--every 1,2,5,10]
        [--workload mlp|resnet]

One process (TensorFlow imported here: this measures the step path, not a process): ftgui's
TrainState (MirroredStrategy over 2 logical CPUs, global batch 64, the defaults; `--workload
mlp`: the MLP on digits, `resnet`: the ResNet-style CNN on the synthetic images, whose 14.5 MB
state makes each snapshot ~30x larger and each step ~40x longer: give e.g. `--block 30`)
runs blocks of `--block` global steps on the real step-indexed batches; after each step ftgui's
`SnapshotAction` is called as the loop calls it, with `snapshot_every` = 0 (off) or each of
`--every`. Blocks are interleaved (ABAB…, the order rotated each round) and each round gives
the ratio of a variant's steps/s to the "off" block of the same round; the median over rounds is
reported, with the step path's time per snapshot (`SnapshotAction.write_seconds / taken`).
`--clock cpu` (default) counts this process' CPU seconds (all its threads), which other
programs on a shared machine disturb far less than wall time; `--clock wall` is steps/s.
The target: ≥ 0.97 × off at the default `snapshot_every`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from _common import (  # noqa: E402
    Table,
    add_workload_argument,
    bootstrap_interval,
    decided,
    header,
    median,
    rotate,
    spread,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--block", type=int, default=300)
    parser.add_argument("--every", default="1,2,5,10")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="cpu: this process' CPU seconds (steadier on a shared machine)")
    add_workload_argument(parser)
    args = parser.parse_args()
    intervals = [int(x) for x in args.every.split(",")]

    from _train_state import build_state

    from ftgui.core.checkpoints import snapshots
    from ftgui.core.settings.schema import SETTINGS
    from ftgui.training.actions import StepOutput
    from ftgui.training.actions.snapshot import SnapshotAction

    default = SETTINGS["snapshot_every"].default
    header(f"snapshots ({args.workload} workload): steps/s with snapshot_every in {intervals} "
           f"against off, {args.rounds} interleaved rounds of {args.block} steps "
           f"(default {default})")
    state, dataset, batches, _ = build_state(args.workload)
    run_dir = Path(tempfile.mkdtemp(prefix="ftgui-bench-snapshots-"))
    actions = {every: SnapshotAction(state, run_dir / str(every), every) for every in intervals}
    print(f"   state: {actions[intervals[0]].state_bytes.nbytes} bytes; "
          f"snapshot files in {snapshots.snapshot_dir()}")

    def block(every: int, steps: int = args.block) -> float:
        action = actions.get(every)
        state.state_output_next = False  # "off" runs the plain step
        if action is not None:
            action.arm(state.global_step)
        start = state.global_step
        clock = time.process_time if args.clock == "cpu" else time.perf_counter
        began = clock()
        for step in range(start + 1, start + steps + 1):
            rows = batches.indices(step)
            loss, _ = state.train_step(dataset.x_train[rows], dataset.y_train[rows])
            if action is not None:
                action(StepOutput(step, loss))
        if action is not None:
            action.wait()  # its last write belongs to this block
        return steps / (clock() - began)

    for every in (0, *intervals):  # trace the plain and the fused step, warm every file
        block(every, max(every, 1) * 3)
    for action in actions.values():
        action.write_seconds, action.taken, action.fused = 0.0, 0, 0
    variants = [0, *intervals]
    ratios: dict[int, list[float]] = {every: [] for every in intervals}
    try:
        for rnd in range(args.rounds):
            rates = {every: block(every) for every in rotate(variants, rnd)}
            line = ", ".join(f"every {e}: {rates[e] / rates[0]:.3f}" for e in intervals)
            print(f"   round {rnd}: off {rates[0]:.0f} steps per {args.clock} second; ratio {line}",
                  flush=True)
            for every in intervals:
                ratios[every].append(rates[every] / rates[0])
    finally:
        for every, action in actions.items():
            action.close()
            snapshots.discard(run_dir / str(every))
    print()
    table = Table(f"bench_snapshots --workload {args.workload}")
    for every in intervals:
        action = actions[every]
        per = action.write_seconds / max(action.taken, 1) * 1e3
        ratio = median(ratios[every])
        print(f"   every {every:3d}: median ratio {ratio:.3f} ({spread(ratios[every])}); "
              f"{per:.3f} ms per snapshot on the step path; {action.fused} of "
              f"{action.taken} taken from the step's own output")
        target = "≥ 0.97" if every == default else ""
        low, high = bootstrap_interval(median, ratios[every])
        table.add(f"throughput, snapshot every {every} / off (90 % interval)",
                  f"{ratio:.3f} ({low:.3f}–{high:.3f})", target,
                  decided(low, high, 0.97) if every == default else None)
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
