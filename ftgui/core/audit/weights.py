"""The final weights of an audit's runs compared with the reference's, to the bit: the last
step's checkpoint of each, read by a helper process (`ftgui.training.helpers.compare_weights`,
one TensorFlow import for every run)."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ftgui.child_python import module_argv
from ftgui.core.checkpoints import listing, tools
from ftgui.streams import CHILD_ENV

TRAINABLE = "optimizer/_trainable_variables/"


@dataclass(frozen=True)
class WeightsResult:
    """A run's final checkpoint against the reference's: `differ` (tensor names whose bits
    differ, or that one side lacks) or `problem` (why there was nothing to compare)."""

    differ: list[str] = field(default_factory=list)
    problem: str = ""


def final_prefix(run_dir: Path, step: int) -> Path:
    """The prefix of the valid checkpoint of `step` in `run_dir`; raises `LookupError`."""
    return listing.tf_path(listing.find(run_dir, step).prefix)


def readable(name: str, model_variables: list[str]) -> str:
    """`optimizer/_trainable_variables/0` named after the model's variable too (the checkpoint
    metadata lists the trainable variables in the optimizer's order): `… (dense/kernel)`."""
    index = name.removeprefix(TRAINABLE)
    if name.startswith(TRAINABLE) and index.isdigit() and int(index) < len(model_variables):
        return f"{name} ({model_variables[int(index)]})"
    return name


class Comparer:
    """The helper process, started early (`start`) so that TensorFlow is imported by the time
    the runs end; `compare` sends it the checkpoints once."""

    def __init__(self):
        self._process: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the helper (it imports TensorFlow, then waits for the request)."""
        if self._process is None:
            self._process = subprocess.Popen(
                [*module_argv("ftgui.training.helpers.compare_weights"), "--stdin"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                encoding="utf-8", errors="replace", env={**os.environ, **CHILD_ENV})

    def close(self) -> None:
        """End the helper if it is still waiting (an audit that stopped early)."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.communicate()

    def compare(self, reference_dir: Path, run_dirs: dict[str, Path], step: int,
                timeout: float = 300.0) -> dict[str, WeightsResult]:
        """Run name -> its final checkpoint (of `step`) against the reference's. A run without
        that checkpoint gets a `problem`; a helper that fails gives every run its line."""
        try:
            reference = listing.find(reference_dir, step)
        except LookupError as exc:
            return {name: WeightsResult(problem=f"reference: {exc}") for name in run_dirs}
        results, prefixes = {}, {}
        for name, run_dir in run_dirs.items():
            try:
                prefixes[name] = str(final_prefix(run_dir, step))
            except LookupError as exc:
                results[name] = WeightsResult(problem=str(exc))
        if not prefixes:
            return results
        self.start()
        request = json.dumps([str(listing.tf_path(reference.prefix)), *prefixes.values()])
        try:
            stdout, stderr = self._process.communicate(request + "\n", timeout=timeout)
            answer = tools.parse_result(stdout, stderr, self._process.returncode)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            self.close()
            return {**results, **{name: WeightsResult(problem=str(exc)) for name in prefixes}}
        names = list(reference.meta.get("variables") or {})
        for name, prefix in prefixes.items():
            found = answer["results"][prefix]
            differ = found["differ"] + found["only_reference"] + found["only_run"]
            results[name] = WeightsResult([readable(n, names) for n in sorted(differ)])
        return results


def compare(reference_dir: Path, run_dirs: dict[str, Path], step: int,
            timeout: float = 300.0) -> dict[str, WeightsResult]:
    """`Comparer.compare` in a helper started now (3–6 s of TensorFlow import)."""
    return Comparer().compare(reference_dir, run_dirs, step, timeout)
