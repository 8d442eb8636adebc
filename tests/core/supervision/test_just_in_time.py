"""Just-in-time checkpoints: a multi-worker survivor saves the last completed step when a peer
is lost, and the recovered run equals, to the bit, the run never killed."""

from __future__ import annotations

import math
import textwrap
import time
from pathlib import Path

import pytest
from conftest import alive, fake_checkpoint, made_once, of_kind, poll_until_done, stand_in_python

from ftgui import cli
from ftgui.core.checkpoints import listing, moves
from ftgui.core.record import event_history, events, runs
from ftgui.core.settings.config import RunConfig
from ftgui.core.supervision import peer_notice
from ftgui.core.supervision.supervisor import Supervisor
from ftgui.core.timeline.model import Timeline
from ftgui.training.actions import Action, StepOutput
from ftgui.training.actions.tensorboard import _losses, unlogged_after
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
    scratch = moves.just_in_time_dir(run_dir, "worker", 1)
    scratch.mkdir(parents=True)
    for path in listing.tf_files(listing.checkpoint_dir(run_dir), 40):
        (scratch / path.name.replace("-40.", "-50.")).write_bytes(path.read_bytes())
    listing.write_metadata(scratch / "ckpt-50", loss=0.5, just_in_time=True,
                               saved_by="worker:1")

    [(info, source)] = moves.promote_just_in_time(run_dir)

    assert (info.step, info.valid, info.relpath) == (50, True, "checkpoints/ckpt-50")
    assert info.meta["just_in_time"] is True and info.meta["saved_by"] == "worker:1"
    assert source == "scratch/worker-1-just-in-time/ckpt-50"
    assert [c.step for c in listing.list_checkpoints(run_dir) if c.valid] == [40, 50]
    assert not scratch.exists()


def test_promotion_ignores_a_half_written_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    scratch = moves.just_in_time_dir(run_dir, "worker", 2)
    scratch.mkdir(parents=True)
    (scratch / "ckpt-50.index").write_bytes(b"x")  # killed before its metadata
    assert moves.promote_just_in_time(run_dir) == []
    assert listing.list_checkpoints(run_dir) == [] and not scratch.exists()


# A chief killed after a step's all-reduce, before it logged the step: worker 1 saves the step
# just in time, the supervisor promotes it and writes the step's `step` event from it. The
# processes are stand-ins (no TensorFlow); each does what its plan for `role:index:attempt` says.
CLUSTER_TRAINER = textwrap.dedent(
    """
    import signal
    from ftgui.core.checkpoints import moves, listing
    from ftgui.core.record.events import read_all
    for action, value in plan:
        if action == "step":  # the loss of every step is 1 / step, in every attempt
            writer.emit("step", step=value, loss=1.0 / value, epoch=value // 5)
        elif action == "resumed":
            writer.emit("resumed", from_step=value, checkpoint=f"checkpoints/ckpt-{value}",
                        source="just_in_time")
        elif action == "die":  # SIGKILL, as the supervisor's kill would
            os.kill(os.getpid(), signal.SIGKILL)
        elif action == "await_exit_of":  # a survivor learns that its peer is gone
            while not any(e["event"] == "process_exited" and e.get("index") == value
                          for e in read_all(run_dir)):
                time.sleep(0.02)
        elif action == "just_in_time":  # what actions/just_in_time.py leaves in scratch
            folder = moves.just_in_time_dir(run_dir, role, index)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"ckpt-{value}.index").write_bytes(b"i" * 100)
            (folder / f"ckpt-{value}.data-00000-of-00001").write_bytes(b"d" * 1000)
            listing.write_metadata(folder / f"ckpt-{value}", loss=1.0 / value,
                                       epoch=value // 5, time=time.time(), just_in_time=True,
                                       saved_by=f"{role}:{index}")
            writer.emit("just_in_time_saved", role=role, index=index, step=value,
                        path=f"scratch/{folder.name}/ckpt-{value}", loss=1.0 / value)
        elif action == "exit":
            sys.exit(value)
    time.sleep(600)
    """
)
NEVER_KILLED = {step: 1.0 / step for step in range(1, 11)}  # the plan's losses


@pytest.fixture
def cluster_python(tmp_path, monkeypatch):
    """A stand-in for Python running CLUSTER_TRAINER; call it with the plan (a dict)."""
    return stand_in_python(tmp_path, monkeypatch, CLUSTER_TRAINER)


