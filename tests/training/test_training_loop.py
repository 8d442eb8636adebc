"""The training loop and its actions without TensorFlow: a fake step runner stands in for the
model (the loss of step s is 1/s, NaN where poisoned), so the loop's decisions - chunks,
rollbacks, preemption, scheduled faults, exit codes, the order of events - are checked
exactly and in milliseconds."""

from __future__ import annotations

import math
import signal
from pathlib import Path

import pytest
from conftest import fake_checkpoint

from ftgui.core.record import events, exitcodes
from ftgui.training.actions import Action, ChunkOutput, Exit, StepOutput
from ftgui.training.actions.fault_hooks import FaultHooks, Faults
from ftgui.training.actions.rollback import MAX_ROLLBACKS, NanRollback, refusal
from ftgui.training.actions.step_events import StepEvents
from ftgui.training.loop import TrainingLoop, agreed_requests, scheduled_chunk_end
from ftgui.training.signals import Requests

# ----------------------------------------------------------------- pure decisions


@pytest.mark.parametrize(("step", "fault_steps", "end"), [
    (0, [], 10),            # up to the next checkpoint
    (10, [], 20),
    (12, [15, 33], 15),     # a planned fault comes first
    (50, [], 55),           # the run's last step
    (54, [], 55),
])
def test_a_scheduled_chunk_ends_at_the_next_checkpoint_fault_or_the_end(step, fault_steps, end):
    assert scheduled_chunk_end(step, last_step=55, checkpoint_every=10,
                               fault_steps=fault_steps) == end


@pytest.mark.parametrize(("agreed", "local", "alone", "step", "expected"), [
    ((False, False), (True, False), True, 30, (True, False)),   # SIGTERM: stop after 30
    ((False, False), (True, False), True, 60, (False, False)),  # at the last step: finished
    ((False, False), (True, True), True, 30, (True, False)),    # a stop wins over a save
    ((False, False), (False, True), True, 30, (False, True)),   # SIGUSR1: save 30
    ((False, False), (True, True), False, 30, (False, False)),  # a worker waits for the rest
    ((True, False), (False, False), False, 30, (True, False)),  # what the cluster agreed
    ((False, True), (False, False), False, 30, (False, True)),
])
def test_stop_and_save_requests_are_taken_from_the_cluster_or_this_process(
    agreed, local, alone, step, expected
):
    assert agreed_requests(agreed, local, alone, step, last_step=60) == expected


def test_a_rollback_needs_a_checkpoint_or_snapshot_and_stops_after_three():
    assert refusal(found_state=False, rollbacks=1) == "no valid checkpoint or snapshot before it"
    assert [refusal(True, n) for n in range(1, MAX_ROLLBACKS + 1)] == [None] * MAX_ROLLBACKS
    assert refusal(True, MAX_ROLLBACKS + 1) == "3 rollbacks"
    assert refusal(False, MAX_ROLLBACKS + 1) == "no valid checkpoint or snapshot before it"


def test_a_hang_and_a_kill_at_the_same_step_are_sent_hang_first():
    faults = Faults([("kill", 9, "chief"), ("nan", 9, "chief"), ("hang", 9, "worker:1"),
                     ("kill", 12, "chief")])
    assert faults.signals_after(9) == [("hang", signal.SIGSTOP, "worker:1"),
                                       ("kill", signal.SIGKILL, "chief")]
    assert faults.signals_after(10) == []
    assert faults.steps(after=9) == [12]


def test_a_step_is_poisoned_once_and_a_planned_preemption_is_requested_before_its_step(
    tmp_path,
):
    requests = Requests()
    with events.EventWriter(tmp_path, attempt=0) as writer:
        hooks = FaultHooks(Faults([("nan", 3, "chief"), ("preempt", 5, "chief")]), writer,
                           requests, wait_for_save=lambda: None)
        assert hooks.poison(range(1, 5)) == [False, False, True, False]
        assert hooks.poison(range(3, 4)) == [False]  # the replay after a rollback is clean
        hooks.arm_preemption(4)
        assert requests.pending == (False, False)
        hooks.arm_preemption(5)
        assert requests.pending == (True, False)
    assert [(e["kind"], e["step"], e["target"], e["source"])
            for e in events.read_all(tmp_path)] == [("nan", 3, "chief", "schedule"),
                                                    ("preempt", 5, "chief", "schedule")]


