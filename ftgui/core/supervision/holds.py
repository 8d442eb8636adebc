"""Holding training at a step: the trainer waits at a step boundary until the supervisor lets it
go, so that a fault lands at exactly that step (`ftgui.training.actions.hold` waits).

A hold is planned before an attempt starts (`--fault hold@STEP:WHY` on the trainer's command
line; WHY is `presenter`, the demo's waiting stage, `standby`, a fault that waits for the warm
standby, or a fault's target, the parameter-server task the supervisor itself fires at) and
happens once per run: the trainer writes `held` (step, role, index, why) when it starts
waiting and `hold_released` (step, seconds, by) when it goes on, and a restart that replays
the step does not hold again. While held, the trainer writes a `heartbeat` about once a
second, so no watchdog takes the wait for a hang; every process of a multi-worker cluster
holds at the same step (a step boundary, outside any collective).

The supervisor lets a held attempt go by writing `RUN/.hold-release.attempt-N.step-S`, as
it tells survivors that a peer is gone (`ftgui.core.supervision.peer_notice`: why a file and not a
signal); SIGTERM (a preemption) ends a hold too. The next attempt's launch removes the files
(`clear`).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

RELEASE_PREFIX = ".hold-release.attempt-"
KIND = "hold"  # the fault kind of a planned hold on the trainer's command line


def release_path(run_dir: str | os.PathLike, attempt: int, step: int) -> Path:
    """Where the word to let attempt `attempt` go on after global step `step` is written."""
    return Path(run_dir) / f"{RELEASE_PREFIX}{attempt}.step-{step}"


def release(run_dir: str | os.PathLike, attempt: int, step: int, by: str) -> Path:
    """Let the processes of `attempt` held at `step` go on; `by` says who (`presenter`,
    `fault`, `standby`). Written atomically; returns the path. Raises `OSError`."""
    path = release_path(run_dir, attempt, step)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps({"by": by, "time": time.time()}), encoding="utf-8")
    os.replace(temporary, path)
    return path


def released_by(run_dir: str | os.PathLike, attempt: int, step: int) -> str | None:
    """Who let `attempt` go on after `step` (`presenter`, …), or None while it is held."""
    try:
        text = release_path(run_dir, attempt, step).read_text(encoding="utf-8")
    except OSError:
        return None
    try:
        return str(json.loads(text).get("by", "supervisor"))
    except (ValueError, AttributeError):
        return "supervisor"


def clear(run_dir: str | os.PathLike) -> None:
    """Remove every release of the run (each is about an attempt that has ended)."""
    for path in Path(run_dir).glob(f"{RELEASE_PREFIX}*"):
        path.unlink(missing_ok=True)


def fired(events: list[dict]) -> set[int]:
    """The steps at which the run already held (from its `held` events): a hold happens once."""
    return {e.get("step") for e in events if e.get("event") == "held"}