def _chief_killed_at_7(cluster_python, run_dir, chief_logged: int) -> list[dict]:
    """Multi-worker x2, automatic recovery: the chief logs steps 1..`chief_logged` and dies;
    worker 1, the survivor, saves step 7 just in time; the restart resumes from 7 and runs
    8..10."""
    plan = {
        "worker:0:0": [["step", s] for s in range(1, chief_logged + 1)] + [["die", 0]],
        "worker:1:0": [["await_exit_of", 0], ["just_in_time", 7], ["exit", 1]],
        "worker:0:1": [["resumed", 7], *[["step", s] for s in (8, 9, 10)], ["exit", 0]],
        "worker:1:1": [["exit", 0]],
    }
    supervisor = Supervisor(run_dir, python=cluster_python(plan))
    supervisor.start(RunConfig(strategy="multi-worker", workers=2, steps=10, auto_recover=True,
                               max_restarts=1, restart_backoff=0))
    seen = poll_until_done(supervisor)
    supervisor.shutdown()
    assert supervisor.state == "finished", supervisor.reason
    return seen


def test_a_step_the_killed_chief_never_logged_is_written_from_its_promoted_checkpoint(
        tmp_path, cluster_python):
    run_dir = tmp_path / "run"
    seen = _chief_killed_at_7(cluster_python, run_dir, chief_logged=6)
    assert seen == events.read_all(run_dir)
    [promoted] = [e for e in of_kind(seen, "checkpoint_saved") if e.get("just_in_time")]
    assert (promoted["step"], promoted["saved_by"]) == (7, "worker:1")
    [recovered] = of_kind(seen, "step", step=7)
    meta = listing.find(run_dir, 7).meta
    assert recovered["loss"] == meta["loss"] == NEVER_KILLED[7]
    assert recovered["epoch"] == meta["epoch"]
    assert recovered["from_checkpoint"] is True
    assert (recovered["checkpoint"], recovered["attempt"]) == ("checkpoints/ckpt-7", 0)
    assert not any(e.get("from_checkpoint") for e in seen if e is not recovered)
    # after the killed attempt's exits and the promotion, before the next attempt's steps
    order = [(e["event"], e["attempt"], e.get("step")) for e in seen]
    at = order.index(("step", 0, 7))
    assert order.index(("process_exited", 0, None)) < order.index(("checkpoint_saved", 0, 7))
    assert order.index(("checkpoint_saved", 0, 7)) < at < order.index(("resumed", 1, None))
    first_resumed = of_kind(seen, "step", attempt=1)[0]
    assert of_kind(seen, "step", step=6)[0]["time"] <= recovered["time"] <= first_resumed["time"]

    # every reader of step events has step 7 once, with the never-killed run's loss
    assert events.final_losses(seen) == NEVER_KILLED
    live, reopened = Timeline(), Timeline()
    live.feed(seen)
    reopened.feed(event_history.read_history(run_dir))
    for timeline in (live, reopened):
        assert [s.series.x().tolist() for s in timeline.segments] == [
            [1, 2, 3, 4, 5, 6, 7], [8, 9, 10]]
        assert timeline.segments[0].series.y()[-1] == NEVER_KILLED[7]
        assert timeline.state == "finished" and timeline.redone == []
        [incident] = timeline.incidents
        assert (incident.resumed_step, incident.steps_lost, incident.redo_seconds) == (7, 0, 0.0)
        assert incident.time_lost >= 0
    steps, _, losses = event_history.read_curves(run_dir).surviving_train()
    assert dict(zip(steps.tolist(), losses.tolist(), strict=True)) == NEVER_KILLED
    # TensorBoard: the resumed chief logs again what its file may lack, from the step events
    after = unlogged_after(run_dir, 7)
    assert _losses(run_dir, after, 7) == [(s, NEVER_KILLED[s]) for s in range(after + 1, 8)]


def test_a_step_the_chief_logged_before_it_died_is_not_written_again(tmp_path, cluster_python):
    run_dir = tmp_path / "run"
    seen = _chief_killed_at_7(cluster_python, run_dir, chief_logged=7)
    [promoted] = [e for e in of_kind(seen, "checkpoint_saved") if e.get("just_in_time")]
    assert promoted["step"] == 7
    [logged] = of_kind(seen, "step", step=7)
    assert "from_checkpoint" not in logged
    assert events.final_losses(seen) == NEVER_KILLED


def _killed_attempt(recovered_loss: float = 1.0 / 7) -> list[dict]:
    """The events of a multi-worker attempt whose chief was killed after logging step 6, and
    the step 7 the supervisor recovered from worker 1's just-in-time checkpoint (no restart)."""
    def at(seconds: float, event: str, **fields) -> dict:
        return {"event": event, "time": 1000.0 + seconds, "attempt": 0, **fields}

    return [
        at(0.0, "run_started", config={"strategy": "multi-worker", "steps": 10}),
        at(0.1, "process_started", role="worker", index=0, pid=11, chief=True),
        at(0.1, "process_started", role="worker", index=1, pid=12, chief=False),
        *[at(1.0 + s / 10, "step", step=s, loss=1.0 / s, epoch=0) for s in range(1, 7)],
        at(2.0, "fault_injected", kind="kill", target="worker:0", step=6, source="user"),
        at(2.1, "process_exited", role="worker", index=0, pid=11, chief=True, signal=9,
           decisive=True, last_step=6),
        at(2.5, "just_in_time_saved", role="worker", index=1, step=7,
           path="scratch/worker-1-just-in-time/ckpt-7"),
        at(2.6, "process_exited", role="worker", index=1, pid=12, chief=False, exit_code=1,
           decisive=False, last_step=6),
        at(2.7, "checkpoint_saved", step=7, path="checkpoints/ckpt-7", just_in_time=True),
        at(2.7, "step", step=7, loss=recovered_loss, epoch=1, from_checkpoint=True,
           checkpoint="checkpoints/ckpt-7"),
    ]


