"""Entry point of one training process: `python -m ftgui.training RUN --role chief --attempt N …`.

Started by the supervisor, never by hand. Reads `RUN/config.toml`, builds the strategy, restores
the checkpoint it is given, trains, and exits with a status from `ftgui.core.record.exitcodes`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

_T0 = time.perf_counter()

from ftgui.child_python import module_argv  # noqa: E402 (before the slow imports)
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
    parser.add_argument("--restore-snapshot", action="store_true",
                        help="restore the run's newest in-memory snapshot (else --restore)")
    parser.add_argument("--fault", action="append", default=[], metavar="KIND@STEP:TARGET",
                        help="a planned fault for this process (kill, preempt, nan, hang)")
    parser.add_argument("--kill-at-step", type=int, default=0, help="same as --fault kill@K")
    parser.add_argument("--preempt-at-step", type=int, default=0,
                        help="same as --fault preempt@K")
    return parser.parse_args(argv)


def planned_faults(args: argparse.Namespace) -> list[tuple[str, int, str]]:
    """(kind, step, target) of every fault given on the command line; raises `ValueError`."""
    from ftgui.core.supervision.fault_plan import parse_arg

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
    from ftgui.streams import make_console_safe

    make_console_safe()  # a task started by hand (`ftgui worker`) has the user's locale
    args = parse_args(argv)
    from ftgui.core.record.events import EventWriter
    from ftgui.core.record.run_folder import RunFolder, RunFolderGone
    from ftgui.core.settings import config as configmod

    run_dir = args.run_dir.absolute()
    try:
        # the folder as it is now: removed or replaced later, it stops training (`folder_gone`)
        events = EventWriter(run_dir, args.attempt, folder=RunFolder(run_dir))
    except OSError as exc:
        return folder_gone(exc)
    try:
        config = configmod.load(run_dir)
        config.validate()
    except RunFolderGone as exc:
        return folder_gone(exc)
    except (OSError, ValueError) as exc:
        return refuse(events, args, exc)
    try:
        return train(run_dir, config, args, events)
    except RunFolderGone as exc:
        return folder_gone(exc)
    except Exception as exc:  # the traceback goes to the log; the supervisor shows this line
        from ftgui.core.record.process_output import error_sentence
        from ftgui.core.supervision.cluster import name_grpc_port

        error = error_sentence(type(exc).__name__, str(exc))
        try:
            events.emit("training_error", role=args.role, index=args.index,
                        error=name_grpc_port(error, os.environ.get("TF_CONFIG")))
        except RunFolderGone as gone:
            return folder_gone(gone)
        raise


def folder_gone(exc: OSError) -> int:
    """The run folder was removed or replaced (or never there): say so in one line on stderr
    (no event: nothing may be written there) and return RUN_FOLDER_GONE."""
    from ftgui.core.record import exitcodes

    print(f"error: {exc}", file=sys.stderr, flush=True)
    return exitcodes.RUN_FOLDER_GONE


def refuse(events, args, exc: Exception) -> int:
    """Record why this process will not train (a `training_error` event) and return BAD_CONFIG."""
    from ftgui.core.record import exitcodes

    events.emit("training_error", role=args.role, index=args.index, error=str(exc))
    print(f"error: {exc}", file=sys.stderr)
    return exitcodes.BAD_CONFIG


def build(config):
    """What a cold start builds before training, in its order: logical devices, seeds and op
    determinism, the dataset, the strategy and the `TrainState` (plus the parameter-server
    runner). Returns (dataset, strategy, state, runner or None); raises `ValueError` for
    devices or data that are not there."""
    import tensorflow as tf

    from ftgui.training import data as datamod
    from ftgui.training.step import TrainState
    from ftgui.training.strategies import configure_devices, make_strategy

    configure_devices(config)
    tf.keras.utils.set_random_seed(config.seed)
    tf.config.experimental.enable_op_determinism()
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
    return dataset, strategy, state, runner


def train(run_dir: Path, config, args, events) -> int:
    from ftgui.training.imports import import_tensorflow

    import_tensorflow()
    import tensorflow as tf  # the only package of ftgui that imports TensorFlow

    keep_autograph_files_apart()

    from ftgui.core.checkpoints import listing
    from ftgui.core.checkpoints.state_file import point_state_file
    from ftgui.core.supervision.standby import built_from
    from ftgui.training.actions.fault_hooks import Faults
    from ftgui.training.assemble import build_loop
    from ftgui.training.background_save import valid_up_to
    from ftgui.training.restore import (
        data_position,
        record_changes,
        restore_failed,
        restore_memory,
        restore_source,
    )

    import_seconds = time.perf_counter() - _T0
    from ftgui.training import slurm_task

    if slurm_task.under_slurm():  # a task of a Slurm job: its TF_CONFIG from the resolver
        try:
            slurm_task.configure(config, args.role, args.index)
        except (ValueError, RuntimeError, KeyError) as exc:
            return refuse(events, args, exc)
    if config.strategy == "parameter-server" and args.role in ("worker", "ps"):
        return serve(events, args, import_seconds)
    is_chief = args.role == "chief" or (config.strategy == "multi-worker" and args.index == 0)
    shadow = None
    if _WARM is not None and not _WARM.failed \
            and built_from(_WARM.config) == built_from(config.to_dict()):
        dataset, strategy, state, runner = _WARM.built  # a warm standby built them already
        shadow = _WARM.shadow
        state.plan_poison(config)  # the run's NaN plan, not the one it was built with
    else:
        try:
            dataset, strategy, state, runner = build(config)
        except ValueError as exc:
            return refuse(events, args, exc)
    # A cluster strategy's coordination service installs its own SIGTERM notifier, which
    # would swallow a preemption: take the signals back.
    REQUESTS.install()
    if is_chief:  # before a restore from memory writes its checkpoint (no process saves now)
        removed = listing.remove_leftovers(run_dir)
        if removed:
            print(f"removed leftovers of interrupted saves: {', '.join(removed)}", flush=True)
    memory = restore_memory(state, dataset, config, run_dir, args, events) \
        if args.restore_snapshot and is_chief and not state.saves_collectively else None
    if args.restore and memory is None:
        from ftgui.core.settings.user_code import data_changed, resume_problem

        meta = listing.read_info(run_dir / args.restore).meta
        # a dataset function's data is compared here, where it was computed (its file may be
        # unchanged while what it reads is not)
        problem = resume_problem(config, meta) or data_changed(
            config, meta, dataset.info.get("fingerprint") or "")
        if problem:  # a model or dataset changed since the checkpoint: no exact resume
            return refuse(events, args, ValueError(problem))
        restore_started = time.perf_counter()
        try:
            state.restore(run_dir / args.restore)
        except (tf.errors.OpError, ValueError, AssertionError) as exc:
            return restore_failed(run_dir, args, events, exc)
        start = data_position(run_dir, args.restore, state.global_step, dataset, config)
        if is_chief:
            events.emit("resumed", from_step=state.global_step, checkpoint=args.restore,
                        source=restore_source(run_dir / args.restore),
                        optimizer_iterations=int(state.optimizer.iterations.numpy()),
                        restore_seconds=time.perf_counter() - restore_started)
            record_changes(run_dir, args.restore, config, events)
    elif memory is not None:  # its checkpoint is written once training runs
        start = memory.position
    else:
        start = None
    if is_chief:
        directory = listing.checkpoint_dir(run_dir)
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
                          runner=runner, role=args.role, index=args.index, is_chief=is_chief,
                          start=start, shadow=shadow, restored=memory)
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


def serve(events, args, import_seconds: float) -> int:
    """A parameter-server cluster's worker or ps task: serve TensorFlow until killed."""
    from ftgui.training.parameter_server import serve_forever

    events.emit("training_started", role=args.role, index=args.index, pid=os.getpid(),
                start_step=None, strategy="parameter-server", import_seconds=import_seconds,
                setup_seconds=time.perf_counter() - _T0)
    serve_forever()
    return 0


