"""Recovery time: from the kill of the training process to its first resumed step.

    python benchmarks/bench_recovery.py [--reps 3] [--steps 60] [--kill-at 35] [--no-standby]
        [--workload mlp|resnet]

Variants, interleaved, each repetition in fresh directories (MirroredStrategy over 2 logical CPUs,
global batch 64, a checkpoint every 10 steps, SIGKILL right after step 35, so the resume is from
step 30; `--workload mlp` the MLP on digits, `--workload resnet` the ResNet-style CNN on the
synthetic images, in every variant and mode):
  bare      benchmarks/bare_loop.py kills itself after step 35 (prints `killed 35 TIME` first);
            this script restarts it at once with --restore, like a shell `until … ; do :; done`.
            Recovery = time of the first `step` line of the restarted process - kill time.
  ftgui     `ftgui train RUN --steps 60 --kill-at-step 35 --auto-recover --restart-backoff 0`
            (`--snapshot-every 0`: restored from disk, step 30), with `FTGUI_FORK=0`: the
            restarted trainer is a process of its own that imports TensorFlow.
            Recovery = first `step` event of attempt 1 - `fault_injected` (kill) event time;
            also from the `process_exited` event. Phases from the events: detection, restart,
            TensorFlow import and set-up (`training_started`), restore (`resumed`), first step.
  ftgui-memory  the same with `--snapshot-every 1`: restored from the in-memory snapshot of
            step 35 (then persisted as a checkpoint); steps redone are reported per variant.
  ftgui-forked  a cold restart as ftgui makes it once its fork server is ready (a run that
            trained a few seconds): warm standby off, snapshots at their default, driven
            through Supervisor and killed once the fork server is ready and step 35 is past;
            the restarted trainer is forked from the server (`process_started.forked`), so it
            builds its state but imports nothing.
  bare-standby  (prototype, not ftgui) bare_loop.py --standby started before the kill:
            TensorFlow imported and the model built, waiting; told "go" right after the kill.
  ftgui-standby  only when this ftgui has a `warm_standby` setting: a run with
            warm_standby, auto_recover and restart_backoff 0 driven through
            ftgui.core.supervision.supervisor.Supervisor (what `ftgui train` does), killed with
            Supervisor.kill("chief") once its standby has sent `standby_ready` and step 35 is
            past; recovery = first `step` event of attempt 1 - `fault_injected` event time.
            The standby is fully warm (strategy, model, optimizer built, step run once): its
            resident memory (RSS, psutil) at the kill is the price of keeping it.
            Target: ftgui-standby <= 0.1 x ftgui (the plain restart), aim <= 0.5 s.
When ftgui has no warm standby the script says so.

    python benchmarks/bench_recovery.py --just-in-time [--reps 1]

measures instead a 2-worker MultiWorkerMirroredStrategy run (`ftgui train`, checkpoint every 10,
worker 1 killed after step 35, automatic recovery, restart backoff 0): where it resumed from
(`resumed.source`: just_in_time or disk), steps redone (kill step - resumed step) and kill ->
first resumed step (without warm standby: a cold restart).

    python benchmarks/bench_recovery.py --cluster [--reps 3]

measures a 2-worker MultiWorkerMirroredStrategy run killed by the supervisor (worker 1, past
step 100): kill -> first resumed step of a cold restart (importing TensorFlow, `FTGUI_FORK=0`;
and forked from the fork server) against the standby cluster formed in advance
(`warm_standby`), interleaved. Target: standby cluster <= 0.1 x cold (importing).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    HERE,
    PYTHON,
    WORKLOADS,
    Table,
    add_workload_argument,
    ftgui_train,
    header,
    interleaved,
    median,
    read_events,
    spread,
    workload_flags,
)


def bare_argv(ckpt: Path, steps: int, workload: str, *extra: str) -> list[str]:
    return [PYTHON, str(HERE / "bare_loop.py"), "--steps", str(steps), "--workload", workload,
            "--ckpt-dir", str(ckpt),
            "--checkpoint-every", "10", *extra]


def first_step_line(proc: subprocess.Popen, log) -> tuple[int, float] | None:
    """Read the process' output until its first `step N TIME LOSS` line (or its end)."""
    for raw in proc.stdout:
        line = raw.decode(errors="replace")
        log.write(line)
        parts = line.split()
        if len(parts) == 4 and parts[0] == "step":
            return int(parts[1]), float(parts[2])
    return None


