"""Following a training process' output file: new text since the last read, in whole lines."""

from __future__ import annotations

import os

from ftgui.core.record.tail import Tail


class LogTail:
    """Returns the complete new lines of a growing log file, as text.

    A line without its newline yet is held back until it is complete (`ftgui.core.record.tail`), so
    a UTF-8 character is never split across two reads; invalid UTF-8 shows as U+FFFD.
    """

    def __init__(self, path: str | os.PathLike):
        self._tail = Tail(path)
        self.path = self._tail.path

    def read_lines(self, max_bytes: int = 1 << 20) -> list[str]:
        """The lines completed since the last call (reading at most `max_bytes` more)."""
        return [line.decode("utf-8", errors="replace")
                for line in self._tail.read_lines(max_bytes)]
