"""Prototype (not ftgui code): how much cheaper could a checkpoint every 10 steps be?

    python benchmarks/proto_checkpoint_write.py [--steps 300] [--reps 5]

bare_loop.py's model, strategy and step function in one process; ms per training step, with a
checkpoint every 10 steps written by:
  none      no checkpoint (the reference)
  manager   tf.train.CheckpointManager.save (what ftgui's TrainingLoop.save did before the
            background writer; cluster strategies still do)
  function  tf.train.Checkpoint.write traced once in a tf.function (prefix passed as a string
            tensor): TensorFlow walks the object graph once, at trace time, not at every save
  thread    the step path only copies the variables into shadow variables (one tf.function,
            same object structure: a second model and optimizer); a background thread writes
            them with a traced Checkpoint.write (at most one save in flight): what
            ftgui.training.background_save does now
Stall per checkpoint = 10 x (ms/step - ms/step of none). Each variant's last checkpoint is
restored into the MirroredStrategy model through a fresh tf.train.Checkpoint
(assert_existing_objects_matched, as ftgui's trainer does) and compared with the values the
variables had when it was taken.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import argparse  # noqa: E402
import queue  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import header  # noqa: E402

INTERVAL = 10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    header(f"prototype checkpoint writers: {args.steps} steps per measurement, checkpoint every "
           f"{INTERVAL}, {args.reps} interleaved repetitions")
    import bare_loop
    import keras
    from keras import layers

    b = bare_loop.build()
    tf = b.tf
    strategy, model, optimizer, step_var = b.strategy, b.model, b.optimizer, b.step_var
    gbs, per = 64, 32

    distributed_step = bare_loop.make_step(tf, strategy, model, optimizer, step_var, gbs)

    xs, ys = b.x_train, b.y_train
    distribute = strategy.experimental_distribute_values_from_function

    def inputs(step):
        i = (step * gbs) % (len(xs) - gbs)
        xg, yg = xs[i:i + gbs], ys[i:i + gbs]

        def part(array):
            return lambda ctx: tf.constant(array[ctx.replica_id_in_sync_group * per:
                                                 (ctx.replica_id_in_sync_group + 1) * per])
        return distribute(part(xg)), distribute(part(yg))

    work = Path(tempfile.mkdtemp(prefix="ftgui-proto-ckpt-"))
    for sub in ("manager", "function", "thread"):
        (work / sub).mkdir()
    manager = tf.train.CheckpointManager(b.checkpoint, str(work / "manager"), max_to_keep=5,
                                         step_counter=step_var)
    function_write = tf.function(lambda prefix: b.checkpoint.write(prefix))

    # shadow copy for the background writer: same structure, plain variables, default strategy
    inputs_layer = keras.Input(shape=xs.shape[1:])
    h = layers.Dense(64, activation="relu")(layers.Flatten()(inputs_layer))
    shadow_model = keras.Model(inputs_layer, layers.Dense(10)(h))
    shadow_optimizer = keras.optimizers.Adam(learning_rate=0.01)
    shadow_optimizer.build(shadow_model.trainable_variables)
    shadow_step = tf.Variable(0, dtype=tf.int64, trainable=False)
    shadow = tf.train.Checkpoint(model=shadow_model, optimizer=shadow_optimizer, step=shadow_step)
    # A checkpoint that was never save()d has no save_counter variable and would not pass
    # ftgui's restore check (assert_existing_objects_matched): create it before tracing.
    _ = shadow.save_counter
    sources = model.variables + optimizer.variables + [step_var]
    targets = shadow_model.variables + shadow_optimizer.variables + [shadow_step]
    assert len(sources) == len(targets)

    @tf.function
    def snapshot():
        for source, target in zip(sources, targets, strict=True):
            target.assign(tf.convert_to_tensor(source))

    shadow_write = tf.function(lambda prefix: shadow.write(prefix))
    jobs: queue.Queue = queue.Queue()

    def writer():
        while (prefix := jobs.get()) is not None:
            shadow_write(tf.constant(prefix))
            jobs.task_done()

    threading.Thread(target=writer, daemon=True).start()
    last = {}

    def save(kind, step):
        if kind == "manager":
            manager.save(checkpoint_number=step)
            prefix = manager.latest_checkpoint
        elif kind == "function":
            prefix = str(work / "function" / f"ckpt-{step}")
            function_write(tf.constant(prefix))
        else:
            jobs.join()  # at most one save in flight
            snapshot()
            prefix = str(work / "thread" / f"ckpt-{step}")
            jobs.put(prefix)
        last[kind] = (prefix, [v.numpy().copy() for v in model.variables], int(step_var.numpy()))

    state = {"step": 0}

    def measure(kind, n):
        float(distributed_step(*inputs(state["step"])))
        started = time.perf_counter()
        for _ in range(n):
            state["step"] += 1
            float(distributed_step(*inputs(state["step"])))
            if kind != "none" and state["step"] % INTERVAL == 0:
                save(kind, state["step"])
        jobs.join()
        return 1000 * (time.perf_counter() - started) / n

    kinds = ["none", "manager", "function", "thread"]
    for kind in kinds[1:]:  # warm-up: traces and first saves
        save(kind, 0)
    jobs.join()
    results = {k: [] for k in kinds}
    for rep in range(args.reps):
        for kind in kinds[rep % 4:] + kinds[:rep % 4]:
            results[kind].append(measure(kind, args.steps))
    base = statistics.median(results["none"])
    interval_ms = INTERVAL * base
    print(f"   one {INTERVAL}-step interval without checkpoints: {interval_ms:.1f} ms")
    for kind in kinds:
        ms = statistics.median(results[kind])
        stall = INTERVAL * (ms - base)
        print(f"   {kind:9s} {ms:6.3f} ms/step  stall per checkpoint {stall:6.2f} ms = "
              f"{100 * stall / interval_ms:5.1f} % of the interval   "
              f"(runs: {', '.join(f'{v:.2f}' for v in results[kind])})")

    for kind in kinds[1:]:  # the checkpoints restore, exactly
        prefix, values, step = last[kind]
        current = [v.numpy().copy() for v in model.variables]
        fresh = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step_var)
        fresh.restore(prefix).assert_existing_objects_matched()
        same = all((a == c).all() for a, c in zip(values, [v.numpy() for v in model.variables],
                                                   strict=True))
        print(f"   {kind:9s} restore of {Path(prefix).name}: step {int(step_var.numpy())} "
              f"(expected {step}), weights identical: {same}")
        for variable, value in zip(model.variables, current, strict=True):
            variable.assign(value)
    jobs.put(None)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
