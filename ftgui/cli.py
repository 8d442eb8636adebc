"""The `ftgui` command: open the app, or train, list checkpoints and devices headless."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import errno
import json
import signal
import sys
import time
from pathlib import Path

from ftgui.core import formatting
from ftgui.core.checkpoints import fit_checkpoints, listing, restore_point
from ftgui.core.record.run_state import PREEMPT_TIMEOUT_S
from ftgui.core.settings import config as configmod
from ftgui.core.settings import devices, user_code
from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.settings.schema import SETTINGS
from ftgui.streams import make_console_safe

# command-line flag (argparse dest) <-> RunConfig field, from the settings schema
FIELD_FLAGS = {name: setting.flag for name, setting in SETTINGS.items()}
FLAG_FIELDS = {flag[2:].replace("-", "_"): name for name, flag in FIELD_FLAGS.items()}


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad command line gets one line (no usage dump) and exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but an unknown option is named with the command's options closest
        to it ("--stpes: did you mean --steps?") and the command's own help."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = self._command_parser(getattr(parsed, "command", None)) or self
            options = [o for a in command._actions for o in a.option_strings]
            close = [match for word in extras if word.startswith("-")
                     for match in difflib.get_close_matches(word.split("=")[0], options, 1, 0.8)]
            hint = f"; did you mean {', '.join(dict.fromkeys(close))}?" if close else ""
            self.exit(2, f"{self.prog}: unrecognized arguments: {' '.join(extras)}{hint} "
                         f"(see {command.prog} --help)\n")
        return parsed

    def _command_parser(self, name: str | None):
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and name in action.choices:
                return action.choices[name]
        return None


def run_folder(text: str) -> Path:
    """A run folder given on the command line; argparse names the field in the error. Raises
    `argparse.ArgumentTypeError` for an empty name: `Path("")` is the current folder, and
    `ftgui train ""` trained there, among the files and runs it held."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty name; give the run's folder (e.g. runs/demo)")
    return Path(text)


