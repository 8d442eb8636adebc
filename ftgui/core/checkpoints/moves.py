"""Checkpoints that live outside `RUN/checkpoints` for a while: those a fork moved aside
(`RUN/history/fork-N/checkpoints/`, still listed) and the just-in-time checkpoints a worker other
than the chief wrote into its scratch folder, which the supervisor moves into `RUN/checkpoints`."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from ftgui.core.checkpoints.listing import (
    PREFIX,
    CheckpointInfo,
    checkpoint_dir,
    list_checkpoints,
    meta_path,
    read_info,
    tf_files,
)

ARCHIVE_DIR = "history"  # RUN/history/fork-N/checkpoints/: what the fork of attempt N moved
_FORK_FOLDER = re.compile(r"^fork-(\d+)$")


def list_archived(run_dir: str | os.PathLike) -> list[tuple[int, CheckpointInfo]]:
    """The checkpoints forks moved aside, as (attempt of the fork N, checkpoint) pairs, by N then
    step: those of `RUN/history/fork-N/checkpoints/` (validated like `list_checkpoints`)."""
    root = Path(run_dir) / ARCHIVE_DIR
    if not root.is_dir():
        return []
    found = []
    for folder in root.iterdir():
        match = _FORK_FOLDER.match(folder.name)
        if match and folder.is_dir():
            found += [(int(match.group(1)), info) for info in list_checkpoints(folder)]
    return sorted(found, key=lambda pair: (pair[0], pair[1].step))


JUST_IN_TIME_SUFFIX = "just-in-time"  # RUN/scratch/<role>-<index>-just-in-time/ckpt-N


def just_in_time_dir(run_dir: str | os.PathLike, role: str, index: int) -> Path:
    """Where a multi-worker worker other than the chief writes its just-in-time checkpoint
    (only the chief writes into `RUN/checkpoints`; the supervisor promotes it from here)."""
    return Path(run_dir) / "scratch" / f"{role}-{index}-{JUST_IN_TIME_SUFFIX}"


def promote_just_in_time(run_dir: str | os.PathLike) -> list[tuple[CheckpointInfo, str]]:
    """Move the valid just-in-time checkpoints that workers left in their scratch folders into
    `RUN/checkpoints` (the newest first; a step already valid there is not replaced), then
    remove those scratch folders. Returns (the promoted checkpoint, where it was relative to
    RUN) for each one moved.

    The TensorFlow files move first and the metadata last (`os.replace`, same file system):
    a crash in between leaves a checkpoint without metadata, which is invalid, never half of
    one that looks valid.
    """
    run_dir = Path(run_dir)
    folders = sorted((run_dir / "scratch").glob(f"*-{JUST_IN_TIME_SUFFIX}"))
    found = []
    for folder in folders:
        for meta in folder.glob(f"{PREFIX}-*.meta.json"):
            info = read_info(folder / meta.name[: -len(".meta.json")])
            if info.valid and info.meta.get("just_in_time"):
                found.append(info)
    promoted = []
    target = checkpoint_dir(run_dir)
    for info in sorted(found, key=lambda i: -i.step):
        dest = target / info.prefix.name
        if read_info(dest).valid:
            continue
        target.mkdir(parents=True, exist_ok=True)
        meta_path(dest).unlink(missing_ok=True)
        for path in tf_files(info.prefix.parent, info.step):
            os.replace(path, target / path.name)
        os.replace(meta_path(info.prefix), meta_path(dest))
        promoted.append((read_info(dest), f"scratch/{info.prefix.parent.name}/{info.prefix.name}"))
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    return promoted
