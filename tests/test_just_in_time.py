"""Just-in-time checkpoints: a multi-worker survivor saves the last completed step when a peer
is lost, and the recovered run equals, to the bit, the run never killed."""

from __future__ import annotations

import math
import time

import pytest
from conftest import alive, fake_checkpoint, of_kind

from ftgui import cli
from ftgui.core import checkpoint_moves, checkpoints, events, peer_loss
from ftgui.training.actions import Action, StepOutput
from ftgui.training.loop import TrainingLoop
from ftgui.training.peer_watch import PeerWatch

# The schedule scaled to test time: 400 steps / checkpoint every 100 / kill at 250
# becomes 80 / 20 / 50 (a plain recovery would redo 10 steps).
SCHEDULE = ["--steps", "80", "--checkpoint-every", "20"]
KILL_STEP = 50


# ------------------------------------------------------------------ without TensorFlow
def test_promotion_moves_a_workers_valid_checkpoint_and_leaves_no_scratch(tmp_path):
    run_dir = tmp_path / "run"
    fake_checkpoint(run_dir, 40)
    scratch = checkpoint_moves.just_in_time_dir(run_dir, "worker", 1)
    scratch.mkdir(parents=True)
    for path in checkpoints.tf_files(checkpoints.checkpoint_dir(run_dir), 40):
        (scratch / path.name.replace("-40.", "-50.")).write_bytes(path.read_bytes())
    checkpoints.write_metadata(scratch / "ckpt-50", loss=0.5, just_in_time=True,
                               saved_by="worker:1")

    [(info, source)] = checkpoint_moves.promote_just_in_time(run_dir)

    assert (info.step, info.valid, info.relpath) == (50, True, "checkpoints/ckpt-50")
    assert info.meta["just_in_time"] is True and info.meta["saved_by"] == "worker:1"
    assert source == "scratch/worker-1-just-in-time/ckpt-50"
    assert [c.step for c in checkpoints.list_checkpoints(run_dir) if c.valid] == [40, 50]
    assert not scratch.exists()


def test_promotion_ignores_a_half_written_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    scratch = checkpoint_moves.just_in_time_dir(run_dir, "worker", 2)
    scratch.mkdir(parents=True)
    (scratch / "ckpt-50.index").write_bytes(b"x")  # killed before its metadata
    assert checkpoint_moves.promote_just_in_time(run_dir) == []
    assert checkpoints.list_checkpoints(run_dir) == [] and not scratch.exists()


class _Events:
    def __init__(self, attempt):
        self.attempt, self.emitted = attempt, []

    def emit(self, event, **fields):
        self.emitted.append({"event": event, **fields})


def test_the_supervisors_notice_makes_the_watcher_abort_once_for_its_own_attempt(tmp_path):
    aborts = []
    other = PeerWatch(tmp_path, _Events(2), "worker", 0, abort=aborts.append, interval=0.01)
    writer = _Events(3)
    watch = PeerWatch(tmp_path, writer, "worker", 0, abort=aborts.append, interval=0.01)
    time.sleep(0.05)
    assert aborts == [] and watch.aborted is None  # no notice, no abort

    peer_loss.announce(tmp_path, 3, "worker 1 ended by SIGKILL")
    deadline = time.monotonic() + 5
    while watch.aborted is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    watch.close()
    other.close()
    assert aborts == ["ftgui's supervisor reports: worker 1 ended by SIGKILL"]
    [event] = writer.emitted
    assert (event["event"], event["role"], event["index"]) == ("collectives_aborted", "worker", 0)
    assert event["reason"] == "worker 1 ended by SIGKILL" and 0 <= event["notice_seconds"] < 5
    assert not watch._thread.is_alive() and not other._thread.is_alive()
    assert peer_loss.read(tmp_path, 3)["reason"] == "worker 1 ended by SIGKILL"
    peer_loss.clear(tmp_path)
    assert peer_loss.read(tmp_path, 3) is None and list(tmp_path.iterdir()) == []


