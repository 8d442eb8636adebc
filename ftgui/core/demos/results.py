"""What a demo claims, checked on its runs' folders; and a demo run headless (tests, benchmark).

Each claim named in a demo file (`ftgui.core.demos.definitions.RUN_CLAIMS`, `CROSS_RUN_CLAIMS`) is a
function of the runs' events and checkpoints giving (holds, one sentence with the figures).
`run_demo` drives a `DemoSession` with `Supervisor`s the way `ftgui train` does, faults on schedule.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

from ftgui.core import formatting
from ftgui.core.checkpoints import listing
from ftgui.core.demos.definitions import Demo
from ftgui.core.demos.session import DemoSession
from ftgui.core.record import events, exitcodes
from ftgui.core.record.run_state import is_decisive
from ftgui.core.timeline.run_figures import read_run


@dataclass(frozen=True)
class Claim:
    """`name` checked on `runs` (their names): `holds`, and `detail` (the figures)."""

    name: str
    runs: tuple[str, ...]
    holds: bool
    detail: str


def _of(seen: list[dict], kind: str) -> list[dict]:
    return [e for e in seen if e.get("event") == kind]


def _steps_by_attempt(seen: list[dict]) -> dict[int, dict[int, float | None]]:
    by: dict[int, dict[int, float | None]] = {}
    for e in _of(seen, "step"):
        by.setdefault(e.get("attempt", 0), {})[e["step"]] = e.get("loss")
    return by


# ------------------------------------------------------------------ claims on one run
def finished(seen, run_dir):
    done = _of(seen, "run_finished")
    return bool(done), (f"finished at step {done[-1]['step']}" if done else "did not finish")


def resumes_from_checkpoint(seen, run_dir):
    """Every restart after a crash resumed from the newest checkpoint saved before it."""
    resumes = [e for e in _of(seen, "resumed") if e.get("attempt", 0) > 0]
    if not resumes:
        return False, "never resumed"
    parts = []
    for resumed in resumes:
        saved = [e["step"] for e in _of(seen, "checkpoint_saved")
                 if e.get("attempt", 0) < resumed["attempt"]]
        newest = max(saved, default=0)
        if resumed.get("from_step") != newest:
            return False, f"resumed from {resumed.get('from_step')}, newest checkpoint {newest}"
        parts.append(f"resumed from checkpoint {newest}")
    return True, ", ".join(parts)


def redone_steps_identical(seen, run_dir):
    """Steps computed by two attempts gave the same loss, to the bit."""
    by = _steps_by_attempt(seen)
    compared, differ = 0, []
    attempts = sorted(by)
    for earlier, later in zip(attempts, attempts[1:], strict=False):
        for step in sorted(set(by[earlier]) & set(by[later])):
            compared += 1
            if by[earlier][step] != by[later][step]:
                differ.append(step)
    if not compared:
        return False, "no step was computed twice"
    if differ:
        return False, f"{len(differ)} of {compared} redone steps differ (first: {differ[0]})"
    return True, f"{compared} redone steps, the same losses to the bit"


def no_step_lost_on_preemption(seen, run_dir):
    """After a preemption at step S the first new step is S + 1."""
    preempted = _of(seen, "preempted")
    if not preempted:
        return False, "no preemption"
    by = _steps_by_attempt(seen)
    stop = preempted[0]["step"]
    later = [a for a in by if a > preempted[0].get("attempt", 0)]
    first = min(by[later[0]]) if later else None
    ok = first == stop + 1
    return ok, f"saved at step {stop}, first new step {first}"


def rolled_back_in_process(seen, run_dir):
    """A NaN was rolled back without a restart, and no checkpoint holds a non-finite loss."""
    rollbacks = _of(seen, "rolled_back")
    starts = [e for e in _of(seen, "process_started") if e.get("role", "chief") == "chief"]
    bad = [info.step for info in listing.list_checkpoints(run_dir)
           if info.loss is None or not math.isfinite(info.loss)]
    ok = bool(rollbacks) and len(starts) == 1 and not bad
    what = (f"rolled back from step {rollbacks[0]['from_step']} to {rollbacks[0]['to_step']}"
            if rollbacks else "no rollback")
    return ok, (f"{what}, {formatting.counted(len(starts), 'chief process', 'chief processes')}, "
                f"{formatting.counted(len(bad), 'bad checkpoint')}")


def restarted_from_checkpoint(seen, run_dir):
    resumes = [e for e in _of(seen, "resumed") if e.get("attempt", 0) > 0]
    return bool(resumes), (f"restarted, resumed from checkpoint {resumes[0]['from_step']}"
                           if resumes else "never restarted")


def absorbed_worker_loss(seen, run_dir):
    """A worker was lost while the run went on: no attempt after the first."""
    lost = []
    for e in _of(seen, "process_exited"):
        if is_decisive(e):
            break  # the exits after the outcome are the clean-up of the cluster
        if e.get("role") == "worker" and e.get("signal") and not e.get("shutdown"):
            lost.append(e)
    attempts = {e.get("attempt", 0) for e in seen} - {-1}  # -1: a warm standby's events
    ok = bool(lost) and attempts == {0}
    restarts = len(attempts) - 1
    return ok, (f"{formatting.counted(len(lost), 'worker')} lost, "
                + ("no restart" if not restarts else formatting.counted(restarts, "restart")))


def resumes_at_epoch_start(seen, run_dir):
    """The fit loop restarted at the start of the epoch, before the step it was killed at."""
    resumes = [e for e in _of(seen, "resumed") if e.get("attempt", 0) > 0]
    kills = [e for e in _of(seen, "process_exited") if exitcodes.was_killed(e)]
    if not resumes or not kills:
        return False, "no crash and resume"
    by = _steps_by_attempt(seen)
    killed_at = max(by.get(kills[0].get("attempt", 0), {0: None}))
    start = resumes[0].get("from_step")
    ok = "epoch" in str(resumes[0].get("restores", "")) and start < killed_at
    return ok, f"killed at step {killed_at}, restarted at the epoch start, step {start}"


RUN_CHECKS = {f.__name__: f for f in (
    finished, resumes_from_checkpoint, redone_steps_identical, no_step_lost_on_preemption,
    rolled_back_in_process, restarted_from_checkpoint, absorbed_worker_loss,
    resumes_at_epoch_start)}


# ------------------------------------------------------------------ claims across runs
def same_final_loss(run_dirs: list[Path]) -> tuple[bool, str]:
    losses = [read_run(d)[1].final_loss for d in run_dirs]
    ok = len(set(losses)) == 1 and losses[0] is not None
    return ok, "final losses " + " and ".join(repr(loss) for loss in losses)


def fewer_steps_redone_first(run_dirs: list[Path]) -> tuple[bool, str]:
    first, second = (read_run(d)[1] for d in run_dirs[:2])
    ok = first.steps_redone < second.steps_redone and first.checkpoints > second.checkpoints
    stalls = formatting.stalls([first.checkpoint_seconds, second.checkpoint_seconds])
    return ok, (f"{first.steps_redone} vs {second.steps_redone} steps redone, "
                f"{first.checkpoints} vs {second.checkpoints} checkpoints "
                f"({stalls[0]} vs {stalls[1]})")


CROSS_CHECKS = {f.__name__: f for f in (same_final_loss, fewer_steps_redone_first)}


def check(demo: Demo, run_dirs: list[Path]) -> list[Claim]:
    """Every claim of `demo` on its runs' folders `run_dirs` (in the demo's order)."""
    results = []
    for run, run_dir in zip(demo.runs, run_dirs, strict=True):
        seen = events.read_all(run_dir)
        for name in run.claims + tuple(c for c in demo.claims if c in RUN_CHECKS):
            holds, detail = RUN_CHECKS[name](seen, run_dir)
            results.append(Claim(name, (run.name,), holds, detail))
    for name in (c for c in demo.claims if c in CROSS_CHECKS):
        holds, detail = CROSS_CHECKS[name](run_dirs)
        results.append(Claim(name, tuple(run.name for run in demo.runs), holds, detail))
    return results


def summary(claims: list[Claim]) -> str:
    """One line per claim: ✓ or ✗, the claim, its run(s), the figures. The run is named only
    where the claims are of more than one: a one-run demo's lines each ended "(crash-and-
    recover)", the demo's own name, three times over (a presenter's finding)."""
    named = len({c.runs for c in claims}) > 1
    return "\n".join(f"{'✓' if c.holds else '✗'} {c.name.replace('_', ' ')}"
                     + (f" ({', '.join(c.runs)})" if named else "") + f": {c.detail}"
                     for c in claims)


