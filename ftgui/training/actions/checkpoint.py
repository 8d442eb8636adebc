"""Checkpoints of the training state: periodic, requested (SIGUSR1) and at a preemption
(SIGTERM), numbered by global step, validated, with ftgui's metadata file.

Only the chief writes into `RUN/checkpoints`; the other workers of a MultiWorkerMirroredStrategy
cluster take part in the collective save into their own scratch folder and delete it. Outside a
cluster the chief's checkpoints are written in the background (`background_save`): the step
path only copies the variables, so `validation` and `checkpoint_saved` of step N can follow a
few `step` events after N; the writer thread hands the metadata, retention and state file to
the checkpoint clerk, a helper process (`ftgui.core.checkpoints.clerk`). Before a preemption
exit, a rollback, a scheduled kill or hang and the end of the run, the save in flight is waited
for (`wait`): the same fault schedule always recovers from the same checkpoint.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

import tensorflow as tf

from ftgui.core.checkpoints import listing
from ftgui.core.checkpoints.clerk import Clerk, ClerkError
from ftgui.core.record import exitcodes
from ftgui.core.record.run_folder import check_writer
from ftgui.core.settings import user_code
from ftgui.core.settings.config import RunConfig, load_record
from ftgui.core.supervision.fault_plan import KILL_IN_SAVE
from ftgui.training.actions import Action, ChunkOutput, Exit, StepOutput
from ftgui.training.background_save import ShadowState
from ftgui.training.checkpoint_writer import OneWriter, write_error
from ftgui.training.data import DataPosition, Dataset, StepBatches


def run_record(config: RunConfig, state, data: Dataset, position: DataPosition | None,
               variables: dict | None = None) -> dict:
    """What a checkpoint records about the run that saved it (its metadata fields besides
    losses, time and files), for the resume check (`ftgui.core.checkpoints.resume_check`): the model
    and its variables (name -> shape list), the dataset (source, `dataset_info`: x/y shapes,
    classes, fingerprint), the strategy and replicas in sync, the global batch size, learning
    rate, seed and loop, and the data position after the step (`data_position`: epoch, offset,
    examples_seen; left out when `position` is None). `variables`: the shapes when already
    known (they never change).
    """
    if variables is None:
        variables = variable_shapes(state.model)
    record = {
        "model": config.model, "variables": variables,
        "dataset": config.dataset, "dataset_info": dict(data.info),
        "strategy": config.strategy, "replicas": state.strategy.num_replicas_in_sync,
        "global_batch_size": config.global_batch_size, "learning_rate": config.learning_rate,
        "seed": config.seed, "loop": config.loop,
    }
    if position is not None:
        record["data_position"] = position.to_dict()
    return record


def variable_shapes(model) -> dict[str, list[int]]:
    """Every variable of a Keras model, with those its object graph tracks beyond
    `model.variables` (a layer's plain `tf.Variable`): its path (name) -> shape as a list."""
    from ftgui.training.state_variables import graph_variables, name_of

    listed = {id(v) for v in model.variables}
    extras = [v for v in graph_variables(model) if id(v) not in listed]
    return {**{getattr(v, "path", v.name): [int(d) for d in v.shape] for v in model.variables},
            **{name_of(v): [int(d) for d in v.shape] for v in extras}}


def due(step: int, every: int, last_step: int) -> bool:
    """Whether global step `step` gets a periodic checkpoint: every `every` steps and at the
    run's `last_step`."""
    return step % every == 0 or step == last_step


class CheckpointAction(Action):
    """Saves the `state` (a `step.TrainState`) of this process.

    After a step: a periodic save when `due`. After a chunk: a preemption save of its last
    step (then `Exit(PREEMPTED)`), else a requested save. Events written by the chief:
    `validation` (step, val_loss, val_accuracy), `checkpoint_saved` (step, path, loss, size in
    bytes, save_seconds: the write, in a background save with the validation forward pass
    fused into it, stall_seconds, requested, background) and `preempted` (step, checkpoint).
    `summaries` receives val_loss and val_accuracy and is flushed after each save.
    """

    def __init__(self, state, data: Dataset, config: RunConfig, run_dir: Path, events,
                 summaries, epoch_of: Callable[[int], int], is_chief: bool,
                 role: str = "chief", index: int = 0, batches: StepBatches | None = None,
                 shadow: ShadowState | None = None, kill_inside=None):
        self.state, self.data, self.config = state, data, config
        self.kill_inside = kill_inside  # `fault_hooks.KillInside`: a kill-in-save fires there
        # the data position a checkpoint records; without `batches`, one batch size from step 0
        self.batches = batches or StepBatches(len(data.x_train), config.global_batch_size,
                                              config.seed)
        self.variables = variable_shapes(state.model) if is_chief else {}
        self.events, self.summaries, self.epoch_of = events, summaries, epoch_of
        self.is_chief = is_chief
        self.directory = (listing.checkpoint_dir(run_dir) if is_chief
                          else run_dir / "scratch" / f"{role}-{index}")
        self.shadow, self.writer, self.manager, self.clerk = None, None, None, None
        self.user_code_fields = checkpoint_fields(config, run_dir)  # files' paths and hashes
        if is_chief and not state.saves_collectively:
            # `shadow`: one a warm standby built (and traced) before its order
            self.shadow = shadow or ShadowState(state, config.model, data.input_shape,
                                                data.num_classes, config.learning_rate)
            self.writer = OneWriter()
            record = run_record(config, state, data, None, self.variables)
            self.clerk = Clerk(self.directory, config.keep, {**record, **self.user_code_fields})
        else:
            self.manager = tf.train.CheckpointManager(
                state.checkpoint, directory=str(listing.tf_path(self.directory)),
                max_to_keep=config.keep if is_chief else 1,
                checkpoint_name=listing.PREFIX, step_counter=state.step,
            )
        self.last_saved = -1
        self._warmed = False
        self._persist: tuple[int, dict] | None = None  # a restored state's checkpoint to write

    def ran(self, steps: range) -> None:
        if self.writer is None:
            return
        self.writer.check()  # a failed background save stops training now
        if not self._warmed:
            # after the first step, never before it: a recovery waits for that step
            self._warmed = True
            # From this thread, which lives as long as the process: the clerk's parent-death
            # signal follows the thread that started it.
            self.clerk.start()
            self.writer.submit(self._warm_up_and_persist, self._persist)
            self._persist = None

    def persist(self, step: int, loss: float) -> None:
        """The state was restored from the in-memory snapshot of global step `step` (of loss
        `loss`): save it as checkpoint `ckpt-<step>` marked `"source": "memory"`. Its copy is
        taken now, before the first step; the writer thread writes, validates and records it
        once training runs (as CheckFreq and Gemini persist in the background). Where this
        process writes on the step path (a cluster's saves), it is saved at once."""
        self.last_saved = step
        fields = {"loss": loss, "time": time.time(), "epoch": self.epoch_of(step),
                  "requested": False, "position": self.batches.position_after(step),
                  "source": "memory"}
        if self.writer is None:
            self._complete_save(step, fields, time.perf_counter())
            return
        self.shadow.take_eagerly()
        self._persist = (step, fields)

    def _warm_up_and_persist(self, persist: tuple[int, dict] | None) -> None:
        self.shadow.warm_up(self.data.x_val)
        if persist is not None:
            self._complete_save(*persist, None, 0.0)
        # The copy's first run, here rather than on the step path at the first checkpoint:
        # TensorFlow optimises a function's graph at its first call (the ResNet's first
        # checkpoint stalled training 0.09 s, the next ones 0.002 s). What it copies is
        # overwritten by the checkpoint's own `take`.
        self.shadow.take()

    def __call__(self, output: StepOutput) -> None:
        if due(output.step, self.config.checkpoint_every, self.config.steps):
            self.save(output.step, output.loss)
        return None

    def after_chunk(self, output: ChunkOutput) -> Exit | None:
        if output.stop:
            return self.preempt(output.step, output.loss)
        if output.save:
            self.save(output.step, output.loss, requested=True)
        return None

    def preempt(self, step: int, loss: float) -> Exit:
        """Save global step `step`, wait until it is on disk, report it; `Exit(PREEMPTED)`."""
        self.save(step, loss)
        self.wait()
        if self.is_chief:
            self.events.emit("preempted", step=step,
                             checkpoint=f"{listing.CHECKPOINT_DIR}/ckpt-{step}")
        print(f"preempted: saved step {step}, exiting", flush=True)
        return Exit(exitcodes.PREEMPTED)

    def end(self, output: StepOutput) -> None:
        if self._persist is not None:  # restored at the last step: no step ran
            self._warm_up_and_persist(self._persist)
            self._persist = None
        self.wait()

    def close(self) -> None:
        try:
            if self.writer is not None:
                self.writer.close()
        finally:
            if self.clerk is not None:
                self.clerk.close()
            self._remove_scratch()

    def save(self, step: int, loss: float, requested: bool = False) -> None:
        """Checkpoint at `step` (numbered by step); on the chief also validate and write the
        metadata file. Every worker of a cluster must call it at the same steps. Outside a
        cluster it returns once the variables are copied; the files follow on the writer
        thread (`wait` waits for them)."""
        if step == self.last_saved:
            return
        self.last_saved = step
        if not self.is_chief:
            self.manager.save(checkpoint_number=step)
            self._remove_scratch()
            return
        began = time.perf_counter()
        fields = {"loss": loss, "time": time.time(), "epoch": self.epoch_of(step),
                  "requested": requested, "position": self.batches.position_after(step)}
        if self.writer is None:
            self._complete_save(step, fields, began)
            return
        self.writer.wait()  # at most one checkpoint in flight
        self.shadow.take()
        self.writer.submit(self._complete_save, step, fields, None,
                           time.perf_counter() - began)

    def wait(self) -> None:
        """Block until the checkpoint in flight (if any) is written; re-raise its error."""
        if self.writer is not None:
            self.writer.wait()

    def _complete_save(self, step: int, fields: dict, began: float | None,
                       stall_seconds: float | None = None) -> None:
        """Write checkpoint `step` (the shadow copy, or the real state through the manager),
        validate it, write its metadata and report it. `began`: when the step path started
        the save (it stalls until this returns), else `stall_seconds` is how long it did."""
        check_writer(self.events)  # TensorFlow's save would re-create a removed run folder
        prefix = self.directory / f"{listing.PREFIX}-{step}"
        listing.meta_path(prefix).unlink(missing_ok=True)  # a stale one must not vouch
        listing.damage_path(prefix).unlink(missing_ok=True)  # nor a stale verdict damn
        started = time.perf_counter()
        if self.shadow is not None:
            try:  # the write and the validation forward pass, in one traced call
                files, val_loss, val_accuracy = self.shadow.write_and_evaluate(
                    prefix, self.data.x_val, self.data.y_val)
            except (tf.errors.OpError, OSError) as exc:
                raise write_error(prefix, exc) from exc
            save_seconds = time.perf_counter() - started
        else:
            before = set(self.manager.checkpoints)
            self.manager.save(checkpoint_number=step)
            dropped = before - set(self.manager.checkpoints)
            files = {p.name: p.stat().st_size for p in listing.tf_files(prefix.parent, step)}
            save_seconds = time.perf_counter() - started
            val_loss, val_accuracy = self.state.evaluate(self.data.x_val, self.data.y_val)
        if self.kill_inside is not None:  # torn: TensorFlow's files without the metadata
            self.kill_inside.fire(KILL_IN_SAVE, step)
        # The events go first: a kill right after the metadata (which makes the checkpoint
        # valid) must not leave a valid checkpoint whose validation was never reported.
        metrics = dict(getattr(self.state, "last_metrics", {}))  # a model module's `metrics`
        self.events.emit("validation", step=step, val_loss=val_loss, val_accuracy=val_accuracy,
                         **({"metrics": metrics} if metrics else {}))
        self.summaries.scalar("val_loss", val_loss, step)
        self.summaries.scalar("val_accuracy", val_accuracy, step)
        # Before the metadata too: a valid periodic checkpoint then vouches that TensorBoard
        # has every loss up to its step (what a resume from memory relies on, `LossSummary`).
        self.summaries.flush()
        size = sum(files.values())
        record = {"loss": fields["loss"], "val_loss": val_loss, "val_accuracy": val_accuracy,
                  "time": fields["time"], "epoch": fields["epoch"]}
        if self.clerk is not None:
            # metadata (which makes the checkpoint valid), retention and the state file
            try:
                self.clerk.finish(step, files, {**record, **_source(fields),
                                                "data_position": fields["position"].to_dict()})
            except ClerkError as exc:
                if exc.files is not None:  # valid: what failed came after its metadata
                    self._report_saved(step, fields, size, save_seconds, began,
                                       stall_seconds)
                raise
        else:
            listing.write_metadata(
                prefix, files, **record, **_source(fields),
                **run_record(self.config, self.state, self.data, fields["position"],
                             self.variables),
                **self.user_code_fields)
        self._report_saved(step, fields, size, save_seconds, began, stall_seconds)
        if self.manager is not None:
            self._drop_metadata(dropped)

    def _report_saved(self, step: int, fields: dict, size: int, save_seconds: float,
                      began: float | None, stall_seconds: float | None) -> None:
        if began is not None:
            stall_seconds = time.perf_counter() - began
        self.events.emit("checkpoint_saved", step=step,
                         path=f"{listing.CHECKPOINT_DIR}/{listing.PREFIX}-{step}",
                         loss=fields["loss"], size=size, save_seconds=save_seconds,
                         stall_seconds=stall_seconds, requested=fields["requested"],
                         background=self.shadow is not None, **_source(fields))

    def _remove_scratch(self) -> None:
        if not self.is_chief:
            shutil.rmtree(self.directory, ignore_errors=True)
            try:
                self.directory.parent.rmdir()  # RUN/scratch, once no worker uses it
            except OSError:
                pass

    def _drop_metadata(self, dropped: set[str]) -> None:
        # CheckpointManager deletes old checkpoints beyond max_to_keep but not our metadata.
        for prefix in map(Path, dropped):
            if not listing.tf_files(prefix.parent, int(prefix.name.rsplit("-", 1)[1])):
                listing.meta_path(prefix).unlink(missing_ok=True)


def _source(fields: dict) -> dict:
    """`{"source": "memory"}` for the checkpoint of a state restored from memory, else {}."""
    return {"source": fields["source"]} if "source" in fields else {}


def checkpoint_fields(config, run_dir: Path) -> dict:
    """What each checkpoint's metadata records of the user's code: the files' paths and hashes
    (as the trainer found them when it started) and `exact_resume` when a check said no."""
    fields = user_code.code_fingerprint(config)
    if load_record(run_dir).get("exact_resume") is False:
        fields["exact_resume"] = False
    return fields