def run_bare(work: Path, steps: int, kill_at: int, tag: str, standby: bool,
             workload: str) -> dict:
    ckpt = work / f"{tag}-ckpt"
    # a bare script killed by SIGKILL leaves the files autograph wrote in the temporary
    # folder: in `work`, removed with it, not in /tmp for good
    env = {**os.environ, "TMPDIR": str(work)}
    log = open(work / f"{tag}.log", "w")
    try:
        waiting = None
        if standby:  # started before the crash: pays import and set-up while the first one runs
            waiting = subprocess.Popen(bare_argv(ckpt, steps, workload, "--restore", "--standby"),
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, env=env)
            for raw in waiting.stdout:
                log.write("standby| " + raw.decode(errors="replace"))
                if raw.startswith(b"standby ready"):
                    break
        first = subprocess.Popen(bare_argv(ckpt, steps, workload, "--kill-at-step", str(kill_at)),
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        killed_at = None
        for raw in first.stdout:
            line = raw.decode(errors="replace")
            log.write(line)
            if line.startswith("killed "):
                killed_at = float(line.split()[2])
        first.wait()
        seen = time.time()
        if killed_at is None or first.returncode != -9:
            raise RuntimeError(f"bare first run did not die by SIGKILL ({first.returncode})")
        if standby:
            waiting.stdin.write(b"go\n")
            waiting.stdin.flush()
            second = waiting
        else:
            second = subprocess.Popen(bare_argv(ckpt, steps, workload, "--restore"),
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        restarted = time.time()
        found = first_step_line(second, log)
        rest = second.stdout.read().decode(errors="replace")
        log.write(rest)
        second.wait(timeout=600)
        if found is None:
            raise RuntimeError("restarted bare loop printed no step")
        step, when = found
        summary = json.loads(rest.rsplit("BENCH ", 1)[1].splitlines()[0]) if "BENCH " in rest \
            else {}
        return {"recovery": when - killed_at, "detected": seen - killed_at,
                "restart_spawn": restarted - killed_at, "first_step": step,
                "import": summary.get("import_seconds"), "restore": summary.get("restore_seconds")}
    finally:
        log.close()
        shutil.rmtree(ckpt, ignore_errors=True)


def snapshot_flags(memory: bool) -> list[str]:
    """`--snapshot-every 1` for the memory variant; off for the others (when ftgui has it)."""
    from ftgui.core.settings.config import RunConfig

    if "snapshot_every" not in getattr(RunConfig, "__dataclass_fields__", {}):
        return []
    return ["--snapshot-every", "1" if memory else "0"]


def run_ftgui(work: Path, steps: int, kill_at: int, tag: str, memory: bool = False,
              workload: str = "mlp") -> dict:
    run_dir = work / tag
    figures = ftgui_train(run_dir, ["--steps", str(steps), "--checkpoint-every", "10",
                                    "--kill-at-step", str(kill_at), "--auto-recover",
                                    "--restart-backoff", "0", *snapshot_flags(memory),
                                    *workload_flags(workload)],
                          work / f"{tag}.out", timeout=600,
                          env={**os.environ, "FTGUI_FORK": "0"})  # the restart imports
    events = figures.pop("events")

    def first(event_type, attempt, **match):
        for e in events:
            if (e["event"] == event_type and e.get("attempt") == attempt
                    and all(e.get(k) == v for k, v in match.items())):
                return e
        raise RuntimeError(f"no {event_type} event of attempt {attempt} {match or ''}")

    fault = first("fault_injected", 0, kind="kill")
    exited = first("process_exited", 0)
    started = first("process_started", 1)
    trained = first("training_started", 1)
    resumed = first("resumed", 1)
    step = first("step", 1)
    t0 = fault["time"]
    shutil.rmtree(run_dir, ignore_errors=True)
    return {"recovery": step["time"] - t0, "from_exit": step["time"] - exited["time"],
            "detected": exited["time"] - t0, "restart_spawn": started["time"] - t0,
            "training_started": trained["time"] - t0, "resumed": resumed["time"] - t0,
            "import": trained.get("import_seconds"), "setup": trained.get("setup_seconds"),
            "restore": resumed.get("restore_seconds"), "first_step": step["step"],
            "from_step": resumed.get("from_step"), "source": resumed.get("source", "disk"),
            "persist": next((e["save_seconds"] for e in events if e["event"] == "checkpoint_saved"
                             and e.get("attempt") == 1 and e.get("source") == "memory"), None),
            "redone": fault["step"] - resumed.get("from_step", 0)}


def ftgui_has_standby() -> bool:
    from ftgui.core.settings.config import RunConfig

    return "warm_standby" in getattr(RunConfig, "__dataclass_fields__", {})


def kill_when_ready(run_dir: Path, config, target: str, prepared_wanted: int, kill_at: int,
                    timeout: float, before_kill=None, ready=None) -> list[dict]:
    """Run `config` through `Supervisor` (what `ftgui train` does); kill `target` once the run
    is past step `kill_at`, `prepared_wanted` standbys have sent a prepared `standby_ready`
    and `ready()` (if given) is true (`before_kill(supervisor)` is called just before); stop
    at the first step after the kill. Returns the run's events. Raises RuntimeError when no
    kill came within `timeout` s."""
    from ftgui.core.supervision.supervisor import Supervisor

    supervisor = Supervisor(run_dir)
    supervisor.start(config)
    prepared, killed, last_step = 0, False, 0
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            for event in supervisor.poll():
                if event["event"] == "standby_ready" and event.get("prepared"):
                    prepared += 1
                elif event["event"] == "step" and event.get("attempt") == 0:
                    last_step = event["step"]
                elif event["event"] == "step" and killed:
                    deadline = 0  # the first resumed step: done
            if not killed and last_step >= kill_at and prepared >= prepared_wanted \
                    and (ready is None or ready()):
                if before_kill is not None:
                    before_kill(supervisor)
                killed = supervisor.kill(target)
            time.sleep(0.02)
    finally:
        supervisor.shutdown()
    events = read_events(run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    if not killed:
        raise RuntimeError(f"no kill: {prepared} standbys prepared, last step {last_step}")
    return events


def run_ftgui_standby(work: Path, kill_at: int, tag: str, workload: str = "mlp",
                      timeout: float = 400) -> dict:
    """A warm-standby run killed by the supervisor once the standby is ready."""
    from ftgui.core.settings.config import RunConfig

    config = RunConfig(**WORKLOADS[workload]).replace(
        steps=10_000_000, checkpoint_every=10, auto_recover=True, restart_backoff=0.0,
        warm_standby=True)
    rss = []
    events = kill_when_ready(work / tag, config, "chief", 1, kill_at, timeout,
                             lambda supervisor: rss.append(standby_rss(supervisor)))
    ready_event = next(e for e in events if e["event"] == "standby_ready")
    figures = restart_figures(events)
    return {**figures, "used_standby": figures["standby"],
            "prepared": ready_event.get("prepared"), "rss": rss[0]}


def restart_figures(events: list[dict]) -> dict:
    """Seconds from attempt 0's fault to attempt 1's process start, `training_started`,
    `resumed` and first step (`recovery`), and how that restart went (its events)."""
    fault = next(e for e in events if e["event"] == "fault_injected" and e.get("attempt") == 0)
    started = next(e for e in events if e["event"] == "process_started" and e["attempt"] == 1)
    trained = next(e for e in events if e["event"] == "training_started" and e["attempt"] == 1)
    resumed = next(e for e in events if e["event"] == "resumed" and e["attempt"] == 1)
    step = next(e for e in events if e["event"] == "step" and e["attempt"] == 1)
    t0 = fault["time"]
    return {"recovery": step["time"] - t0, "restart_spawn": started["time"] - t0,
            "forked": bool(started.get("forked")), "standby": bool(started.get("standby")),
            "training_started": trained["time"] - t0, "resumed": resumed["time"] - t0,
            "killed_after_step": fault.get("step"), "first_step": step["step"],
            "from_step": resumed.get("from_step"), "source": resumed.get("source"),
            "redone": fault.get("step", 0) - resumed.get("from_step", 0),
            "import": trained.get("import_seconds"), "setup": trained.get("setup_seconds")}


def server_ready(config, log_dir: Path):
    """A test of whether this process's fork server for the trainers of `config` is ready
    (`fork_server.server_for`: the one the supervisor's launcher forks from)."""
    from ftgui.core.supervision import fork_server
    from ftgui.core.supervision.standby import device_env

    def ready() -> bool:
        server = fork_server.server_for(sys.executable,
                                        fork_server.child_env(device_env(config)), log_dir)
        return server is not None and server.ready
    return ready


def run_ftgui_forked(work: Path, kill_at: int, tag: str, workload: str = "mlp",
                     timeout: float = 400) -> dict:
    """A run without warm standby killed by the supervisor once its fork server is ready:
    its cold restart is forked from the server."""
    from ftgui.core.settings.config import RunConfig

    config = RunConfig(**WORKLOADS[workload]).replace(
        steps=10_000_000, checkpoint_every=10, auto_recover=True, restart_backoff=0.0,
        warm_standby=False)
    return restart_figures(kill_when_ready(work / tag, config, "chief", 0, kill_at, timeout,
                                           ready=server_ready(config, work)))


def standby_rss(supervisor) -> float:
    """Resident memory of the supervisor's waiting standbys, in MB (psutil)."""
    import psutil

    total = 0
    for popen, _ in supervisor.standbys:
        try:
            total += psutil.Process(popen.pid).memory_info().rss
        except psutil.Error:
            pass
    return total / 1e6


def warm_vs_plain(results: dict, med: dict) -> None:
    """Print the fully warm standby against ftgui's plain restart, measured in this one run."""
    warm = results["ftgui-standby"]
    ratio = med["ftgui-standby"] / med["ftgui"]
    print(f"   warm standby vs plain restart: {med['ftgui-standby']:.2f} s vs "
          f"{med['ftgui']:.2f} s, ratio {ratio:.3f} (target <= 0.1: "
          f"{'met' if ratio <= 0.1 else 'NOT met'}; aim <= 0.5 s: "
          f"{'met' if med['ftgui-standby'] <= 0.5 else 'NOT met'})")
    print("   warm standby phases (median s after the kill): new process "
          f"{median([r['restart_spawn'] for r in warm]):.3f}, resumed "
          f"{median([r['resumed'] for r in warm]):.3f}, training_started "
          f"{median([r['training_started'] for r in warm]):.3f}, first step "
          f"{med['ftgui-standby']:.3f}; prepared: {all(r['prepared'] for r in warm)}; "
          f"cost: one more process per task, RSS {median([r['rss'] for r in warm]):.0f} MB")


def run_just_in_time(work: Path, steps: int, kill_at: int, tag: str, workload: str) -> dict:
    """One multi-worker run whose worker 1 is killed after `kill_at`; figures of its recovery."""
    run_dir = work / tag
    figures = ftgui_train(run_dir, ["--strategy", "multi-worker", "--workers", "2", "--steps",
                                    str(steps), "--checkpoint-every", "10", "--kill-at-step",
                                    str(kill_at), "--fault-target", "worker:1",
                                    "--auto-recover", "--restart-backoff", "0",
                                    *workload_flags(workload)],
                          work / f"{tag}.out", timeout=600,
                          env={**os.environ, "FTGUI_FORK": "0"})  # the restart imports
    events = figures.pop("events")
    fault = next(e for e in events if e["event"] == "fault_injected")
    resumed = next(e for e in events if e["event"] == "resumed")
    step = next(e for e in events if e["event"] == "step" and e["attempt"] == 1)
    saved = next((e for e in events if e["event"] == "checkpoint_saved"
                  and e.get("just_in_time")), {})
    shutil.rmtree(run_dir, ignore_errors=True)
    return {"source": resumed.get("source"), "from_step": resumed["from_step"],
            "redone": fault["step"] - resumed["from_step"],
            "recovery": step["time"] - fault["time"],
            "jit_save": saved.get("save_seconds"), "live_differs": saved.get("live_differs")}


def run_cluster(work: Path, tag: str, variant: str, kill_at: int, workload: str,
                timeout: float = 400) -> dict:
    """A multi-worker x2 run (checkpoint every 20, automatic recovery, no backoff) driven by
    `Supervisor`, worker 1 killed by it once the run is past `kill_at`. `variant`: "cold"
    (no standby, `FTGUI_FORK=0`: the restarted workers import TensorFlow), "cold-forked" (no
    standby, killed once the fork server is ready: the restarted workers are forked from it)
    or "standby-cluster" (killed once both members of its standby cluster are prepared).
    Figures of the recovery."""
    from ftgui.core.settings.config import RunConfig

    standby = variant == "standby-cluster"
    config = RunConfig(**WORKLOADS[workload], strategy="multi-worker", workers=2,
                       steps=10_000_000,
                       checkpoint_every=20, auto_recover=True, restart_backoff=0.0,
                       warm_standby=standby)
    switch = os.environ.pop("FTGUI_FORK", None)
    if variant == "cold":
        os.environ["FTGUI_FORK"] = "0"  # read at each start: this run's restart imports
    try:
        events = kill_when_ready(work / tag, config, "worker:1", 2 if standby else 0, kill_at,
                                 timeout, ready=server_ready(config, work)
                                 if variant == "cold-forked" else None)
    finally:
        os.environ.pop("FTGUI_FORK", None)
        if switch is not None:
            os.environ["FTGUI_FORK"] = switch
    fault = next(e for e in events if e["event"] == "fault_injected")
    started = [e for e in events if e["event"] == "process_started" and e["attempt"] == 1]
    resumed = next(e for e in events if e["event"] == "resumed" and e["attempt"] == 1)
    step = next(e for e in events if e["event"] == "step" and e["attempt"] == 1)
    return {"recovery": step["time"] - fault["time"], "resumed": resumed["time"] - fault["time"],
            "standby": all(e.get("standby") for e in started),
            "forked": all(e.get("forked") for e in started), "source": resumed.get("source"),
            "redone": fault["step"] - resumed["from_step"], "killed_after": fault["step"]}


def measure_cluster(reps: int, kill_at: int, budget: float, workload: str) -> int:
    """Kill -> first resumed step of a multi-worker run: a cold restart of both workers
    (importing, and forked from the fork server) against the standby cluster formed in advance
    (`ftgui.core.supervision.standby`)."""
    header(f"multi-worker x2 recovery ({workload} workload): worker 1 killed by the supervisor "
           f"past step {kill_at}; cold restart (importing / forked) vs standby cluster, {reps} "
           f"interleaved repetitions")
    work = Path(tempfile.mkdtemp(prefix="ftgui-bench-cluster-"))

    def show(rep, name, r):
        print(f"   rep {rep} {name:15s} kill -> first resumed step {r['recovery']:.2f} s "
              f"(resumed {r['resumed']:.2f} s; killed after step {r['killed_after']}, "
              f"{r['redone']} step(s) redone, from {r['source']}; members used: "
              f"{r['standby']}; forked: {r['forked']})", flush=True)

    try:
        results = interleaved(["cold", "cold-forked", "standby-cluster"], reps, budget,
                              lambda name, rep: run_cluster(work, f"{name}-{rep}", name,
                                                            kill_at, workload), show)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {name: median([r["recovery"] for r in rs]) for name, rs in results.items()}
    table = Table(f"bench_recovery --cluster --workload {workload}")
    table.add("cold restart of both workers (importing), kill -> step", f"{med['cold']:.2f} s")
    table.add("cold restart of both workers, forked, kill -> step",
              f"{med['cold-forked']:.2f} s (forked in every repetition: "
              f"{all(r['forked'] for r in results['cold-forked'])})")
    table.add("standby cluster, kill -> step", f"{med['standby-cluster']:.2f} s")
    ratio = med["standby-cluster"] / med["cold"]
    table.add("ratio standby cluster / cold importing (target <= 0.1)", f"{ratio:.3f}",
              "<= 0.1", ratio <= 0.1)
    table.add("ratio standby cluster / cold forked",
              f"{med['standby-cluster'] / med['cold-forked']:.3f}")
    table.add("standby cluster used in every repetition",
              str(all(r["standby"] for r in results["standby-cluster"])))
    table.print()
    return 0


def measure_just_in_time(reps: int, steps: int, kill_at: int, workload: str) -> int:
    header(f"just-in-time recovery ({workload} workload): multi-worker x2, worker 1 killed "
           f"after step {kill_at}, checkpoint every 10, {reps} run(s)")
    work = Path(tempfile.mkdtemp(prefix="ftgui-bench-jit-"))
    results = []
    try:
        for rep in range(reps):
            r = run_just_in_time(work, steps, kill_at, f"jit-{rep}", workload)
            results.append(r)
            print(f"   rep {rep}: resumed from step {r['from_step']} ({r['source']}), "
                  f"{r['redone']} step(s) redone, kill -> first resumed step "
                  f"{r['recovery']:.2f} s; the survivor's save took {r['jit_save']:.2f} s, "
                  f"the failed step had changed {r['live_differs']} live variable(s)",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table = Table(f"bench_recovery --just-in-time --workload {workload}")
    redone = max(r["redone"] for r in results)
    table.add("steps redone after a lost worker (periodic: up to 9)", f"{redone}", "<= 1",
              redone <= 1)
    table.add("recovery source", ", ".join(sorted({str(r["source"]) for r in results})))
    table.add("kill -> first resumed step (cold restart of both workers)",
              f"{median([r['recovery'] for r in results]):.2f} s")
    table.print()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--kill-at", type=int, default=35)
    parser.add_argument("--no-standby", action="store_true")
    parser.add_argument("--just-in-time", action="store_true",
                        help="measure a multi-worker just-in-time recovery instead")
    parser.add_argument("--budget", type=float, default=265,
                        help="start no new repetition after this many seconds (default 265)")
    parser.add_argument("--cluster", action="store_true",
                        help="measure a multi-worker cold restart against its standby cluster")
    add_workload_argument(parser)
    args = parser.parse_args()
    if args.cluster:
        return measure_cluster(args.reps, max(args.kill_at, 100), args.budget, args.workload)
    if args.just_in_time:
        return measure_just_in_time(args.reps, args.steps, args.kill_at, args.workload)
    header(f"recovery ({args.workload} workload): kill after step {args.kill_at} to the first "
           f"resumed step, {args.reps} interleaved repetitions")
    has_standby = ftgui_has_standby()
    if has_standby:
        print("   this ftgui has a warm standby (`warm_standby`): measured as ftgui-standby")
    else:
        print("   warm standby does not exist in ftgui yet: ftgui restarts a fresh process "
              "(import TensorFlow, build, restore)")
    variants = ["bare", "ftgui"] + (["ftgui-memory"] if snapshot_flags(True) else [])
    variants += ["ftgui-forked"]
    if not args.no_standby:
        variants += ["bare-standby"] + (["ftgui-standby"] if has_standby else [])
    work = Path(tempfile.mkdtemp(prefix="ftgui-bench-recovery-"))

    def run(name, rep):
        tag = f"{name}-{rep}"
        if name in ("ftgui", "ftgui-memory"):
            return run_ftgui(work, args.steps, args.kill_at, tag, name == "ftgui-memory",
                             args.workload)
        if name == "ftgui-standby":
            return run_ftgui_standby(work, args.kill_at, tag, args.workload)
        if name == "ftgui-forked":
            return run_ftgui_forked(work, args.kill_at, tag, args.workload)
        return run_bare(work, args.steps, args.kill_at, tag, name == "bare-standby",
                        args.workload)

    def show(rep, name, r):
        extra = ""
        if name in ("ftgui", "ftgui-memory"):
            persist = (f", persisted as a checkpoint in {r['persist']:.2f} s on the writer thread"
                       if r["persist"] else "")
            extra = (f"  ({r['source']}: {r['redone']} steps redone{persist}; from process_exited "
                     f"{r['from_exit']:.2f} s; exit seen "
                     f"{r['detected']:.2f}, new process {r['restart_spawn']:.2f}, "
                     f"training_started {r['training_started']:.2f}, resumed "
                     f"{r['resumed']:.2f} s; import {r['import']:.2f} s)")
        elif name == "ftgui-standby":
            extra = (f"  (killed after step {r['killed_after_step']}, resumed from "
                     f"{r['from_step']}; standby used: {r['used_standby']}, prepared: "
                     f"{r['prepared']}, its RSS {r['rss']:.0f} MB; "
                     f"training_started {r['training_started']:.2f}, resumed "
                     f"{r['resumed']:.2f} s)")
        elif name == "ftgui-forked":
            extra = (f"  (killed after step {r['killed_after_step']}, resumed from "
                     f"{r['from_step']} ({r['source']}); forked: {r['forked']}, standby: "
                     f"{r['standby']}; training_started {r['training_started']:.2f}, resumed "
                     f"{r['resumed']:.2f} s; import {r['import']:.2f}, set-up "
                     f"{r['setup']:.2f} s)")
        elif name == "bare-standby" and r.get("import") is not None:
            extra = f"  (its import, {r['import']:.2f} s, was paid before the kill)"
        elif r.get("import") is not None:
            extra = f"  (import {r['import']:.2f} s in the restarted process)"
        print(f"   rep {rep} {name:13s} kill -> first resumed step {r['recovery']:.2f} s, "
              f"resumed at step {r['first_step']}{extra}", flush=True)

    try:
        results = interleaved(variants, args.reps, args.budget, run, show)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    med = {name: median([r["recovery"] for r in rs]) for name, rs in results.items()}
    print()
    for name, rs in results.items():
        print(f"   {name:13s} median {med[name]:.2f} s  ({spread([r['recovery'] for r in rs])})")
    if results["ftgui"]:
        f = results["ftgui"]
        print("   ftgui phases (median seconds after the kill): "
              + ", ".join(f"{k} {median([r[k] for r in f]):.2f}" for k in
                          ("detected", "restart_spawn", "training_started", "resumed",
                           "recovery"))
              + f"; in the new process: import {median([r['import'] for r in f]):.2f} s, "
              f"set-up {median([r['setup'] for r in f]):.2f} s, restore "
              f"{median([r['restore'] for r in f]):.3f} s")
    for name in ("ftgui", "ftgui-memory"):
        if results.get(name):
            print(f"   {name}: restored from {results[name][0]['source']}, steps redone "
                  f"median {median([r['redone'] for r in results[name]]):.0f}")
    ratio = med["ftgui"] / med["bare"]
    print(f"\n   ratio ftgui / bare restart = {ratio:.2f}")
    if "ftgui-forked" in med:
        print(f"   ratio ftgui-forked / bare restart = {med['ftgui-forked'] / med['bare']:.2f}"
              f" (forked in {sum(r['forked'] for r in results['ftgui-forked'])} of "
              f"{len(results['ftgui-forked'])})")
    if "bare-standby" in med:
        print(f"   ratio bare-standby prototype / bare restart = "
              f"{med['bare-standby'] / med['bare']:.2f}")
    if "ftgui-standby" in med:
        print(f"   ratio ftgui-standby / bare restart = {med['ftgui-standby'] / med['bare']:.2f}")
        warm_vs_plain(results, med)
    elif not has_standby:
        print("   warm standby: not implemented in ftgui; every ftgui recovery pays a fresh "
              "process (TensorFlow import + set-up + first-step trace)")

    table = Table(f"bench_recovery --workload {args.workload}")
    table.add("bare script restart, kill -> step", f"{med['bare']:.2f} s")
    table.add("ftgui auto-recovery, kill -> step", f"{med['ftgui']:.2f} s")
    if results["ftgui"]:
        table.add("ftgui, process_exited -> step",
                  f"{median([r['from_exit'] for r in results['ftgui']]):.2f} s")
    table.add("ratio ftgui / bare", f"{ratio:.2f}")
    if results.get("ftgui-memory"):
        memory = results["ftgui-memory"]
        table.add("ftgui from memory, kill -> step", f"{med['ftgui-memory']:.2f} s")
        table.add("steps redone: disk / memory",
                  f"{median([r['redone'] for r in results['ftgui']]):.0f} / "
                  f"{median([r['redone'] for r in memory]):.0f}", "memory ≤ 1",
                  median([r["redone"] for r in memory]) <= 1)
    if "ftgui-forked" in med:
        forked = results["ftgui-forked"]
        table.add("ftgui cold restart forked from the fork server, kill -> step",
                  f"{med['ftgui-forked']:.2f} s (forked in {sum(r['forked'] for r in forked)} "
                  f"of {len(forked)})")
        table.add("ratio ftgui-forked / bare (target <= 1.0, aim 0.8)",
                  f"{med['ftgui-forked'] / med['bare']:.2f}", "<= 1.0",
                  med["ftgui-forked"] <= med["bare"])
    if "bare-standby" in med:
        table.add("bare standby prototype, kill -> step", f"{med['bare-standby']:.2f} s")
    if "ftgui-standby" in med:
        table.add("ftgui warm standby, kill -> step", f"{med['ftgui-standby']:.2f} s")
        table.add("ratio ftgui-standby / bare", f"{med['ftgui-standby'] / med['bare']:.2f}")
        table.add("ratio ftgui-standby / ftgui restart (target <= 0.1)",
                  f"{med['ftgui-standby'] / med['ftgui']:.2f}")
        table.add("warm standby memory (RSS, one process)",
                  f"{median([r['rss'] for r in results['ftgui-standby']]):.0f} MB")
    elif not has_standby:
        table.add("ftgui warm standby", "does not exist yet")
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
