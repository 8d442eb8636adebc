"""Entry point of one training process: `python -m ftgui.training RUN --role chief --attempt N …`.

Started by the supervisor, never by hand. Reads `RUN/config.toml`, builds the strategy, restores
the checkpoint it is given, trains, and exits with a status from `ftgui.core.exitcodes`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

_T0 = time.perf_counter()

from ftgui.training.signals import REQUESTS  # noqa: E402 (before the slow imports)

REQUESTS.install()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ftgui.training")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--role", default="chief")
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--attempt", type=int, default=0)
    parser.add_argument("--restore", help="checkpoint prefix in RUN, e.g. checkpoints/ckpt-30")
    parser.add_argument("--fault", action="append", default=[], metavar="KIND@STEP:TARGET",
                        help="a planned fault for this process (kill, preempt, nan, hang)")
    parser.add_argument("--kill-at-step", type=int, default=0, help="same as --fault kill@K")
    parser.add_argument("--preempt-at-step", type=int, default=0,
                        help="same as --fault preempt@K")
    return parser.parse_args(argv)


def planned_faults(args: argparse.Namespace) -> list[tuple[str, int, str]]:
    """(kind, step, target) of every fault given on the command line; raises `ValueError`."""
    from ftgui.core.faults import parse_arg

    own = "chief" if args.role == "chief" else f"{args.role}:{args.index}"
    planned = []
    for text in args.fault:
        spec, _, target = text.partition(":")
        kind, step = parse_arg(spec)
        planned.append((kind, step, target or own))
    for kind, step in (("kill", args.kill_at_step), ("preempt", args.preempt_at_step)):
        if step:
            planned.append((kind, step, own))
    return planned


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from ftgui.core import config as configmod
    from ftgui.core.events import EventWriter

    run_dir = args.run_dir.absolute()
    events = EventWriter(run_dir, args.attempt)
    try:
        config = configmod.load(run_dir)
        config.validate()
    except (OSError, ValueError) as exc:
        return refuse(events, args, exc)
    try:
        return train(run_dir, config, args, events)
    except Exception as exc:  # the traceback goes to the log; the supervisor shows this line
        lines = str(exc).strip().splitlines() or [""]
        events.emit("training_error", role=args.role, index=args.index,
                    error=f"{type(exc).__name__}: {lines[0]}")
        raise


def refuse(events, args, exc: Exception) -> int:
    """Record why this process will not train (a `training_error` event) and return BAD_CONFIG."""
    from ftgui.core import exitcodes

    events.emit("training_error", role=args.role, index=args.index, error=str(exc))
    print(f"error: {exc}", file=sys.stderr)
    return exitcodes.BAD_CONFIG


def train(run_dir: Path, config, args, events) -> int:
    import tensorflow as tf  # the only package of ftgui that imports TensorFlow

    from ftgui.core import checkpoints
    from ftgui.training import data as datamod
    from ftgui.training.actions.faults import Faults
    from ftgui.training.assemble import build_loop
    from ftgui.training.background_save import point_state_file, valid_up_to
    from ftgui.training.step import TrainState
    from ftgui.training.strategies import configure_devices, make_strategy

    import_seconds = time.perf_counter() - _T0
    if config.strategy == "parameter-server" and args.role in ("worker", "ps"):
        return serve(events, args, import_seconds)
    configure_devices(config)
    tf.keras.utils.set_random_seed(config.seed)
    tf.config.experimental.enable_op_determinism()
    is_chief = args.role == "chief" or (config.strategy == "multi-worker" and args.index == 0)
    try:
        dataset = datamod.load(config.dataset, config.task)
        runner = None
        if config.strategy == "parameter-server":
            from ftgui.training import parameter_server

            strategy, coordinator = parameter_server.make_strategy()
            state = TrainState(strategy, config, dataset)
            runner = parameter_server.ScheduledSteps(state, coordinator, dataset.x_train,
                                                     dataset.y_train)
        else:
            strategy = make_strategy(config)
            state = TrainState(strategy, config, dataset)
    except ValueError as exc:
        return refuse(events, args, exc)
    # A cluster strategy's coordination service installs its own SIGTERM notifier, which
    # would swallow a preemption: take the signals back.
    REQUESTS.install()
    if args.restore:
        from ftgui.core.user_code import resume_problem

        problem = resume_problem(config, checkpoints.inspect(run_dir / args.restore).meta)
        if problem:  # a model or dataset file changed since the checkpoint: no exact resume
            return refuse(events, args, ValueError(problem))
        restore_started = time.perf_counter()
        try:
            state.restore(run_dir / args.restore)
        except (tf.errors.OpError, ValueError, AssertionError) as exc:
            return _restore_failed(run_dir, args, events, exc)
        if is_chief:
            events.emit("resumed", from_step=state.global_step, checkpoint=args.restore,
                        optimizer_iterations=int(state.optimizer.iterations.numpy()),
                        restore_seconds=time.perf_counter() - restore_started)
    if is_chief:
        removed = checkpoints.remove_leftovers(run_dir)  # no other process saves now
        if removed:
            print(f"removed leftovers of interrupted saves: {', '.join(removed)}", flush=True)
        directory = checkpoints.checkpoint_dir(run_dir)
        point_state_file(directory, valid_up_to(directory, state.global_step))
    if config.loop == "fit":
        from ftgui.training.fit_loop import run_fit

        events.emit("training_started", role=args.role, index=args.index, pid=os.getpid(),
                    start_step=None, strategy=config.strategy, loop="fit",
                    replicas=strategy.num_replicas_in_sync, import_seconds=import_seconds,
                    setup_seconds=time.perf_counter() - _T0)
        return run_fit(state, dataset, config, run_dir, events, Faults(planned_faults(args)))
    try:
        loop = build_loop(state, dataset, config, run_dir, events, Faults(planned_faults(args)),
                          runner=runner, role=args.role, index=args.index, is_chief=is_chief)
    except ValueError as exc:  # e.g. a global batch larger than the training split
        return refuse(events, args, exc)
    events.emit("training_started", role=args.role, index=args.index, pid=os.getpid(),
                start_step=state.global_step, strategy=config.strategy,
                replicas=strategy.num_replicas_in_sync,
                devices=_devices_of(strategy),
                import_seconds=import_seconds, setup_seconds=time.perf_counter() - _T0)
    print(f"{config.strategy} with {strategy.num_replicas_in_sync} replica(s); "
          f"starting after step {state.global_step}", flush=True)
    return loop.run()


def _devices_of(strategy) -> list[str]:
    """The devices the strategy's replicas run on (the default strategy has no such list: it
    runs where TensorFlow places ops, the first device)."""
    try:
        return list(strategy.extended.worker_devices)
    except RuntimeError:
        import tensorflow as tf

        return [tf.config.list_logical_devices()[0].name]


def _restore_failed(run_dir: Path, args, events, exc: Exception) -> int:
    """The checkpoint would not restore. Only when its own files explain it (see
    `restore.damage_of`) is it marked damaged, so the next attempt takes the one before it;
    otherwise (another model, other shapes, a path problem) it stays valid and this process
    refuses, as for a bad configuration."""
    from ftgui.core import checkpoints, exitcodes
    from ftgui.training.restore import damage_of, one_line

    reason = one_line(exc)
    damage = damage_of(run_dir / args.restore)
    if not damage:
        error = f"checkpoint {args.restore} is intact but does not restore here ({reason})"
        events.emit("training_error", role=args.role, index=args.index, error=error)
        print(f"error: {error}", file=sys.stderr, flush=True)
        return exitcodes.BAD_CONFIG
    checkpoints.mark_damaged(run_dir / args.restore, damage)
    events.emit("training_error", role=args.role, index=args.index,
                error=f"checkpoint {args.restore} is damaged and now marked invalid ({damage})")
    print(f"error: cannot restore {args.restore}: {damage}", file=sys.stderr, flush=True)
    return exitcodes.DAMAGED_CHECKPOINT


def serve(events, args, import_seconds: float) -> int:
    """A parameter-server cluster's worker or ps task: serve TensorFlow until killed."""
    from ftgui.training.parameter_server import serve_forever

    events.emit("training_started", role=args.role, index=args.index, pid=os.getpid(),
                start_step=None, strategy="parameter-server", import_seconds=import_seconds,
                setup_seconds=time.perf_counter() - _T0)
    serve_forever()
    return 0


