"""TensorBoard scalars of a run in `RUN/tensorboard/`: TensorBoard's `Event` protos in an event
file written by TensorFlow's own `TFRecordWriter` (no TensorFlow graph: no tracing, ~8 µs a
scalar)."""

from __future__ import annotations

import collections
import math
import os
import socket
import time
from pathlib import Path

TENSORBOARD_DIR = "tensorboard"
_BACKFILL = object()  # a queue entry whose value gives losses to log (Summaries.backfill)


class Summaries:
    """The chief's loss, val_loss and val_accuracy as TensorBoard scalars, so that
    `tensorboard --logdir RUN` shows the same values as the window (as float32, TensorBoard's
    scalar type); a no-op elsewhere, and (with one printed line) without the tensorboard
    package.

    `scalar` only appends to a queue (thread-safe, ~1 µs); `flush` (on the checkpoint writer
    thread after each checkpoint, and at the end) encodes them and puts them on disk, ~8 µs a
    scalar. An event file is a TFRecord file of serialized `Event` protos, the first one its
    `file_version`, so TensorFlow's record writer (C++ CRC32C) replaces TensorBoard's
    `EventFileWriter`, whose pure-Python CRC cost ~23 µs a scalar: 2.3 ms of the writer
    thread per default 100-step checkpoint interval (benchmarks/bench_checkpoint.py).

    Steps not yet flushed when a process is killed are lost from TensorBoard; the restart
    redoes and logs them again, after `restart_at(step)` has written TensorBoard's restart
    marker (a `SessionLog` START event at that step: TensorBoard then drops the older values of
    that step and later ones, so a resumed, forked or rolled-back run shows each step once). A
    resume from memory or a just-in-time save starts after them: it logs them again from the
    run's events (`backfill`, see `actions/tensorboard.LossSummary`).

    Before this, `tf.summary.scalar` cost ~1.5 ms a call eagerly and ~0.4 s of tracing when
    batched in a tf.function (benchmarks/bench_checkpoint.py breakdown).
    """

    def __init__(self, directory: Path | None):
        self.writer = None
        self._queue: collections.deque = collections.deque()
        if directory is None:
            return
        try:
            from tensorboard.compat.proto import event_pb2, summary_pb2
        except ImportError:
            print("tensorboard is not installed: no TensorBoard summaries "
                  "(pip install tensorboard)", flush=True)
            return
        self._event, self._summary = event_pb2.Event, summary_pb2.Summary
        self._session_log = event_pb2.SessionLog
        self.writer = self._open(directory)

    def _open(self, directory: Path):
        """A new event file in `directory`, named as TensorBoard's `EventFileWriter` names
        them (one per process; TensorBoard reads every `*tfevents*` file of the folder)."""
        import tensorflow as tf

        directory.mkdir(parents=True, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.0"
        writer = tf.io.TFRecordWriter(str(directory / name))
        writer.write(self._event(wall_time=time.time(),
                                 file_version="brain.Event:2").SerializeToString())
        return writer

    def scalar(self, name: str, value: float | None, step: int) -> None:
        """Queue `value` of `name` at global step `step` (non-finite values and None, e.g. a
        regression's accuracy, are skipped)."""
        if self.writer is not None and value is not None and math.isfinite(value):
            self._queue.append((name, value, step, time.time()))

    def restart_at(self, step: int) -> None:
        """Tell TensorBoard that training goes on from `step` again (see the class doc)."""
        if self.writer is not None:
            self._queue.append((None, None, step, time.time()))

    def backfill(self, losses) -> None:
        """Queue the losses `losses()` returns ([(step, loss)], called at the next flush, off
        the step path) in front of what is queued after this call."""
        if self.writer is not None:
            self._queue.append((_BACKFILL, losses, None, time.time()))

    def flush(self) -> None:
        """Write what is queued to the event file."""
        if self.writer is None:
            return
        while self._queue:
            name, value, step, wall_time = self._queue.popleft()
            if name is _BACKFILL:
                self._queue.extendleft(reversed([("loss", loss, past, wall_time)
                                                 for past, loss in value()]))
                continue
            if name is None:
                start = self._session_log(status=self._session_log.START)
                event = self._event(wall_time=wall_time, step=step, session_log=start)
            else:
                summary = self._summary(value=[self._summary.Value(tag=name,
                                                                   simple_value=value)])
                event = self._event(wall_time=wall_time, step=step, summary=summary)
            self.writer.write(event.SerializeToString())
        self.writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self.flush()
        if self.writer is not None:
            self.writer.close()
            self.writer = None