# ------------------------------------------------------------------ headless
@dataclass(frozen=True)
class DemoOutcome:
    """A demo run headless: its folders, wall `seconds` from the first start to the last
    exit, the stages reached (of how many), its claims, and `shown`: (stage index, seconds
    of the monotonic clock) each time another stage came on screen."""

    run_dirs: list[Path]
    seconds: float
    stages_reached: int
    stages: int
    claims: list[Claim]
    shown: tuple[tuple[int, float], ...] = ()

    @property
    def holds(self) -> bool:
        return all(c.holds for c in self.claims) and self.stages_reached == self.stages


def run_demo(demo: Demo, root: Path, poll_seconds: float = 0.05,
             reading_seconds: float = 0.0) -> DemoOutcome:
    """Run every run of `demo` under `root`, one after the other, faults on schedule (those
    the text says find the warm standby wait for it: `DemoSession.holds_of`), at the demo's
    pace, and check its claims. `reading_seconds`: the stage machine's (after the last run,
    the stages still due are shown in turn). Raises the supervisor's errors (`ConfigError`,
    `StartError`)."""
    from ftgui.core.supervision.supervisor import Supervisor  # the CLI's way to run

    session = DemoSession(demo, root, presenter=False, reading_seconds=reading_seconds)
    began = time.monotonic()
    while (planned := session.next_run()) is not None:
        run_dir, config = planned
        supervisor = Supervisor(run_dir)
        for step, why in session.holds_of(session.run).items():
            supervisor.plan_hold(step, why)
        supervisor.start(config)
        try:
            while supervisor.live:
                session.feed(supervisor.poll())
                session.machine.tick()
                time.sleep(poll_seconds)
            session.feed(supervisor.poll())
        finally:
            supervisor.shutdown()
    session.finish()
    seconds = time.monotonic() - began
    while not session.machine.caught_up:
        session.machine.tick()
        time.sleep(poll_seconds)
    return DemoOutcome(session.run_dirs, seconds, session.machine.reached + 1,
                       len(demo.stages), check(demo, session.run_dirs),
                       tuple(session.machine.shown))
