"""Acting on one checkpoint: inspect, evaluate or export it in a helper process, or delete it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ftgui.child_python import module_argv
from ftgui.core.checkpoints import listing
from ftgui.core.settings.schema import ConfigError
from ftgui.streams import CHILD_ENV


def checkpoint_config(run_dir: Path, info: listing.CheckpointInfo):
    """The `RunConfig` that checkpoint `info` was trained with: `RUN/config.toml`, a setting it
    lacks or cannot read taken from the run's record (`resume_check.fill_from_record`), and
    the model and dataset its metadata names. Raises `ConfigError` (or OSError)."""
    from ftgui.core.checkpoints import resume_check
    from ftgui.core.settings import config as configmod

    values, _ = resume_check.fill_from_record(run_dir, configmod.load_values(run_dir), info.meta)
    for name in ("model", "dataset"):
        if name in info.meta:
            values[name] = info.meta[name]
    return configmod.from_dict(values)


def changed_files(config, info: listing.CheckpointInfo) -> str:
    """Why the model and dataset files of `config` are not those checkpoint `info` was trained
    with ('' when they are, or when the checkpoint recorded no hash): the file and that its
    content hash differs, or that it is gone. Evaluating or exporting it with other code
    would give figures (or a model) that are not the checkpoint's."""
    from ftgui.core.settings import user_code

    for name in ("model", "dataset"):
        recorded = info.meta.get(f"{name}_sha256")
        if recorded is None:
            continue
        try:
            source = user_code.parse(name, getattr(config, name))
        except ConfigError as exc:
            return f"{exc}; checkpoint {info.prefix.name} was trained with it"
        if source.path is not None and user_code.sha256(source.path) != recorded:
            return (f"{name}: {source.path} changed since checkpoint {info.prefix.name} was "
                    f"saved (content hash differs); restore the file to evaluate or export "
                    f"this checkpoint")
    return ""


def check_files(run_dir: Path, step: int) -> None:
    """Raise `RuntimeError` (one line) when checkpoint `step` cannot be evaluated or exported
    with the files it was trained with (`changed_files`), or its settings cannot be read;
    `LookupError` when it is not a valid checkpoint. Reads files only (no TensorFlow)."""
    info = listing.find(run_dir, step)
    try:
        problem = changed_files(checkpoint_config(run_dir, info), info)
    except (ConfigError, OSError) as exc:
        raise RuntimeError(str(exc)) from None
    if problem:
        raise RuntimeError(problem)


def inspect_command(run_dir: Path, step: int, evaluate: bool = False,
                    export: Path | None = None) -> list[str]:
    """The helper's command line (for `subprocess` or a `QProcess`)."""
    argv = [*module_argv("ftgui.training.helpers.inspect_checkpoint"), str(run_dir),
            str(step)]
    if evaluate:
        argv.append("--evaluate")
    if export is not None:
        argv += ["--export", str(export)]
    return argv


def parse_result(stdout: str, stderr: str = "", returncode: int | None = None) -> dict:
    """The helper's JSON answer; raises `RuntimeError` with one line if it failed: its error
    line, or, when it printed no answer (it crashed), its exit status and the last line of
    its `stderr` (the exception)."""
    lines = [line for line in stdout.strip().splitlines() if line.startswith("{")]
    try:
        result = json.loads(lines[-1]) if lines else None
    except ValueError:
        result = None
    if not isinstance(result, dict):
        tail = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
        status = "" if returncode is None else f" (exit status {returncode})"
        raise RuntimeError(f"the checkpoint helper printed no answer{status}"
                           + (f": {tail[-1]}" if tail else ""))
    if "error" in result:
        raise RuntimeError(result["error"])
    return result


def inspect(run_dir: Path, step: int, evaluate: bool = False, export: Path | None = None,
            timeout: float = 300.0) -> dict:
    """Variables (name, shape, dtype, bytes) of checkpoint `step`, with `evaluation`
    (val_loss, val_accuracy on the validation split) and `exported` when asked: both with the
    model and data the checkpoint was trained with, refused (`RuntimeError`, one line) when a
    file changed since (`check_files`). Runs TensorFlow in a helper process (3–6 s). Raises
    `RuntimeError` or `LookupError`."""
    listing.find(run_dir, step)  # a clear error before paying for TensorFlow
    if evaluate or export is not None:
        check_files(run_dir, step)
    result = subprocess.run(inspect_command(run_dir, step, evaluate, export),
                            capture_output=True, encoding="utf-8", errors="replace",
                            env={**os.environ, **CHILD_ENV}, timeout=timeout)
    return parse_result(result.stdout, result.stderr, result.returncode)


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
