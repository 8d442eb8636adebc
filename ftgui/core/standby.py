"""The warm-standby pool: training processes that have imported TensorFlow and wait for an order.

A restart that hands its command line to a standby skips the 3–6 s TensorFlow import (DESIGN.md
§4). A standby is `python -m ftgui.training --standby RUN`; it writes `standby_ready` to the
run's events once imported, then reads one order from stdin, `{"argv": [...], "env": {...}}`:
the trainer's arguments and the environment of the process it becomes. EOF ends it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ftgui.core.processes import kill_tree, spawn
from ftgui.core.trainer_command import standby_argv


class StandbyPool:
    """The standbys of one run; their output goes to `log_dir/standby-<n>.log`.

    `standbys` holds (process, log path) of those not yet handed an order, oldest first.
    """

    def __init__(self, run_dir: Path, log_dir: Path, python: str = sys.executable):
        self.run_dir, self.log_dir, self.python = run_dir, log_dir, python
        self.standbys: list[tuple[subprocess.Popen, Path]] = []
        self._started = 0
        self._ready: set[int] = set()  # pids that sent `standby_ready`

    def mark_ready(self, pid: int | None) -> None:
        """Note a standby's `standby_ready` event: it has TensorFlow imported."""
        self._ready.add(pid)

    def keep(self, wanted: int) -> None:
        """Forget the standbys that ended; start one more if fewer than `wanted` are left
        (one per call: their imports should not compete with each other or the run).
        Raises `OSError` if the program cannot be started."""
        self.standbys = [(p, log) for p, log in self.standbys if p.poll() is None]
        if len(self.standbys) < wanted:
            self._started += 1
            log_path = self.log_dir / f"standby-{self._started}.log"
            popen = spawn(standby_argv(self.run_dir, self.python), log_path, stdin_pipe=True)
            self.standbys.append((popen, log_path))

    def hand_order(self, args: list[str], env: dict[str, str]):
        """Give `args` (the trainer's arguments) and `env` to a waiting standby.

        Ready ones (TensorFlow imported) go first; one still importing beats a cold start.
        Returns (its process, its log path), or (None, None) when no standby is left.
        """
        order = (json.dumps({"argv": args, "env": env}) + "\n").encode()
        self.standbys.sort(key=lambda item: item[0].pid not in self._ready)
        while self.standbys:
            popen, log_path = self.standbys.pop(0)
            if popen.poll() is not None:
                continue
            try:
                popen.stdin.write(order)
                popen.stdin.close()
            except OSError:  # it died in between: try the next one
                kill_tree(popen.pid)
                popen.wait()
                continue
            return popen, log_path
        return None, None

    def dismiss(self) -> None:
        """End every waiting standby (the run is over, or the supervisor is closing)."""
        for popen, _ in self.standbys:
            kill_tree(popen.pid)
            try:
                popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.standbys = []
