"""In-memory snapshots of the training state (`--snapshot-every N`), and restoring from one.

After every N-th global step the chief of a one-process strategy (default, one-device, mirrored)
copies its whole state — every model variable, every optimizer variable (Adam's moments and
iterations), every other variable of its object graph and the global step — into the run's snapshot
file in shared memory (`ftgui.core.checkpoints.snapshots`: two slots written in turn, checksum
last). The data position is a function of the step, so this is everything an exact resume needs. A
killed trainer leaves the file behind; the supervisor sees a snapshot newer than the newest valid
checkpoint and starts the next trainer with `--restore-snapshot`, which loads it
(`restore_snapshot`), makes it the first snapshot of its own file, and persists it as a regular
checkpoint marked `"source": "memory"` on its checkpoint writer thread
(`CheckpointAction.persist`).

The state is read inside the step itself: the plain step's second form
(`TrainState.fuse_state_output`) returns the state next to the loss — a small state as one
concatenated tensor, a large one as every variable's value (values that share the variables'
buffers: no copy on the step path) — so a snapshot pays no dispatch of its own (a separate traced
read cost 0.3–0.9 ms for the MLP, 12–15 ms for the ResNet). The action checks that the last eight
bytes (the global step) hold the step it snapshots, else it reads the state itself. The values are
then copied into the file and hashed (XXH3-64) — for a state of at least `ASYNC_BYTES` on a writer
thread, overlapped with the next step (numpy's copy and the hash let go of the GIL), as CheckFreq
(FAST '21) pipelines its snapshot with the next iteration. At most one write is in flight: the next
waits for it, and a planned kill or hold waits for it too (`wait`), so a schedule recovers the same
way every time. A process crash is covered; a lost machine loses the shared memory with it: that
needs the disk checkpoints.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import tensorflow as tf

from ftgui.core.checkpoints import snapshots
from ftgui.core.supervision.fault_plan import KILL_IN_SNAPSHOT
from ftgui.training.actions import Action, StepOutput
from ftgui.training.checkpoint_writer import OneWriter
from ftgui.training.state_variables import name_of, state_variables
from ftgui.training.traced import traced

ASYNC_BYTES = 1 << 20  # a state this large is written on the writer thread (a smaller one's
# copy and hash take less than handing it over: ~0.02 ms for the MLP's 58 kB)


class StateBytes:
    """The training state of a `step.TrainState` as one flat byte array, and back.

    Variables in this order: the model's, the optimizer's, every other variable of the
    checkpoint's object graph (`state_variables`: a user layer's plain `tf.Variable`), the global
    step. Raw bytes in each variable's own dtype, so a load gives back every bit.
    """

    def __init__(self, state):
        self.state = state
        self.variables = state_variables(state)
        # Shapes and dtypes, not names: Keras numbers its names per process.
        self.layout = [(str(i), tuple(v.shape), tf.as_dtype(v.dtype).name)
                       for i, v in enumerate(self.variables)]
        self.checksum = snapshots.layout_checksum(self.layout)
        self._dtypes = [tf.as_dtype(d) for _, _, d in self.layout]
        for variable, dtype in zip(self.variables, self._dtypes, strict=True):
            if not (dtype.is_numpy_compatible and (dtype.is_bool or dtype.is_floating
                                                   or dtype.is_integer or dtype.is_complex)):
                raise ValueError(f"snapshot_every: variable {name_of(variable)} holds "
                                 f"{dtype.name}, which an in-memory snapshot cannot copy; "
                                 f"train with --snapshot-every 0")
        self._sizes = [int(np.prod(s, dtype=np.int64)) * d.size
                       for (_, s, _), d in zip(self.layout, self._dtypes, strict=True)]
        self.nbytes = sum(self._sizes)
        # what `parts` returns, part by part: the whole state at once, or variable by variable
        self._part_sizes = [self.nbytes] if self.nbytes < ASYNC_BYTES else self._sizes
        self._read = traced(self.flat)
        self._read_traced = None  # its concrete function: no argument binding on each call

    def flat(self):
        """Every variable's raw bytes, concatenated in order: a (nbytes,) uint8 tensor (to be
        traced, by `read` or inside a step)."""
        parts = []
        for variable in self.variables:
            value = tf.convert_to_tensor(variable)
            if value.dtype == tf.bool:  # one byte, 0 or 1: a view as bool gives it back
                value = tf.cast(value, tf.uint8)
            elif value.dtype != tf.uint8:
                value = tf.bitcast(value, tf.uint8)
            parts.append(tf.reshape(value, [-1]))
        return tf.concat(parts, axis=0)

    def read(self, eagerly: bool = False) -> np.ndarray:
        """The state now, (nbytes,) uint8; `eagerly`: without tracing the read (a read made
        once, before the first step, would wait for its trace)."""
        if eagerly:
            return self.flat().numpy()
        if self._read_traced is None:
            self._read_traced = self._read.get_concrete_function()
        return self._read_traced().numpy()

    def parts(self) -> list:
        """What a step returns for a snapshot (to be traced inside it): for a state under
        `ASYNC_BYTES`, one tensor, `flat()` (handing each of a small state's ~15 values to
        Python cost more than their concatenation in the graph: ~0.1 against ~0.03 ms a
        snapshot for the MLP's 58 kB); else every variable's value, in order (a bool one as
        uint8: one byte, 0 or 1), whose raw bytes one after the other are the payload. A
        value read this way shares the variable's buffer (TensorFlow copies it only if the
        next update comes while it is still held), so no concatenation copies a large state
        once more on the step path (it cost ~3 ms a step for the ResNet's 14.5 MB)."""
        if self.nbytes < ASYNC_BYTES:
            return [self.flat()]
        return [tf.cast(value, tf.uint8) if value.dtype == tf.bool else value
                for value in map(tf.convert_to_tensor, self.variables)]

    def of_step(self, tensors, step: int) -> list | None:
        """What `tensors` (what `parts` returned, e.g. inside a step) hold, or None when they
        are missing, are not as many as `parts` returns, or hold another global step than
        `step` (the last one). One part: as a memoryview of its buffer (no copy). Several:
        the tensors themselves, whose memoryviews `views` takes on the writer thread (taken
        here, the ResNet's 141 cost the step path ~0.25 ms a step, 2026-12-04)."""
        if tensors is None or len(tensors) != len(self._part_sizes):
            return None
        last = _host_view(tensors[-1])
        if last.nbytes != self._part_sizes[-1]:
            return None
        if int.from_bytes(last.cast("B")[-8:], sys.byteorder, signed=True) != step:
            return None
        return [last] if len(tensors) == 1 else list(tensors)

    def views(self, parts: list) -> list[memoryview]:
        """Memoryviews of `parts` (what `of_step` or `read` gave), no copy where they are in
        host memory. Raises ValueError when their sizes do not fit the layout."""
        views = [_host_view(part) for part in parts]
        if [v.nbytes for v in views] != ([self.nbytes] if len(views) == 1 else self._sizes):
            raise ValueError(f"snapshot: {len(views)} parts of {sum(v.nbytes for v in views)} "
                             f"bytes do not fit the state's {self.nbytes}")
        return views

    def load(self, payload) -> None:
        """Assign every variable from `payload` (bytes-like of `nbytes`, as `read` gave).
        Raises ValueError when the length does not fit."""
        if len(payload) != self.nbytes:
            raise ValueError(f"snapshot holds {len(payload)} bytes, the state {self.nbytes}")
        raw, offset = np.frombuffer(payload, dtype=np.uint8), 0
        for variable, (_, shape, _), dtype, size in zip(
                self.variables, self.layout, self._dtypes, self._sizes, strict=True):
            value = raw[offset:offset + size].view(dtype.as_numpy_dtype).reshape(shape)
            variable.assign(value)
            offset += size


def _host_view(tensor) -> memoryview:
    """A tensor's value as a memoryview: of its buffer in host memory, else of a copy (a GPU's
    tensor)."""
    try:
        return memoryview(tensor)
    except (TypeError, ValueError, BufferError):
        return memoryview(tensor.numpy())


class SnapshotAction(Action):
    """Writes the state into the run's snapshot file after every `every`-th global step.

    Creating it replaces the run's snapshot file with an empty one (what an older attempt or
    another line of training left there must not be restored), and asks the state's step to
    return the state next to the loss at each snapshot step (`arm`). When the run reaches its
    last step the file is deleted: the final checkpoint is on disk. `write_seconds` sums the
    time spent on the step path (the write itself is off it for a state of `ASYNC_BYTES` or
    more). Raises ValueError when a variable's dtype cannot be copied, OSError when shared
    memory is short.
    """

    def __init__(self, state, run_dir: Path, every: int, kill_inside=None, events=None,
                 restored=None):
        self.every, self.kill_inside, self.events = every, kill_inside, events
        self.state, self.state_bytes = state, StateBytes(state)
        began = time.perf_counter()
        first = None
        if restored is not None:  # read without tracing: no step has run yet
            payload = self.state_bytes.views([self.state_bytes.read(eagerly=True)])
            first = (restored.step, restored.loss, payload)
        self.file = snapshots.SnapshotFile.create(
            snapshots.snapshot_path(run_dir), self.state_bytes.checksum, self.state_bytes.nbytes,
            run_dir, first)
        self._fuses = hasattr(state, "fuse_state_output") and not state.agrees_in_step
        if self._fuses:
            state.fuse_state_output(self.state_bytes.parts)
        self._writer = OneWriter("snapshot") if self.state_bytes.nbytes >= ASYNC_BYTES \
            else None
        self._slot = 0 if first is None else 1
        self.taken = 0 if first is None else 1
        self.write_seconds = self.first_seconds = (
            0.0 if first is None else time.perf_counter() - began)
        self.fused = 0  # snapshots whose state came out of the step itself
        self.arm(state.global_step)

    def arm(self, step: int) -> None:
        """The state holds global step `step`: have the next step return the state when that
        one is a snapshot step."""
        if self._fuses:
            self.state.state_output_next = (step + 1) % self.every == 0

    def __call__(self, output: StepOutput) -> None:
        if self._writer is not None:
            self._writer.check()  # a failed write stops training now, not at the next one
        if output.step % self.every == 0:
            self.take(output.step, output.loss)
        self.arm(output.step)
        return None

    def take(self, step: int, loss: float) -> None:
        """Copy the state (which holds global step `step`, of loss `loss`) into the slot not
        holding the newest snapshot: the state the step returned when it holds `step`, else
        one read now."""
        began = time.perf_counter()
        payload = self.state_bytes.of_step(getattr(self.state, "last_state_output", None), step)
        if payload is None:
            payload = [self.state_bytes.read()]
        else:
            self.fused += 1
        if self._fuses:
            self.state.last_state_output = None
        if self.kill_inside is not None \
                and self.kill_inside.planned(KILL_IN_SNAPSHOT, step):
            self.wait()
            self.kill_inside.wait_for_save()
            payload = self.state_bytes.views(payload)
            self.file.write_partial(self._slot, payload, sum(v.nbytes for v in payload) // 2)
            self.kill_inside.fire(KILL_IN_SNAPSHOT, step)
        if self._writer is not None:
            self._writer.submit(self._write, self._slot, step, loss, payload)
        else:
            self.file.write(self._slot, step, loss, self.state_bytes.views(payload))
        self._slot = 1 - self._slot
        self.taken += 1
        spent = time.perf_counter() - began
        if self.taken == 1:  # where the step does not return the state, a read traces here
            self.first_seconds = spent
        self.write_seconds += spent

    def _write(self, slot: int, step: int, loss: float, payload: list) -> None:
        """On the writer thread: the file's `write` of `payload` (tensors or arrays)."""
        self.file.write(slot, step, loss, self.state_bytes.views(payload))

    def roll_back(self, before: int, newer_than: int) -> tuple[int, float] | None:
        """A NaN rollback from memory: load the newest consistent snapshot of a step in
        (`newer_than`, `before`) into the state and go on snapshotting from it; (its step, its
        loss), or None when neither slot holds one (nothing is assigned then). The data
        position needs no restore: the batches of this process are a function of the step."""
        self.wait()
        slots = [self.file.slot(index) for index in range(snapshots.SLOTS)]
        good = [slot for slot in slots if slot.consistent and newer_than < slot.step < before]
        if not good:
            return None
        slot = max(good, key=lambda found: found.step)
        payload = self.file.payload(slot)
        if int.from_bytes(payload[-8:], sys.byteorder, signed=True) != slot.step:
            return None  # the global step is the last variable: another state's bytes
        self.state_bytes.load(payload)
        self._slot = 1 - slot.index  # the restored snapshot stays until the next is whole
        if self._fuses:
            self.state.last_state_output = None  # the poisoned step's state
        self.arm(slot.step)
        return slot.step, slot.loss

    def wait(self) -> None:
        """Block until the snapshot being written is in the file (re-raising its error)."""
        if self._writer is not None:
            self._writer.wait()

    def close(self) -> None:
        try:
            if self._writer is not None:
                self._writer.close()
        finally:
            if self._fuses:
                self.state.state_output_next = False
            self.file.close()

    def finished(self, output: StepOutput, seconds: float) -> None:
        self.file.path.unlink(missing_ok=True)
        if self.events is not None:  # what the snapshots of this attempt cost the step path
            self.events.emit("snapshot_stats", step=output.step, snapshots=self.taken,
                             seconds=self.write_seconds, first_seconds=self.first_seconds,
                             size=self.state_bytes.nbytes, fused=self.fused)


def restore_snapshot(state, run_dir: Path) -> tuple[int, float]:
    """Load the newest consistent snapshot of the run into `state`; (its step, its loss).

    Raises LookupError (with the reason) when there is none, or it was taken of another
    layout of variables; nothing is assigned then.
    """
    snapshot = snapshots.SnapshotFile.open(snapshots.snapshot_path(run_dir))
    if snapshot is None:
        raise LookupError("no snapshot file")
    slot = snapshot.newest()
    if slot is None:
        reasons = "; ".join(f"slot {i}: {snapshot.slot(i).reason}" for i in range(2))
        raise LookupError(f"no consistent snapshot ({reasons})")
    state_bytes = StateBytes(state)
    if snapshot.layout != state_bytes.checksum or slot.length != state_bytes.nbytes:
        raise LookupError("the snapshot holds another model or optimizer")
    payload = snapshot.payload(slot)
    held = int.from_bytes(payload[-8:], sys.byteorder, signed=True)  # the global step, last
    if held != slot.step:
        raise LookupError(f"snapshot slot says step {slot.step}, its state {held}")
    state_bytes.load(payload)
    return slot.step, slot.loss
