"""A multi-worker trainer's watcher thread: once the supervisor says that a member of this
attempt is gone (`ftgui.core.supervision.peer_notice`), abort this process' collectives, so that a
step waiting for the lost peer fails now and the just-in-time checkpoint
(`actions/just_in_time.py`) is written within the supervisor's grace.

The abort is TensorFlow's own: `MultiWorkerMirroredStrategy`'s health-check thread
(`_check_health` in `tensorflow/python/distribute/collective_all_reduce_strategy.py`) calls
`context.context().abort_collective_ops(UNAVAILABLE, message)` from a thread when a peer stops
answering; but that thread is off when the coordination service is on, and the strategy turns
that service on itself (TF 2.21, eager): what is left is the service noticing missed
heartbeats (about 7 s here). The call is not in
TensorFlow's public API. After it, the collective a step waits in fails with
`UnavailableError` (the error `just_in_time.PEER_LOST` expects, the one a lost peer gives
anyway), and so does every later collective of this process: like any peer loss, it needs the
process restarted. Local reads still work after it: in `benchmarks/jit_kills.py`, survivors
whose wait the abort ended read their variables and wrote the copy of the last completed step
in about 0.2 s (in one, the failed step had already changed all 14 live variables: the copy,
not the live state, is what is written), and a run whose worker 1 was killed 20 times (5 of
the waits ended by the abort) logged every loss equal, to the bit, to the run never killed;
tests/core/supervision/test_just_in_time.py's hung-worker test checks the same on every run.

The thread polls the notice file every `POLL_SECONDS` (a `stat`; why a file, not a signal:
see `ftgui.core.supervision.peer_notice`) and writes a `collectives_aborted` event (role, index,
reason, `notice_seconds`: from the notice being written to the abort) when it aborts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from ftgui.core.supervision import peer_notice
from ftgui.training.actions import Action

POLL_SECONDS = 0.05  # how often the notice file is looked for: the abort's extra latency


def abort_collectives(message: str) -> None:
    """Abort every pending and later collective op of this process with an `UNAVAILABLE`
    status carrying `message` (TensorFlow's eager context; the strategy must be built)."""
    from tensorflow.python.eager import context
    from tensorflow.python.framework import errors

    context.context().abort_collective_ops(errors.UNAVAILABLE, message)


class PeerWatch(Action):
    """Watches for the supervisor's notice that a member of attempt `events.attempt` is
    gone, from construction until `close()`; then calls `abort(message)` once.

    `run_dir`: the run directory; `events`: this process' `EventWriter`; `role`, `index`:
    this task. `abort` (default `abort_collectives`) and `interval` (seconds between looks)
    are parameters for tests. `aborted` is the notice's reason once the abort was made.
    """

    def __init__(self, run_dir: Path, events, role: str, index: int,
                 abort: Callable[[str], None] = abort_collectives,
                 interval: float = POLL_SECONDS):
        self.run_dir, self.events, self.role, self.index = run_dir, events, role, index
        self.abort, self.interval = abort, interval
        self.aborted: str | None = None
        self._path = peer_notice.notice_path(run_dir, events.attempt)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="peer-watch", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._closed.wait(self.interval):
            if self._path.exists():
                self._act(peer_notice.read(self.run_dir, self.events.attempt) or {})
                return

    def _act(self, notice: dict) -> None:
        reason = notice.get("reason") or "a member of the cluster is gone"
        try:
            self.abort(f"ftgui's supervisor reports: {reason}")
        except Exception as exc:  # noqa: BLE001 (the thread's end must be in the log)
            print(f"could not abort the collectives after the loss of a peer ({reason}): "
                  f"{type(exc).__name__}: {exc}", flush=True)
            return
        self.aborted = reason
        written = notice.get("time")
        seconds = time.time() - written if isinstance(written, (int, float)) else None
        self.events.emit("collectives_aborted", role=self.role, index=self.index,
                         reason=reason, notice_seconds=seconds)
        print(f"collectives aborted: the supervisor reports {reason}", flush=True)

    def close(self) -> None:
        """Stop watching (waits up to one interval and a bit for the thread)."""
        self._closed.set()
        self._thread.join(timeout=self.interval + 1.0)
