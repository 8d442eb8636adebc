"""What a training process printed (`RUN/logs/*.log`): raw TensorFlow, gRPC and Python output.

The window's event log shows the run's events as sentences; the processes' own output — TensorFlow's
`I0000`/`W0000`/`E0000` lines, absl's "WARNING: All log messages before absl::InitializeLog() …",
gRPC status dumps, tracebacks — stays in its files and is shown only on request. One thing in it is
news: the error that ended a process that had no chance to record it as a `training_error` event (a
crash during imports, an uncaught exception); `OutputFollower.error` is that traceback's last line.
"""

from __future__ import annotations

import re
from pathlib import Path

from ftgui.core.record.logs import LogTail

MAX_ERROR_CHARS = 200
_TRACEBACK = "Traceback (most recent call last):"
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
_QUALIFIED = re.compile(r"^((?:[A-Za-z_]\w*\.)+)([A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)\b)")


class OutputFollower:
    """Follows one process' output file: `read_lines()` returns its new non-blank lines and
    keeps `error`, the last line of the newest Python traceback seen ("ValueError: …", without
    the module path, at most MAX_ERROR_CHARS characters), or None."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.error: str | None = None
        self.reported = False  # the error was shown (once per process)
        self._tail = LogTail(path)
        self._in_traceback = False

    def read_lines(self) -> list[str]:
        lines = [line for line in self._tail.read_lines() if line.strip()]
        for line in lines:
            self._scan(line)
        return lines

    def _scan(self, line: str) -> None:
        if line.startswith(_TRACEBACK):
            self._in_traceback = True
        elif self._in_traceback and not line[:1].isspace() and not line.startswith(_CHAINED):
            self.error = short_error(line)
            self._in_traceback = False


def short_error(line: str) -> str:
    """An exception line without its module path, cut to MAX_ERROR_CHARS characters:
    "tensorflow.python.framework.errors_impl.UnavailableError: …" → "UnavailableError: …"."""
    text = _QUALIFIED.sub(r"\2", line.strip())
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 1] + "…"


# TensorFlow's errors when a peer of a cluster is gone (a killed worker, a lost parameter
# server): the survivors see one of these, whose message says nothing a reader can use.
_PEER_LOST = {"UnavailableError", "AbortedError", "CancelledError", "DeadlineExceededError"}
# First lines of TensorFlow messages that only announce the real one.
_GENERIC = ("Graph execution error:", "Detected at node", "Detected unhandled exception")
_STACK = ("Node: ",)  # "Node: 'add'": the node named again after its stack


def error_sentence(type_name: str, message: str) -> str:
    """One line for a `training_error` event: "UnavailableError: lost contact with another task
    of the cluster" for TensorFlow's errors of a lost peer, else the type and the message's first
    line that says something ("Graph execution error:" and "Detected at node …" do not), cut
    to MAX_ERROR_CHARS characters."""
    if type_name in _PEER_LOST:
        return f"{type_name}: lost contact with another task of the cluster"
    useful, in_stack = [], False
    for line in message.splitlines():
        if line.startswith("Detected at node"):
            in_stack = True  # the indented `File …` lines that follow are its stack
        elif in_stack and line[:1].isspace():
            continue
        else:
            in_stack = False
        if line.strip() and not line.startswith(_GENERIC + _STACK):
            useful.append(line.strip())
    return short_error(f"{type_name}: {useful[0]}" if useful else type_name)