def output_file(text: str) -> Path:
    """A file to write given on the command line (`report -o`). Raises
    `argparse.ArgumentTypeError` for an empty name: `-o ''` wrote into the current folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty name; give a file (e.g. report.html) or "
                                         "a folder")
    return Path(text)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="ftgui", description="Fault-tolerant distributed TensorFlow training, made visible.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="store_true",
                        help="print `ftgui <version>` and exit")
    parser.add_argument("--verbose", action="store_true",
                        help="with --version: also Python, PySide6, Qt, pyqtgraph, TensorFlow")
    parser.add_argument("--present", action="store_true",
                        help="open the app in the presentation view (View → Presentation, F5)")
    sub = parser.add_subparsers(dest="command")
    opener = sub.add_parser("open", allow_abbrev=False, help="open the app on an existing run")
    opener.add_argument("run_dir", type=run_folder)
    opener.add_argument("--present", action="store_true", default=argparse.SUPPRESS,
                        help="in the presentation view (View → Presentation, F5)")

    train = sub.add_parser("train", allow_abbrev=False, help="run training headless until it ends")
    train.add_argument("run_dir", type=run_folder)
    _add_config_flags(train)
    train.add_argument("--resume", action="store_true",
                       help="continue from the newest valid checkpoint")
    train.add_argument("--from-step", type=int, help="with --resume: fork from this checkpoint")
    train.add_argument("--quiet", action="store_true", help="print only the final line")

    audit = sub.add_parser(
        "audit", allow_abbrev=False,
        help="audit fault tolerance: a reference run and one run per fault, compared to the bit",
        description="Train a reference run, then one run per fault kind with automatic "
        "recovery, and compare every logged loss, validation value and the final weights "
        "with the reference, to the bit. Exit status 0: every fault recovered exactly; 1: "
        "one did not (or is not exact by design); 2: bad input.")
    audit.add_argument("run_dir", type=run_folder,
                       help="the audit's folder (RUN/reference, RUN/kill, … and the output files)")
    _add_config_flags(audit)
    audit.add_argument("--faults", help="fault kinds, comma separated: kill, preempt, hang, nan, "
                       "worker-loss, kill-in-save, kill-in-snapshot (default: every kind the "
                       "strategy supports)")
    audit.add_argument("--fresh", action="store_true",
                       help="RUN holds an earlier (e.g. interrupted) audit: delete its runs, "
                       "plan and outputs and start over (without it, such a folder is refused)")
    audit.add_argument("--junit", type=Path, help="JUnit XML file (default RUN/audit-junit.xml)")
    audit.add_argument("--json", type=Path, help="JSON summary (default RUN/audit.json)")
    audit.add_argument("--html", type=Path, help="HTML report (default RUN/audit.html)")

    ckpts = sub.add_parser("checkpoints", allow_abbrev=False, help="list a run's checkpoints")
    ckpts.add_argument("run_dir", type=run_folder)
    ckpts.add_argument("--json", action="store_true")

    replay = sub.add_parser("replay", allow_abbrev=False,
                            help="play a finished run's events into the window")
    replay.add_argument("run_dir", type=run_folder)
    replay.add_argument("--speed", type=float, default=1.0,
                        help="times real time, 0 < X <= 1000 (default 1; idle gaps over 10 "
                        "recorded seconds play as 10)")
    replay.add_argument("--exit-when-done", action="store_true",
                        help="close the window (exit status 0) when the last event has played")
    replay.add_argument("--present", action="store_true", help="in the presentation view")

    report = sub.add_parser("report", allow_abbrev=False,
                            help="write a run's report as one self-contained HTML file")
    report.add_argument("run_dir", type=run_folder)
    report.add_argument("-o", "--output", type=output_file,
                        help="the HTML file (default: RUN-report.html beside the run folder)")

    worker = sub.add_parser(
        "worker", help="run one task of a cluster on this machine (the command ftgui prints)",
        description="Run one task of a run's cluster here. ftgui prints the exact command, "
        "with TF_CONFIG, for each task whose address is another machine.",
    )
    worker.add_argument("task_args", nargs=argparse.REMAINDER,
                        help="RUN --role R --index I --attempt N [...]")

    devices = sub.add_parser("devices", allow_abbrev=False, help="list TensorFlow's devices")
    devices.add_argument("--json", action="store_true")

    entry = sub.add_parser(
        "install-desktop-entry", allow_abbrev=False,
        help="add ftgui to the desktop's launcher (Linux/BSD: a .desktop file and icon)",
    )
    entry.add_argument("--uninstall", action="store_true",
                       help="remove exactly what install-desktop-entry wrote")
    return parser


def _add_config_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per setting of the schema, with its help text, unit and default."""
    for setting in SETTINGS.values():
        help_text = setting.describe().replace("%", "%%")  # argparse formats help with %
        if setting.kind is bool:
            parser.add_argument(setting.flag, action=argparse.BooleanOptionalAction,
                                help=help_text)
        elif setting.kind in (int, float):
            parser.add_argument(setting.flag, type=setting.kind, help=help_text)
        else:
            closed = setting.widget_kind == "combo"  # a fixed list of choices
            parser.add_argument(setting.flag, choices=setting.choices if closed else None,
                                help=help_text)


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
    from ftgui.core.settings.user_code import absolute

    for name in ("model", "dataset"):
        # config.toml must name the file from anywhere: the run may be resumed from another cwd.
        if name in given:
            given[name] = absolute(given[name])
    if isinstance(base, dict):  # a config.toml read raw, so that flags can mend bad values
        config = configmod.from_dict({**base, **given})
    else:
        config = base.replace(**given)
    if "cluster" in given and not {"workers", "ps"} & set(given):
        config = config.with_cluster_counts()
    config.validate()
    return config


