"""The supervisor's word to the survivors of a multi-worker attempt: a member is gone, stop
waiting for it in a collective (`ftgui.training.peer_watch` reads it).

When a process of a MultiWorkerMirroredStrategy cluster is lost, TensorFlow does not always
tell the others at once: a `SIGKILL`ed peer usually makes a survivor's all-reduce fail in about
0.1 s, but measured here, after 2 of 10 kills of worker 1 at random moments the chief sat in a
ring all-reduce (`RingReducer` waiting for its parts) until the coordination service missed
the peer's heartbeats, 7-7.5 s later: longer than the grace the supervisor gives a survivor
for its just-in-time checkpoint (`task_launch.JUST_IN_TIME_GRACE_SECONDS`), so the restart
took the periodic checkpoint. A frozen peer (SIGSTOP) holds the others the same way. The
supervisor knows sooner: it sees the exit (or its watchdog fires). It then writes a notice
file, `RUN/.peer-lost.attempt-N` (N: the attempt), and the watcher thread of each process of
that attempt, polling for that file, aborts its collectives. The next attempt's launch
removes the notices (`clear`).

Why a file and not a signal: SIGTERM, SIGUSR1 and SIGUSR2 already mean something to the
trainer (`ftgui.training.signals`); a Python signal handler runs in the main thread only, and
only once it is back from TensorFlow's C++ code, which is where it waits; a thread waiting in
`signal.sigwait` needs the signal blocked in every thread, from before TensorFlow starts its
own (one thread that has it unblocked and a real-time signal's default action ends the whole
process). A file needs none of that, costs one `stat` every `peer_watch.POLL_SECONDS`
(0.05 s: the abort's extra latency, against a grace of 3 s), and lives in the run directory
every task of the run shares. It is written atomically (a temporary file, then
`os.replace`): a reader sees all of it or nothing.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

NOTICE_PREFIX = ".peer-lost.attempt-"


def notice_path(run_dir: str | os.PathLike, attempt: int) -> Path:
    """Where the notice for attempt `attempt` of the run in `run_dir` is written."""
    return Path(run_dir) / f"{NOTICE_PREFIX}{attempt}"


def announce(run_dir: str | os.PathLike, attempt: int, reason: str) -> Path:
    """Tell the processes of `attempt` that a member is gone: write its notice (JSON with
    `attempt`, `reason`, a sentence such as "worker 1 ended by SIGKILL", and `time`, Unix
    seconds). Returns the notice's path. Raises `OSError` if it cannot be written."""
    path = notice_path(run_dir, attempt)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps({"attempt": attempt, "reason": reason,
                                     "time": time.time()}), encoding="utf-8")
    os.replace(temporary, path)
    return path


def read(run_dir: str | os.PathLike, attempt: int) -> dict | None:
    """The notice of `attempt` (its JSON object), or None while there is none. A notice that
    cannot be parsed counts as one with an empty reason (its existence is the message)."""
    try:
        text = notice_path(run_dir, attempt).read_text(encoding="utf-8")
    except OSError:
        return None
    try:
        notice = json.loads(text)
    except ValueError:
        return {"attempt": attempt, "reason": ""}
    return notice if isinstance(notice, dict) else {"attempt": attempt, "reason": ""}


def clear(run_dir: str | os.PathLike) -> None:
    """Remove every notice of the run (each is about an attempt that has ended)."""
    for path in Path(run_dir).glob(f"{NOTICE_PREFIX}*"):
        path.unlink(missing_ok=True)
