"""Run ftgui's training process with timers around some of its functions (no ftgui file changed).

    python benchmarks/trainer_timed.py RUN [trainer args…]   (see trainer_command.trainer_args)

RUN must already hold a config.toml (the benchmarks write one with ftgui.core.settings.config.save).
Each function in TIMED is wrapped, in this process only, by a timer; at exit one line
`TIMINGS {json}` gives, per name, the list of call durations in seconds (`timings`, wall clock;
`cpu`, CPU seconds of the calling thread). Names that no longer exist in the code are reported
under `missing` instead of failing. Calls made inside
`CheckpointAction.save` are recorded under `save/<name>`, others under `<name>`.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import json
import sys
import threading
import time

TIMED = [
    ("ftgui.training.actions.checkpoint", "CheckpointAction.save"),
    ("tensorflow", "train.CheckpointManager.save"),
    ("ftgui.training.step", "TrainState.evaluate"),
    ("ftgui.training.step", "TrainState.train_step"),
    ("ftgui.core.checkpoints.listing", "write_metadata"),
    ("ftgui.core.checkpoints.listing", "list_checkpoints"),
    ("ftgui.core.checkpoints.listing", "tf_files"),
    ("ftgui.core.checkpoints.listing", "keep_newest"),
    ("ftgui.core.checkpoints.clerk", "Clerk.finish"),
    ("ftgui.core.checkpoints.state_file", "point_state_file"),
    ("ftgui.core.checkpoints.retention", "Retention.after_save"),
    ("ftgui.training.summaries", "Summaries.flush"),
    ("ftgui.training.actions.checkpoint", "CheckpointAction._complete_save"),
    ("ftgui.training.background_save", "ShadowState.take"),
    ("ftgui.training.background_save", "ShadowState.write"),
    ("ftgui.training.background_save", "ShadowState.evaluate"),
    ("ftgui.training.background_save", "ShadowState.write_and_evaluate"),
    ("ftgui.training.checkpoint_writer", "OneWriter.wait"),
    ("ftgui.core.record.events", "EventWriter.emit"),
    ("ftgui.training.data", "StepBatches.indices"),
    ("ftgui.training.summaries", "Summaries.scalar"),
    ("ftgui.training.step", "SyncSteps.run"),
    ("ftgui.training.loop", "TrainingLoop._after_step"),
    ("ftgui.training.actions.fault_hooks", "FaultHooks.poison"),
    ("ftgui.training.actions.fault_hooks", "FaultHooks.__call__"),
]

timings: dict[str, list[float]] = {}
cpu: dict[str, list[float]] = {}  # the calling thread's CPU seconds (time.thread_time)
missing: list[str] = []
_local = threading.local()


def _wrap(owner, attr: str, name: str) -> None:
    original = getattr(owner, attr)

    @functools.wraps(original)
    def timed(*args, **kwargs):
        in_save = getattr(_local, "in_save", False)
        is_save = name == "CheckpointAction.save"
        key = f"save/{name}" if in_save and not is_save else name
        _local.in_save = in_save or is_save
        started, started_cpu = time.perf_counter(), time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            timings.setdefault(key, []).append(time.perf_counter() - started)
            cpu.setdefault(key, []).append(time.thread_time() - started_cpu)
            _local.in_save = in_save

    setattr(owner, attr, timed)


def install() -> None:
    for module_name, dotted in TIMED:
        try:
            owner = importlib.import_module(module_name)
            *path, attr = dotted.split(".")
            for part in path:
                owner = getattr(owner, part)
            getattr(owner, attr)
        except (ImportError, AttributeError):
            missing.append(f"{module_name}:{dotted}")
            continue
        _wrap(owner, attr, dotted)


def report() -> None:
    print("TIMINGS " + json.dumps({"timings": timings, "cpu": cpu, "missing": missing}), flush=True)


def main() -> int:
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    install()
    atexit.register(report)
    from ftgui.training.__main__ import main as trainer_main

    code = trainer_main(sys.argv[1:])
    return code


if __name__ == "__main__":
    sys.exit(main())