def main(argv: list[str] | None = None) -> int:
    make_console_safe()  # a C or cp1252 locale gets ASCII look-alikes, never a traceback
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.present and args.command not in (None, "open", "replay"):
        parser.error("--present goes with the app: `ftgui --present`, "
                     "`ftgui open RUN --present` or `ftgui replay RUN --present`")
    if args.version or args.verbose:
        if not args.version or args.command:
            parser.error("--version and --verbose go alone: `ftgui --version [--verbose]`")
        from ftgui.versions import version_text

        print(version_text(verbose=args.verbose))
        return 0
    try:
        headless = {"install-desktop-entry": cmd_desktop_entry, "train": cmd_train,
                    "checkpoints": cmd_checkpoints, "audit": cmd_audit, "devices": cmd_devices,
                    "worker": cmd_worker, "report": cmd_report}
        if args.command in headless:
            return headless[args.command](args)
        if args.command == "open":
            _refuse_what_is_not_a_run(args.run_dir)
        _refuse_missing_qt_libraries()
        if args.command == "replay":
            return cmd_replay(args)
        from ftgui.qt.window.app import run_app

        return run_app(getattr(args, "run_dir", None), present=args.present)
    except BrokenPipeError:  # `ftgui checkpoints RUN | head`
        sys.stderr.close()
        return 0
    except OSError as exc:
        print(f"ftgui: {os_error_line(exc, getattr(args, 'run_dir', None))}", file=sys.stderr)
        return 2
    except (ConfigError, RuntimeError, LookupError) as exc:
        print(f"ftgui: {exc}", file=sys.stderr)
        return 2


def os_error_line(exc: OSError, run_dir: Path | None = None) -> str:
    """One line for an error of the file system: the path and the system's reason, under the
    field `run_dir` when the path is the run's folder or in it ("run_dir: /proc/1/.lock: No
    such file or directory"), not Python's "[Errno 2] …"."""
    if exc.filename is None or not exc.strerror:
        return str(exc)
    path = Path(exc.filename)
    line = f"{path}: {exc.strerror}"
    if run_dir is not None and (path == Path(run_dir) or Path(run_dir) in path.parents):
        unwritable = exc.errno in (errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS,
                                   errno.ENAMETOOLONG)
        hint = " (give a folder ftgui can create and write in)" if unwritable else ""
        return f"run_dir: {line}{hint}"
    return line


def _refuse_what_is_not_a_run(path: Path) -> None:
    """Raise ConfigError (one line) unless `path` is a run's folder or an empty one (a run to
    start there): an audit's folder, say, opened as an empty run that said nothing."""
    from ftgui.core.record.runs import is_run_dir

    if not path.is_dir():
        raise ConfigError(f"run_dir: {path} is not a directory")
    if is_run_dir(path) or not any(path.iterdir()):
        return
    runs = sorted(child.name for child in path.iterdir() if child.is_dir() and is_run_dir(child))
    inside = (f"; the runs inside it: {', '.join(runs[:4])}{', …' if len(runs) > 4 else ''}"
              if runs else "")
    raise ConfigError(f"run_dir: {path} is not a run (it has no config.toml or events.jsonl)"
                      f"{inside}")


def _refuse_missing_qt_libraries() -> None:
    """Raise ConfigError (one line naming the Debian packages) before Qt would abort for want
    of its X11 platform's libraries (`ftgui.qt.window.platform_libs`)."""
    from ftgui.qt.window.platform_libs import missing_line

    missing = missing_line()
    if missing:
        raise ConfigError(missing)


def cmd_desktop_entry(args: argparse.Namespace) -> int:
    from ftgui import desktop_entry

    if args.uninstall:
        removed = desktop_entry.uninstall()
        print("\n".join(f"removed {path}" for path in removed) or
              f"ftgui: no launcher entry installed under {desktop_entry.data_dir()}")
        return 0
    for path in desktop_entry.install():
        print(f"wrote {path}")
    return 0


def _refuse_a_finished_run(run_dir: Path, steps: int) -> None:
    """Raise ConfigError when a resume to `steps` would train nothing or go back: the newest
    valid checkpoint already is at `steps` or past it, or the run reached a step past `steps`
    (its events, its in-memory snapshot: `--steps 30` on a run killed at 40 trained 26-30 and
    called 15 steps redone). A run that reached `steps` with no checkpoint of it may resume:
    its last state is then saved."""
    from ftgui.core.checkpoints import restore_point
    from ftgui.core.record.runs import summarize

    newest = listing.newest_valid(run_dir)
    snapshot = restore_point.memory_point(run_dir, newest, fresh=False)
    reached = max(newest.step if newest is not None else 0,
                  snapshot.step if snapshot is not None else 0,
                  summarize(run_dir).steps_done)
    if newest is not None and newest.step == steps == reached:
        where = f"step {steps} of {steps}"
    elif reached > steps or newest is not None and newest.step > steps:
        where = f"step {reached}, past {steps}"
    else:
        return
    raise ConfigError(f"steps (--steps): the run already reached {where}; give --steps N with "
                      f"N > {reached} to train on, or --from-step S to fork")


