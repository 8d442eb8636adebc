"""Restoring a checkpoint into the training state, and telling a damaged checkpoint from a
restore that failed for another reason.

A restore can fail because of the checkpoint's bytes (a truncated or overwritten file: the
checkpoint is damaged) or for reasons that are not its bytes: another model or other variable
shapes, a path TensorFlow reads as a glob pattern, a missing permission. Only the first kind may
mark the checkpoint damaged (`ckpt-N.damaged`), or a good checkpoint would never be offered again.

Also what a training process does around its restore: the data position a checkpoint records,
the `setting_changed` events of a resume, the restore from an in-memory snapshot, and the
`resumed` event's `source`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import NamedTuple

import tensorflow as tf

from ftgui.core.checkpoints import listing


def restore(checkpoint: tf.train.Checkpoint, prefix: Path):
    """Restore checkpoint files `prefix` into `checkpoint`, every object of it matched, through
    a path TensorFlow does not glob (see `listing.tf_path`). Returns TensorFlow's status.

    Raises what TensorFlow raises: `tf.errors.OpError` (NotFoundError, DataLossError,
    InvalidArgumentError for other shapes, …), `ValueError`, `AssertionError` (objects that the
    checkpoint does not hold: another model).
    """
    status = checkpoint.restore(str(listing.tf_path(prefix)))
    return status.assert_existing_objects_matched()


def damage_of(prefix: Path) -> str:
    """Why checkpoint `prefix`'s own files cannot be read, or '' when they can.

    Compares the files with the sizes its metadata vouches for, then reads every tensor of it
    with TensorFlow's restore op, which checks each tensor's CRC32C checksum (a flipped byte
    gives DataLossError). Costs one read of the checkpoint; call it only after a failed
    restore. An error of the machine (no permission, out of memory, …) is not damage (''); an
    OSError making the glob-free path is raised.
    """
    problem = listing.file_problem(prefix)
    if problem:
        return problem
    try:  # TensorFlow's reader reports a permission problem as a bare OpError
        for file in listing.tf_files(prefix.parent, int(prefix.name.rsplit("-", 1)[1])):
            file.open("rb").close()
    except OSError:
        return ""
    path = str(listing.tf_path(prefix))
    try:
        dtypes = tf.train.load_checkpoint(path).get_variable_to_dtype_map()
        # Read through the restore op, as a restore does: its errors keep their type
        # (DataLossError), which the reader's get_tensor turns into a bare OpError.
        tf.raw_ops.RestoreV2(prefix=path, tensor_names=list(dtypes),
                             shape_and_slices=[""] * len(dtypes), dtypes=list(dtypes.values()))
    except _NOT_THE_FILES:
        return ""
    except (tf.errors.OpError, ValueError) as exc:
        return one_line(exc)
    return ""


# Failures of the machine, not of the checkpoint's bytes: reading again later may succeed.
_NOT_THE_FILES = (tf.errors.PermissionDeniedError, tf.errors.ResourceExhaustedError,
                  tf.errors.UnavailableError, tf.errors.CancelledError,
                  tf.errors.DeadlineExceededError, tf.errors.AbortedError)


def one_line(exc: BaseException) -> str:
    """`Type: first line of the message` of an exception."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def data_position(run_dir: Path, restore: str, step: int, dataset, config):
    """The data position recorded with the restored checkpoint (see `data.DataPosition`)."""
    from ftgui.core.checkpoints import listing
    from ftgui.training.data import position_of_checkpoint

    meta = listing.read_info(run_dir / restore).meta
    return position_of_checkpoint(meta, step, len(dataset.x_train), config.global_batch_size)


def record_changes(run_dir: Path, restore: str, config, events) -> None:
    """A `setting_changed` event (setting, old, new, step) for each setting that applies from
    the resume step with another value than the restored checkpoint's (learning rate, global
    batch size; `ftgui.core.checkpoints.resume_check`)."""
    from ftgui.core.checkpoints import listing, resume_check

    info = listing.read_info(run_dir / restore)
    for change in resume_check.changes(run_dir, config, info):
        events.emit("setting_changed", **change.fields())
        print(f"{change.setting} changed from {change.old} to {change.new} after step "
              f"{change.step}", flush=True)


