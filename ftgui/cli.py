"""The `ftgui` command: open the app, or train, list checkpoints and devices headless."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

from ftgui.core import checkpoints, devices
from ftgui.core import config as configmod
from ftgui.core.config import ConfigError, RunConfig

# command-line flag -> RunConfig field
FLAG_FIELDS = {
    "strategy": "strategy", "replicas": "replicas", "gpus": "gpus", "workers": "workers",
    "ps": "ps", "steps": "steps", "batch_size": "global_batch_size", "lr": "learning_rate",
    "checkpoint_every": "checkpoint_every", "keep": "keep", "seed": "seed",
    "dataset": "dataset", "model": "model", "kill_at_step": "kill_at_step",
    "preempt_at_step": "preempt_at_step", "fault_target": "fault_target",
    "nan_at_step": "nan_at_step", "hang_at_step": "hang_at_step",
    "kill_after_seconds": "kill_after_seconds", "watchdog_seconds": "watchdog_seconds",
    "chaos_faults": "chaos_faults", "chaos_kinds": "chaos_kinds", "chaos_seed": "chaos_seed",
    "warm_standby": "warm_standby", "cluster": "cluster", "loop": "loop",
    "auto_recover": "auto_recover", "max_restarts": "max_restarts",
    "restart_backoff": "restart_backoff",
}


FIELD_FLAGS = {field: "--" + flag.replace("_", "-") for flag, field in FLAG_FIELDS.items()}


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad command line gets one line (no usage dump) and exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="ftgui", description="Fault-tolerant distributed TensorFlow training, made visible.",
        allow_abbrev=False,
    )
    sub = parser.add_subparsers(dest="command")
    opener = sub.add_parser("open", allow_abbrev=False, help="open the app on an existing run")
    opener.add_argument("run_dir", type=Path)

    train = sub.add_parser("train", allow_abbrev=False, help="run training headless until it ends")
    train.add_argument("run_dir", type=Path)
    _add_config_flags(train)
    train.add_argument("--resume", action="store_true",
                       help="continue from the newest valid checkpoint")
    train.add_argument("--from-step", type=int, help="with --resume: fork from this checkpoint")
    train.add_argument("--quiet", action="store_true", help="print only the final line")

    ckpts = sub.add_parser("checkpoints", allow_abbrev=False, help="list a run's checkpoints")
    ckpts.add_argument("run_dir", type=Path)
    ckpts.add_argument("--json", action="store_true")

    worker = sub.add_parser(
        "worker", help="run one task of a cluster on this machine (the command ftgui prints)",
        description="Run one task of a run's cluster here. ftgui prints the exact command, "
        "with TF_CONFIG, for each task whose address is another machine.",
    )
    worker.add_argument("task_args", nargs=argparse.REMAINDER,
                        help="RUN --role R --index I --attempt N [...]")

    devices = sub.add_parser("devices", allow_abbrev=False, help="list TensorFlow's devices")
    devices.add_argument("--json", action="store_true")
    return parser


def _add_config_flags(parser: argparse.ArgumentParser) -> None:
    d = RunConfig()
    add = parser.add_argument
    add("--strategy", choices=configmod.STRATEGIES, help=f"default: {d.strategy}")
    add("--replicas", type=int, help=f"logical CPU replicas of mirrored (default {d.replicas})")
    add("--gpus", type=int, help="GPUs for mirrored / one-device (default 0: CPU)")
    add("--workers", type=int, help=f"workers (default {d.workers})")
    add("--ps", type=int, help=f"parameter servers (default {d.ps})")
    add("--steps", type=int, help=f"global steps (default {d.steps})")
    add("--batch-size", type=int, help=f"global batch size (default {d.global_batch_size})")
    add("--lr", type=float, help=f"learning rate (default {d.learning_rate})")
    add("--checkpoint-every", type=int, help=f"steps (default {d.checkpoint_every})")
    add("--keep", type=int, help=f"checkpoints kept (default {d.keep})")
    add("--seed", type=int, help=f"default {d.seed}")
    add("--dataset", help="digits or a FILE.npz with arrays x and y (default digits)")
    add("--model", choices=configmod.MODELS, help=f"default {d.model}")
    add("--loop", choices=configmod.LOOPS,
        help="custom: ftgui's loop, restores the exact step (default); fit: Keras model.fit "
        "with BackupAndRestore, restores to the epoch start (for comparison)")
    add("--kill-at-step", type=int, help="crash (SIGKILL) the fault target after step K")
    add("--preempt-at-step", type=int, help="preempt (SIGTERM) the fault target after step K")
    add("--nan-at-step", type=int, help="inject a NaN into the loss of step K (rolls back)")
    add("--hang-at-step", type=int, help="freeze (SIGSTOP) the fault target after step K")
    add("--fault-target", help="chief, worker:I or ps:I (default chief)")
    add("--kill-after-seconds", type=float, help="crash the fault target T s after the start")
    add("--watchdog-seconds", type=float,
        help="kill and recover a run with no progress for T s (0: off)")
    add("--chaos-faults", type=int, help="N random faults, repeatable from --chaos-seed")
    add("--chaos-kinds", help=f"comma list of {', '.join(configmod.FAULT_KINDS)} "
        f"(default {d.chaos_kinds})")
    add("--chaos-seed", type=int, help="seed of the chaos schedule (default 0)")
    add("--auto-recover", action=argparse.BooleanOptionalAction,
        help="restart from the newest valid checkpoint after a crash")
    add("--max-restarts", type=int, help=f"default {d.max_restarts}")
    add("--cluster", help="task addresses, e.g. 'worker=localhost:0,gpu-box:2222' (jobs chief, "
        "worker, ps; port 0 = any free port on this machine); other machines get a command")
    add("--warm-standby", action=argparse.BooleanOptionalAction,
        help="keep processes with TensorFlow imported, ready to replace a lost one")
    add("--restart-backoff", type=float, help=f"seconds before the first restart "
        f"(doubling each time; default {d.restart_backoff})")


def config_from_args(args: argparse.Namespace, base: RunConfig | dict) -> RunConfig:
    """`base` (a config, or the raw table of a config.toml) with every flag the user gave
    applied; raises `ConfigError` for bad values, naming the flag as well as the field."""
    given = {f: getattr(args, flag) for flag, f in FLAG_FIELDS.items()
             if getattr(args, flag, None) is not None}
    try:
        return _apply_flags(given, base)
    except ConfigError as exc:
        field, _, rest = str(exc).partition(":")
        flag = FIELD_FLAGS.get(field)
        if flag is None or not rest:
            raise
        hint = "" if field in given or isinstance(base, RunConfig) else (
            f" (set in {args.run_dir / configmod.CONFIG_FILE}; give {flag} to change it)"
        )
        raise ConfigError(f"{field} ({flag}):{rest}{hint}") from None


def _apply_flags(given: dict, base: RunConfig | dict) -> RunConfig:
    if given.get("dataset", "digits") not in configmod.BUILTIN_DATASETS:
        # config.toml must name the file from anywhere: the run may be resumed from another cwd.
        given["dataset"] = str(Path(given["dataset"]).absolute())
    if isinstance(base, dict):  # a config.toml read raw, so that flags can mend bad values
        config = configmod.from_dict({**base, **given})
    else:
        config = base.replace(**given)
    if "cluster" in given and not {"workers", "ps"} & set(given):
        config = config.with_cluster_counts()
    config.validate()
    return config


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "train":
            return cmd_train(args)
        if args.command == "checkpoints":
            return cmd_checkpoints(args)
        if args.command == "devices":
            return cmd_devices(args)
        if args.command == "worker":
            return cmd_worker(args)
        from ftgui.qt.app import run_app

        return run_app(getattr(args, "run_dir", None))
    except BrokenPipeError:  # `ftgui checkpoints RUN | head`
        sys.stderr.close()
        return 0
    except (ConfigError, RuntimeError, OSError, LookupError) as exc:
        print(f"ftgui: {exc}", file=sys.stderr)
        return 2


def _refuse_a_finished_run(run_dir: Path, config: RunConfig) -> None:
    """Raise ConfigError when the newest valid checkpoint already is the last step: resuming
    would start TensorFlow only to train nothing."""
    newest = checkpoints.newest_valid(run_dir)
    if newest is not None and newest.step >= config.steps:
        raise ConfigError(
            f"steps (--steps): the run already reached step {newest.step} of {config.steps}; "
            f"give --steps N with N > {newest.step} to train on, or --from-step S to fork"
        )


def cmd_train(args: argparse.Namespace) -> int:
    from ftgui.core.supervisor import Supervisor

    run_dir = args.run_dir
    existing = (run_dir / configmod.CONFIG_FILE).is_file()
    if args.from_step is not None and not args.resume:
        raise ConfigError("from_step: --from-step needs --resume")
    if args.resume and not existing:
        raise ConfigError(f"run_dir: {run_dir} has no config.toml to resume")
    base = configmod.load_values(run_dir) if existing and args.resume else RunConfig()
    config = config_from_args(args, base)
    if args.resume and args.from_step is None:
        _refuse_a_finished_run(run_dir, config)
    if config.gpus:  # asks TensorFlow in a helper process (3-6 s); before any file is written
        devices.check_gpus(config.gpus)
    supervisor = Supervisor(run_dir)
    supervisor.poll()  # the run's history: known to the supervisor, not printed again
    progress = Progress(quiet=args.quiet)
    previous_handlers = _stop_on_signals(supervisor)
    try:
        supervisor.start(config, resume=args.resume, from_step=args.from_step)
        if supervisor.resume_line:
            print(supervisor.resume_line, flush=True)
        while supervisor.live:
            for event in supervisor.poll():
                progress.show(event)
            time.sleep(0.05)
        for event in supervisor.poll():
            progress.show(event)
    finally:
        supervisor.shutdown()
        for signum, handler in previous_handlers.items():
            signal.signal(signum, handler)
    if supervisor.state == "finished":
        print(f"finished: step {supervisor.last_step} of {config.steps}, "
              f"final loss {progress.last_loss}")
        return 0
    print(f"ftgui: run {supervisor.state}: {supervisor.reason}", file=sys.stderr)
    return 1


def _stop_on_signals(supervisor) -> dict:
    """Make Ctrl-C and SIGTERM end the run's processes; returns the handlers they replace."""

    def stop(signum, frame):
        supervisor.shutdown()
        print(f"ftgui: interrupted by {signal.Signals(signum).name}; all processes ended",
              file=sys.stderr)
        sys.exit(130)

    return {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}