def _resume_base(run_dir: Path, from_step: int | None,
                 given: set[str] | frozenset[str] = frozenset()) -> dict:
    """The raw settings a resume starts from: `RUN/config.toml`, or, when that file is empty
    or missing, the run's own record (`resume_check.rebuilt_config`), said in one line; a
    setting the file lacks or cannot read (and not `given` as a flag) also comes from the
    record, said in one line (`resume_check.fill_from_record`). Raises ConfigError when the
    run has no record of a setting needed: defaults are never taken silently."""
    from ftgui.core.checkpoints import resume_check

    path = run_dir / configmod.CONFIG_FILE
    try:
        values = configmod.load_values(run_dir)
        state = "is empty"
    except FileNotFoundError:  # deleted: the record still knows the run's settings
        values, state = {}, "is missing"
    restore = listing.newest_valid(run_dir, at_most=from_step)
    if values:
        values, line = resume_check.fill_from_record(
            run_dir, values, restore.meta if restore else None, skip=given)
        if line:
            print(line, flush=True)
        return values
    rebuilt = resume_check.rebuilt_config(run_dir, restore.meta if restore else None)
    if not rebuilt:
        raise ConfigError(f"run_dir: {path} {state} and the run has no record of its settings "
                          "(no run_started event); write its settings there to resume")
    source = "the run_started event" + (f" and checkpoint {restore.prefix.name}"
                                        if restore else "")
    print(f"{path} {state}; settings rebuilt from the run's own record ({source})", flush=True)
    return rebuilt


def ignored_flags(config: RunConfig, given: set[str]) -> list[str]:
    """One line for each setting in `given` (field names the user gave as flags) that
    `config.strategy` does not use (`Setting.strategies`), e.g. "--replicas applies to strategy
    mirrored; one-device ignores it". Empty when every given flag applies."""
    lines = []
    for field in sorted(given):
        setting = SETTINGS.get(field)
        if setting is not None and setting.strategies \
                and config.strategy not in setting.strategies:
            *others, last = setting.strategies
            names = f"strategies {', '.join(others)} or {last}" if others else f"strategy {last}"
            lines.append(f"{setting.flag} applies to {names}; {config.strategy} ignores it")
    return lines


def _check_gpus_present(args: argparse.Namespace, base: RunConfig | dict) -> None:
    """Raise `ConfigError` naming `gpus` when the run asks for more GPUs than this machine has
    (`devices.check_gpus`: a helper process imports TensorFlow, 3-6 s), before the settings
    are checked together: else `--gpus 5` on a machine with none was refused for a global
    batch of 64 not divisible by 5 replicas. Nothing is written before it."""
    wanted = args.gpus if args.gpus is not None else (
        base.get("gpus", 0) if isinstance(base, dict) else base.gpus)
    if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted > 0:
        with _notice(args.quiet, "counting this machine's GPUs",
                     "a helper process imports TensorFlow"):
            devices.check_gpus(wanted)


