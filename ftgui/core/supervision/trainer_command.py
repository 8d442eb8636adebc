"""The command lines of a training process, built in this one place.

    python -m ftgui.training RUN --role ROLE --index I --attempt N [--restore PREFIX]
                             [--restore-snapshot]
                             [--fault KIND@STEP:TARGET ...]
    python -m ftgui.training --standby RUN
    TF_CONFIG='{…}' ftgui worker RUN --role ROLE …      (a task on another machine)

`ftgui/training/__main__.py` parses them. The supervisor, the warm-standby pool (whose order is
the trainer's arguments) and the benchmarks build them here.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterable

from ftgui.child_python import module_argv

# Python's string hashing, fixed for every trainer: the order of a set of strings (a vocabulary
# built from `set(words)`, layers made in a set's order) is then the same in every attempt,
# standby, restart and machine, or a resumed run would silently train on other ids than the one
# stopped.
TRAINER_HASH_SEED = {"PYTHONHASHSEED": "0"}

TRAINER_MODULE = "ftgui.training"


def trainer_args(
    run_dir: str | os.PathLike,
    role: str = "chief",
    index: int = 0,
    attempt: int = 0,
    restore: str | None = None,
    faults: Iterable[str] = (),
    restore_snapshot: bool = False,
) -> list[str]:
    """The trainer's arguments: what follows `python -m ftgui.training`.

    `attempt`: 0 for the first launch, +1 per restart; `restore`: a checkpoint prefix relative
    to RUN (`checkpoints/ckpt-30`), or None to start at step 0; `faults`: planned faults the
    process fires itself at their step, as `KIND@STEP:TARGET` (`kill@40:chief`);
    `restore_snapshot`: restore the run's newest in-memory snapshot instead (`--restore` stays
    the fallback when it turns out unusable).
    """
    args = [str(run_dir), "--role", role, "--index", str(index), "--attempt", str(attempt)]
    if restore is not None:
        args += ["--restore", restore]
    if restore_snapshot:
        args.append("--restore-snapshot")
    for fault in faults:
        args += ["--fault", fault]
    return args


def trainer_argv(args: list[str], python: str = sys.executable) -> list[str]:
    """The whole command line: `python -m ftgui.training` and `args` (from `trainer_args`)."""
    return [*module_argv(TRAINER_MODULE, python), *args]


def standby_args(run_dir: str | os.PathLike) -> list[str]:
    """A warm standby's arguments: what follows `python -m ftgui.training`."""
    return ["--standby", str(run_dir)]


def standby_argv(run_dir: str | os.PathLike, python: str = sys.executable) -> list[str]:
    """A warm standby of the run: it imports TensorFlow, then waits for its order on stdin."""
    return [*module_argv(TRAINER_MODULE, python), *standby_args(run_dir)]


def remote_command(args: list[str], tf_config: dict) -> str:
    """The shell command that starts a task on its own machine: `ftgui worker` with the
    trainer's `args`, and the task's `TF_CONFIG` (a JSON object) and the trainers' fixed
    `PYTHONHASHSEED` (`TRAINER_HASH_SEED`) in its environment."""
    config = json.dumps(tf_config, separators=(",", ":"))
    seed = " ".join(f"{name}={value}" for name, value in TRAINER_HASH_SEED.items())
    return f"{seed} TF_CONFIG={shlex.quote(config)} ftgui worker {shlex.join(args)}"
