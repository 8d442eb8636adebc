"""Listing TensorFlow's physical devices from a short-lived helper process (no TF here)."""

from __future__ import annotations

import json
import os
import subprocess

from ftgui.child_python import module_argv
from ftgui.core.settings.config import ConfigError
from ftgui.streams import CHILD_ENV


def list_devices(timeout: float = 120.0) -> list[dict]:
    """Physical devices as dicts with `name` and `device_type` (CPU, GPU, …).

    Runs `python -m ftgui.training.helpers.devices` (3–6 s: it imports TensorFlow). Raises
    `RuntimeError` with the helper's last error line if it fails.
    """
    result = subprocess.run(
        module_argv("ftgui.training.helpers.devices"),
        capture_output=True, encoding="utf-8", errors="replace", timeout=timeout,
        env={**os.environ, **CHILD_ENV},
    )
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines() or ["no output"]
        raise RuntimeError(f"device listing failed: {lines[-1]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def gpu_count(devices: list[dict]) -> int:
    """Number of GPUs in a `list_devices()` result."""
    return sum(1 for d in devices if d["device_type"] == "GPU")


def check_gpus(wanted: int, devices: list[dict] | None = None) -> None:
    """Raise `ConfigError` naming `gpus` when this machine has fewer than `wanted` GPUs.

    `devices`: a `list_devices()` result; listed now when None (a helper process, 3-6 s), so
    call it before anything is written. Nothing is checked for `wanted` 0.
    """
    if wanted <= 0:
        return
    present = gpu_count(list_devices() if devices is None else devices)
    if present < wanted:
        raise ConfigError(f"gpus (--gpus): {wanted} asked for, this machine has {present} "
                          "(see ftgui devices); give --gpus 0 to train on the CPU")