def cmd_train(args: argparse.Namespace) -> int:
    from ftgui.console import Progress
    from ftgui.core.supervision.supervisor import Supervisor

    run_dir = args.run_dir
    file = next((p for p in (run_dir, *run_dir.parents) if p.exists() and not p.is_dir()), None)
    if file is not None:  # else a raw "[Errno 20] Not a directory" once the run writes
        raise ConfigError(f"run_dir: {file} is a file; give a folder (new, or a run's)")
    existing = (run_dir / configmod.CONFIG_FILE).is_file()
    note = None
    if not args.resume:
        from ftgui.core.record.runs import check_new_run_folder, other_files_note

        check_new_run_folder(run_dir)
        note = other_files_note(run_dir)
    if args.from_step is not None and not args.resume:
        raise ConfigError("from_step: --from-step needs --resume")
    if args.resume and not existing and not (run_dir / "events.jsonl").is_file():
        raise ConfigError(f"run_dir: {run_dir} has no config.toml to resume")
    given = {field for flag, field in FLAG_FIELDS.items()
             if getattr(args, flag, None) is not None}
    base = _resume_base(run_dir, args.from_step, given) if args.resume else RunConfig()
    _check_gpus_present(args, base)  # before the settings: --gpus 5 is no batch-size problem
    if args.resume and args.from_step is None and isinstance(args.steps, int):
        # before the other settings: `--steps 40` on a run at step 100 was refused for the
        # kill_at_step 60 its config.toml held, not for the steps already trained
        _refuse_a_finished_run(run_dir, args.steps)
    config = config_from_args(args, base)
    if args.resume and args.from_step is None:
        _refuse_a_finished_run(run_dir, config.steps)
    if args.from_step is not None:
        try:
            listing.find(run_dir, args.from_step)
        except LookupError as exc:
            raise ConfigError(f"from_step (--from-step): {exc}") from None
    if args.from_step is not None and args.from_step >= config.steps:
        raise ConfigError(
            f"steps (--steps): a fork from step {args.from_step} has nothing to train with "
            f"--steps {config.steps}; give --steps N with N > {args.from_step}"
        )
    for line in [*ignored_flags(config, given), *filter(None, [note])]:
        print(f"ftgui: {line}", file=sys.stderr, flush=True)
    from ftgui.core.supervision.slurm.launcher import launcher_for

    launcher = launcher_for(config, run_dir)  # Slurm's checks: one line before anything
    supervisor = Supervisor(run_dir, launcher=launcher)
    history = supervisor.poll()  # known to the supervisor, not printed again
    progress = Progress(quiet=args.quiet)
    progress.prime(history)  # the summary then tells an earlier attempt's incident too
    stop = SignalStop(supervisor)
    try:
        with _notice(args.quiet or not user_code.is_user_code(config)
                     or user_code.cached(config) is not None,  # passed before: no wait
                     "checking your model and dataset",
                     "a helper process imports TensorFlow, then tries a step, a save and a "
                     "restore"):
            supervisor.start(config, resume=args.resume, from_step=args.from_step)
        if supervisor.resume_line:
            print(supervisor.resume_line, flush=True)
        if supervisor.user_check is not None:
            _show_check(supervisor.user_check, args.quiet, config.loop)
        job_line, reported = "", False
        while supervisor.live and not stop.done():
            progress.show_all(supervisor.poll())
            progress.tick(time.time())
            if launcher is not None and launcher.line() != job_line and not args.quiet:
                job_line = launcher.line()
                print(f"slurm: {job_line}", flush=True)
            if launcher is not None and launcher.pending_report() and not reported:
                print(f"slurm: {launcher.pending_report()}", file=sys.stderr, flush=True)
            reported = bool(launcher and launcher.pending_report())
            time.sleep(0.05)
        progress.show_all(supervisor.poll())
    finally:
        supervisor.shutdown()  # also ends a restart that automatic recovery began meanwhile
        stop.give_back()
    if stop.signum is not None:
        name = signal.Signals(stop.signum).name
        print(f"ftgui: stopped by {name} at step {supervisor.last_step} "
              f"(run {supervisor.state}); `ftgui train {run_dir} --resume` goes on from "
              f"{restore_point.resume_words(run_dir)}", file=sys.stderr)
        return 128 + stop.signum
    if not args.quiet:
        for line in progress.summary():
            print(line)
    if supervisor.state == "finished":
        print(f"finished: step {supervisor.last_step} of {config.steps}, "
              f"final loss {progress.last_loss}")
        return 0
    print(f"ftgui: run {supervisor.state}: {supervisor.reason}", file=sys.stderr)
    if supervisor.state in ("killed", "preempted"):
        print(f"ftgui: `ftgui train {run_dir} --resume` goes on from "
              f"{restore_point.resume_words(run_dir)}", file=sys.stderr)
    return 1