def test_a_watcher_that_cannot_abort_says_so_and_does_not_raise(tmp_path, capsys):
    def failing(message):
        raise RuntimeError("no context")

    peer_loss.announce(tmp_path, 0, "worker 0 (chief) ended by SIGKILL")
    writer = _Events(0)
    watch = PeerWatch(tmp_path, writer, "worker", 1, abort=failing, interval=0.01)
    watch._thread.join(timeout=5)
    watch.close()
    assert watch.aborted is None and writer.emitted == []
    assert "could not abort the collectives" in capsys.readouterr().out


class _FailsAfter:
    """A step runner whose step `fail_at` raises (a lost peer)."""

    chunked = False

    def __init__(self, fail_at: int):
        self.fail_at, self.step = fail_at, 0

    def run(self, index_batches, requests, poison):
        self.step += 1
        if self.step == self.fail_at:
            raise ConnectionError("peer lost")
        return [float(self.step)], (False, False)


class _Recorder(Action):
    def __init__(self):
        self.seen, self.failed = [], []

    def __call__(self, output: StepOutput):
        self.seen.append(output.step)

    def step_failed(self, step, error):
        self.failed.append((step, str(error)))
        raise RuntimeError("the hook's own trouble must not hide the step's error")


class _NoFaults:
    def planned_after(self, step):
        return []

    def poison(self, steps):
        return [False for _ in steps]

    def arm_preemption(self, step):
        pass


class _Batches:
    def indices(self, step):
        return [step]


class _Requests:
    pending = (False, False)


def test_the_loop_tells_the_last_completed_step_when_a_step_fails():
    recorder = _Recorder()
    loop = TrainingLoop(_FailsAfter(8), _Batches(), 20, 10, 0, _NoFaults(), [recorder],
                        _Requests())
    with pytest.raises(ConnectionError, match="peer lost"):
        loop.run()
    assert recorder.seen == list(range(1, 8))
    assert recorder.failed == [(7, "peer lost")]


# ------------------------------------------------------------------ with TensorFlow
@pytest.fixture(scope="module")
def never_killed(tmp_path_factory) -> dict[int, float]:
    """The schedule's losses, never killed (2 mirrored replicas: the same bits as 2 workers,
    DESIGN.md §4, at the cost of one process)."""
    run_dir = tmp_path_factory.mktemp("jit-reference") / "run"
    assert cli.main(["train", str(run_dir), *SCHEDULE, "--quiet"]) == 0
    losses = events.final_losses(events.read_all(run_dir))
    assert sorted(losses) == list(range(1, 81))
    return losses


def _killed_run(tmp_path, target: str) -> list[dict]:
    run_dir = tmp_path / "run"
    flags = [*SCHEDULE, "--strategy", "multi-worker", "--workers", "2", "--kill-at-step",
             str(KILL_STEP), "--fault-target", target, "--auto-recover",
             "--restart-backoff", "0", "--quiet"]
    assert cli.main(["train", str(run_dir), *flags]) == 0
    return events.read_all(run_dir)


def _assert_recovered_exactly(run_dir, seen, never_killed):
    [resumed] = of_kind(seen, "resumed")
    saved = resumed["from_step"]
    # The victim dies right after step 50; the survivor's step 51 fails. (Had the survivor's
    # own step 50 been cut short, it would save 49: one step redone, the most allowed.)
    assert resumed["attempt"] == 1 and saved in (KILL_STEP, KILL_STEP - 1)
    assert resumed["source"] == "just_in_time"
    assert resumed["optimizer_iterations"] == saved  # not the failed step's saved + 1
    first_resumed = min(e["step"] for e in of_kind(seen, "step", attempt=1))
    assert first_resumed == saved + 1 >= KILL_STEP
    info = checkpoints.find(run_dir, saved)
    assert info.valid and info.meta["just_in_time"] is True
    # every loss of both attempts, to the bit, the run never killed
    for event in of_kind(seen, "step"):
        assert event["loss"] == never_killed[event["step"]], event
    recovered = events.final_losses(seen)
    assert sorted(recovered) == list(range(1, 81))
    assert not (run_dir / "scratch").exists()


