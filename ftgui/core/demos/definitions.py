"""Guided demos: small TOML files that say what to run, which faults to fire (on a schedule or
when the presenter presses K) and what to tell the room at each stage; a Qt-free stage machine.

A demo file (`ftgui/resources/demos/*.toml`, or the user's `…/ftgui/demos/*.toml`):

    title = "Crash and recover"
    summary = "One line for the menu's tooltip."
    claims = ["finished", "redone_steps_identical"]      # checked when it ends
    [settings]                                           # names of ftgui.core.settings.schema
    steps = 1500
    [[runs]]                                             # optional: several runs, in turn
    name = "checkpoint every 10"
    settings = { checkpoint_every = 10 }
    [[faults]]                                           # kind, step, target, wait, run
    kind = "kill"
    step = 650
    wait = true                                          # the presenter presses K
    [[stages]]                                           # after, count, run, wait, text
    after = "checkpoint"
    text = "What is about to happen, and what to look at."

A stage shows once its trigger (`after`, one of `TRIGGERS`) happened `count` times in its run
(`run`, 1-based; default: the run of the stage before). `wait = true` marks the stage where the
presenter is asked to press K. A fault with `wait` fires on its `step` when the demo runs on
schedule (tests, rehearsals), and when the presenter presses K otherwise. Loading refuses a file
in one line naming the file and the field (`DemoError`); `discover` lists the good ones and the
refusals. `ftgui.core.demos.session` runs one: folders, configurations, the stage machine.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from platformdirs import user_config_path

from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import ConfigError, RunConfig
from ftgui.core.settings.schema import FAULT_KINDS, SETTINGS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BUILTIN_DIR = Path(__file__).resolve().parents[2] / "resources" / "demos"
# What a stage waits for: an event of a run ("checkpoint": a checkpoint_saved), the run's start,
# or the end of the whole demo.
# "first new step": the first step after a resume or a rollback (the new line of training).
TRIGGERS = ("start", "first step", "checkpoint", "fault", "kill", "preemption", "hang",
            "resume", "rollback", "first new step", "worker lost", "run end", "end")
RUN_CLAIMS = ("finished", "resumes_from_checkpoint", "redone_steps_identical",
              "no_step_lost_on_preemption", "rolled_back_in_process", "restarted_from_checkpoint",
              "absorbed_worker_loss", "resumes_at_epoch_start")
CROSS_RUN_CLAIMS = ("same_final_loss", "fewer_steps_redone_first")
WAITABLE = ("kill", "preempt", "hang")  # a presenter can fire these with one key
FAULT_SETTINGS = ("kill_at_step", "preempt_at_step", "nan_at_step", "hang_at_step",
                  "kill_in_save_at_step", "kill_in_snapshot_at_step", "fault_target")
MAX_STAGE_TEXT = 600  # characters: 2–4 sentences


class DemoError(ValueError):
    """A demo file is refused; the message is one line naming the file and the field."""


@dataclass(frozen=True)
class DemoFault:
    """`kind` (kill, preempt, nan, hang) at global `step` on `target` (chief, worker:I,
    ps:I) in run `run` (1-based; 0: every run); `wait`: the presenter fires it."""

    kind: str
    step: int
    target: str = "chief"
    wait: bool = False
    run: int = 0

    def describe(self) -> str:
        """ "kill the chief", "kill worker 1" (for the presenter's prompt)."""
        who = "the chief" if self.target == "chief" else self.target.replace(":", " ")
        verb = {"kill": "kill", "preempt": "preempt", "hang": "freeze", "nan": "poison"}
        return f"{verb[self.kind]} {who}"


@dataclass(frozen=True)
class Stage:
    """Shown after `count` × `after` in run `run` (1-based); `wait`: asks for K; `show`: the
    pane its text points at (one of `PANES`, "" for none), shown also in the presentation
    view while the stage is on screen."""

    after: str
    text: str
    count: int = 1
    run: int = 1
    wait: bool = False
    show: str = ""


PANES = ("checkpoints", "incidents")  # a stage's `show`: the checkpoint table, the Incidents tab


@dataclass(frozen=True)
class DemoRun:
    """One run of a demo: `name` (its folder's suffix and its name in the Runs view), its own
    `settings` over the demo's, and the `claims` checked on it alone."""

    name: str
    settings: dict = field(default_factory=dict)
    claims: tuple[str, ...] = ()


@dataclass(frozen=True)
class Demo:
    """A parsed, validated demo file. `key` is the file's stem (`crash-and-recover`)."""

    key: str
    path: Path
    title: str
    summary: str
    settings: dict
    runs: tuple[DemoRun, ...]
    faults: tuple[DemoFault, ...]
    stages: tuple[Stage, ...]
    claims: tuple[str, ...] = ()
    order: int = 1000

    def config(self, run: int, presenter: bool = False) -> RunConfig:
        """The configuration of run `run` (1-based): defaults, the demo's settings, the run's,
        then its faults — all of them on schedule, or (`presenter`) only those that do not
        wait. Raises `ConfigError` (the file was validated, so only for a bad `run`)."""
        if not 1 <= run <= len(self.runs):
            raise ConfigError(f"run: {run} is not from 1 to {len(self.runs)}")
        values = {**self.settings, **self.runs[run - 1].settings}
        for fault in self.faults_of(run):
            if not (presenter and fault.wait):
                values[f"{fault.kind}_at_step"] = fault.step
                values["fault_target"] = fault.target
            elif fault.target != "chief":
                values["fault_target"] = fault.target
        return configmod.from_dict(values)

    def faults_of(self, run: int) -> list[DemoFault]:
        return [fault for fault in self.faults if fault.run in (0, run)]


# ------------------------------------------------------------------ reading demo files
def user_dir() -> Path:
    """Where a presenter puts their own demos: the platform's user config folder,
    `…/ftgui/demos` (e.g. `~/.config/ftgui/demos` on Linux)."""
    return user_config_path("ftgui") / "demos"


def discover(folders: list[Path] | None = None) -> tuple[list[Demo], list[str]]:
    """The demos of `folders` (default: the built-in ones, then the user's), ordered by their
    `order` then title, and one line per file refused. A user's demo with the key of a
    built-in one is listed too (both are shown, the user's after)."""
    demos, refused = [], []
    for folder in folders if folders is not None else [BUILTIN_DIR, user_dir()]:
        try:
            paths = sorted(Path(folder).glob("*.toml"))
        except OSError:
            continue
        for path in paths:
            try:
                demos.append(load(path))
            except DemoError as exc:
                refused.append(str(exc))
    demos.sort(key=lambda demo: (demo.order, demo.title))
    return demos, refused


def load(path: str | Path) -> Demo:
    """Read and validate one demo file; raises `DemoError` (one line: file, field, why)."""
    path = Path(path)
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DemoError(f"{path.name}: cannot be read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise DemoError(f"{path.name}: not valid TOML ({exc})") from None
    try:
        return parse(table, path)
    except DemoError as exc:
        raise DemoError(f"{path.name}: {exc}") from None


_TOP = {"title", "summary", "order", "claims", "settings", "runs", "faults", "stages"}


def parse(table: dict, path: Path = Path("demo.toml")) -> Demo:
    """A `Demo` from the table of a demo file; raises `DemoError` naming the field (without
    the file's name, which `load` adds)."""
    _no_unknown(table, _TOP, "")
    title = _text(table, "title", "")
    settings = _settings(table.get("settings", {}), "settings")
    runs = tuple(_run(item, f"runs[{i}]") for i, item in
                 enumerate(_tables(table, "runs", ""))) or (DemoRun(path.stem),)
    faults = tuple(_fault(item, f"faults[{i}]", len(runs)) for i, item in
                   enumerate(_tables(table, "faults", "")))
    stages = _stages(_tables(table, "stages", ""), len(runs))
    claims = _claims(table.get("claims", []), "claims", len(runs) > 1)
    order = table.get("order", 1000)
    if not isinstance(order, int) or isinstance(order, bool):
        raise DemoError(f"order: {order!r} is not a whole number")
    demo = Demo(key=path.stem, path=path, title=title, summary=table.get("summary", ""),
                settings=settings, runs=runs, faults=faults, stages=stages, claims=claims,
                order=order)
    _check_runs(demo)
    return demo


def _no_unknown(table: dict, known: set, where: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise DemoError(f"{where}{unknown[0]}: unknown field; known: {', '.join(sorted(known))}")


def _text(table: dict, key: str, where: str, required: bool = True) -> str:
    value = table.get(key, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise DemoError(f"{where}{key}: give it as non-empty text")
    return " ".join(value.split())


def _tables(table: dict, key: str, where: str) -> list[dict]:
    items = table.get(key, [])
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise DemoError(f"{where}{key}: write it as [[{key}]] tables")
    return items


def _settings(values, where: str) -> dict:
    if not isinstance(values, dict):
        raise DemoError(f"{where}: write it as a table of settings")
    for name, value in values.items():
        if name not in SETTINGS:
            raise DemoError(f"{where}.{name}: unknown setting (the names of `ftgui train "
                            "--help`, with _ for -)")
        if name in FAULT_SETTINGS:
            raise DemoError(f"{where}.{name}: schedule faults in [[faults]] (kind, step, "
                            "target, wait)")
        try:
            SETTINGS[name].check(getattr(configmod.from_dict({name: value}), name))
        except ConfigError as exc:
            raise DemoError(f"{where}.{exc}") from None
    return dict(values)


def _run(item: dict, where: str) -> DemoRun:
    _no_unknown(item, {"name", "settings", "claims"}, f"{where}.")
    name = _text(item, "name", f"{where}.")
    return DemoRun(name, _settings(item.get("settings", {}), f"{where}.settings"),
                   _claims(item.get("claims", []), f"{where}.claims", False))


def _claims(values, where: str, several_runs: bool) -> tuple[str, ...]:
    allowed = RUN_CLAIMS + (CROSS_RUN_CLAIMS if several_runs else ())
    if not isinstance(values, list):
        raise DemoError(f"{where}: give a list of claims")
    for value in values:
        if value not in allowed:
            raise DemoError(f"{where}: {value!r} is not one of {', '.join(allowed)}")
    return tuple(values)


def _fault(item: dict, where: str, runs: int) -> DemoFault:
    _no_unknown(item, {"kind", "step", "target", "wait", "run"}, f"{where}.")
    kind, step = item.get("kind"), item.get("step")
    if kind not in FAULT_KINDS:
        raise DemoError(f"{where}.kind: {kind!r} is not one of {', '.join(FAULT_KINDS)}")
    if not isinstance(step, int) or isinstance(step, bool) or step < 1:
        raise DemoError(f"{where}.step: {step!r} is not a whole number from 1")
    wait, run = item.get("wait", False), item.get("run", 0)
    if not isinstance(wait, bool):
        raise DemoError(f"{where}.wait: {wait!r} is not true or false")
    if wait and kind not in WAITABLE:
        raise DemoError(f"{where}.wait: a {kind} fault fires on its schedule only; the "
                        f"presenter can fire {', '.join(WAITABLE)}")
    if not isinstance(run, int) or isinstance(run, bool) or not 0 <= run <= runs:
        raise DemoError(f"{where}.run: {run!r} is not from 0 (every run) to {runs}")
    target = item.get("target", "chief")
    if not isinstance(target, str):
        raise DemoError(f"{where}.target: {target!r} is not chief, worker:I or ps:I")
    return DemoFault(kind, step, target, wait, run)


def _stages(items: list[dict], runs: int) -> tuple[Stage, ...]:
    if not items:
        raise DemoError("stages: a demo needs at least one [[stages]] table")
    stages, run = [], 1
    for i, item in enumerate(items):
        where = f"stages[{i}]."
        _no_unknown(item, {"after", "text", "count", "run", "wait", "show"}, where)
        after = item.get("after")
        if after not in TRIGGERS:
            raise DemoError(f"{where}after: {after!r} is not one of {', '.join(TRIGGERS)}")
        text = _text(item, "text", where)
        if len(text) > MAX_STAGE_TEXT:
            raise DemoError(f"{where}text: {len(text)} characters; keep it to 2–4 sentences "
                            f"(at most {MAX_STAGE_TEXT})")
        count, run = item.get("count", 1), item.get("run", run)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise DemoError(f"{where}count: {count!r} is not a whole number from 1")
        if not isinstance(run, int) or isinstance(run, bool) or not 1 <= run <= runs:
            raise DemoError(f"{where}run: {run!r} is not from 1 to {runs}")
        wait = item.get("wait", False)
        if not isinstance(wait, bool):
            raise DemoError(f"{where}wait: {wait!r} is not true or false")
        show = item.get("show", "")
        if show not in ("", *PANES):
            raise DemoError(f"{where}show: {show!r} is not one of {', '.join(PANES)}")
        stages.append(Stage(after, text, count, run, wait, show))
    return tuple(stages)


def _check_runs(demo: Demo) -> None:
    """Each run's configuration validates (faults on schedule); each fault exists in its run's
    strategy; a run has one fault target; waits and waiting stages go together."""
    for run in range(1, len(demo.runs) + 1):
        base = {**demo.settings, **demo.runs[run - 1].settings}
        targets = {}
        for fault in demo.faults_of(run):
            where = f"faults[{demo.faults.index(fault)}]"
            try:
                configmod.from_dict({**base, f"{fault.kind}_at_step": fault.step,
                                     "fault_target": fault.target}).validate()
            except ConfigError as exc:
                field_name, _, why = str(exc).partition(":")
                part = "target" if field_name == "fault_target" else (
                    "step" if field_name.endswith("_at_step") and "whole number" in why
                    else "kind")  # e.g. the fit loop takes kill faults only
                raise DemoError(f"{where}.{part}: {exc}") from None
            targets.setdefault(fault.target, where)
            if len(targets) > 1:
                raise DemoError(f"{where}.target: a run has one fault target; "
                                f"{targets[next(iter(targets))]} hits {next(iter(targets))}")
        try:
            demo.config(run).validate()
        except ConfigError as exc:
            name = "settings" if len(demo.runs) == 1 else f"runs[{run - 1}].settings"
            raise DemoError(f"{name}.{exc}") from None
        waits = [f for f in demo.faults_of(run) if f.wait]
        asks = [s for s in demo.stages if s.run == run and s.wait]
        if waits and not asks:
            raise DemoError(f"faults[{demo.faults.index(waits[0])}].wait: no stage of run "
                            f"{run} has wait = true to ask the presenter")
        if asks and not waits:
            raise DemoError(f"stages[{demo.stages.index(asks[0])}].wait: run {run} has no "
                            "fault with wait = true")
