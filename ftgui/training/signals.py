"""Signals a training process answers, installed before anything slow is imported.

SIGTERM (preemption: save at the current step, then stop) and SIGUSR1 (checkpoint now) only set
flags that the training loop reads after each step, so the step in flight always finishes. The
handlers go in at the very start of the process: before them, either signal would end it.
"""

from __future__ import annotations

import signal


class Requests:
    """`stop` and `save` flags set by SIGTERM and SIGUSR1."""

    def __init__(self):
        self.stop = False
        self.save = False

    def install(self) -> Requests:
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGUSR1, self._on_save)
        return self

    def _on_stop(self, signum, frame):
        self.stop = True

    def _on_save(self, signum, frame):
        self.save = True

    @property
    def pending(self) -> tuple[bool, bool]:
        return self.stop, self.save


REQUESTS = Requests()
