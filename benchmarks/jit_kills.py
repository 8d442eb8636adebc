"""Multi-worker kills at random moments: how often does the survivor save just in time?

    python benchmarks/jit_kills.py [--kills 10] [--target worker:1] [--seed 7]

One MultiWorkerMirroredStrategy x2 run (digits, MLP, a checkpoint every 50 steps, automatic
recovery without backoff, cold restarts), driven through
`ftgui.core.supervision.supervisor.Supervisor` (what `ftgui train` does). In each attempt the script
waits for 20 steps, then a random 0-1 s, and SIGKILLs `--target` (`worker:1`, or `chief` = worker
0). The survivor is to fail in its next collective and write a just-in-time checkpoint of the last
completed step within the supervisor's grace (`JUST_IN_TIME_GRACE_SECONDS`); otherwise the restart
takes the newest periodic checkpoint and redoes up to 50 steps. Reported per kill: where the resume
came from (`just_in_time` or `disk`), steps redone (the killed attempt's last logged step minus the
restored step), kill -> survivor's exit, and whether the survivor's collectives were aborted
(`collectives_aborted`, the supervisor's notice: `ftgui.core.supervision.peer_notice`). A resume
from disk that redoes nothing is fine (the killed step had just been checkpointed, so the survivor
skipped its save). Then every logged loss is compared, to the bit, with the same schedule
never killed. Exits 1 when a resume redid more than 1 step or a loss differs.
About 15-25 s a kill on 2 cores.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Table, header, poll_until  # noqa: E402


def killed_run(run_dir: Path, kills: int, target: str, seed: int) -> list[dict]:
    """Run a multi-worker x2 run in `run_dir`, killing `target` `kills` times at random
    moments; every event of the run."""
    from ftgui.core.settings.config import RunConfig
    from ftgui.core.supervision.supervisor import Supervisor

    config = RunConfig(strategy="multi-worker", workers=2, steps=1_000_000,
                       checkpoint_every=50, auto_recover=True, restart_backoff=0,
                       max_restarts=kills + 5)
    supervisor = Supervisor(run_dir)
    supervisor.start(config)
    rng = random.Random(seed)
    seen: list[dict] = []
    try:
        for attempt in range(kills):
            seen += poll_until(supervisor, lambda ev, a=attempt, old=seen: len(
                [e for e in old + ev if e["event"] == "step" and e["attempt"] == a]) >= 20)
            time.sleep(rng.uniform(0.0, 1.0))
            if not supervisor.kill(target):
                raise RuntimeError(f"{target} is not alive in attempt {attempt}")
            seen += poll_until(supervisor, lambda ev, a=attempt: any(
                e["event"] == "resumed" and e["attempt"] == a + 1 for e in ev))
            resumed = [e for e in seen if e["event"] == "resumed"][-1]
            reached = max(e["step"] for e in seen
                          if e["event"] == "step" and e["attempt"] == attempt)
            fault = [e for e in seen if e["event"] == "fault_injected"][-1]
            exits = [e for e in seen if e["event"] == "process_exited"
                     and e["attempt"] == attempt and "exit_code" in e]
            aborted = any(e["event"] == "collectives_aborted" and e["attempt"] == attempt
                          for e in seen)
            survivor = (f"survivor exited {exits[0]['time'] - fault['time']:.2f} s after the "
                        f"kill" if exits else "survivor ended by the supervisor")
            print(f"   kill {attempt + 1}: {resumed['source']:12s} from step "
                  f"{resumed['from_step']}, {reached - resumed['from_step']} step(s) redone; "
                  f"{survivor}{'; collectives aborted' if aborted else ''}", flush=True)
    finally:
        supervisor.shutdown()
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--target", default="worker:1", help="worker:1 or chief")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="run here and keep it (logs, events)")
    args = parser.parse_args()
    header(f"{args.kills} kills of {args.target} at random moments, multi-worker x2")
    with tempfile.TemporaryDirectory() as folder:
        seen = killed_run(args.keep or Path(folder) / "run", args.kills, args.target,
                          args.seed)
        differ = differing_steps(seen, Path(folder) / "reference")
    reached: dict[int, int] = {}  # attempt -> the last step it logged
    for e in seen:
        if e["event"] == "step":
            reached[e["attempt"]] = max(reached.get(e["attempt"], 0), e["step"])
    resumes = [e for e in seen if e["event"] == "resumed"]
    sources = Counter(e.get("source") for e in resumes)
    redone = [reached[e["attempt"] - 1] - e["from_step"] for e in resumes]
    lost = sum(r > 1 for r in redone)  # a disk resume of the newest step costs nothing
    stuck = len([e for e in seen if e["event"] == "process_exited" and "signal" in e
                 and e.get("decisive") is False and not e.get("shutdown")])
    print(f"   resumes: {dict(sources)}; steps redone per resume: "
          f"{dict(sorted(Counter(redone).items()))}; survivors ended by the supervisor "
          f"(no exit of their own within the grace): {stuck}")
    table = Table("jit_kills")
    table.add(f"resumes just in time after killing {args.target}",
              f"{sources.get('just_in_time', 0)} of {len(resumes)}")
    table.add("resumes that redid more than 1 step", f"{lost} of {len(resumes)}", "0",
              lost == 0)
    table.add("steps whose loss differs from the run never killed", str(len(differ)), "0",
              not differ)
    table.print()
    return 0 if lost == 0 and not differ else 1


def differing_steps(seen: list[dict], reference_dir: Path) -> list[int]:
    """The steps of the killed run whose logged loss (any attempt) is not, to the bit, that of
    the same schedule never killed, trained in `reference_dir` (2 mirrored replicas: the
    same bits as 2 workers, DESIGN.md §4)."""
    from ftgui import cli
    from ftgui.core.record import events

    last = max(e["step"] for e in seen if e["event"] == "step")
    assert cli.main(["train", str(reference_dir), "--steps", str(last), "--checkpoint-every",
                     "50", "--quiet"]) == 0
    reference = events.final_losses(events.read_all(reference_dir))
    differ = sorted({e["step"] for e in seen
                     if e["event"] == "step" and e["loss"] != reference.get(e["step"])})
    print(f"   every step's loss against the run never killed ({last} steps): "
          f"{len(differ)} differ{' (first: ' + str(differ[0]) + ')' if differ else ''}")
    return differ

if __name__ == "__main__":
    sys.exit(main())
