"""The runs of an audit: the reference (never interrupted) and one run per fault kind, each
fault at a step drawn from the run's seed, with automatic recovery on.

Which fault kinds a strategy supports is what `RunConfig.validate` accepts (the `model.fit`
loop takes kills only; a hang needs the watchdog, which the audit sets); a worker loss (a kill
of the last worker) needs workers: strategy multi-worker or parameter-server. A kill inside a
checkpoint save lands on a checkpoint step after the first checkpoint (so a valid one is left to
restore), with snapshots off in that run (a snapshot of the same step would make the torn
checkpoint moot); a kill inside a snapshot lands on a snapshot step after the first snapshot (so
the other slot holds a valid one) that gets no checkpoint.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ftgui.core.settings.config import FAULT_STEPS, RunConfig
from ftgui.core.settings.schema import ONE_PROCESS, ConfigError, split_list
from ftgui.core.supervision.fault_plan import KILL_IN_SAVE, KILL_IN_SNAPSHOT

# the kills inside a save / a snapshot last: the other kinds' steps stay what the seed gave them
KINDS = ("kill", "preempt", "hang", "nan", "worker-loss", KILL_IN_SAVE, KILL_IN_SNAPSHOT)
WORKER_STRATEGIES = ("multi-worker", "parameter-server")
REFERENCE = "reference"
HANG_WATCHDOG_SECONDS = 5.0  # a hang run's watchdog when the settings give none
MIN_STEPS = 3  # a fault needs a step before it and one after it


@dataclass(frozen=True)
class AuditRun:
    """One run of an audit: `name` (its folder under the audit folder: reference, kill, …),
    `kind` ('' for the reference), the global `step` the fault hits after (0 for the reference),
    its `target` (chief, worker:I) and the run's whole configuration."""

    name: str
    kind: str
    step: int
    target: str
    config: RunConfig


def reference_config(config: RunConfig) -> RunConfig:
    """`config` with every fault off (planned, timed, chaos): the run nothing interrupts."""
    return config.replace(**{name: 0 for name in FAULT_STEPS}, chaos_faults=0,
                          kill_after_seconds=0.0, auto_recover=False)


def fault_config(config: RunConfig, kind: str, step: int) -> RunConfig:
    """The reference's settings with one `kind` fault after global `step`, automatic recovery
    on (at least 3 restarts) and, for a hang, a watchdog. Raises `ConfigError` when the
    strategy or loop does not take the fault (`RunConfig.validate`'s line)."""
    base = reference_config(config).replace(
        auto_recover=True, max_restarts=max(config.max_restarts, 3))
    if kind == "worker-loss":
        if config.strategy not in WORKER_STRATEGIES:
            raise ConfigError(f"faults: worker-loss needs workers (strategy "
                              f"{' or '.join(WORKER_STRATEGIES)}), not {config.strategy}")
        changed = base.replace(kill_at_step=step, fault_target=f"worker:{config.workers - 1}")
    elif kind == KILL_IN_SAVE:
        changed = base.replace(kill_in_save_at_step=step, snapshot_every=0,
                               fault_target="chief")
    else:
        changed = base.replace(**{f"{kind.replace('-', '_')}_at_step": step},
                               fault_target="chief")
        if kind == "hang" and not changed.watchdog_seconds:
            changed = changed.replace(watchdog_seconds=HANG_WATCHDOG_SECONDS)
    changed.validate()
    return changed


def fault_steps(config: RunConfig, kind: str) -> range | list[int]:
    """The global steps a `kind` fault may be drawn from: past the first checkpoint and
    before the last step; a kill inside a save on a later checkpoint step, one inside a
    snapshot on a snapshot step after the first snapshot (`_snapshot_steps`; empty when none
    fits)."""
    low = min(config.checkpoint_every + 1, config.steps - 1)
    if kind == KILL_IN_SAVE:
        every = config.checkpoint_every
        return range(2 * every, config.steps, every)
    if kind == KILL_IN_SNAPSHOT:
        return _snapshot_steps(config)
    return range(low, config.steps)


