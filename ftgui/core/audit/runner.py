"""An audit driven headless: the reference run and the fault runs at once (independent
processes, each exact on its own), then the final weights compared in one helper process and a
verdict per fault. Used by `ftgui audit` (the window runs that command in a QProcess).

Every run is driven through the `Supervisor`'s public API, as `ftgui train` does. All runs start
at once; each start runs the user-code check before its process (the same model and data for
all), so a bad model is refused (exit status 2) before any training starts. `say` gets a
progress line at least every `TICK_SECONDS` while anything is awaited.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ftgui.child_python import module_argv
from ftgui.core.audit import outputs, weights
from ftgui.core.audit.outputs import AuditResult
from ftgui.core.audit.plan import KINDS, REFERENCE, AuditRun
from ftgui.core.audit.verdict import judge
from ftgui.core.record import events as eventsmod
from ftgui.core.record import run_lock
from ftgui.core.record.runs import AUDIT_PLAN, is_run_dir, new_run_dir
from ftgui.core.settings.config import FAULT_STEPS
from ftgui.core.settings.schema import SETTINGS, ConfigError
from ftgui.core.supervision.supervisor import Supervisor
from ftgui.core.timeline.run_figures import read_run

PLAN_FILE = AUDIT_PLAN  # marks an audit folder (the Runs view groups its runs)
TICK_SECONDS = 2.0
POLL_SECONDS = 0.05


def is_audit_dir(path: Path) -> bool:
    """Whether `path` is an audit's folder (it holds `PLAN_FILE`)."""
    return (Path(path) / PLAN_FILE).is_file()


def refuse_used_folder(audit_dir: Path, runs: list[AuditRun]) -> None:
    """Raise `ConfigError` when `audit_dir` already holds an audit or one of its run folders
    (the line names `--fresh`, which starts it over: `start_over`), or is a training run's
    folder (its `events.jsonl`, `config.toml`: the audit wrote its runs among them)."""
    refuse_run_folder(audit_dir)
    taken = _earlier_runs(audit_dir, runs)
    if is_audit_dir(audit_dir) or taken:
        raise ConfigError(f"run_dir: {audit_dir} already holds an audit"
                          f"{' (' + ', '.join(taken) + ')' if taken else ''}; rerun with "
                          "--fresh to delete it and start over, or pick a new folder")


def refuse_run_folder(audit_dir: Path) -> None:
    """Raise `ConfigError` when `audit_dir` is a training run's folder (not an audit's): the
    audit would write its runs and files among the run's own, as `ftgui train` refuses."""
    if is_run_dir(audit_dir) and not is_audit_dir(audit_dir):
        raise ConfigError(f"run_dir: {audit_dir} is a training run's folder; an audit makes "
                          "its own runs in a new folder: pick one (e.g. audits/mine)")


def _earlier_runs(audit_dir: Path, runs: list[AuditRun]) -> list[str]:
    """The run folders in `audit_dir` an audit may have made: those of the earlier plan (if
    its file names any audit run) and of `runs`."""
    names = [run.name for run in runs]
    try:
        earlier = json.loads((audit_dir / PLAN_FILE).read_text(encoding="utf-8"))["runs"]
        names += [r["name"] for r in earlier if r.get("name") in (REFERENCE, *KINDS)]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return [name for name in dict.fromkeys(names) if is_run_dir(audit_dir / name)]


def start_over(audit_dir: Path, runs: list[AuditRun]) -> list[str]:
    """`--fresh`: delete the earlier audit in `audit_dir` — its plan file, its run folders
    (`_earlier_runs`) and the output files at their default paths — and return what was
    deleted (names relative to `audit_dir`; nothing else in the folder is touched). Raises
    `ConfigError` before deleting anything when one of those runs is still supervised, or
    `audit_dir` is a training run's folder (`refuse_run_folder`)."""
    refuse_run_folder(audit_dir)
    taken = _earlier_runs(audit_dir, runs)
    busy = [name for name in taken if run_lock.is_busy(audit_dir / name)]
    if busy:
        raise ConfigError(f"run_dir: {audit_dir}: {', '.join(busy)} still running (another "
                          "audit?); stop it first")
    files = [name for name in (PLAN_FILE, *outputs.DEFAULT_NAMES.values())
             if (audit_dir / name).is_file()]
    for name in taken:
        shutil.rmtree(audit_dir / name)
    for name in files:
        (audit_dir / name).unlink()
    return taken + files


