"""Could a trainer be forked from a process that has already imported TensorFlow, instead of
importing it anew (every cold restart, and a replacement standby that is not ready when a
second fault comes: docs/benchmarks.md, the second-kill row)? A prototype, run by hand:

    python benchmarks/proto_fork_server.py [--reps 3] [--steps 3]

For each repetition, interleaved:

- cold: a new Python process imports TensorFlow and Keras, splits the CPU into 2 logical devices,
  builds ftgui's MirroredStrategy TrainState on the digits and runs `--steps` global steps;
- fork: this process imported TensorFlow and Keras once at its start (and created no runtime:
  no op ran, no device was listed); `os.fork()` gives a child that does the rest the same way.

Each prints the seconds from its start (the `Popen`, the `fork`) to its last step done, and
its losses as hex floats: a forked trainer must train the same losses to the bit as a cold one.
It measures whether the idea works here; ftgui's supervisor does not use it (its processes
are its own children: a fork server would have to hand their exit status on).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from _common import PYTHON, header  # noqa: E402


def train(steps: int) -> list[str]:
    """Build ftgui's MirroredStrategy TrainState on the digits (`build_state`) and run `steps`
    global steps; their losses as hex floats."""
    from _train_state import build_state

    state, dataset, batches, _ = build_state("mlp")
    losses = []
    for step in range(1, steps + 1):
        rows = batches.indices(step)
        loss, _ = state.train_step(dataset.x_train[rows], dataset.y_train[rows])
        losses.append(float(loss).hex())
    return losses


def cold(steps: int) -> tuple[float, list[str]]:
    """A new interpreter that imports everything: (seconds to its last step, losses)."""
    began = time.perf_counter()
    out = subprocess.run([PYTHON, __file__, "--cold-child", str(steps)], capture_output=True,
                         text=True, check=True)
    seconds = time.perf_counter() - began
    line = next(line for line in out.stdout.splitlines() if line.startswith("RESULT "))
    return seconds, json.loads(line[len("RESULT "):])


def forked(steps: int) -> tuple[float, list[str]]:
    """A child of this (imported) process: (seconds from the fork to its last step, losses)."""
    read, write = os.pipe()
    began = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: train, hand the losses back, leave without cleanup
        os.close(read)
        try:
            losses = train(steps)
            os.write(write, json.dumps(losses).encode())
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    seconds = time.perf_counter() - began
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or not chunks:
        raise RuntimeError(f"forked trainer failed (status {status})")
    return seconds, json.loads(b"".join(chunks))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--cold-child", type=int, metavar="STEPS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_child:  # the cold variant's own process: import, train, print
        import keras  # noqa: F401  (as a trainer imports it)
        print("RESULT " + json.dumps(train(args.cold_child)), flush=True)
        return 0
    header("fork server prototype: a trainer forked from a process with TensorFlow imported "
           "against a cold start")
    began = time.perf_counter()
    import keras  # noqa: F401  (imported once, before any fork)
    import tensorflow  # noqa: F401
    imported = time.perf_counter() - began
    threads = len(os.listdir("/proc/self/task"))
    print(f"   this process imported TensorFlow and Keras in {imported:.2f} s; "
          f"{threads} threads before the first fork", flush=True)
    times = {"cold": [], "fork": []}
    reference = None
    for rep in range(args.reps):
        order = ["cold", "fork"] if rep % 2 == 0 else ["fork", "cold"]
        for variant in order:
            seconds, losses = (cold if variant == "cold" else forked)(args.steps)
            reference = reference or losses
            same = losses == reference
            times[variant].append(seconds)
            print(f"   rep {rep} {variant:4s}: {seconds:.2f} s to step {args.steps}; losses "
                  f"{'the same to the bit' if same else 'DIFFER: ' + ' '.join(losses)}",
                  flush=True)
            if not same:
                return 1
    cold_s, fork_s = statistics.median(times["cold"]), statistics.median(times["fork"])
    print(f"\n   medians: cold {cold_s:.2f} s, fork {fork_s:.2f} s "
          f"(fork / cold {fork_s / cold_s:.2f})")
    print("PROTO " + json.dumps({"cold": times["cold"], "fork": times["fork"],
                                 "import_seconds": imported, "threads": threads}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