class MemoryRestore(NamedTuple):
    """A state restored from the in-memory snapshot of global step `step` (of loss `loss`),
    its data position after that step, and `path`: the checkpoint (relative to RUN) it is
    persisted as, by the checkpoint action's writer thread (`CheckpointAction.persist`)."""

    step: int
    loss: float
    position: object  # data.DataPosition
    path: str


def restore_memory(state, dataset, config, run_dir: Path, args, events) -> MemoryRestore | None:
    """Restore the newest consistent in-memory snapshot and say so (`resumed` with `source:
    memory`); None when there is no usable snapshot (the line why is printed; `--restore` is
    taken instead). Its checkpoint is written off the step path: persisting it here cost
    0.35-0.42 s of every recovery from memory (bench_recovery, 2026-12-02)."""
    from ftgui.training.actions.snapshot import restore_snapshot

    began = time.perf_counter()
    try:
        step, loss = restore_snapshot(state, run_dir)
    except LookupError as exc:
        print(f"in-memory snapshot not restored ({exc}); restoring from disk", flush=True)
        return None
    restore_seconds = time.perf_counter() - began
    position = memory_position(run_dir, step, dataset, config)
    path = f"{listing.CHECKPOINT_DIR}/{listing.PREFIX}-{step}"
    events.emit("resumed", from_step=step, checkpoint=path, source="memory",
                optimizer_iterations=int(state.optimizer.iterations.numpy()),
                restore_seconds=restore_seconds)
    print(f"restored step {step} from memory; saving it as {path}", flush=True)
    return MemoryRestore(step, loss, position, path)


def memory_position(run_dir: Path, step: int, dataset, config):
    """The data position after snapshot step `step`: that of the newest valid checkpoint before
    it, advanced at the run's global batch size (the attempt that took the snapshot trained
    with this config.toml's batch size from that checkpoint on)."""
    from ftgui.core.checkpoints import listing
    from ftgui.training.data import DataPosition, StepBatches, position_of_checkpoint

    n_train, batch = len(dataset.x_train), config.global_batch_size
    info = listing.newest_valid(run_dir, at_most=step - 1)
    base = (position_of_checkpoint(info.meta, info.step, n_train, batch) if info
            else DataPosition())
    return StepBatches(n_train, batch, config.seed, start=base).position_after(step)


def restore_failed(run_dir: Path, args, events, exc: Exception) -> int:
    """The checkpoint would not restore. Only when its own files explain it (see
    `restore.damage_of`) is it marked damaged, so the next attempt takes the one before it;
    otherwise (another model, other shapes, a path problem) it stays valid and this process
    refuses, as for a bad configuration."""
    from ftgui.core.checkpoints import listing
    from ftgui.core.record import exitcodes
    from ftgui.training.restore import damage_of, one_line

    reason = one_line(exc)
    damage = damage_of(run_dir / args.restore)
    if not damage:
        error = f"checkpoint {args.restore} is intact but does not restore here ({reason})"
        events.emit("training_error", role=args.role, index=args.index, error=error)
        print(f"error: {error}", file=sys.stderr, flush=True)
        return exitcodes.BAD_CONFIG
    listing.mark_damaged(run_dir / args.restore, damage)
    events.emit("training_error", role=args.role, index=args.index,
                error=f"checkpoint {args.restore} is damaged and now marked invalid ({damage})")
    print(f"error: cannot restore {args.restore}: {damage}", file=sys.stderr, flush=True)
    return exitcodes.DAMAGED_CHECKPOINT


def restore_source(prefix: Path) -> str:
    """Where a restored state came from, for the `resumed` event's `source`: `just_in_time`
    (a checkpoint a surviving worker wrote at a peer's failure) or `disk` (a periodic,
    requested or preemption checkpoint)."""
    from ftgui.core.checkpoints import listing

    return "just_in_time" if listing.read_info(prefix).meta.get("just_in_time") else "disk"