@pytest.mark.tf
def test_a_lost_worker_costs_no_step_the_chief_saves_the_last_completed_one(
    tmp_path, never_killed
):
    seen = _killed_run(tmp_path, "worker:1")
    [fault] = of_kind(seen, "fault_injected")
    assert (fault["kind"], fault["target"], fault["step"]) == ("kill", "worker:1", KILL_STEP)
    first_exit, chief_exit = of_kind(seen, "process_exited", attempt=0)
    assert (first_exit["role"], first_exit["index"], first_exit["signal"]) == ("worker", 1, 9)
    assert first_exit["decisive"] is True
    assert (chief_exit["role"], chief_exit["index"]) == ("worker", 0)
    assert chief_exit["time"] - fault["time"] < 30  # the survivor is not waited on forever
    assert alive([e["pid"] for e in of_kind(seen, "process_started")]) == []
    [saved] = [e for e in of_kind(seen, "checkpoint_saved") if e.get("just_in_time")]
    assert (saved["path"], saved["attempt"]) == (f"checkpoints/ckpt-{saved['step']}", 0)
    assert saved["loss"] == never_killed[saved["step"]]
    assert math.isfinite(saved["size"]) and saved["error"] == "UnavailableError"
    _assert_recovered_exactly(tmp_path / "run", seen, never_killed)


@pytest.mark.tf
def test_a_lost_chief_costs_no_step_worker_1_saves_and_the_supervisor_promotes(
    tmp_path, never_killed
):
    seen = _killed_run(tmp_path, "worker:0")
    [written] = of_kind(seen, "just_in_time_saved")
    assert (written["role"], written["index"]) == ("worker", 1)
    assert written["path"] == f"scratch/worker-1-just-in-time/ckpt-{written['step']}"
    [promoted] = [e for e in of_kind(seen, "checkpoint_saved") if e.get("just_in_time")]
    assert promoted["path"] == f"checkpoints/ckpt-{written['step']}"
    assert promoted["promoted_from"] == written["path"]
    assert promoted["saved_by"] == "worker:1"
    _assert_recovered_exactly(tmp_path / "run", seen, never_killed)


@pytest.mark.tf
def test_a_chief_waiting_for_a_hung_worker_is_told_and_saves_just_in_time(
    tmp_path, never_killed
):
    """Worker 1 freezes (SIGSTOP) after step 50, its port open: the chief waits in step 51's
    all-reduce, and TensorFlow would fail that only once the coordination service missed
    worker 1's heartbeats (7-7.6 s here), after the 3 s watchdog had ended the cluster (a
    resume from step 40). The supervisor's notice aborts the chief's collectives instead: the
    chief saves step 50 within the grace, as when a peer's death leaves it waiting."""
    from ftgui.core.task_launch import JUST_IN_TIME_GRACE_SECONDS

    run_dir = tmp_path / "run"
    flags = [*SCHEDULE, "--strategy", "multi-worker", "--workers", "2", "--hang-at-step",
             str(KILL_STEP), "--fault-target", "worker:1", "--watchdog-seconds", "3",
             "--auto-recover", "--restart-backoff", "0", "--quiet"]
    assert cli.main(["train", str(run_dir), *flags]) == 0
    seen = events.read_all(run_dir)
    [resumed] = of_kind(seen, "resumed")
    assert (resumed["source"], resumed["from_step"]) == ("just_in_time", KILL_STEP), resumed
    [hang] = of_kind(seen, "hang_detected")
    [aborted] = of_kind(seen, "collectives_aborted")
    assert (aborted["role"], aborted["index"], aborted["attempt"]) == ("worker", 0, 0)
    assert aborted["reason"].startswith("hang: no progress")
    [saved] = [e for e in of_kind(seen, "checkpoint_saved") if e.get("just_in_time")]
    assert (saved["step"], saved["error"]) == (KILL_STEP, "UnavailableError")
    assert saved["time"] - hang["time"] < JUST_IN_TIME_GRACE_SECONDS
    chief_exit = [e for e in of_kind(seen, "process_exited", attempt=0) if e["index"] == 0]
    assert chief_exit[0]["exit_code"] == 1 and chief_exit[0]["reason"].startswith("hang:")
    _assert_recovered_exactly(run_dir, seen, never_killed)
    assert not list(run_dir.glob(".peer-lost*"))  # the next attempt's launch removed it


