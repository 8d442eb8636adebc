"""The baseline: ftgui's training job written as a plain TensorFlow script, without ftgui.

Same model (Flatten → Dense(64, relu) → Dense(10)), optimizer (Adam 0.01, built eagerly in the
strategy scope), loss (`compute_average_loss` over the global batch, summed with
`strategy.reduce`), strategy (MirroredStrategy over N logical CPUs), data (scikit-learn digits,
80/20 split, step-indexed batches: a permutation per epoch seeded by (seed, epoch)), global batch,
seed and op determinism. Nothing of ftgui is imported, but with `--workload resnet`: then the
model is ftgui's built-in ResNet-style CNN and the data its synthetic 32×32×3 images (taken from
`ftgui.training.models.build` and `ftgui.training.data.load`, so that both sides train the same
layers on the same arrays); the loop, strategy, optimizer and checkpoints stay TensorFlow alone.

    python benchmarks/bare_loop.py --steps 1000                 # prints "step N TIME LOSS" per step
    python benchmarks/bare_loop.py --steps 1000 --no-fetch      # no float(loss) / print per step
    python benchmarks/bare_loop.py --input dataset              # tf.data + distribute_dataset
    python benchmarks/bare_loop.py --input sliced               # global batch, sliced in the step
    python benchmarks/bare_loop.py --ckpt-dir D --checkpoint-every 10 --kill-at-step 35
    python benchmarks/bare_loop.py --ckpt-dir D --checkpoint-every 10 --restore
    python benchmarks/bare_loop.py --ckpt-dir D --checkpoint-every 10 --restore --standby

The last line is `BENCH {json}` with the timings (first and last step, import, setup).
`--kill-at-step K` prints `killed K TIME` and SIGKILLs itself right after step K (after the
checkpoint of step K, if one is due), like ftgui's scheduled kill.
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()
_SPAWN_CLOCK = time.time()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")


def make_step(tf, strategy, model, optimizer, step_var, global_batch_size: int,
              sliced: bool = False):
    """The bare distributed step every benchmark compares ftgui with: `strategy.run` of a
    replica step (mean loss over the global batch, Adam update), the step counter, and
    `reduce(SUM)`; returns the traced function of (x, y) per-replica values, or with `sliced`
    of the whole global batch (x, y), each replica taking its contiguous rows inside the step
    (what ftgui's one-process step does since 2026-12-04)."""

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch_size)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    def sliced_replica_step(x, y):
        per = global_batch_size // strategy.num_replicas_in_sync
        first = tf.distribute.get_replica_context().replica_id_in_sync_group * per
        return replica_step(x[first:first + per], y[first:first + per])

    @tf.function
    def distributed_step(x, y):
        per_replica_loss = strategy.run(sliced_replica_step if sliced else replica_step,
                                        args=(x, y))
        step_var.assign_add(1)
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_loss, axis=None)

    return distributed_step


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--workload", choices=("mlp", "resnet"), default="mlp",
                   help="mlp: the MLP on digits; resnet: ftgui's ResNet-style CNN on its "
                        "synthetic images")
    p.add_argument("--no-fetch", action="store_true",
                   help="do not fetch the loss (float) nor print it every step")
    p.add_argument("--input", choices=("values", "dataset", "sliced"), default="values",
                   help="values: numpy slices per step via distribute_values_from_function "
                        "(a hand-written loop's recipe; ftgui's before 2026-12-04); dataset: "
                        "tf.data + experimental_distribute_dataset (the tf.distribute "
                        "tutorial's); sliced: the global batch as two tensors, each replica "
                        "slicing its rows in the step (what ftgui does now)")
    p.add_argument("--ckpt-dir", help="checkpoint directory (tf.train.CheckpointManager)")
    p.add_argument("--checkpoint-every", type=int, default=0)
    p.add_argument("--keep", type=int, default=5)
    p.add_argument("--restore", action="store_true", help="restore the newest checkpoint first")
    p.add_argument("--kill-at-step", type=int, default=0)
    p.add_argument("--standby", action="store_true",
                   help="after building everything, wait for a line on stdin, then restore "
                        "and train (a warm-standby prototype)")
    return p.parse_args(argv)


def load_digits_split():
    import numpy as np
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = digits.images.astype(np.float32) / 16.0
    y = digits.target.astype(np.int32)
    order = np.random.RandomState(0).permutation(len(x))
    n_val = int(round(len(x) * 0.2))
    train = order[n_val:]
    return x[train], y[train]


def load_synthetic_split():
    """ftgui's synthetic images, its 80/20 split: the training rows (x float32, y int32)."""
    from ftgui.training import data

    dataset = data.load("synthetic")
    return dataset.x_train, dataset.y_train


def build(replicas=2, lr=0.01, seed=42, workload="mlp"):
    """Devices, seeds, data, strategy, model, optimizer and step counter (call once per process).

    Returns a namespace: tf, np, strategy, model, optimizer, step_var, checkpoint, x_train, y_train.
    """
    import types

    import keras
    import numpy as np
    import tensorflow as tf
    from keras import layers

    cpu = tf.config.list_physical_devices("CPU")[0]
    if replicas > 1:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(replicas)])
    tf.keras.utils.set_random_seed(seed)
    tf.config.experimental.enable_op_determinism()

    x_train, y_train = load_digits_split() if workload == "mlp" else load_synthetic_split()
    devices = [d.name for d in tf.config.list_logical_devices("CPU")][:replicas]
    strategy = tf.distribute.MirroredStrategy(devices=devices)
    with strategy.scope():
        if workload == "resnet":
            from ftgui.training import models

            model = models.build("resnet", x_train.shape[1:], 10)
        else:
            inputs = keras.Input(shape=x_train.shape[1:])
            h = layers.Flatten()(inputs)
            h = layers.Dense(64, activation="relu")(h)
            model = keras.Model(inputs, layers.Dense(10)(h))
        optimizer = keras.optimizers.Adam(learning_rate=lr)
        optimizer.build(model.trainable_variables)
        step_var = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step_var)
    return types.SimpleNamespace(tf=tf, np=np, strategy=strategy, model=model,
                                 optimizer=optimizer, step_var=step_var, checkpoint=checkpoint,
                                 x_train=x_train, y_train=y_train)