def standby(run_dir: Path) -> int:
    """A warm standby of the run in `run_dir`: import TensorFlow and the trainer now, say so
    with a `standby_ready` event, then wait for one order.

    The order is one JSON line on stdin, `{"argv": [...], "env": {...}}`: the arguments of
    `main` and the environment (TF_CONFIG, …) of the process it replaces. Importing costs
    3–6 s here; a standby that is told to go skips it and reaches its first resumed step in
    about 1 s. EOF without an order
    (the supervisor dismissed it or died) ends it quietly. TensorFlow's runtime is not started
    before the order, so logical devices and collectives can still be configured.
    """
    global _T0
    import json

    import keras  # noqa: F401 (imported for its cost)
    import tensorflow  # noqa: F401

    from ftgui.core.events import emit
    from ftgui.training import (  # noqa: F401
        assemble,
        data,
        models,
        parameter_server,
        strategies,
    )

    import_seconds = time.perf_counter() - _T0
    emit(run_dir, "standby_ready", -1, pid=os.getpid(), import_seconds=import_seconds)
    print(f"standby: ready after {import_seconds:.2f} s of imports", flush=True)
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    order = json.loads(line)
    os.environ.update(order.get("env", {}))
    _T0 = time.perf_counter()  # nothing of the import is on this attempt's critical path
    print(f"standby: activated as {' '.join(order['argv'][1:])}", flush=True)
    return main(order["argv"])


def exit_now(code: int) -> None:
    """Flush and leave without interpreter teardown: TensorFlow's takes seconds, and every one of
    them delays the supervisor noticing a preemption (all events and checkpoints are on disk)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--standby"]:
        exit_now(standby(Path(sys.argv[2]).absolute()))
    exit_now(main())