def write_plan(audit_dir: Path, runs: list[AuditRun]) -> None:
    audit_dir.mkdir(parents=True, exist_ok=True)
    plan = [{"name": r.name, "kind": r.kind, "step": r.step, "target": r.target} for r in runs]
    (audit_dir / PLAN_FILE).write_text(json.dumps({"runs": plan}, indent=1) + "\n",
                                       encoding="utf-8")


class _Watched:
    """One run of the audit under its supervisor, and what it is waiting for."""

    def __init__(self, run: AuditRun, audit_dir: Path):
        self.run = run
        self.run_dir = audit_dir / run.name
        self.supervisor = Supervisor(self.run_dir)
        self.step = 0
        self.stepping = False  # a step event came since the last process started
        self.held = False  # its fault waits for the warm standby (`fault_plan.standby_holds`)
        self.standby = False  # the last process started was a warm standby
        self.forked = False  # it started cold, forked from the fork server
        self.done = False

    def poll(self) -> None:
        for event in self.supervisor.poll():
            kind = event.get("event")
            if kind == "step" and isinstance(event.get("step"), int):
                self.step, self.stepping = event["step"], True
            elif kind == "process_started":
                self.stepping, self.standby = False, bool(event.get("standby"))
                self.forked = bool(event.get("forked"))
            elif kind in ("held", "hold_released"):
                self.held = kind == "held" and event.get("why") == "standby"
        self.done = not self.supervisor.live

    def waiting_for(self) -> str:
        name = self.run.name
        if self.held:
            return f"{name} (held after step {self.step} until the warm standby is ready)"
        if self.supervisor.state == "recovering":
            return f"{name} (restart due after step {self.step})"
        if not self.stepping and self.standby:
            return f"{name} (restarting: waking the warm standby)"
        if not self.stepping:
            how = "building the model" if self.forked else "importing TensorFlow"
            return f"{name} ({'restarting' if self.step else 'starting'}: {how})"
        return f"{name} (step {self.step} of {self.run.config.steps})"


def run_audit(audit_dir: Path, runs: list[AuditRun], say: Callable[[str], None] = print,
              left_out: list[str] | None = None) -> AuditResult:
    """Train every run of `runs` (the reference first) under `audit_dir`, judge each fault and
    return the result (the caller writes the outputs). Raises `ConfigError` (a bad model:
    the reference's user-code check) or `StartError` before any training starts."""
    began = time.monotonic()
    refuse_used_folder(audit_dir, runs)
    write_plan(audit_dir, runs)
    watched = [_Watched(run, audit_dir) for run in runs]
    total = len(watched)
    reference = watched[0]
    starters = _Starters()
    comparer = weights.Comparer()
    try:
        try:
            server = _start_fork_server(reference)  # imports beside the user-code check
            if _is_user_code(reference.run):
                _check_once(reference, say)
            _await_fork_server(server, say, total)
            for number, item in enumerate(watched, start=1):
                what = ("never interrupted" if item.run.name == REFERENCE else
                        f"{item.run.kind} after step {item.run.step} ({item.run.target}), "
                        "automatic recovery on")
                say(f"run {number} of {total}: starting {item.run.name}: {what}")
            starters.start(watched, say, f"{total} runs to start")
        except Exception:
            (audit_dir / PLAN_FILE).unlink(missing_ok=True)  # nothing trained: free to retry
            raise
        _watch(watched, say, comparer)
        for item in watched:
            item.supervisor.shutdown()
        starters.release()
        return _judge_all(audit_dir, watched, say, began, left_out or [], comparer)
    finally:
        for item in watched:
            item.supervisor.shutdown()
        starters.release()
        comparer.close()


def _check_once(reference: _Watched, say: Callable[[str], None]) -> None:
    """Check the user's model and dataset once, in a helper process, before any run starts:
    each run's own check then finds it passed (`user_code.cached`: the faults are no part of
    its key). Seven checks side by side took 18 s on two cores to refuse a syntax error, and
    left seven folders (a new user's finding). Says what it waits for as `ftgui train` does,
    and the check's advice (`CheckResult.advice`).
    Raises `UserCodeError`; its log is the reference's `logs/check.log`."""
    from ftgui.core.settings import user_code
    from ftgui.waiting import notice

    with notice("checking your model and dataset", "a helper process imports TensorFlow, "
                "then tries a step, a save and a restore", say=say):
        result = user_code.check(reference.run.config, reference.run_dir)
    for line in result.advice:  # it trains, but not as its author meant
        say(f"warning: {line}")


