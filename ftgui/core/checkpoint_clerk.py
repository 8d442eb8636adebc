"""The bookkeeping after a checkpoint's files are written, done in a helper process.

After TensorFlow wrote `ckpt-N` and the trainer validated it, three small jobs make it count:
the metadata file (which makes the checkpoint valid), retention (deleting the checkpoints beyond
`keep`) and TensorFlow's state file: about 2 ms of Python per save. On the trainer's writer
thread that Python holds the GIL the training thread needs between its TensorFlow calls, and
training lost more than its duration: 4 ms of pure Python there cost 6.5 ms. The same kind of
work in another process at nice 19 costs little: 8 ms of pure Python per checkpoint there cost
training 0.9 ms (window estimate of benchmarks/bench_checkpoint.py, interleaved runs,
2026-12-01). With the clerk the writer thread's CPU per save fell from 4.7 to 2.6 ms
(benchmarks/trainer_timed.py). It is CheckFreq's and Gemini's "persist in the background",
limited to the part that needs no TensorFlow.

`Clerk` is the trainer's side: it starts `python -m ftgui.core.checkpoint_clerk` in the
trainer's process group (a kill of the trainer's group takes it too; a trainer that dies any
other way closes its pipe and the clerk exits), sends one JSON line per checkpoint and waits
for the reply on the writer thread. When the process cannot be started or has died, `Clerk`
does the same work in the calling thread (`finish`), so a save never depends on it.

The command line names the folder and `keep` (`python -m ftgui.core.checkpoint_clerk DIR
KEEP`, so `ps` tells what the process is for). Protocol on its standard input and output, one
JSON object per line: first `{"record"}` (the metadata fields every checkpoint of this trainer
shares); then per checkpoint
`{"step", "files", "fields"}` answered by `{"files": {name: bytes}}` (with the metadata file)
or `{"error": "one line"}`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from ftgui.core import checkpoints
from ftgui.core.retention import Retention
from ftgui.core.state_file import point_state_file

NICE = 19  # the clerk yields both cores to training; it has ~1 s until the next checkpoint


class ClerkError(RuntimeError):
    """The clerk could not record a checkpoint (the message is its one-line reason)."""


def finish(directory: Path, retention: Retention, step: int, files: dict[str, int],
           fields: dict) -> dict[str, int]:
    """Record checkpoint `step` of `directory` (a run's `checkpoints/`) whose TensorFlow files
    `files` (name -> bytes) are written: its metadata file with `fields` (which must hold
    `time`, Unix seconds), then `retention`, then the state file. Returns `files` plus the
    metadata file. Raises OSError when the folder cannot be written."""
    prefix = directory / f"{checkpoints.PREFIX}-{step}"
    meta = checkpoints.write_metadata(prefix, files, **fields)
    files = {**files, meta.name: meta.stat().st_size}
    point_state_file(directory, retention.after_save(step, files, fields["time"]))
    return files


class Clerk:
    """Runs `finish` for one trainer's checkpoints in a helper process (see the module text).

    `directory`: the run's `checkpoints/`; `keep`: how many checkpoints retention keeps;
    `record`: metadata fields shared by every checkpoint, merged under each save's fields.
    Use from one thread at a time (the checkpoint writer thread).
    """

    def __init__(self, directory: Path, keep: int, record: dict):
        self.directory, self.keep, self.record = Path(directory), keep, dict(record)
        self._process: subprocess.Popen | None = None
        self._retention: Retention | None = None  # only when working in this process

    @property
    def running(self) -> bool:
        """Whether the helper process is up (False: `finish` works in the calling thread)."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the helper process; on failure, stay in this process and say so once."""
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "ftgui.core.checkpoint_clerk", str(self.directory),
                 str(self.keep)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            self._send({"record": self.record})
        except OSError as exc:
            print(f"checkpoint clerk not started ({exc}); bookkeeping stays on the writer "
                  "thread", flush=True)
            self._process = None

    def finish(self, step: int, files: dict[str, int], fields: dict) -> dict[str, int]:
        """Record checkpoint `step` like the module-level `finish` with `fields` merged over
        the shared record; returns the files with the metadata file. Raises ClerkError with
        the reason when it could not be recorded."""
        if self._process is not None:
            try:
                self._send({"step": step, "files": files, "fields": fields})
                reply = self._process.stdout.readline()
            except OSError:
                reply = b""
            if reply:
                answer = json.loads(reply)
                if "error" in answer:
                    raise ClerkError(answer["error"])
                return answer["files"]
            print("checkpoint clerk exited; bookkeeping moves to the writer thread", flush=True)
            self._stop()
        if self._retention is None:
            self._retention = Retention(self.directory, self.keep)
        try:
            return finish(self.directory, self._retention, step, files,
                          {**self.record, **fields})
        except OSError as exc:
            raise ClerkError(_reason(step, exc)) from exc

    def close(self, grace: float = 5.0) -> None:
        """Let the helper process finish and exit (closing its pipe); kill it after `grace`
        seconds."""
        self._stop(grace)

    def _send(self, message: dict) -> None:
        self._process.stdin.write(json.dumps(message).encode() + b"\n")
        self._process.stdin.flush()

    def _stop(self, grace: float = 5.0) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        for pipe in (process.stdin, process.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _reason(step: int, exc: OSError) -> str:
    return (f"checkpoint {checkpoints.PREFIX}-{step} was not recorded: "
            f"{exc.strerror or exc}{f' ({exc.filename})' if exc.filename else ''}")


def serve(directory: Path, keep: int, lines, write) -> None:
    """The helper's loop for checkpoints of `directory` kept `keep` at a time: read the first
    message and the jobs from `lines` (an iterable of JSON lines), `write` one reply line
    (bytes) per job."""
    lines = iter(lines)
    record = json.loads(next(lines))["record"]
    retention = Retention(directory, keep)
    for line in lines:
        job = json.loads(line)
        try:
            files = finish(directory, retention, int(job["step"]), job["files"],
                           {**record, **job["fields"]})
            reply = {"files": files}
        except OSError as exc:
            reply = {"error": _reason(int(job["step"]), exc)}
        write(json.dumps(reply).encode() + b"\n")


def main(argv: list[str]) -> int:
    """The helper process (`argv`: the folder and `keep`): ignores the signals the supervisor
    sends the trainer's group (a preemption, a save request) and exits when the trainer
    closes its pipe."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_IGN)
    try:
        os.nice(NICE)
    except OSError:
        pass
    out = sys.stdout.buffer

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    try:
        serve(Path(argv[0]), int(argv[1]), sys.stdin.buffer, write)
    except (StopIteration, BrokenPipeError):
        pass  # the trainer went away
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