class Progress:
    """One console line per notable event, and a step line at most every 2 seconds."""

    NOTABLE = {"process_started", "resumed", "checkpoint_saved", "fault_injected",
               "process_exited", "recovery_scheduled", "preempted", "forked",
               "non_finite_loss", "rolled_back", "hang_detected", "thawed", "training_error",
               "checkpoint_requested", "remote_task",
               "run_finished"}

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.last_loss = None
        self._last_print = 0.0

    def show(self, event: dict) -> None:
        kind = event["event"]
        if kind == "step":
            self.last_loss = event["loss"]
            if not self.quiet and time.time() - self._last_print > 2:
                self._last_print = time.time()
                loss = "nan" if event["loss"] is None else event["loss"]  # null: non-finite
                print(f"step {event['step']}  loss {loss}", flush=True)
        elif kind in self.NOTABLE and not self.quiet:
            details = {k: v for k, v in event.items()
                       if k not in ("event", "time", "config") and v is not None}
            text = " ".join(f"{k}={v}" for k, v in details.items())
            print(f"{kind}: {text}", flush=True)


def cmd_worker(args: argparse.Namespace) -> int:
    """Become the training process of one task (TF_CONFIG comes from the environment)."""
    from ftgui.training.__main__ import exit_now
    from ftgui.training.__main__ import main as task_main

    if not args.task_args:
        raise ConfigError("worker: give the arguments ftgui printed (RUN --role … --index …)")
    exit_now(task_main(args.task_args))
    return 0  # not reached