def test_a_scheduled_kill_waits_for_the_save_in_flight_then_reports_and_signals(tmp_path):
    done = []
    with events.EventWriter(tmp_path, attempt=0) as writer:
        hooks = FaultHooks(Faults([("kill", 4, "chief")]), writer, Requests(),
                           wait_for_save=lambda: done.append("waited"),
                           send_signal=lambda signum: done.append(signum))
        assert hooks(StepOutput(3, 0.5)) is None
        assert done == []
        hooks(StepOutput(4, 0.5))
    assert done == ["waited", signal.SIGKILL]
    [fault] = events.read_all(tmp_path)
    assert (fault["event"], fault["kind"], fault["step"]) == ("fault_injected", "kill", 4)


def test_a_stop_asked_for_at_a_planned_kill_step_is_a_preemption_not_the_kill(tmp_path):
    # Ctrl-C of `ftgui train` while the trainer held at the kill's step for the warm standby:
    # the hold let go ("asked to stop"), then the kill fired and nothing was saved (a breaker)
    sent, requests = [], Requests()
    with events.EventWriter(tmp_path, attempt=0) as writer:
        hooks = FaultHooks(Faults([("kill", 5, "chief"), ("hang", 5, "worker:1")]), writer,
                           requests, wait_for_save=lambda: None, send_signal=sent.append)
        requests.stop = True
        assert hooks(StepOutput(5, 0.5)) is None
    assert sent == [] and events.read_all(tmp_path) == []


def test_a_worker_writes_a_heartbeat_at_most_once_a_second(tmp_path):
    now = [100.0]
    with events.EventWriter(tmp_path, attempt=0) as writer:
        heartbeat = StepEvents(writer, lambda step: 0, is_chief=False, role="worker", index=1,
                               clock=lambda: now[0])
        for step, seconds in [(1, 100.0), (2, 100.5), (3, 101.0), (4, 101.01), (5, 102.2)]:
            now[0] = seconds
            heartbeat(StepOutput(step, 1.0))
    assert [(e["event"], e["role"], e["index"], e["step"]) for e in events.read_all(tmp_path)
            ] == [("heartbeat", "worker", 1, 1), ("heartbeat", "worker", 1, 4),
                  ("heartbeat", "worker", 1, 5)]


# ----------------------------------------------------------------- the loop with a fake model


class FakeModel:
    """A step counter trained by `run`: the loss of step s is 1/s, NaN where poisoned."""

    chunked = False

    def __init__(self, start: int = 0, always_nan_after: int | None = None):
        self.global_step, self.always_nan_after = start, always_nan_after
        self.ran: list[int] = []

    def run(self, index_batches, requests, poison):
        losses = []
        for bad in poison:
            self.global_step += 1
            self.ran.append(self.global_step)
            diverged = self.always_nan_after is not None and (
                self.global_step > self.always_nan_after)
            losses.append(math.nan if bad or diverged else 1.0 / self.global_step)
        return losses, requests

    def restore(self, prefix: Path) -> int:
        self.global_step = int(prefix.name.rsplit("-", 1)[1])
        return self.global_step


class FakeCheckpoints(Action):
    """Writes a fake checkpoint every `every` steps and at a preemption, as the real action
    decides; records the hooks it saw."""

    def __init__(self, run_dir: Path, every: int):
        self.run_dir, self.every = run_dir, every
        self.seen: list[tuple] = []

    def __call__(self, output):
        if output.step % self.every == 0:
            fake_checkpoint(self.run_dir, output.step)
            self.seen.append(("saved", output.step))

    def after_chunk(self, output: ChunkOutput):
        if output.stop:
            fake_checkpoint(self.run_dir, output.step)
            self.seen.append(("preempted", output.step))
            return Exit(exitcodes.PREEMPTED)
        return None

    def end(self, output):
        self.seen.append(("end", output.step))

    def close(self):
        self.seen.append(("close",))


class Batches:
    def indices(self, step):
        return [step]

    def epoch_of(self, step):
        return (step - 1) // 10


def make_loop(run_dir: Path, writer, model: FakeModel, planned, last_step: int = 12,
              requests: Requests | None = None, from_memory=None):
    requests = requests or Requests()
    saves = FakeCheckpoints(run_dir, every=3)
    hooks = FaultHooks(Faults(planned), writer, requests, wait_for_save=lambda: None,
                       send_signal=lambda signum: None)
    summaries = type("NoSummaries", (), {"restart_at": lambda self, step: None})()
    actions = [StepEvents(writer, Batches().epoch_of, is_chief=True),
               NanRollback(run_dir, writer, summaries, model.restore, lambda: None,
                           is_chief=True, from_memory=from_memory),
               saves, hooks]
    loop = TrainingLoop(model, Batches(), last_step, 3, model.global_step, hooks, actions,
                        requests)
    return loop, saves


