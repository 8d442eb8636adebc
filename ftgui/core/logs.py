"""Following a training process' output file: new text since the last read, split on whole lines."""

from __future__ import annotations

import codecs
from pathlib import Path


class LogTail:
    """Returns the complete new lines of a growing log file.

    Bytes are decoded with an incremental UTF-8 decoder so a character split across two reads is
    never mangled; a line without its newline yet is held back until it is complete.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._offset = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""

    def read_lines(self, max_bytes: int = 1 << 20) -> list[str]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read(max_bytes)
        except FileNotFoundError:
            return []
        self._offset += len(chunk)
        text = self._partial + self._decoder.decode(chunk)
        lines = text.split("\n")
        self._partial = lines.pop()
        return lines
