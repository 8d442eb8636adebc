"""A second fault soon after a restart: kill → first resumed step when the chief is killed again
2 s after the restart's first step (warm standby, automatic recovery, backoff 0).

One run through `Supervisor` (what `ftgui train` does): the chief is killed once the run is
past step `--kill-at` and a prepared standby is ready (the first restart is warm), then again
`--delay` seconds (wall clock) after the restart's first step, whatever the pool holds then.
Printed per run: the second kill → first resumed step, whether the second restart took a
standby and whether it had TensorFlow imported (`process_started` `standby_warm`), the
standby's age, and the first attempt's start → first step (what a standby started beside the
attempt's own start costs it), with the 1-minute load from /proc/loadavg.

Variants (`--variant`, default all, interleaved):
  now      this branch: standbys from the attempt's start at nice 10, raised once it trains,
           and a replacement at once after a warm restart;
  nonice   the same, its standbys at nice 0 from the start;
  spare    `now` with `--standbys-per-task 2`: a second standby ready for the second kill;
  before   the policy before: no standby until the attempt's first step.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import WORKLOADS, add_workload_argument, read_events  # noqa: E402

VARIANTS = ("now", "spare", "nonice", "before")


def load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def one_run(run_dir: Path, variant: str, workload: str, kill_at: int, delay: float,
            timeout: float) -> dict:
    from ftgui.core.settings.config import RunConfig
    from ftgui.core.supervision import priority
    from ftgui.core.supervision.local_launcher import LocalLauncher
    from ftgui.core.supervision.supervisor import Supervisor
    from ftgui.core.supervision.task_launch import LOG_DIR

    config = RunConfig(**WORKLOADS[workload]).replace(
        steps=10_000_000, checkpoint_every=10, auto_recover=True, restart_backoff=0.0,
        warm_standby=True, standbys_per_task=2 if variant == "spare" else 1)
    launcher = LocalLauncher(run_dir.absolute(), run_dir.absolute() / LOG_DIR)
    if variant == "before":
        launcher.prestart_standbys = lambda config, tasks: None
    saved_nice = priority.STANDBY_NICE
    priority.STANDBY_NICE = 0 if variant == "nonice" else saved_nice
    supervisor = Supervisor(run_dir, launcher=launcher)
    loads = [load1()]
    supervisor.start(config)
    prepared, kills, step0, restart_first, done = 0, 0, 0, None, False
    deadline = time.time() + timeout
    try:
        while time.time() < deadline and not done:
            for event in supervisor.poll():
                kind, attempt = event["event"], event.get("attempt")
                if kind == "standby_ready" and event.get("prepared"):
                    prepared += 1
                elif kind == "step" and attempt == 0:
                    step0 = event["step"]
                elif kind == "step" and attempt == 1 and restart_first is None:
                    restart_first = time.time()
                elif kind == "step" and attempt == 2:
                    done = True
            if kills == 0 and step0 >= kill_at and prepared >= 1:
                kills += supervisor.kill("chief")
            elif kills == 1 and restart_first and time.time() >= restart_first + delay:
                loads.append(load1())
                kills += supervisor.kill("chief")
            time.sleep(0.02)
    finally:
        supervisor.shutdown()
        priority.STANDBY_NICE = saved_nice
    events = read_events(run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    if not done:
        raise RuntimeError(f"{variant}: {kills} kills, no step of attempt 2 in {timeout} s")

    def first(kind, attempt):
        return next(e for e in events if e["event"] == kind and e.get("attempt") == attempt)

    faults = [e for e in events if e["event"] == "fault_injected"]
    started0, started2 = first("process_started", 0), first("process_started", 2)
    return {"second_kill_to_step": first("step", 2)["time"] - faults[1]["time"],
            "standby": started2.get("standby"), "standby_warm": started2.get("standby_warm"),
            "standby_age": started2.get("standby_age"),
            "first_restart_warm": first("process_started", 1).get("standby_warm"),
            "start_to_first_step": first("step", 0)["time"] - started0["time"],
            "load": loads}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--kill-at", type=int, default=5)
    parser.add_argument("--delay", type=float, default=2.0)
    parser.add_argument("--variant", choices=VARIANTS, action="append")
    parser.add_argument("--timeout", type=float, default=400)
    add_workload_argument(parser)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ftgui-second-kill-"))
    for rep in range(args.reps):
        for variant in args.variant or VARIANTS:
            r = one_run(work / f"{variant}-{rep}", variant, args.workload, args.kill_at,
                        args.delay, args.timeout)
            print(f"rep {rep} {variant:7s} second kill -> step {r['second_kill_to_step']:6.2f} s"
                  f" | standby {r['standby']} warm {r['standby_warm']} age "
                  f"{r['standby_age']} | first restart warm {r['first_restart_warm']} | "
                  f"start -> first step {r['start_to_first_step']:6.2f} s | load "
                  f"{'/'.join(f'{x:.1f}' for x in r['load'])}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