def cmd_audit(args: argparse.Namespace) -> int:
    """Plan the audit (bad input: one line, exit status 2, before anything starts), run it,
    print a verdict per fault and write the JUnit XML, JSON and HTML files."""
    from ftgui.core.audit import outputs, plan, runner

    config = config_from_args(args, RunConfig())
    kinds, left_out = plan.parse_kinds(args.faults, config)
    left_out += plan.standby_notes(config) + plan.step_notes(config)
    runs = plan.plan(config, kinds)
    if args.fresh:
        deleted = runner.start_over(args.run_dir, runs)
        if deleted:
            print(f"audit: --fresh: deleted the earlier audit in {args.run_dir}: "
                  f"{', '.join(deleted)}", flush=True)
    runner.refuse_used_folder(args.run_dir, runs)
    for line in left_out:
        print(line, flush=True)
    print(f"audit: {len(runs)} runs ({', '.join(run.name for run in runs)}), "
          f"{config.steps} steps each, into {args.run_dir}", flush=True)
    result = runner.run_audit(args.run_dir, runs, say=lambda line: print(line, flush=True),
                              left_out=left_out)
    paths = outputs.write_outputs(result, args.junit, args.json, args.html)
    for verdict in result.verdicts:
        print(verdict.line())
    print(result.cost_line())
    print(f"audit took {formatting.seconds(result.seconds)}; wrote "
          + ", ".join(str(path) for path in paths.values()))
    return result.exit_status


def _notice(silent: bool, what: str, why: str):
    """`waiting.notice(what, why)` on stdout (where `ftgui train` says everything else), or
    nothing when `silent` (`--quiet`, or no such wait)."""
    from ftgui.waiting import notice

    if silent:
        return contextlib.nullcontext()
    return notice(what, why, say=lambda line: print(line, flush=True))


# what a passed determinism check (`check_user_code`'s resume probe) promises, said: the
# README tells a user the check says whether an exact resume can be promised
EXACT_PROMISED = ("exact resume: promised (a step after each kind of save and restore gave "
                  "the same bits as without it)")


# what the check does not cover: it tries the custom loop's saves, not BackupAndRestore's
FIT_NOT_PROMISED = ("exact resume: not promised for --loop fit (model.fit's BackupAndRestore "
                    "restarts at the epoch start)")


def _show_check(result, quiet: bool, loop: str = "custom") -> None:
    """The user-code check's summary and advice; when exact resume cannot be promised, why,
    as a `warning:` line beside the other verdicts, before the run starts (also recorded as a
    `determinism_warning` event, which the progress does not repeat, and in config.toml's
    `[user_code]` table)."""
    from ftgui.core.settings.user_code import warning_line

    print(f"checked: {result.summary_line()}", flush=True)
    for line in result.advice:
        print(f"warning: {line}", flush=True)
    if loop == "fit":
        print(FIT_NOT_PROMISED, flush=True)
    elif result.deterministic:
        print(EXACT_PROMISED, flush=True)
    else:
        print(warning_line(result), flush=True)