def main(argv=None) -> int:
    args = parse_args(argv)
    import numpy as np
    import tensorflow as tf

    import_seconds = time.perf_counter() - _T0
    b = build(args.replicas, args.lr, args.seed, args.workload)
    strategy, model, optimizer, step_var = b.strategy, b.model, b.optimizer, b.step_var
    checkpoint, x_train, y_train = b.checkpoint, b.x_train, b.y_train
    replicas = strategy.num_replicas_in_sync
    gbs = args.batch_size
    per_replica = gbs // replicas

    manager = None
    restore_seconds = None
    go_clock = None
    if args.standby:  # warm standby: TensorFlow imported and the model built; wait for "go"
        print(f"standby ready {time.time():.6f}", flush=True)
        sys.stdin.readline()
        go_clock = time.time()
    if args.ckpt_dir:
        manager = tf.train.CheckpointManager(checkpoint, args.ckpt_dir, max_to_keep=args.keep,
                                             step_counter=step_var)
        if args.restore and manager.latest_checkpoint:
            t = time.perf_counter()
            checkpoint.restore(manager.latest_checkpoint).assert_existing_objects_matched()
            restore_seconds = time.perf_counter() - t

    distributed_step = make_step(tf, strategy, model, optimizer, step_var, gbs,
                                 sliced=args.input == "sliced")

    n = len(x_train)
    steps_per_epoch = n // gbs
    cache = {"epoch": -1, "order": None}

    def batch_of(step):  # 1-based global step -> global batch (step-indexed, like ftgui)
        epoch = (step - 1) // steps_per_epoch
        if epoch != cache["epoch"]:
            rng = np.random.Generator(np.random.PCG64([args.seed, epoch]))
            cache["order"], cache["epoch"] = rng.permutation(n), epoch
        start = ((step - 1) % steps_per_epoch) * gbs
        rows = cache["order"][start:start + gbs]
        return x_train[rows], y_train[rows]

    def distributed_batch_values(step):
        xg, yg = batch_of(step)
        if args.input == "sliced":
            with tf.device("/cpu:0"):
                return tf.constant(xg), tf.constant(yg)
        x = strategy.experimental_distribute_values_from_function(
            lambda ctx: tf.constant(xg[ctx.replica_id_in_sync_group * per_replica:
                                       (ctx.replica_id_in_sync_group + 1) * per_replica]))
        y = strategy.experimental_distribute_values_from_function(
            lambda ctx: tf.constant(yg[ctx.replica_id_in_sync_group * per_replica:
                                       (ctx.replica_id_in_sync_group + 1) * per_replica]))
        return x, y

    iterator = None
    if args.input == "dataset":
        dataset = (tf.data.Dataset.from_tensor_slices((x_train, y_train))
                   .shuffle(n, seed=args.seed, reshuffle_each_iteration=True).repeat()
                   .batch(gbs, drop_remainder=True).prefetch(2))
        iterator = iter(strategy.experimental_distribute_dataset(dataset))

    step = int(step_var.numpy())
    start_step = step
    setup_seconds = time.perf_counter() - _T0
    print(f"start after step {step} (import {import_seconds:.2f} s, setup {setup_seconds:.2f} s)",
          flush=True)
    first_step_clock = first_step_perf = last_perf = None
    loss = None
    while step < args.steps:
        step += 1
        x, y = next(iterator) if iterator is not None else distributed_batch_values(step)
        loss = distributed_step(x, y)
        fetch = not args.no_fetch or step == start_step + 1 or step == args.steps
        if fetch:
            value = float(loss)
            now, last_perf = time.time(), time.perf_counter()
            if not args.no_fetch:
                print(f"step {step} {now:.6f} {value}", flush=True)
        if first_step_perf is None:
            first_step_perf, first_step_clock = time.perf_counter(), time.time()
            if args.no_fetch:  # the restart benchmark needs the first step line regardless
                print(f"step {step} {now:.6f} {value}", flush=True)
        if manager is not None and args.checkpoint_every and (
                step % args.checkpoint_every == 0 or step == args.steps):
            manager.save(checkpoint_number=step)
        if step == args.kill_at_step:
            print(f"killed {step} {time.time():.6f}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
    done = step - start_step
    loop_seconds = (last_perf - first_step_perf) if first_step_perf else None
    summary = {
        "steps": done, "start_step": start_step, "final_loss": float(loss) if loss is not None
        else None, "import_seconds": import_seconds, "setup_seconds": setup_seconds,
        "restore_seconds": restore_seconds, "spawn_clock": _SPAWN_CLOCK, "go_clock": go_clock,
        "first_step_clock": first_step_clock,
        "first_to_last_seconds": loop_seconds,
        "steps_per_s": (done - 1) / loop_seconds if loop_seconds else None,
        "fetch": not args.no_fetch, "input": args.input, "replicas": replicas,
    }
    print("BENCH " + json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