def test_a_recovered_step_after_the_exits_leaves_the_run_killed(tmp_path):
    run_dir = tmp_path / "run"
    with events.EventWriter(run_dir, 0) as writer:
        for event in _killed_attempt():
            writer.emit(**{k: v for k, v in event.items() if k != "attempt"})
    live, reopened = Timeline(), Timeline()
    live.feed(events.read_all(run_dir))
    reopened.feed(event_history.read_history(run_dir))
    for timeline in (live, reopened):
        assert (timeline.state, timeline.last_step) == ("killed", 7)
        assert [s.series.x().tolist() for s in timeline.segments] == [[1, 2, 3, 4, 5, 6, 7]]
    watcher = Supervisor(run_dir)  # a run reopened, its supervisor gone
    watcher.poll()
    assert (watcher.state, watcher.last_step) == ("killed", 7)
    assert runs.summarize(run_dir).status == "killed"


def test_the_chiefs_own_event_arriving_after_the_recovered_one_is_no_second_point():
    late = {"event": "step", "time": 1003.0, "attempt": 0, "step": 7, "loss": 1.0 / 7,
            "epoch": 1}
    timeline = Timeline()
    timeline.feed(_killed_attempt())
    timeline.feed([late])
    assert [s.series.x().tolist() for s in timeline.segments] == [[1, 2, 3, 4, 5, 6, 7]]
    assert events.final_losses([*_killed_attempt(), late])[7] == 1.0 / 7
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

    peer_notice.announce(tmp_path, 3, "worker 1 ended by SIGKILL")
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
    assert peer_notice.read(tmp_path, 3)["reason"] == "worker 1 ended by SIGKILL"
    peer_notice.clear(tmp_path)
    assert peer_notice.read(tmp_path, 3) is None and list(tmp_path.iterdir()) == []


def test_a_watcher_that_cannot_abort_says_so_and_does_not_raise(tmp_path, capsys):
    def failing(message):
        raise RuntimeError("no context")

    peer_notice.announce(tmp_path, 0, "worker 0 (chief) ended by SIGKILL")
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
    def train(folder: Path) -> None:  # once per session, whichever xdist worker asks first
        assert cli.main(["train", str(folder / "run"), *SCHEDULE, "--quiet"]) == 0

    run_dir = made_once(tmp_path_factory, "jit-never-killed", train) / "run"
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
    info = listing.find(run_dir, saved)
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
    # the banner says just in time and what it cost (issue 24: it said "back after", and
    # "the others train on" while the synchronous cluster was down)
    from ftgui.core.timeline.story import source_words, story

    timeline = Timeline()
    timeline.feed(event_history.read_history(tmp_path / "run"))
    [incident] = timeline.incidents
    resumed = of_kind(seen, "resumed")[0]["from_step"]
    redone = incident.step - resumed
    assert source_words(incident) == "just in time" and incident.steps_lost == redone <= 1
    assert story(timeline).startswith(
        f"Finished at step 80 · worker 1 killed at step {incident.step} → restored step "
        f"{resumed} just in time → resumed: {redone} step{'' if redone == 1 else 's'} redone, ")


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
    from ftgui.core.supervision.task_launch import JUST_IN_TIME_GRACE_SECONDS

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

    from ftgui.core.settings.config import RunConfig
    from ftgui.core.supervision.supervisor import Supervisor

    run_dir = tmp_path / "run"
    config = RunConfig(strategy="multi-worker", workers=2, steps=100_000, checkpoint_every=20,
                       auto_recover=True, restart_backoff=0, max_restarts=3, warm_standby=True)
    supervisor = Supervisor(run_dir)
    supervisor.start(config)
    # and past the first checkpoint: with the attempt forked from the fork server too, the
    # members were prepared before it, and a kill then (its survivor not failing within the
    # grace) restarted from step 0, with no `resumed` (a CI run)
    seen = poll_until(supervisor, lambda ev: len([
        e for e in of_kind(ev, "standby_ready") if e["prepared"]]) == 2
        and of_kind(ev, "checkpoint_saved"))
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