class SignalStop:
    """Ctrl-C or SIGTERM during `ftgui train` (a user, or a scheduler preempting the job): the
    first asks the chief to save at its current step and stop, as the window's "Preempt and
    quit" does, so that `--resume` loses no step; the run loop waits for those processes
    (`done`, at most `PREEMPT_TIMEOUT_S`). A second signal, or one before any process is
    alive, ends every process at once (exit status 128 + the signal).

    The handler only records the signal: the preemption is sent from the run loop, never from
    inside a `Supervisor` call the signal interrupted."""

    def __init__(self, supervisor):
        self.supervisor = supervisor
        self.signum: int | None = None
        self._stopping: list | None = None  # the processes asked to stop
        self._deadline = 0.0
        self._previous = {signum: signal.signal(signum, self._on_signal)
                          for signum in (signal.SIGINT, signal.SIGTERM)}

    def _on_signal(self, signum, frame) -> None:
        from ftgui.console import tell_stderr  # imported already: `ftgui train` shows progress

        name = signal.Signals(signum).name
        if self.signum is None:
            self.signum = signum
            if any(p.alive for p in self.supervisor.processes):
                tell_stderr(f"ftgui: {name}: saving the current step and stopping "
                            "(send it again to stop at once)")
            else:  # a restart pending: no trainer runs, nothing to save (a breaker's read)
                tell_stderr(f"ftgui: {name}: stopping; no process runs, the pending restart "
                            "is cancelled")
            return
        self.supervisor.shutdown()
        tell_stderr(f"ftgui: interrupted by {name}; all processes ended")
        sys.exit(128 + signum)

    def done(self) -> bool:
        """After a signal: whether the processes asked to stop have exited (or the wait is
        over); the first call after the signal sends the preemption."""
        if self.signum is None:
            return False
        if self._stopping is None:
            self._stopping = [p for p in self.supervisor.processes if p.alive]
            self._deadline = time.monotonic() + PREEMPT_TIMEOUT_S
            if not self.supervisor.preempt_and_stop():
                return True  # nothing alive to save (a restart was pending)
        alive = any(p.alive for p in self._stopping)
        return not alive or time.monotonic() > self._deadline

    def give_back(self) -> None:
        """Put back the signal handlers this replaced."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


def cmd_replay(args: argparse.Namespace) -> int:
    """Check the run and speed (one line each), then open the window and play the run."""
    from ftgui.core.timeline.replay import check_run, check_speed

    speed = check_speed(args.speed)
    check_run(args.run_dir)
    from ftgui.qt.window.replay_app import run_replay

    return run_replay(args.run_dir, speed, exit_when_done=args.exit_when_done,
                      present=args.present)


def cmd_report(args: argparse.Namespace) -> int:
    """Write the run's HTML report (no Qt, no TensorFlow) and print where it went."""
    from ftgui.core.reports import report

    output = args.output or report.default_path(args.run_dir)
    path = report.write_report(args.run_dir, output)
    print(f"wrote {path}")
    return 0


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
    from ftgui.core.record.runs import is_run_dir

    if not (is_run_dir(args.run_dir) or listing.checkpoint_dir(args.run_dir).is_dir()):
        raise ConfigError(f"run_dir: {args.run_dir} is not a run (it has no config.toml, "
                          "events.jsonl or checkpoints folder)")
    rows = []
    found = listing.list_checkpoints(args.run_dir)
    for info in found + fit_checkpoints.list_fit_checkpoints(args.run_dir):
        rows.append({
            "step": info.step, "loss": info.loss, "val_loss": info.meta.get("val_loss"),
            "val_accuracy": info.meta.get("val_accuracy"), "time": info.time,
            "size": info.size, "valid": info.valid, "reason": info.reason,
            "path": info.relpath, **({"restores": info.restores} if info.restores else {}),
        })
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    newest = listing.newest_valid(args.run_dir)
    print(f"{'step':>8} {'loss':>10} {'val_loss':>10} {'time':>19} {'size':>10}  valid")
    for row in rows:
        mark = " (newest)" if newest and row["step"] == newest.step else ""
        mark += f" ({row['restores']})" if "restores" in row else ""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row["time"]))
        valid = "yes" if row["valid"] else "no: " + row["reason"]
        print(f"{row['step']:>8} {_num(row['loss']):>10} {_num(row['val_loss']):>10} {when:>19} "
              f"{formatting.size(row['size']):>10}  {valid}{mark}")
    if not rows:
        print("(no checkpoints)")
    return 0


def _num(value) -> str:
    return "-" if value is None else formatting.loss(value)  # "-": plain ASCII for pipes


def cmd_devices(args: argparse.Namespace) -> int:
    from ftgui.core.settings.devices import list_devices
    from ftgui.waiting import notice

    with notice("listing devices", "a helper process imports TensorFlow"):  # on stderr
        devices = list_devices()
    if args.json:
        print(json.dumps(devices, indent=1))
    else:
        for device in devices:
            print(f"{device['device_type']:>4}  {device['name']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