_WARM = None  # a fully warm standby's `warm_standby.Prepared`, used by `train` if it fits
_FORKED = False  # forked from the fork server (`fork_server`): its imports were the server's


def standby(run_dir: Path) -> int:
    """A warm standby of the run in `run_dir`: import TensorFlow and the trainer now; for a
    one-process strategy also build the state and run its step once (`warm_standby`); say so
    with a `standby_ready` event (`prepared`, `import_seconds`, `prepare_seconds`), then wait
    for one order.

    The order is one JSON line on stdin, `{"argv": [...], "env": {...}}`: the arguments of
    `main` and the environment (TF_CONFIG, …) of the process it replaces; a spare trainer's
    (`ftgui.core.supervision.spare`, whose `run_dir` is a scratch folder) also has `"log"`,
    the run's log file it writes to from then on. A prepared standby
    only restores and trains; one whose run's configuration changed since it was built
    replaces itself (same pid) by a cold trainer — correctness first. EOF without an order
    (the supervisor dismissed it or died) ends it quietly.
    """
    global _T0, _WARM
    import json

    from ftgui.training.imports import import_tensorflow

    import_tensorflow()  # for its cost

    keep_autograph_files_apart()

    from ftgui.core.record.events import emit
    from ftgui.core.settings import config as configmod
    from ftgui.core.supervision import priority
    from ftgui.core.supervision.standby import MEMBER_ENV, built_from, config_fingerprint
    from ftgui.training.imports import import_trainer_modules

    import_trainer_modules()

    import_seconds = time.perf_counter() - _T0
    member = os.environ.pop(MEMBER_ENV, None) is not None  # of a standby cluster
    own_tf_config = os.environ.get("TF_CONFIG") if member else None  # its own cluster
    if not member and _order_waiting():  # a restart came first: it waits for no warm-up
        print("standby: ordered or dismissed before it was ready: no warm-up (an order "
              "builds as a cold start would, TensorFlow already imported)", flush=True)
    else:
        _WARM = _prepare(run_dir, cluster_member=member)
    prepared = bool(_WARM and not _WARM.failed and _WARM.warmed)
    built = "" if _WARM is None else \
        f" and {_WARM.seconds:.2f} s building{' and tracing' if _WARM.warmed else ''}"
    # before the event: a spare's log is read once the event is seen
    print(f"standby: ready after {import_seconds:.2f} s of imports{built}", flush=True)
    emit(run_dir, "standby_ready", -1, pid=os.getpid(), import_seconds=import_seconds,
         forked=_FORKED,
         prepared=prepared, prepared_for=config_fingerprint(_WARM.config) if prepared else None,
         prepare_seconds=_WARM.seconds if _WARM else None)
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    order = json.loads(line)
    if order.get("log"):  # a spare trainer: its folder is not the run's
        _log_to(Path(order["log"]))
    if not priority.restore():  # started niced only where it may raise itself back
        print("standby: cannot take back the trainer's CPU priority", flush=True)
    os.environ.update(order.get("env", {}))
    if member and prepared:
        os.environ["TF_CONFIG"] = own_tf_config  # the cluster its strategy has formed
    ordered_dir = parse_args(order["argv"]).run_dir  # the run's folder: a spare's is its own
    ordered = _config_dict(configmod, ordered_dir)
    if _WARM is not None and (_WARM.failed or ordered is None
                              or built_from(ordered) != built_from(_WARM.config)):
        print("standby: " + ("its preparation failed" if _WARM.failed else
                             "the run's configuration changed since it was built")
              + ": starting cold", flush=True)
        os.execv(sys.executable, [*module_argv("ftgui.training"), *order["argv"]])
    _T0 = time.perf_counter()  # nothing of the import is on this attempt's critical path
    print(f"standby: activated as {' '.join(order['argv'][1:])}", flush=True)
    return main(order["argv"])


