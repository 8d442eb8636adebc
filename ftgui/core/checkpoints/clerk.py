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

`Clerk` is the trainer's side: it starts `python -m ftgui.core.checkpoints.clerk` in the
trainer's process group (a kill of the trainer's group takes it too; a trainer that dies any
other way closes its pipe and the clerk exits), sends one JSON line per checkpoint and waits
for the reply on the writer thread. When the process cannot be started or has died, `Clerk`
does the same work in the calling thread (`finish`), so a save never depends on it.

The command line names the folder, `keep` and the trainer's pid (`python -m
ftgui.core.checkpoints.clerk DIR KEEP PID`, so `ps` tells what the process is for). Protocol on
its standard input and output, one JSON object per line: first `{"record"}` (the metadata fields
every checkpoint of this trainer shares); then per checkpoint `{"step", "files", "fields"}`
answered by `{"files": {name: bytes}}` (with the metadata file) or `{"error": "one line",
"files": …}` (`ClerkError`'s fields).
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

from ftgui.child_python import module_argv
from ftgui.core.checkpoints import listing
from ftgui.core.checkpoints.retention import Retention
from ftgui.core.checkpoints.state_file import point_state_file

NICE = 19  # the clerk yields both cores to training; it has ~1 s until the next checkpoint
# A reply takes milliseconds (seconds at nice 19 on a machine busy with other training); one
# that has not come in this long means a stopped or stuck clerk, which must not stall training.
REPLY_SECONDS = 20.0


class ClerkError(RuntimeError):
    """The clerk could not record a checkpoint; the message is the one-line reason.

    `files`: None when the checkpoint is not valid (its metadata was not written), else its
    files with the metadata (name -> bytes): it is valid, and what failed came after
    (retention or the state file)."""

    def __init__(self, message: str, files: dict[str, int] | None = None):
        super().__init__(message)
        self.files = files


def finish(directory: Path, retention: Retention, step: int, files: dict[str, int],
           fields: dict) -> dict[str, int]:
    """Record checkpoint `step` of `directory` (a run's `checkpoints/`) whose TensorFlow files
    `files` (name -> bytes) are written: its metadata file with `fields` (which must hold
    `time`, Unix seconds), then `retention`, then the state file. Returns `files` plus the
    metadata file. Raises ClerkError naming the checkpoint, the step that failed and the
    system's reason when the folder cannot be written."""
    name = f"{listing.PREFIX}-{step}"
    try:
        meta = listing.write_metadata(directory / name, files, **fields)
    except OSError as exc:
        raise ClerkError(f"checkpoint {name} was not saved: its metadata could not be "
                         f"written: {_reason(exc)}") from exc
    files = {**files, meta.name: meta.stat().st_size}
    try:
        kept = retention.after_save(step, files, fields["time"])
    except OSError as exc:
        raise ClerkError(f"checkpoint {name} is saved, but older checkpoints could not be "
                         f"deleted: {_reason(exc)}", files) from exc
    try:
        point_state_file(directory, kept)
    except OSError as exc:
        raise ClerkError(f"checkpoint {name} is saved, but TensorFlow's state file could not "
                         f"be rewritten: {_reason(exc)}", files) from exc
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
                [*module_argv("ftgui.core.checkpoints.clerk"), str(self.directory),
                 str(self.keep), str(os.getpid())], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            self._send({"record": self.record})
        except OSError as exc:
            print(f"checkpoint clerk not started ({exc}); bookkeeping stays on the writer "
                  "thread", flush=True)
            self._process = None

    def finish(self, step: int, files: dict[str, int], fields: dict) -> dict[str, int]:
        """Record checkpoint `step` like the module-level `finish` with `fields` merged over
        the shared record; returns the files with the metadata file. Raises ClerkError as
        `finish` does. A helper that has exited, or has not answered in REPLY_SECONDS (it is
        killed), hands this and every later checkpoint back to the calling thread."""
        if self._process is not None:
            reply, gone = self._ask({"step": step, "files": files, "fields": fields})
            if reply:
                answer = json.loads(reply)
                if "error" in answer:
                    raise ClerkError(answer["error"], answer.get("files"))
                return answer["files"]
            print(f"checkpoint clerk {gone}; bookkeeping moves to the writer thread",
                  flush=True)
            self._stop(grace=0.0)
        if self._retention is None:
            self._retention = Retention(self.directory, self.keep)
        return finish(self.directory, self._retention, step, files, {**self.record, **fields})

    def close(self, grace: float = 5.0) -> None:
        """Let the helper process finish and exit (closing its pipe); kill it after `grace`
        seconds."""
        self._stop(grace)

    def _send(self, message: dict) -> None:
        self._process.stdin.write(json.dumps(message).encode() + b"\n")
        self._process.stdin.flush()

    def _ask(self, message: dict) -> tuple[bytes, str]:
        """Send `message`, wait for the reply line: (reply, '') or (b'', why there is none)."""
        try:
            self._send(message)
            ready, _, _ = select.select([self._process.stdout], [], [], REPLY_SECONDS)
            if not ready:
                return b"", f"did not answer in {REPLY_SECONDS:g} s and was stopped"
            reply = self._process.stdout.readline()
        except OSError:
            reply = b""
        return reply, "" if reply else "exited"

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


def _reason(exc: OSError) -> str:
    """The system's reason and the file it concerns (the target of a rename, not its temp)."""
    path = exc.filename2 or exc.filename
    return f"{exc.strerror or exc}{f' ({path})' if path else ''}"


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
            reply = {"files": finish(directory, retention, int(job["step"]), job["files"],
                                     {**record, **job["fields"]})}
        except ClerkError as exc:
            reply = {"error": str(exc), "files": exc.files}
        write(json.dumps(reply).encode() + b"\n")


def main(argv: list[str]) -> int:
    """The helper process (`argv`: the folder, `keep` and the trainer's pid): ignores the
    signals the supervisor sends the trainer's group (a preemption, a save request), exits
    when the trainer closes its pipe, and is killed by the kernel when the trainer dies even
    while it is stopped (Linux's parent-death signal)."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_IGN)
    _die_with_parent(int(argv[2]) if len(argv) > 2 else None)
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


def _die_with_parent(parent: int | None) -> None:
    """Ask Linux for SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG); elsewhere, or if
    the call fails, the closed pipe still ends the clerk unless it is stopped."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:
        os._exit(0)  # the trainer died before the request took effect


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
