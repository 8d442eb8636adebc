"""Restoring a checkpoint into the training state, and telling a damaged checkpoint from a
restore that failed for another reason.

A restore can fail because of the checkpoint's bytes (a truncated or overwritten file: the
checkpoint is damaged) or for reasons that are not its bytes: another model or other variable
shapes, a path TensorFlow reads as a glob pattern, a missing permission. Only the first kind may
mark the checkpoint damaged (`ckpt-N.damaged`), or a good checkpoint would never be offered again.
"""

from __future__ import annotations

from pathlib import Path

import tensorflow as tf

from ftgui.core import checkpoints


def restore(checkpoint: tf.train.Checkpoint, prefix: Path):
    """Restore checkpoint files `prefix` into `checkpoint`, every object of it matched, through
    a path TensorFlow does not glob (see `checkpoints.tf_path`). Returns TensorFlow's status.

    Raises what TensorFlow raises: `tf.errors.OpError` (NotFoundError, DataLossError,
    InvalidArgumentError for other shapes, …), `ValueError`, `AssertionError` (objects that the
    checkpoint does not hold: another model).
    """
    status = checkpoint.restore(str(checkpoints.tf_path(prefix)))
    return status.assert_existing_objects_matched()


def damage_of(prefix: Path) -> str:
    """Why checkpoint `prefix`'s own files cannot be read, or '' when they can.

    Compares the files with the sizes its metadata vouches for, then reads every tensor of it
    with TensorFlow's restore op, which checks each tensor's CRC32C checksum (a flipped byte
    gives DataLossError). Costs one read of the checkpoint; call it only after a failed
    restore. An error of the machine (no permission, out of memory, …) is not damage (''); an
    OSError making the glob-free path is raised.
    """
    problem = checkpoints.file_problem(prefix)
    if problem:
        return problem
    try:  # TensorFlow's reader reports a permission problem as a bare OpError
        for file in checkpoints.tf_files(prefix.parent, int(prefix.name.rsplit("-", 1)[1])):
            file.open("rb").close()
    except OSError:
        return ""
    path = str(checkpoints.tf_path(prefix))
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
