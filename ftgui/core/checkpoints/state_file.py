"""TensorFlow's checkpoint state file (`RUN/checkpoints/checkpoint`), written without TensorFlow.

The file is a `CheckpointState` protocol buffer in text format: the newest checkpoint's name,
then every kept checkpoint's name and its time (Unix seconds), oldest first, paths relative to
the folder - what `tf.train.CheckpointManager` writes with `save_relative_paths=True`
(tensorflow/python/checkpoint/checkpoint_management.py, `update_checkpoint_state_internal`),
and what `tf.train.latest_checkpoint` and `tf.train.get_checkpoint_state` read.

Why not TensorFlow's own function: the checkpoint clerk (`clerk`) rewrites this file
after every save in a process that must not import TensorFlow (3-6 s and ~1 GB), and in the
trainer TensorFlow's version costs ~3x the CPU for the same bytes (~0.7 ms per save).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from ftgui.core.checkpoints.listing import CheckpointInfo

STATE_FILE = "checkpoint"


def state_text(valid: list[CheckpointInfo]) -> str:
    """The text-format `CheckpointState` naming `valid` (oldest first; not empty)."""
    names = [_quoted(info.prefix.name) for info in valid]
    lines = [f"model_checkpoint_path: {names[-1]}"]
    lines += [f"all_model_checkpoint_paths: {name}" for name in names]
    lines += [f"all_model_checkpoint_timestamps: {float(info.time)!r}" for info in valid]
    return "\n".join(lines) + "\n"


def point_state_file(directory: Path, valid: list[CheckpointInfo]) -> None:
    """Point the state file in `directory` at the `valid` checkpoints (oldest first), so that
    `tf.train.latest_checkpoint` and `tf.train.CheckpointManager` see what ftgui sees; with
    none, remove it.

    After a crash or a fork the file can name missing or newer checkpoints, which a manager
    would later delete or renumber over. Written via a temp file (named like TensorFlow's,
    `checkpoint.tmp<hex>`, which `checkpoints` counts as a leftover) and a rename, so a
    reader never sees half of it. Raises OSError when the folder cannot be written.
    """
    path = Path(directory) / STATE_FILE
    if not valid:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_name(f"{STATE_FILE}.tmp{uuid.uuid4().hex}")
    try:
        tmp.write_text(state_text(valid), encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _quoted(name: str) -> str:
    """A text-format string literal (C escapes, as protobuf's text format writes them)."""
    escaped = (name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
               .replace("\r", "\\r").replace("\t", "\\t"))
    return f'"{escaped}"'