@pytest.mark.tf
def test_a_standby_cluster_formed_in_advance_takes_over_after_a_lost_worker(tmp_path):
    """Multi-worker x2 with warm standby: a standby cluster of two workers forms (its own
    ports) while the run trains; worker 1 is killed once both members are prepared. The next
    attempt is the standby cluster, and every loss equals a run never killed, to the bit."""
    from conftest import poll_until

    from ftgui.core.config import RunConfig
    from ftgui.core.supervisor import Supervisor

    run_dir = tmp_path / "run"
    config = RunConfig(strategy="multi-worker", workers=2, steps=100_000, checkpoint_every=20,
                       auto_recover=True, restart_backoff=0, max_restarts=3, warm_standby=True)
    supervisor = Supervisor(run_dir)
    supervisor.start(config)
    seen = poll_until(supervisor, lambda ev: len([
        e for e in of_kind(ev, "standby_ready") if e["prepared"]]) == 2)
    members = [e["pid"] for e in of_kind(seen, "standby_ready")]
    assert supervisor.kill("worker:1")
    seen += poll_until(supervisor, lambda ev: len(of_kind(ev, "step", attempt=1)) >= 20)
    assert supervisor.preempt_and_stop()
    seen += poll_until(supervisor, lambda _: not supervisor.live) + supervisor.poll()
    supervisor.shutdown()

    first, second = (of_kind(seen, "process_started", attempt=a) for a in (0, 1))
    assert sorted(e["pid"] for e in second) == sorted(members)
    assert [e["log"] for e in second] == [f"logs/standby-1-worker-{i}.log" for i in (0, 1)]
    assert all(e["standby"] for e in second) and not any(e["standby"] for e in first)
    assert {e["address"] for e in second}.isdisjoint(e["address"] for e in first)
    [fault] = [e for e in of_kind(seen, "fault_injected") if e["kind"] == "kill"]
    [resumed] = of_kind(seen, "resumed")
    # Just in time; or, when the survivor's step did not fail within the grace (a kill at a
    # random moment can leave it waiting in a collective), the newest periodic checkpoint,
    # the one before when the kill cut a collective save short. The fault's step is the newest
    # step the supervisor had read; the chief may have finished more before the kill landed.
    assert resumed["source"] in ("just_in_time", "disk")
    reached = max(e["step"] for e in of_kind(seen, "step", attempt=0))
    assert fault["step"] - 2 * config.checkpoint_every <= resumed["from_step"] <= reached
    assert min(e["step"] for e in of_kind(seen, "step", attempt=1)) == resumed["from_step"] + 1
    pids = [e["pid"] for e in of_kind(seen, "process_started")] + members
    assert alive(pids) == []

    reference = tmp_path / "reference"  # 2 mirrored replicas: the same bits as 2 workers
    last = max(e["step"] for e in of_kind(seen, "step"))
    assert cli.main(["train", str(reference), "--steps", str(last), "--checkpoint-every", "20",
                     "--quiet"]) == 0
    never_killed = events.final_losses(events.read_all(reference))
    for event in of_kind(seen, "step"):
        assert event["loss"] == never_killed[event["step"]], event
