"""Which checkpoint a start restores, and a fork: resuming from an older checkpoint keeps the
newer ones, moved to `RUN/history/`."""

from __future__ import annotations

import shutil
from pathlib import Path

from ftgui.core.checkpoints import listing, snapshots
from ftgui.core.record.events import EventWriter

HISTORY_DIR = "history"


def choose(run_dir: Path, resume: bool, from_step: int | None):
    """(checkpoint to restore or None to start at step 0, a line for the user or ''): none for
    a new run, exactly `from_step` when given, else the newest valid one; the line says when a
    resume found no valid checkpoint (`listing.resume_point`).
    Raises `LookupError` (saying which steps exist) when `from_step` has no valid checkpoint."""
    if not resume:
        return None, ""
    if from_step is not None:
        return listing.find(run_dir, from_step), ""
    return listing.resume_point(run_dir)


def memory_point(run_dir: Path, checkpoint, fresh: bool) -> snapshots.Slot | None:
    """The in-memory snapshot a start restores instead of `checkpoint` (a `CheckpointInfo` or
    None): the newest consistent one, when it is newer than `checkpoint`; else None.

    `fresh`: the start is a new run or a fork, another line of training than the one the
    snapshot file holds; the file is deleted and None returned."""
    if fresh:
        snapshots.discard(run_dir)
        return None
    slot = snapshots.newest(run_dir)
    if slot is None or (checkpoint is not None and slot.step <= checkpoint.step):
        return None
    return slot


def resume_words(run_dir: Path) -> str:
    """What a plain resume of `run_dir` (same settings) goes on from, in words: "the in-memory
    snapshot of step N" when it is newer than every valid checkpoint, else "checkpoint N", else
    "step 0: nothing was saved"."""
    checkpoint, _ = listing.resume_point(run_dir)
    slot = memory_point(run_dir, checkpoint, fresh=False)
    if slot is not None:
        return f"the in-memory snapshot of step {slot.step}"
    if checkpoint is not None:
        return f"checkpoint {checkpoint.step}"
    return "step 0: nothing was saved"


def archive_newer(run_dir: Path, step: int, attempt: int) -> list[int]:
    """Move the checkpoints newer than `step` to `RUN/history/fork-<attempt>/checkpoints/` and
    write a `forked` event (attempt `attempt`). Returns the steps moved; nothing is deleted."""
    newer = [c for c in listing.list_checkpoints(run_dir) if c.step > step]
    if not newer:
        return []
    dest = run_dir / HISTORY_DIR / f"fork-{attempt}" / listing.CHECKPOINT_DIR
    dest.mkdir(parents=True, exist_ok=True)
    source = listing.checkpoint_dir(run_dir)
    moved = []
    for info in newer:
        for path in source.glob(f"{listing.PREFIX}-{info.step}.*"):
            shutil.move(str(path), dest / path.name)
        moved.append(info.step)
    with EventWriter(run_dir, attempt) as writer:
        writer.emit("forked", from_step=step, archived_steps=moved,
                    archive=str(dest.relative_to(run_dir)))
    return moved