def _snapshot_steps(config: RunConfig) -> list[int]:
    """Snapshot steps after the first snapshot that get no checkpoint (a checkpoint of the
    same step is written meanwhile in the background: where the run restarts would be luck);
    those whose previous snapshot is newer than the last checkpoint when there are any (the
    restore then comes from memory)."""
    every, ckpt = config.snapshot_every, config.checkpoint_every
    if not every:
        return []
    steps = [s for s in range(2 * every, config.steps, every) if s % ckpt]
    from_memory = [s for s in steps if s - every > (s - 1) // ckpt * ckpt]
    return from_memory or steps


def supported(config: RunConfig, kind: str) -> str:
    """'' when the run's strategy and loop take fault `kind`, else why not (one line)."""
    steps = fault_steps(config, kind)
    # a probe the strategy's and loop's rules see: a step that gets a save or a snapshot
    probe = {KILL_IN_SAVE: config.steps, KILL_IN_SNAPSHOT: max(config.snapshot_every, 1)}.get(
        kind, max(config.steps - 1, 1))
    try:
        fault_config(config, kind, steps[-1] if steps else probe)
    except ConfigError as exc:
        return str(exc)
    if not steps and kind == KILL_IN_SAVE:
        return (f"faults: {kind} needs a checkpoint step after the first one and before the "
                f"last step")
    if not steps:  # every snapshot step after the first may also be a checkpoint step
        return (f"faults: {kind} needs a snapshot step after the first one and before the "
                f"last step that gets no checkpoint (--snapshot-every "
                f"{config.snapshot_every} and --checkpoint-every {config.checkpoint_every} "
                f"give none): a checkpoint of the same step would make where the run "
                f"restarts luck")
    if kind == "nan" and not _rolls_back(config, steps[0]):
        return (f"faults: nan needs a state to roll back to: a checkpoint before its step "
                f"(--steps over {config.checkpoint_every + 1}, or a smaller "
                f"--checkpoint-every) or in-memory snapshots (strategy "
                f"{', '.join(ONE_PROCESS)})")
    return ""


def _rolls_back(config: RunConfig, step: int) -> bool:
    """Whether a NaN at global `step` finds an earlier state to roll back to in its process:
    a checkpoint before it, or the in-memory snapshot of the step before."""
    snapshots = bool(config.snapshot_every) and config.strategy in ONE_PROCESS and (
        step > config.snapshot_every)
    return config.checkpoint_every < step or snapshots


def parse_kinds(text: str | None, config: RunConfig) -> tuple[list[str], list[str]]:
    """The fault kinds to audit, in `KINDS` order, and lines on the default kinds left out.

    `text` is the `--faults` list (None: every kind the strategy supports, the others left out
    with a line each). Raises `ConfigError` (one line naming `faults`) for an unknown kind, a
    kind the strategy lacks, or an empty list."""
    if text is None:
        kinds, left_out = [], []
        for kind in KINDS:
            why = supported(config, kind)
            if why:
                left_out.append(f"{kind} left out: {why.removeprefix('faults: ')}")
            else:
                kinds.append(kind)
        return kinds, left_out
    asked = split_list(text)
    if not asked:
        raise ConfigError(f"faults: name at least one of {', '.join(KINDS)}")
    for kind in asked:
        if kind not in KINDS:
            raise ConfigError(f"faults: {kind!r} is not one of {', '.join(KINDS)}")
        why = supported(config, kind)
        if why:
            raise ConfigError(why if why.startswith("faults:") else f"faults: {kind}: {why}")
    return [kind for kind in KINDS if kind in asked], []


def standby_notes(config: RunConfig) -> list[str]:
    """Lines for a `--warm-standby` audit whose restarts cannot all be warm ones: a cap that
    keeps no standby, or the `model.fit` loop, whose faults do not wait for the standby
    (`fault_plan.standby_holds`); [] otherwise. Each verdict's `restart` says what each
    restart was."""
    if not config.warm_standby:
        return []
    if config.max_standbys < 1:
        return ["warm standby: --max-standbys 0 keeps none, so every restart is a cold start"]
    if config.loop == "fit":
        return ["warm standby: under --loop fit a fault does not wait for it (model.fit has no "
                "holds): a restart may find it still importing TensorFlow"]
    return []


def step_notes(config: RunConfig) -> list[str]:
    """A line for an audit whose runs end before their first checkpoint: its faults all hit
    after the step before the last, and restore from memory (or from step 0 with snapshots
    off), not from a checkpoint; [] otherwise. A new user's 50-step audit read "after step
    49" for every fault, where the docs said "after the first checkpoint"."""
    if config.checkpoint_every < config.steps:
        return []
    restore = ("the in-memory snapshot" if config.snapshot_every else
               "step 0 (snapshots off)")
    return [f"faults: the first checkpoint (step {config.checkpoint_every}) is past the last "
            f"step ({config.steps}): every fault hits after step {config.steps - 1} and "
            f"restores from {restore}; give --checkpoint-every under {config.steps} to audit "
            "restores from checkpoints"]


def plan(config: RunConfig, kinds: list[str]) -> list[AuditRun]:
    """The reference run, then one run per kind of `kinds`, each fault after a step drawn from
    `random.Random(config.seed)` among `fault_steps` (past the first checkpoint, so that a
    restore has one, and before the last step). Raises `ConfigError` for fewer than
    `MIN_STEPS` steps."""
    if config.steps < MIN_STEPS:
        raise ConfigError(f"steps: an audit needs at least {MIN_STEPS} steps, not "
                          f"{config.steps}")
    rng = random.Random(config.seed)
    runs = [AuditRun(REFERENCE, "", 0, "", reference_config(config))]
    for kind in kinds:
        step = rng.choice(fault_steps(config, kind))
        faulty = fault_config(config, kind, step)
        runs.append(AuditRun(kind, kind, step, faulty.fault_target, faulty))
    return runs
