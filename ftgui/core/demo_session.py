"""One showing of a guided demo, Qt-free: the `StageMachine` that picks the stage to show from
the runs' events and the presenter's Page Down / Page Up, and the `DemoSession` that gives each
run of a demo (`ftgui.core.demos.Demo`) a fresh folder and its configuration and knows which
fault waits for the presenter's K."""

from __future__ import annotations

import re
import time
from pathlib import Path

from ftgui.core import exitcodes
from ftgui.core.config import RunConfig
from ftgui.core.demos import Demo, Fault, Stage
from ftgui.core.events import EventReader
from ftgui.core.run_state import is_decisive


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


class StageMachine:
    """Which stage of `stages` to show, from the runs' events and the presenter's keys.

    `reached` is the furthest stage the events justify (stage i is reached once every stage
    before it is and its trigger happened `count` times in its run); `current` is the one
    shown: it jumps forward to `reached`, and `next()` / `previous()` (Page Down / Page Up)
    move it by one without changing `reached`."""

    def __init__(self, stages: tuple[Stage, ...]):
        self.stages = stages
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
            self.reached = self.current = last
            changed = True
        return changed

    def _count(self, run: int, trigger: str) -> bool:
        self.counts[(run, trigger)] = self.counts.get((run, trigger), 0) + 1
        before = self.current
        while self.reached + 1 < len(self.stages) and self._met(self.stages[self.reached + 1]):
            self.reached += 1
        self.current = max(self.current, self.reached)
        return self.current != before

    def _met(self, stage: Stage) -> bool:
        run = 0 if stage.after == "end" else stage.run
        return self.counts.get((run, stage.after), 0) >= stage.count

    def next(self) -> bool:
        if self.current + 1 >= len(self.stages):
            return False
        self.current += 1
        return True

    def previous(self) -> bool:
        if self.current <= 0:
            return False
        self.current -= 1
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
    the presenter's faults still to fire. `presenter`: faults with `wait` wait for `fire()`;
    otherwise every fault fires on its schedule."""

    def __init__(self, demo: Demo, root: Path, presenter: bool = False,
                 stamp: str | None = None):
        self.demo, self.presenter = demo, presenter
        self.run_dirs = demo_dirs(demo, Path(root), stamp)
        self.configs = [demo.config(i, presenter) for i in range(1, len(demo.runs) + 1)]
        self.machine = StageMachine(demo.stages)
        self.run = 0
        self.fired: list[tuple[int, Fault]] = []  # (run, fault) the presenter fired
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

    def pending_wait(self) -> Fault | None:
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

    def mark_fired(self, fault: Fault) -> None:
        """The presenter fired `fault` in the current run."""
        self.fired.append((self.run, fault))
