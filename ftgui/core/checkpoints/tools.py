"""Acting on one checkpoint: inspect, evaluate or export it in a helper process, or delete it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ftgui.core.checkpoints import listing
from ftgui.streams import CHILD_ENV


def inspect_command(run_dir: Path, step: int, evaluate: bool = False,
                    export: Path | None = None) -> list[str]:
    """The helper's command line (for `subprocess` or a `QProcess`)."""
    argv = [sys.executable, "-m", "ftgui.training.helpers.inspect_checkpoint", str(run_dir),
            str(step)]
    if evaluate:
        argv.append("--evaluate")
    if export is not None:
        argv += ["--export", str(export)]
    return argv


def parse_result(stdout: str) -> dict:
    """The helper's JSON answer; raises `RuntimeError` with its error line if it failed."""
    lines = [line for line in stdout.strip().splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError("the checkpoint helper printed no answer")
    result = json.loads(lines[-1])
    if "error" in result:
        raise RuntimeError(result["error"])
    return result


def inspect(run_dir: Path, step: int, evaluate: bool = False, export: Path | None = None,
            timeout: float = 300.0) -> dict:
    """Variables (name, shape, dtype, bytes) of checkpoint `step`, with `evaluation`
    (val_loss, val_accuracy on the validation split) and `exported` when asked.
    Runs TensorFlow in a helper process (3–6 s). Raises `RuntimeError` or `LookupError`."""
    listing.find(run_dir, step)  # a clear error before paying for TensorFlow
    result = subprocess.run(inspect_command(run_dir, step, evaluate, export),
                            capture_output=True, encoding="utf-8", errors="replace",
                            env={**os.environ, **CHILD_ENV}, timeout=timeout)
    return parse_result(result.stdout)


def delete(run_dir: Path, step: int) -> list[str]:
    """Delete every file of checkpoint `step` (TensorFlow's and the metadata); returns their
    names. The next training process drops it from TensorFlow's `checkpoint` state file.
    Raises `LookupError` when the step has no files."""
    directory = listing.checkpoint_dir(run_dir)
    doomed = listing.tf_files(directory, step)
    prefix = directory / f"{listing.PREFIX}-{step}"
    doomed += [p for p in (listing.meta_path(prefix), listing.damage_path(prefix))
               if p.exists()]
    if not doomed:
        raise LookupError(f"no checkpoint of step {step} in {directory}")
    for path in doomed:
        os.remove(path)
    return [path.name for path in doomed]