def _start_fork_server(reference: _Watched):
    """This process's fork server for the audit's trainers (`fork_server.server_for`), started
    now, its log in the reference run's `logs/`; None where none can run (`FTGUI_FORK=0`)."""
    from ftgui.core.supervision import fork_server
    from ftgui.core.supervision.standby import device_env

    env = fork_server.child_env(device_env(reference.run.config))
    return fork_server.server_for(reference.supervisor.python, env,
                                  reference.run_dir / "logs")


def _await_fork_server(server, say: Callable[[str], None], total: int) -> None:
    """Wait until `server` has imported TensorFlow (or ended, or `fork_server.READY_TIMEOUT`
    passed: the runs then start cold), saying so: every run's first start and restart is
    then forked from it instead of importing. The audit's runs had imported it 11 times side
    by side on two cores, and their restarts came before a server started with them was
    ready (`ftgui audit --steps 200`: 21 s, each restart losing 6-9 s)."""
    from ftgui.core.supervision import fork_server
    from ftgui.waiting import notice

    if server is None or server.ready:
        return
    with notice("importing TensorFlow once", f"the fork server then forks all {total} runs' "
                "trainers", say=say):
        deadline = server.started + fork_server.READY_TIMEOUT
        while not server.ready and server.alive and time.monotonic() < deadline:
            server.pump(0.1)


def _is_user_code(run: AuditRun) -> bool:
    from ftgui.core.settings import user_code

    return user_code.is_user_code(run.config)


class _Starters:
    """Starts supervisors in threads, so that the user-code checks (a helper process each) run
    side by side while the console is told what is awaited; each thread lives on until
    `release`: Linux sends a trainer SIGKILL when the thread that started it ends (the
    trainers' PR_SET_PDEATHSIG is tied to the thread, not the process)."""

    def __init__(self):
        self._release = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self, items: list[_Watched], say: Callable[[str], None], what: str) -> None:
        """Start each item's run in its own thread; return when all have started, saying
        every `TICK_SECONDS` what is awaited. Raises the first start's error."""
        errors: list[BaseException] = []
        started = [threading.Event() for _ in items]
        for item, done in zip(items, started, strict=True):
            thread = threading.Thread(target=self._start_one, args=(item, errors, done),
                                      daemon=True)
            self._threads.append(thread)
            thread.start()
        began = time.monotonic()
        while not all(done.wait(TICK_SECONDS) for done in started):
            say(f"waiting for {what} ({time.monotonic() - began:.0f} s)")
        if errors:
            raise errors[0]

    def _start_one(self, item: _Watched, errors: list, done: threading.Event) -> None:
        try:
            # a fault waits for the warm standby (`Supervisor.start` plans the holds of
            # `fault_plan.standby_holds`), so a warm-standby audit audits warm restarts
            item.supervisor.start(item.run.config)
        except Exception as exc:  # noqa: BLE001 (raised again in the caller's thread)
            errors.append(exc)
        done.set()
        self._release.wait()

    def release(self) -> None:
        """Let the threads end (after every run's processes have ended)."""
        self._release.set()
        for thread in self._threads:
            thread.join()


def _wait_while(work: Callable[[], object], say: Callable[[str], None], what: str):
    """Run `work` in a thread, saying every `TICK_SECONDS` what is awaited; its result, or
    its exception raised here. (Not for starting processes: see `_Starters`.)"""
    outcome: dict = {}

    def target():
        try:
            outcome["value"] = work()
        except BaseException as exc:  # raised again in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    began = time.monotonic()
    thread.start()
    while thread.is_alive():
        thread.join(TICK_SECONDS)
        if thread.is_alive():
            say(f"waiting for {what} ({time.monotonic() - began:.0f} s)")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _watch(watched: list[_Watched], say: Callable[[str], None],
           comparer: weights.Comparer) -> None:
    """Poll every supervisor until all runs ended, with a line per ended run and one on what
    is awaited every `TICK_SECONDS`. When the reference has ended, the weights helper starts
    (its TensorFlow import overlaps the fault runs' last steps)."""
    last_line = time.monotonic()
    ended = 0
    while ended < len(watched):
        for item in watched:
            if item.done:
                continue
            item.poll()
            if item.done:
                ended += 1
                if item is watched[0]:
                    comparer.start()
                say(f"{ended} of {len(watched)} runs done: {item.run.name} "
                    f"{item.supervisor.state} at step {item.supervisor.last_step}")
        if ended < len(watched) and time.monotonic() - last_line >= TICK_SECONDS:
            last_line = time.monotonic()
            waiting = [item.waiting_for() for item in watched if not item.done]
            say(f"{ended} of {len(watched)} runs done; waiting for {', '.join(waiting)}")
        time.sleep(POLL_SECONDS)


