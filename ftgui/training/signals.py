"""Signals a training process answers, installed before anything slow is imported.

SIGTERM (preemption: save at the current step, then stop), SIGUSR1 (checkpoint now) and SIGUSR2
(inject a NaN into the next step's loss: the window's "Inject NaN now") only set flags that the
training loop reads between steps, so the step in flight always finishes. The
handlers go in at the very start of the process: before them, either signal would end it.
"""

from __future__ import annotations

import signal


class Requests:
    """`stop`, `save` and `nan` flags set by SIGTERM, SIGUSR1 and SIGUSR2."""

    def __init__(self):
        self.stop = False
        self.save = False
        self.nan = False

    def install(self) -> Requests:
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGUSR1, self._on_save)
        signal.signal(signal.SIGUSR2, self._on_nan)
        return self

    def _on_nan(self, signum, frame):
        self.nan = True

    def take_nan(self) -> bool:
        """True once per SIGUSR2: the next step's loss is to be poisoned."""
        requested, self.nan = self.nan, False
        return requested

    def _on_stop(self, signum, frame):
        self.stop = True

    def _on_save(self, signum, frame):
        self.save = True

    @property
    def pending(self) -> tuple[bool, bool]:
        return self.stop, self.save


REQUESTS = Requests()