def test_a_nan_loss_rolls_back_to_the_checkpoint_before_it_and_the_replay_is_clean(tmp_path):
    model = FakeModel()
    with events.EventWriter(tmp_path, attempt=0) as writer:
        loop, saves = make_loop(tmp_path, writer, model, [("nan", 5, "chief")])
        assert loop.run() == exitcodes.FINISHED
    assert model.ran == [1, 2, 3, 4, 5, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    seen = [(e["event"], e.get("step", e.get("from_step"))) for e in events.read_all(tmp_path)]
    assert seen == [("step", 1), ("step", 2), ("step", 3), ("step", 4),
                    ("fault_injected", 5), ("step", 5), ("non_finite_loss", 5),
                    ("rolled_back", 5), ("step", 4), ("step", 5), *[("step", s) for s in
                                                                   range(6, 13)],
                    ("run_finished", 12)]
    all_events = events.read_all(tmp_path)
    [rolled] = [e for e in all_events if e["event"] == "rolled_back"]
    assert (rolled["to_step"], rolled["checkpoint"]) == (3, "checkpoints/ckpt-3")
    assert all_events[-1]["loss"] == 1 / 12
    assert saves.seen == [("saved", 3), ("saved", 6), ("saved", 9), ("saved", 12),
                          ("end", 12), ("close",)]  # never the poisoned step 5


def test_a_nan_rolls_back_to_a_snapshot_newer_than_the_checkpoint_before_it(tmp_path):
    model = FakeModel()
    asked = []

    def from_memory(before: int, newer_than: int):
        asked.append((before, newer_than))
        model.global_step = before - 1  # the snapshot of the step before
        return before - 1, 1.0 / (before - 1)

    with events.EventWriter(tmp_path, attempt=0) as writer:
        loop, saves = make_loop(tmp_path, writer, model, [("nan", 5, "chief")],
                                from_memory=from_memory)
        assert loop.run() == exitcodes.FINISHED
    assert asked == [(5, 3)]  # newer than checkpoint 3, before the poisoned step 5
    assert model.ran == [1, 2, 3, 4, 5, 5, 6, 7, 8, 9, 10, 11, 12]
    [rolled] = [e for e in events.read_all(tmp_path) if e["event"] == "rolled_back"]
    assert (rolled["from_step"], rolled["to_step"], rolled["checkpoint"], rolled["source"]) == (
        5, 4, None, "memory")


def test_without_a_snapshot_a_nan_no_checkpoint_precedes_stops_the_run(tmp_path):
    model = FakeModel()
    with events.EventWriter(tmp_path, attempt=0) as writer:
        loop, saves = make_loop(tmp_path, writer, model, [("nan", 2, "chief")],
                                from_memory=lambda before, newer_than: None)
        assert loop.run() == exitcodes.NON_FINITE
    assert model.ran == [1, 2]
    assert "rolled_back" not in [e["event"] for e in events.read_all(tmp_path)]


def test_separate_nans_each_roll_back_however_many_they_are(tmp_path):
    # the cap is on rollbacks in a row: a fourth separate NaN stopped the run (a breaker's
    # finding: chaos of NaN faults only)
    model = FakeModel()
    planned = [("nan", step, "chief") for step in (5, 7, 9, 11)]
    with events.EventWriter(tmp_path, attempt=0) as writer:
        loop, saves = make_loop(tmp_path, writer, model, planned)
        assert loop.run() == exitcodes.FINISHED
    rolled = [(e["from_step"], e["to_step"]) for e in events.read_all(tmp_path)
              if e["event"] == "rolled_back"]
    assert len(rolled) == 4 > MAX_ROLLBACKS and rolled[-1] == (11, 9)


def test_a_loss_that_stays_nan_stops_the_run_after_three_rollbacks(tmp_path):
    model = FakeModel(always_nan_after=4)
    with events.EventWriter(tmp_path, attempt=0) as writer:
        loop, saves = make_loop(tmp_path, writer, model, [])
        assert loop.run() == exitcodes.NON_FINITE
    assert model.ran == [1, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5]
    kinds = [e["event"] for e in events.read_all(tmp_path)]
    assert kinds.count("rolled_back") == MAX_ROLLBACKS
    assert kinds.count("non_finite_loss") == MAX_ROLLBACKS + 1
    assert "run_finished" not in kinds
    assert saves.seen == [("saved", 3), ("close",)]  # closed, but no end: the run stopped
    [error] = [e for e in events.read_all(tmp_path) if e["event"] == "training_error"]
    assert error["error"] == "non-finite loss at step 5 and 3 rollbacks"  # the run's reason


def test_a_planned_preemption_saves_exactly_its_step_and_exits_preempted(tmp_path):
    model = FakeModel()
    with events.EventWriter(tmp_path, attempt=0) as writer:
        loop, saves = make_loop(tmp_path, writer, model, [("preempt", 7, "chief")])
        assert loop.run() == exitcodes.PREEMPTED
    assert model.ran == list(range(1, 8))
    assert saves.seen == [("saved", 3), ("saved", 6), ("preempted", 7), ("close",)]
    kinds = [(e["event"], e["step"]) for e in events.read_all(tmp_path)]
    assert kinds[-2:] == [("fault_injected", 7), ("step", 7)]


def test_a_preemption_at_the_last_step_simply_finishes(tmp_path):
    model = FakeModel()
    requests = Requests()
    requests.stop = True  # SIGTERM arrived during the run
    with events.EventWriter(tmp_path, attempt=0) as writer:
        loop, saves = make_loop(tmp_path, writer, model, [], last_step=1, requests=requests)
        assert loop.run() == exitcodes.FINISHED
    assert saves.seen == [("end", 1), ("close",)]


def test_a_resumed_loop_starts_after_its_checkpoint(tmp_path):
    model = FakeModel(start=9)
    with events.EventWriter(tmp_path, attempt=1) as writer:
        loop, saves = make_loop(tmp_path, writer, model, [])
        assert loop.run() == exitcodes.FINISHED
    assert model.ran == [10, 11, 12]
    assert [e["step"] for e in events.read_all(tmp_path)] == [10, 11, 12, 12]


def test_a_scheduling_runner_gets_the_steps_up_to_the_next_checkpoint_or_fault_at_once(
    tmp_path,
):
    model = FakeModel()
    model.chunked = True
    chunks = []
    run = model.run
    model.run = lambda batches, requests, poison: (chunks.append(
        [step for [step] in batches]), run(batches, requests, poison))[1]
    with events.EventWriter(tmp_path, attempt=0) as writer:
        loop, saves = make_loop(tmp_path, writer, model, [("nan", 5, "chief")], last_step=8)
        assert loop.run() == exitcodes.FINISHED
    # after the rollback to 3 the chunk still ends at the planned fault (replayed clean)
    assert chunks == [[1, 2, 3], [4, 5], [4, 5], [6], [7, 8]]
    assert saves.seen == [("saved", 3), ("saved", 6), ("end", 8), ("close",)]


@pytest.mark.tf  # ftgui.training.assemble imports TensorFlow
def test_a_step_is_snapshotted_before_its_checkpoint_is_validated_and_written(
        tmp_path, monkeypatch):
    """A kill during a checkpoint step's validation and write (ms to a quarter second) found
    the step logged but its snapshot not yet taken, and redid it (a tester's kill right after
    the step-30 event, 3 of 3): the snapshot, microseconds, now comes first."""
    from types import SimpleNamespace

    from ftgui.core.settings.config import RunConfig
    from ftgui.training import assemble

    class Stub(Action):
        def __init__(self, *args, **kwargs):
            pass

        def wait(self) -> None:
            pass

    class Snapshot(Stub):
        def roll_back(self, before: int, newer_than: int) -> None:
            return None

    monkeypatch.setattr(assemble, "CheckpointAction", type("CheckpointAction", (Stub,), {}))
    monkeypatch.setattr(assemble, "_snapshots", lambda *args: [Snapshot()])
    with events.EventWriter(tmp_path, 0) as writer:
        loop = assemble.build_loop(
            SimpleNamespace(global_step=0), SimpleNamespace(x_train=range(100)),
            RunConfig(strategy="default", global_batch_size=10), tmp_path, writer, Faults(),
            runner=SimpleNamespace(chunked=False))
    names = [type(action).__name__ for action in loop.actions]
    assert names.index("Snapshot") == names.index("CheckpointAction") - 1
    assert names.index("StepEvents") == 0