def _judge_all(audit_dir: Path, watched: list[_Watched], say: Callable[[str], None],
               began: float, left_out: list[str], comparer: weights.Comparer) -> AuditResult:
    reference = watched[0]
    if reference.supervisor.state != "finished":
        raise RuntimeError(f"the reference run ended {reference.supervisor.state}: "
                           f"{reference.supervisor.reason}; see {reference.run_dir}/logs")
    steps = reference.run.config.steps
    faults = {item.run.name: item.run_dir for item in watched[1:]}
    config = reference.run.config
    if config.loop == "fit":  # ModelCheckpoint's Keras weight files, not ftgui's checkpoints
        found = {name: weights.WeightsResult(problem="the fit loop's weights are not compared")
                 for name in faults}
    else:
        say("comparing the final weights with the reference's (in a helper process)")
        found = _wait_while(lambda: comparer.compare(reference.run_dir, faults, steps), say,
                            "the weights comparison")
    check = reference.supervisor.user_check
    warned = check.reason if check is not None and not check.deterministic else ""
    reference_events = eventsmod.read_all(reference.run_dir)
    verdicts = []
    for item in watched[1:]:
        verdict = judge(item.run, reference_events, eventsmod.read_all(item.run_dir),
                        found[item.run.name], warned)
        verdict.run_dir = str(item.run_dir)
        verdicts.append(verdict)
    _, figures = read_run(reference.run_dir)
    snapshots = config.loop == "custom" and config.strategy in ("default", "one-device",
                                                                 "mirrored")
    stats = [e for e in reference_events if e.get("event") == "snapshot_stats"]
    return AuditResult(
        audit_dir, _settings(config), verdicts, checkpoints=figures.checkpoints,
        checkpoint_seconds=figures.checkpoint_seconds,
        snapshot_every=config.snapshot_every if snapshots else 0,
        snapshots=stats[-1]["snapshots"] if stats else 0,
        snapshot_seconds=stats[-1]["seconds"] if stats else None,
        snapshot_first_seconds=stats[-1].get("first_seconds", 0.0) if stats else 0.0,
        snapshot_size=stats[-1]["size"] if stats else 0,
        seconds=time.monotonic() - began, left_out=left_out)


def _settings(config) -> dict:
    keys = ("strategy", "model", "dataset", "loop", "steps", "checkpoint_every", "seed")
    shown = {key: getattr(config, key) for key in keys}
    if config.strategy in ("multi-worker", "parameter-server"):
        shown["workers"] = config.workers
    return shown


# settings a fault run sets itself: the panel's values of them are not passed on
_FAULT_SETTINGS = frozenset({*FAULT_STEPS, "chaos_faults", "chaos_kinds", "chaos_seed",
                             "kill_after_seconds", "fault_target", "auto_recover",
                             "watchdog_seconds"})
DONE_LINE = re.compile(r"^(\d+) of (\d+) runs done")
START_LINE = re.compile(r"^run (\d+) of (\d+): starting")


def command(audit_dir: Path, config, python: str = sys.executable) -> list[str]:
    """The `ftgui audit` command line that audits `config` (a `RunConfig`) into `audit_dir`:
    a flag for every setting that is not its default, fault and recovery settings left to
    the audit."""
    argv = [*module_argv("ftgui", python), "audit", str(audit_dir)]
    for name, setting in SETTINGS.items():
        value = getattr(config, name)
        if name in _FAULT_SETTINGS or value == setting.default:
            continue
        if setting.kind is bool:
            argv.append(setting.flag if value else f"--no-{setting.flag[2:]}")
        else:
            argv += [setting.flag, str(value)]
    return argv


def progress(line: str) -> tuple[int, int] | None:
    """(runs done, runs in all) that a progress line of `run_audit` tells, else None."""
    match = DONE_LINE.match(line)
    if match:
        return int(match[1]), int(match[2])
    match = START_LINE.match(line)
    return (0, int(match[2])) if match else None



def new_audit_dir(root: Path) -> Path:
    """A fresh, not yet existing audit folder under `root`, named by the local time."""
    return new_run_dir(root, prefix="audit")