def _log_to(path: Path) -> None:
    """Send this process's stdout and stderr (file descriptors 1 and 2) to `path`, appended."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _config_dict(configmod, run_dir: Path) -> dict | None:
    try:
        return configmod.load(run_dir).to_dict()
    except (OSError, ValueError):
        return None  # `main` refuses it with its one-line reason


def _prepare(run_dir: Path, cluster_member: bool = False):
    """Build and warm this run's state if its strategy allows (`warm_standby.Prepared`), else
    None (a cluster strategy outside a standby cluster, or a configuration that does not
    load: the order decides). `cluster_member`: started with a `TF_CONFIG` of its own (a
    standby cluster's worker: building forms that cluster). A build that fails leaves
    TensorFlow half set up: the `Prepared` then says why (`failed`) and the order is run by
    a cold trainer."""
    from ftgui.core.checkpoints import listing
    from ftgui.core.settings import config as configmod
    from ftgui.training import warm_standby

    started = time.perf_counter()
    try:
        config = configmod.load(run_dir)
        config.validate()
    except (OSError, ValueError) as exc:
        print(f"standby: not prepared ({exc})", flush=True)
        return None
    if not warm_standby.can_prepare(config, cluster_member):
        return None
    if configmod.load_record(run_dir).get("trace_dependent"):
        print("standby: not prepared (the model's step changes each time it is traced: it "
              "is built and traced after the order, as in a cold start)", flush=True)
        return None
    # an order that came meanwhile takes the state as built, its step traced at its first
    # call and the checkpoint's shadow copy made by the checkpoint action, as in a cold start
    ordered = (lambda: False) if cluster_member else _order_waiting

    def as_built(built):
        return warm_standby.Prepared(config.to_dict(), built, None,
                                     time.perf_counter() - started, warmed=False)

    try:
        built = build(config)
        if ordered():
            return as_built(built)
        # No warm-up restore in a standby cluster: a worker that had restored a checkpoint
        # retention deleted since then failed its order's restore with NotFoundError naming
        # the deleted one (TensorFlow 2.21, MultiWorkerMirroredStrategy).
        newest = None if cluster_member else listing.newest_valid(run_dir)
        warm_standby.run_one_step_and_undo(built[2], built[0], config,
                                           newest.prefix if newest else None, stop=ordered)
        if ordered():
            return as_built(built)
        # a cluster saves collectively, without the background writer's shadow copy
        shadow = None if cluster_member else warm_standby.shadow_for(built[2], built[0],
                                                                      config)
    except Exception as exc:  # noqa: BLE001 (the order will say it, from a cold start)
        print(f"standby: preparing failed ({type(exc).__name__}: {exc})", flush=True)
        return warm_standby.Prepared(config.to_dict(), (), None,
                                     time.perf_counter() - started, failed=str(exc))
    return warm_standby.Prepared(config.to_dict(), built, shadow, time.perf_counter() - started)


def _order_waiting() -> bool:
    """Whether the supervisor's order (or the end of stdin: dismissed) is already waiting
    while the standby is still importing or building: a restart that took a standby before
    it was ready then waits for no warm-up it would not need (the ResNet's warm-up — a step,
    a restore, the shadow copy — took 11 s beside another standby's import; a cold start's
    build and first step 5 s)."""
    import select

    try:
        return bool(select.select([sys.stdin], [], [], 0)[0])
    except (OSError, ValueError):
        return False


def exit_now(code: int) -> None:
    """Flush and leave without interpreter teardown: TensorFlow's takes seconds, and every one of
    them delays the supervisor noticing a preemption (all events and checkpoints are on disk)."""
    sys.stdout.flush()
    sys.stderr.flush()
    remove_autograph_files()
    os._exit(code)


AUTOGRAPH_PREFIX = "__autograph_generated_file"  # tensorflow/python/autograph/pyct/loader.py


def keep_autograph_files_apart() -> Path | None:
    """Have TensorFlow's autograph write the source files of the functions it converts into
    this process's own folder (`processes.autograph_folder`, mode 0700; where that name is
    taken by something else, a fresh `…-<pid>-<random>` one) instead of the temporary folder
    itself. Autograph deletes them in an `atexit` handler, which neither `os._exit` nor a
    SIGKILL runs: a killed trainer's files are then deleted with its folder by the supervisor
    (`processes.sweep_autograph_folders`), where before ~12 files per killed process stayed in
    /tmp for good. Autograph's loader (`tensorflow/python/autograph/pyct/loader.py`, TF 2.21)
    calls `tempfile.NamedTemporaryFile` through its module's `tempfile`; that name is given a
    `dir`. Returns the folder, or None where the loader is not as expected (files then go to
    the temporary folder, as before)."""
    import tempfile
    import types

    from ftgui.core.supervision.processes import autograph_folder, own_private_folder

    try:
        from tensorflow.python.autograph.pyct import loader
    except ImportError:
        return None
    if isinstance(getattr(loader, "tempfile", None), types.SimpleNamespace):
        return loader.tempfile.folder  # done already (a standby given its order)
    if getattr(loader, "tempfile", None) is not tempfile:
        return None
    folder = autograph_folder(os.getpid())
    if not own_private_folder(folder):
        folder = Path(tempfile.mkdtemp(prefix=f"{folder.name}-"))

    def named_temporary_file(*args, **kwargs):
        if not own_private_folder(folder):  # deleted meanwhile: by a /tmp cleaner, say
            return tempfile.NamedTemporaryFile(*args, **kwargs)
        return tempfile.NamedTemporaryFile(*args, **{"dir": folder, **kwargs})

    loader.tempfile = types.SimpleNamespace(NamedTemporaryFile=named_temporary_file,
                                            folder=folder)
    return folder


def remove_autograph_files() -> int:
    """Delete the temporary files TensorFlow's autograph wrote for this process's converted
    functions (it imports each as a module named after its file, and deletes them in an
    `atexit` handler, which `os._exit` skips), and this process's autograph folder. Returns
    how many files were deleted."""
    removed = 0
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) if name.startswith(AUTOGRAPH_PREFIX) else None
        if path:
            try:
                os.unlink(path)
                removed += 1
            except OSError:
                pass
    loader = sys.modules.get("tensorflow.python.autograph.pyct.loader")
    folder = getattr(getattr(loader, "tempfile", None), "folder", None)
    if folder is not None:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return removed


def _run_entry() -> int:
    if sys.argv[1:2] == ["--fork-server"]:
        from ftgui.training.fork_server import serve

        return serve(int(sys.argv[2]), _run_entry, exit_now, sys.modules[__name__])
    if sys.argv[1:2] == ["--standby"]:
        return standby(Path(sys.argv[2]).absolute())
    return main()


if __name__ == "__main__":
    try:
        status = _run_entry()
    except Exception:  # noqa: BLE001 (reported as `training_error` already)
        # The traceback goes to the log, then the process leaves at once: a multi-worker
        # survivor's teardown took seconds, during which the supervisor waits for it
        # (its just-in-time checkpoint is already on disk).
        import traceback

        traceback.print_exc()
        status = 1
    exit_now(status)