def cmd_checkpoints(args: argparse.Namespace) -> int:
    if not args.run_dir.is_dir():
        raise ConfigError(f"run_dir: {args.run_dir} is not a directory")
    from ftgui.core.runs import is_run_dir

    if not (is_run_dir(args.run_dir) or checkpoints.checkpoint_dir(args.run_dir).is_dir()):
        raise ConfigError(f"run_dir: {args.run_dir} is not a run (it has no config.toml, "
                          "events.jsonl or checkpoints folder)")
    rows = []
    found = checkpoints.list_checkpoints(args.run_dir)
    for info in found + checkpoints.list_fit_checkpoints(args.run_dir):
        rows.append({
            "step": info.step, "loss": info.loss, "val_loss": info.meta.get("val_loss"),
            "val_accuracy": info.meta.get("val_accuracy"), "time": info.time,
            "size": info.size, "valid": info.valid, "reason": info.reason,
            "path": info.relpath, **({"restores": info.restores} if info.restores else {}),
        })
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    newest = checkpoints.newest_valid(args.run_dir)
    print(f"{'step':>8} {'loss':>10} {'val_loss':>10} {'time':>19} {'bytes':>10}  valid")
    for row in rows:
        mark = " (newest)" if newest and row["step"] == newest.step else ""
        mark += f" ({row['restores']})" if "restores" in row else ""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row["time"]))
        print(f"{row['step']:>8} {_num(row['loss']):>10} {_num(row['val_loss']):>10} {when:>19} "
              f"{row['size']:>10}  {'yes' if row['valid'] else 'no: ' + row['reason']}{mark}")
    if not rows:
        print("(no checkpoints)")
    return 0


def _num(value) -> str:
    return "-" if value is None else f"{value:.6f}"


def cmd_devices(args: argparse.Namespace) -> int:
    from ftgui.core.devices import list_devices

    devices = list_devices()
    if args.json:
        print(json.dumps(devices, indent=1))
    else:
        for device in devices:
            print(f"{device['device_type']:>4}  {device['name']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
