"""Puts one training process together: the step runner, the actions in their order, the loop."""

from __future__ import annotations

from pathlib import Path

from ftgui.core.checkpoints import listing
from ftgui.core.record.events import EventWriter
from ftgui.core.settings.config import RunConfig
from ftgui.training.actions.checkpoint import CheckpointAction
from ftgui.training.actions.fault_hooks import FaultHooks, Faults, KillInside
from ftgui.training.actions.hold import Hold, planned_holds
from ftgui.training.actions.pace import Pace
from ftgui.training.actions.rollback import NanRollback
from ftgui.training.actions.step_events import StepEvents
from ftgui.training.actions.tensorboard import LossSummary
from ftgui.training.data import DataPosition, Dataset, StepBatches, position_of_checkpoint
from ftgui.training.loop import TrainingLoop
from ftgui.training.signals import REQUESTS
from ftgui.training.step import SyncSteps, TrainState
from ftgui.training.summaries import TENSORBOARD_DIR, Summaries


def build_loop(state: TrainState, data: Dataset, config: RunConfig, run_dir: Path,
               events: EventWriter, faults: Faults, runner=None, role: str = "chief",
               index: int = 0, is_chief: bool = True,
               start: DataPosition | None = None, shadow=None,
               restored=None) -> TrainingLoop:
    """The loop that trains `state` from its global step to `config.steps` in this process.

    Only the chief writes `step` events, checkpoints into `RUN/checkpoints`, validation and
    TensorBoard summaries; another worker writes heartbeats and saves into its scratch folder.
    `runner`: the step runner (default `SyncSteps`; `parameter_server.ScheduledSteps` for a
    coordinator). `start`: the data position at the restored step (default: step 0's);
    `shadow`: the checkpoint's shadow copy if a warm standby built it; `restored`: the
    `restore.MemoryRestore` when the state came from the in-memory snapshot (its checkpoint
    is written on the writer thread, and the new snapshot file starts with it). Raises
    ValueError when the global batch is larger than the training split.

    After each step the actions run in this order: step event or heartbeat, TensorBoard loss,
    NaN rollback (which hides a poisoned step from the rest), in-memory snapshot, periodic
    checkpoint, a planned hold (`ftgui.core.supervision.holds`), scheduled kill or hang (after the
    checkpoint and the snapshot, so that the same schedule recovers the same way), then the
    wait of `pace`. The snapshot comes before the checkpoint: it takes 0.03 ms (the MLP) to a
    few ms, the checkpoint's validation pass and write ms to a quarter second, and a kill in
    that time must find the step it logged saved (after the checkpoint, a kill there redid
    one step, where "at most N − 1" promises none). A multi-worker process also keeps a
    just-in-time copy of each step and watches for the supervisor's word that a peer is gone
    (`peer_watch`).
    """
    batches = StepBatches(len(data.x_train), config.global_batch_size, config.seed, start)
    start_step = state.global_step
    summaries = Summaries(run_dir / TENSORBOARD_DIR if is_chief else None)
    kill_inside = KillInside(faults, events)
    checkpoint = CheckpointAction(state, data, config, run_dir, events, summaries,
                                  batches.epoch_of, is_chief, role, index, batches, shadow,
                                  kill_inside)
    if restored is not None:
        checkpoint.persist(restored.step, restored.loss)
    kill_inside.wait_for_save = checkpoint.wait  # never from the writer thread: only a snapshot

    def restore_with_data_position(prefix: Path) -> int:  # a rollback: back to its position
        step = state.restore(prefix)
        meta = listing.read_info(prefix).meta
        batches.resume_at(position_of_checkpoint(meta, step, len(data.x_train),
                                                 config.global_batch_size))
        return step

    snapshot = _snapshots(state, config, run_dir, is_chief and runner is None, kill_inside,
                          events, restored)

    def wait_for_writes() -> None:  # a planned kill or hold lands once both are written
        checkpoint.wait()
        for action in snapshot:
            action.wait()

    fault_hooks = FaultHooks(faults, events, REQUESTS, wait_for_writes)
    actions = [
        StepEvents(events, batches.epoch_of, is_chief, role, index),
        LossSummary(summaries, start_step, run_dir if is_chief else None),
        NanRollback(run_dir, events, summaries, restore_with_data_position, checkpoint.wait,
                    is_chief, snapshot[0].roll_back if snapshot else None, role, index),
        *snapshot,
        checkpoint,
        # before the faults: a fault planned at the step of a hold lands once it is released
        Hold(planned_holds(faults.planned), run_dir, events, REQUESTS, role, index,
             wait_for_writes),
        fault_hooks,
    ]
    if config.pace:  # last: a paced step is let go once every other action is done
        actions.append(Pace(config.pace))
    if config.strategy == "multi-worker":  # a survivor saves the last completed step
        from ftgui.training.actions.just_in_time import JustInTime
        from ftgui.training.peer_watch import PeerWatch

        actions.insert(3, JustInTime(state, data, config, run_dir, events, batches.epoch_of,
                                     is_chief, role, index, batches.position_after))
        # ... and does not wait in a collective for a peer the supervisor saw go
        actions.append(PeerWatch(run_dir, events, role, index))
    return TrainingLoop(
        runner or SyncSteps(state, data), batches, config.steps, config.checkpoint_every,
        start_step, fault_hooks, actions, REQUESTS,
        # A multi-worker process must not stop on its own: the stop flag is all-reduced in
        # the next step so that every worker saves the same step and exits together.
        may_stop_alone=config.strategy != "multi-worker",
    )


def _snapshots(state: TrainState, config: RunConfig, run_dir: Path, one_process: bool,
               kill_inside: KillInside | None = None, events: EventWriter | None = None,
               restored=None) -> list:
    """The in-memory snapshot action when `snapshot_every` asks for one and the state lives in
    this one process (not a cluster's collective state). A state `restored` from memory is
    its first snapshot, in the new file before it replaces the one it came from: until its
    checkpoint is on disk, that is where it survives a crash."""
    if not config.snapshot_every or not one_process or state.saves_collectively:
        return []
    from ftgui.training.actions.snapshot import SnapshotAction

    try:
        action = SnapshotAction(state, run_dir, config.snapshot_every, kill_inside, events,
                                restored)
    except OSError as exc:  # e.g. a small /dev/shm: train on, with the disk checkpoints only
        print(f"in-memory snapshots are off: {exc}", flush=True)
        return []
    return [action]
