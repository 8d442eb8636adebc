"""One showing of a guided demo, Qt-free: the `StageMachine` that picks the stage to show from
the runs' events and the presenter's Page Down / Page Up, and the `DemoSession` that gives each
run of a demo (`ftgui.core.demos.definitions.Demo`) a fresh folder and its configuration and knows
which fault waits for the presenter's K."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

from ftgui.core.demos.definitions import Demo, DemoFault, Stage
from ftgui.core.record import exitcodes
from ftgui.core.record.events import EventReader
from ftgui.core.record.run_state import is_decisive
from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision import cluster, fault_plan


def triggers_of(event: dict, settled: set[int]) -> list[str]:
    """The triggers one event of a run sets off. `settled`: attempts whose outcome is known
    (updated here), so that the clean-up exits of a cluster count for nothing."""
    kind = event.get("event")
    simple = {"checkpoint_saved": "checkpoint", "fault_injected": "fault",
              "preempted": "preemption", "hang_detected": "hang", "resumed": "resume",
              "rolled_back": "rollback", "run_finished": "run end"}
    if kind in simple:
        return [simple[kind]]
    if kind != "process_exited" or event.get("shutdown"):
        return []
    attempt = event.get("attempt", 0)
    if attempt in settled:
        return []
    if is_decisive(event):
        settled.add(attempt)
        return ["kill"] if exitcodes.was_killed(event) else []
    return ["worker lost"] if event.get("signal") else []


# what a stage's `after` waits for, as `StageMachine.waiting_for` says it
TRIGGER_WORDS = {"start": "the run starts", "first step": "training takes its first step",
                 "checkpoint": "the next checkpoint is written", "fault": "the fault is fired",
                 "preemption": "the preemption's checkpoint is saved",
                 "hang": "the watchdog finds the hang", "resume": "training resumes",
                 "rollback": "training rolls back", "run end": "the run ends",
                 "kill": "the process is killed", "worker lost": "a worker is lost",
                 "first new step": "the first new step comes", "end": "the demo ends"}

# ... when it waits for more than one more: a presenter read "the next checkpoint" and saw two
# written with no stage coming (the stage counted three)
COUNTED_WORDS = {"checkpoint": "{} more checkpoints are written",
                 "fault": "{} more faults are fired", "kill": "{} more processes are killed"}

READING_SECONDS = 4.0  # the least time a stage's text stays on screen unless the presenter moves
READING_WORDS = 25  # a text up to this long gets READING_SECONDS; a longer one in proportion


class StageMachine:
    """Which stage of `stages` to show, from the runs' events and the presenter's keys.
    `reached` is the furthest stage the events justify (stage i is reached once every stage
    before it is and its trigger happened `count` times in its run); `current` is the one shown:
    it moves forward towards `reached` one stage at a time, each once the stage shown has been
    on screen its `reading_time` (`reading_seconds` of `clock`, longer for a long text; `tick()`
    moves it when that time has passed), and `next()` / `previous()` (Page Down / Page Up) move
    it by one at once, without changing `reached`. `shown_at`: when the stage shown came on
    screen."""

    def __init__(self, stages: tuple[Stage, ...], reading_seconds: float = 0.0,
                 clock: Callable[[], float] = time.monotonic):
        self.stages = stages
        self.reading_seconds, self.clock = reading_seconds, clock
        self.shown_at = clock()
        self._skipped: set[int] = set()  # stages passed over by the end (never reached)
        self.shown: list[tuple[int, float]] = []  # (stage, clock) each time one came on
        self.counts: dict[tuple[int, str], int] = {}
        self.reached = -1
        self.current = -1
        self.run = 0  # the run events are fed for (1-based; 0 before the first)
        self._settled: set[int] = set()
        self._stepped = False  # a step of this run came
        self._restored = False  # a resume or rollback came, and no step since

    def begin_run(self, run: int) -> bool:
        """Run `run` (1-based) starts; returns whether the stage shown changed."""
        self.run, self._settled, self._stepped, self._restored = run, set(), False, False
        return self._count(run, "start")

    def feed(self, events: list[dict]) -> bool:
        """Events of the current run, in file order; returns whether the stage shown changed."""
        changed = False
        for event in events:
            found = triggers_of(event, self._settled)
            if event.get("event") == "step":
                if not self._stepped:
                    found.append("first step")
                if self._restored:
                    found.append("first new step")
                self._stepped, self._restored = True, False
            self._restored |= "resume" in found or "rollback" in found
            for trigger in found:
                changed |= self._count(self.run, trigger)
        return changed

    def finish(self) -> bool:
        """The whole demo ended; returns whether the stage shown changed. A last stage
        `after = "end"` is shown even when stages before it never came (a presenter who
        never pressed K)."""
        changed = self._count(0, "end")
        last = len(self.stages) - 1
        if self.stages and self.stages[last].after == "end" and self.reached < last:
            self._skipped |= set(range(self.reached + 1, last))
            self.reached = last
            changed |= self.tick()
        return changed

    def _count(self, run: int, trigger: str) -> bool:
        self.counts[(run, trigger)] = self.counts.get((run, trigger), 0) + 1
        while self.reached + 1 < len(self.stages) and self._met(self.stages[self.reached + 1]):
            self.reached += 1
        return self.tick()

    def tick(self) -> bool:
        """Move the stage shown one forward when a reached stage waits and the one shown has
        had its reading time (the very first stage comes at once); whether it moved."""
        if self.current >= self.reached:
            return False
        if self.current >= 0 and self.clock() - self.shown_at < self.reading_time(self.current):
            return False
        self.current = self.current + 1 if self.reading_seconds > 0 else self.reached
        while self.current in self._skipped and self.current < self.reached:
            self.current += 1
        self._shown()
        return True

    def _shown(self) -> None:
        self.shown_at = self.clock()
        self.shown.append((self.current, self.shown_at))

    def reading_time(self, index: int) -> float:
        """The least seconds stage `index` stays on screen before a later one replaces it:
        `reading_seconds` for up to `READING_WORDS` words, in proportion beyond (a room read
        only half of a 58-word first stage in its 4 s, the first step coming at once)."""
        words = len(self.stages[index].text.split())
        return self.reading_seconds * max(1.0, words / READING_WORDS)

    @property
    def caught_up(self) -> bool:
        """The stage shown is the furthest the events reached."""
        return self.current >= self.reached

    def _met(self, stage: Stage) -> bool:
        run = 0 if stage.after == "end" else stage.run
        return self.counts.get((run, stage.after), 0) >= stage.count

    def next(self) -> bool:
        """Page Down: show the next stage now, without its wait for the reading time; never
        one the events have not reached (its text would tell of what has not happened: a
        preemption's save, a resume). Whether the stage shown changed."""
        if self.current + 1 > self.reached:
            return False
        self.current += 1
        while self.current in self._skipped and self.current < self.reached:
            self.current += 1
        self._shown()
        return True

    def waiting_for(self) -> str:
        """What the next stage not reached waits for, in words (`the next checkpoint is
        written`); "" when every stage is reached."""
        if self.reached + 1 >= len(self.stages):
            return ""
        stage = self.stages[self.reached + 1]
        if stage.after == "start" and stage.run > self.run:
            return "the next run starts"
        run = 0 if stage.after == "end" else stage.run
        left = stage.count - self.counts.get((run, stage.after), 0)
        if left > 1 and stage.after in COUNTED_WORDS:  # "the next checkpoint" was one too few
            return COUNTED_WORDS[stage.after].format(left)
        return TRIGGER_WORDS.get(stage.after, stage.after)

    def previous(self) -> bool:
        if self.current <= 0:
            return False
        self.current -= 1
        self._shown()
        return True

    @property
    def stage(self) -> Stage | None:
        return self.stages[self.current] if self.current >= 0 else None


# ------------------------------------------------------------------ one showing of a demo
def demo_dirs(demo: Demo, root: Path, stamp: str | None = None) -> list[Path]:
    """A fresh folder per run under `root`: `demo-KEY-YYYYmmdd-HHMMSS` (plus `-RUN NAME` when
    the demo has several runs; `-2`, `-3` … when that exists already)."""
    stamp = stamp or time.strftime("%Y%m%d-%H%M%S")
    base = f"demo-{demo.key}-{stamp}"
    names = [base] if len(demo.runs) == 1 else [f"{base}-{_slug(run.name)}" for run in demo.runs]
    n, suffix = 1, ""
    while any((root / f"{name}{suffix}").exists() for name in names):
        n += 1
        suffix = f"-{n}"
    return [root / f"{name}{suffix}" for name in names]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "run"


class DemoSession:
    """One showing of `demo`: its run folders (`run_dirs`, fresh, under `root`), each run's
    configuration (`configs`), the `machine`, which run is on (`run`, 1-based; 0 before) and
    the presenter's faults still to fire. `presenter`: faults with `wait` wait for the
    presenter: training holds at the fault's step (`holds_of`) and the fault fires when the
    presenter asked (`press`) and the run holds there (`to_fire`); otherwise every fault fires
    on its schedule. `reading_seconds`, `clock`: the stage machine's (the window gives
    `READING_SECONDS`; 0, for headless runs and tests, shows each stage as soon as it is
    reached)."""

    def __init__(self, demo: Demo, root: Path, presenter: bool = False,
                 stamp: str | None = None, reading_seconds: float = 0.0,
                 clock: Callable[[], float] = time.monotonic):
        self.demo, self.presenter = demo, presenter
        self.run_dirs = demo_dirs(demo, Path(root), stamp)
        self.configs = [demo.config(i, presenter) for i in range(1, len(demo.runs) + 1)]
        self.machine = StageMachine(demo.stages, reading_seconds, clock)
        self.run = 0
        self.fired: list[tuple[int, DemoFault]] = []  # (run, fault) the presenter fired
        self.pressed: DemoFault | None = None  # asked for by the presenter, not fired yet
        self.ended = False
        self._reader: EventReader | None = None

    def next_run(self) -> tuple[Path, RunConfig] | None:
        """Move to the next run; its folder and configuration (None after the last)."""
        if self.run >= len(self.run_dirs):
            return None
        self.run += 1
        self._reader = EventReader(self.run_dirs[self.run - 1])
        self.machine.begin_run(self.run)
        return self.run_dirs[self.run - 1], self.configs[self.run - 1]

    def poll(self) -> bool:
        """Read the current run's new events from its folder; whether the stage changed."""
        return self._reader is not None and self.feed(self._reader.read_new())

    def feed(self, events: list[dict]) -> bool:
        return self.machine.feed(events)

    def finish(self) -> bool:
        self.ended = True
        return self.machine.finish()

    def pending_wait(self) -> DemoFault | None:
        """The presenter's next fault in this run, once a waiting stage is shown (None when
        the demo runs on schedule, or nothing waits)."""
        stage = self.machine.stage
        if not self.presenter or self.ended or stage is None or not (
                stage.wait and stage.run == self.run) or self.machine.current != \
                self.machine.reached:
            return None
        waiting = [f for f in self.demo.faults_of(self.run)
                   if f.wait and (self.run, f) not in self.fired]
        return waiting[0] if waiting else None

    def mark_fired(self, fault: DemoFault) -> None:
        """The presenter fired `fault` in the current run."""
        self.fired.append((self.run, fault))
        if self.pressed == fault:
            self.pressed = None

    def holds_of(self, run: int) -> dict[int, str]:
        """step -> why of the holds run `run` (1-based) plans (`Supervisor.plan_hold`): the
        step of each presenter's fault (`presenter`), and, where the run keeps a warm
        standby, the step of each planned kill or hang and the step before each planned
        preemption (`standby`: the fault waits until the standby is ready, as the demo's
        text says it is)."""
        config = self.configs[run - 1]
        planned = fault_plan.standby_holds(config, [t.name for t in cluster.tasks(config)])
        if self.presenter:
            planned.update({f.step: "presenter" for f in self.demo.faults_of(run) if f.wait})
        return planned

    def press(self) -> DemoFault | None:
        """The presenter pressed K (or Page Down at a waiting stage): the fault asked for,
        which fires once `to_fire` says so; None when nothing waits."""
        fault = self.pending_wait()
        if fault is not None:
            self.pressed = fault
        return fault

    def to_fire(self, held_step: int | None, standby_ready: bool) -> DemoFault | None:
        """The pressed fault to fire now: training holds at its step (`held_step`: where the
        run holds, None when it does not) and the warm standby, where there is one, is
        ready (`standby_ready`)."""
        fault = self.pressed
        if fault is None or (self.run, fault) in self.fired or self.ended:
            return None
        return fault if held_step == fault.step and standby_ready else None
