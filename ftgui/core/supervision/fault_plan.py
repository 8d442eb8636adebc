"""The fault plan of a run: which fault hits which process at which global step.

Explicit faults come from the configuration (`kill_at_step`, …, `fault_target`); chaos mode adds
`chaos_faults` faults at steps and of kinds drawn from `random.Random(chaos_seed)`, so a
workshop run is repeatable. Each planned fault fires once per run, even when a restart replays
its step: a fault that was fired is in the events as `fault_injected` with `source: schedule`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ftgui.core.settings.config import RunConfig

# Kills the trainer carries out itself inside a checkpoint save / an in-memory snapshot.
KILL_IN_SAVE, KILL_IN_SNAPSHOT = "kill-in-save", "kill-in-snapshot"
ARG_KINDS = ("kill", "preempt", "nan", "hang", KILL_IN_SAVE, KILL_IN_SNAPSHOT, "hold")


@dataclass(frozen=True, order=True)
class PlannedFault:
    """`kind` (kill, preempt, nan, hang, kill-in-save, kill-in-snapshot) hitting `target`
    (chief, worker:I, ps:I) at `step`."""

    step: int
    kind: str
    target: str

    @property
    def key(self) -> str:
        """Identity of the fault in the event history: `kind@step:target`."""
        return f"{self.kind}@{self.step}:{self.target}"

    @property
    def arg(self) -> str:
        """The trainer's command-line form: `kind@step`."""
        return f"{self.kind}@{self.step}"


def plan(config: RunConfig, targets: list[str]) -> list[PlannedFault]:
    """All planned faults of a run, by step. `targets` are the task names (`worker:1`, …)
    chaos mode may pick for kill and hang; nan and preempt always hit the chief."""
    faults = [
        PlannedFault(step, kind, config.fault_target)
        for kind, step in (("kill", config.kill_at_step), ("preempt", config.preempt_at_step),
                           ("nan", config.nan_at_step), ("hang", config.hang_at_step),
                           (KILL_IN_SAVE, config.kill_in_save_at_step),
                           (KILL_IN_SNAPSHOT, config.kill_in_snapshot_at_step))
        if step
    ]
    if config.chaos_faults:
        rng = random.Random(config.chaos_seed)
        kinds = [k.strip() for k in config.chaos_kinds.split(",") if k.strip()]
        steps = sorted(rng.sample(range(2, config.steps), config.chaos_faults))
        for step in steps:
            kind = rng.choice(kinds)
            target = rng.choice(targets) if kind in ("kill", "hang") else "chief"
            faults.append(PlannedFault(step, kind, target))
    return sorted(faults)


def standby_holds(config: RunConfig, targets: list[str]) -> dict[int, str]:
    """step -> "standby": the holds (`Supervisor.plan_hold`) that make each planned fault
    that ends a process (kill, hang, preempt, kill-in-save, kill-in-snapshot) of a run with a
    warm standby wait until the standby is ready (`standby_hold_faults`)."""
    return {step: "standby" for step in standby_hold_faults(config, targets)}


def standby_hold_faults(config: RunConfig, targets: list[str]) -> dict[int, list[str]]:
    """step -> the keys of the planned faults that hold after that step until the warm
    standby is ready, so that their recovery is the warm one the settings ask for (a fault in
    an attempt's first seconds found the standby still importing TensorFlow). A preemption is
    asked for before its step runs, and a kill inside a save or a snapshot lands while its
    step's save or snapshot is written, after the step (a hold there waits for that write):
    they hold after the step before. {} without `warm_standby`, with `max_standbys` 0 (no
    standby will come), and under `--loop fit` (model.fit has no holds); under
    `parameter-server` only the chief's faults (the coordinator holds, not the workers). A
    preemption or a kill inside a save or a snapshot at step 1 has no step before it to hold
    at. A hold is due again in a later attempt while one of its faults has not fired
    (`FaultSchedule`: a kill at 15 and a preemption at 16 both hold after step 15)."""
    if not config.warm_standby or config.max_standbys == 0 or config.loop == "fit":
        return {}
    before = ("preempt", KILL_IN_SAVE, KILL_IN_SNAPSHOT)
    planned: dict[int, list[str]] = {}
    for fault in plan(config, targets):
        step = fault.step - 1 if fault.kind in before else fault.step
        if fault.kind != "nan" and step >= 1 and (
                config.strategy != "parameter-server" or fault.target == "chief"):
            planned.setdefault(step, []).append(fault.key)
    return planned


def fired(events: list[dict]) -> set[str]:
    """Keys of the planned faults already fired, from a run's events."""
    return {
        f"{e.get('kind')}@{e.get('step')}:{e.get('target')}"
        for e in events
        if e.get("event") == "fault_injected" and e.get("source") == "schedule"
    }


def parse_arg(text: str) -> tuple[str, int]:
    """Parse the trainer's `kind@step` (kind one of `ARG_KINDS`; `hold`: wait there for the
    supervisor, `ftgui.core.supervision.holds`); raises `ValueError` for anything else."""
    kind, _, step = text.partition("@")
    if kind not in ARG_KINDS or not step.isdigit():
        raise ValueError(f"fault: {text!r} is not kind@step with kind "
                         f"{', '.join(ARG_KINDS)}")
    return kind, int(step)
