"""Can a MultiWorkerMirroredStrategy cluster be formed in advance, as a standby, and what does it
save? A prototype on bare TensorFlow (nothing of ftgui), run by hand:

    python benchmarks/proto_standby_cluster.py [--reps 2] [--idle 20]

A one-process run first writes a checkpoint of step 50 (model Dense 64 -> 64 -> 10, Adam 0.01,
global batch 64, seeded data). Then, per variant, two worker processes on localhost restore it
and train step 51; each prints the seconds from the order to that step done, and its loss:

- plain: the order starts two new processes (import TensorFlow, form the cluster, build the model
  and optimizer, restore, trace and run the step) - a cold restart;
- imported: two processes have imported TensorFlow and wait for the order; then the same (what
  ftgui's standbys do for a cluster today);
- formed: two processes have imported TensorFlow, formed their own cluster (`TF_CONFIG` with
  their own ports), built the model and optimizer, traced the step by running it once and
  putting every variable back; they wait `--idle` seconds (the cluster must survive idling),
  then the order: restore and step.

Every variant must print the same loss to the bit: a formed cluster's warm-up step must leave
no trace. The last line is `PROTO {json}`.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bare_loop import make_step  # noqa: E402

CKPT_STEP = 50
GLOBAL_BATCH = 64


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


# ------------------------------------------------------------------------------ one process
def build(tf, strategy):
    import keras

    with strategy.scope():
        model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(64, activation="relu"),
                                  keras.layers.Dense(10)])
        optimizer = keras.optimizers.Adam(0.01)
        optimizer.build(model.trainable_variables)  # eagerly: DESIGN.md section 4
        step = tf.Variable(0, dtype=tf.int64, trainable=False)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step)

    train = make_step(tf, strategy, model, optimizer, step, GLOBAL_BATCH)
    variables = [*model.variables, *optimizer.variables, step]
    return checkpoint, train, variables


def batch(tf, strategy, global_step: int):
    import numpy as np

    rng = np.random.default_rng(0)
    x_all = rng.normal(size=(1000, 64)).astype("float32")
    y_all = rng.integers(0, 10, size=1000).astype("int32")
    rows = ((global_step - 1) * GLOBAL_BATCH + np.arange(GLOBAL_BATCH)) % 1000
    x, y = x_all[rows], y_all[rows]
    per = GLOBAL_BATCH // strategy.num_replicas_in_sync

    def local(ctx, array):
        first = ctx.replica_id_in_sync_group * per
        return tf.constant(array[first:first + per])

    distribute = strategy.experimental_distribute_values_from_function
    return distribute(lambda c: local(c, x)), distribute(lambda c: local(c, y))


def prepare(prefix: str) -> None:
    import tensorflow as tf

    tf.keras.utils.set_random_seed(42)
    tf.config.experimental.enable_op_determinism()
    strategy = tf.distribute.get_strategy()
    checkpoint, train, _ = build(tf, strategy)
    for s in range(1, CKPT_STEP + 1):
        train(*batch(tf, strategy, s))
    checkpoint.write(prefix)


def worker(variant: str, prefix: str, order_time: float | None) -> None:
    report = {}
    started = time.time()
    import tensorflow as tf

    report["import_s"] = time.time() - started
    tf.keras.utils.set_random_seed(42)
    tf.config.experimental.enable_op_determinism()

    def form():
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        return (strategy, *build(tf, strategy))

    if variant == "formed":
        began = time.time()
        strategy, checkpoint, train, variables = form()
        before = [v.numpy() for v in variables]
        train(*batch(tf, strategy, 1))  # traces the step and runs its collectives once
        for v, value in zip(variables, before, strict=True):
            v.assign(value)
        report["form_s"] = time.time() - began
    if variant != "plain":
        print("READY", flush=True)
        order_time = float(sys.stdin.readline())
    if variant != "formed":
        strategy, checkpoint, train, variables = form()
    checkpoint.read(prefix).assert_existing_objects_matched()
    loss = float(train(*batch(tf, strategy, CKPT_STEP + 1)))
    report.update(first_step_s=time.time() - order_time, loss=loss.hex(),
                  step=int(variables[-1].numpy()))
    print("FIRST " + json.dumps(report), flush=True)


# ------------------------------------------------------------------------------ the launcher
def run_variant(variant: str, prefix: str, idle: float) -> dict:
    ports = free_ports(2)
    cluster = {"worker": [f"localhost:{p}" for p in ports]}
    env_base = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    procs = []

    def spawn(order_time=None):
        for index in range(2):
            env = {**env_base, "TF_CONFIG": json.dumps(
                {"cluster": cluster, "task": {"type": "worker", "index": index}})}
            argv = [sys.executable, __file__, "--worker", variant, "--prefix", prefix]
            if order_time is not None:
                argv += ["--order-time", repr(order_time)]
            procs.append(subprocess.Popen(argv, env=env, stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                          text=True))

    if variant == "plain":
        spawn(time.time())
    else:
        spawn()
        for p in procs:
            line = p.stdout.readline()
            if line.strip() != "READY":
                raise RuntimeError(f"{variant}: a worker did not get ready ({line!r})")
        time.sleep(idle if variant == "formed" else 1.0)
        order = repr(time.time()) + "\n"
        for p in procs:
            p.stdin.write(order)
            p.stdin.flush()
    reports = []
    for p in procs:
        out, _ = p.communicate(timeout=300)
        lines = [line for line in out.splitlines() if line.startswith("FIRST ")]
        if p.returncode != 0 or not lines:
            raise RuntimeError(f"{variant}: a worker exited {p.returncode}: {out[-300:]}")
        reports.append(json.loads(lines[0][6:]))
    return {"first_step_s": max(r["first_step_s"] for r in reports),
            "form_s": max(r.get("form_s", 0.0) for r in reports),
            "losses": sorted({r["loss"] for r in reports}),
            "steps": sorted({r["step"] for r in reports})}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--idle", type=float, default=20.0,
                        help="seconds a formed cluster idles before its order (default 20)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--prefix", help=argparse.SUPPRESS)
    parser.add_argument("--order-time", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--prepare", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if args.prepare:
        prepare(args.prepare)
        return 0
    if args.worker:
        worker(args.worker, args.prefix, args.order_time)
        return 0
    work = Path(tempfile.mkdtemp(prefix="ftgui-proto-cluster-"))
    prefix = str(work / f"ckpt-{CKPT_STEP}")
    subprocess.run([sys.executable, __file__, "--prepare", prefix], check=True)
    results: dict[str, list[dict]] = {"plain": [], "imported": [], "formed": []}
    for rep in range(args.reps):
        for variant in results:
            r = run_variant(variant, prefix, args.idle)
            results[variant].append(r)
            print(f"rep {rep} {variant:8s} order -> step {CKPT_STEP + 1} done "
                  f"{r['first_step_s']:6.2f} s  (forming beforehand {r['form_s']:.2f} s)  "
                  f"loss {r['losses']}  step {r['steps']}", flush=True)
    medians = {v: statistics.median(r["first_step_s"] for r in rs) for v, rs in results.items()}
    losses = {loss for rs in results.values() for r in rs for loss in r["losses"]}
    for variant, value in medians.items():
        print(f"{variant:8s} median {value:6.2f} s = {value / medians['plain']:.3f} x plain")
    print(f"one loss for every variant and worker: {len(losses) == 1} ({sorted(losses)})")
    print("PROTO " + json.dumps({"medians": medians, "same_loss": len(losses) == 1}))
    return 0 if len(losses) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
