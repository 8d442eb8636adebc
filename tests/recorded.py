"""Hand-written recordings of runs (no TensorFlow): config.toml and events.jsonl laid out as the
supervisor and trainer write them, with exact times so that every figure is known."""

from __future__ import annotations

from pathlib import Path

from ftgui.core.record.events import EventWriter
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import RunConfig

T0 = 1_700_000_000.0
CHIEF = {"role": "chief", "index": 0, "chief": True}


def ev(event: str, time: float, attempt: int = 0, **fields) -> dict:
    return {"event": event, "time": T0 + time, "attempt": attempt, **fields}


def steps(first: int, last: int, start_time: float, attempt: int = 0) -> list[dict]:
    """Steps a quarter of a second apart (exact in binary), loss 1/step."""
    return [ev("step", start_time + 0.25 * (s - first), attempt, step=s, loss=1.0 / s)
            for s in range(first, last + 1)]


def crash_and_recovery(run_dir: Path, step_seconds: float = 0.1, kill_at: int = 12,
                       every: int = 10, steps: int = 20, stall: float = 0.05) -> Path:
    """A run killed after step `kill_at` and recovered automatically from checkpoint
    `every`·k: one step per `step_seconds` from T0 + 1, a checkpoint every `every` steps
    (each stalled training `stall` s, the save itself took 0.8 of that), the kill 0.05 s after
    step `kill_at`, the exit 0.05 s later, the first new step 2 s after the exit."""
    configmod.save(run_dir, RunConfig(steps=steps, checkpoint_every=every, auto_recover=True))
    restored = kill_at - kill_at % every
    with EventWriter(run_dir, 0) as writer:
        writer.emit("run_started", time=T0, config={"strategy": "mirrored", "steps": steps})
        writer.emit("process_started", time=T0 + 0.1, role="chief", index=0, pid=101)
        writer.emit("training_started", time=T0 + 0.9, role="chief", index=0, start_step=0,
                    strategy="mirrored", replicas=2)
        now = _steps(writer, 1, kill_at, T0 + 1.0, step_seconds, every, stall)
        writer.emit("fault_injected", time=now + 0.05, kind="kill", target="chief",
                    step=kill_at - 1, source="user")
        writer.emit("process_exited", time=now + 0.1, role="chief", index=0, pid=101,
                    signal=9, signal_name="SIGKILL", decisive=True, chief=True)
        writer.emit("recovery_scheduled", time=now + 0.11, delay=1.0, restart=1)
    with EventWriter(run_dir, 1) as writer:
        writer.emit("process_started", time=now + 1.2, role="chief", index=0, pid=102,
                    restore=f"checkpoints/ckpt-{restored}")
        writer.emit("training_started", time=now + 1.9, role="chief", index=0,
                    start_step=restored, strategy="mirrored", replicas=2)
        writer.emit("resumed", time=now + 1.95, from_step=restored,
                    checkpoint=f"checkpoints/ckpt-{restored}")
        end = _steps(writer, restored + 1, steps, now + 2.1, step_seconds, every, stall)
        writer.emit("run_finished", time=end + 0.01, step=steps, loss=1.0 / steps)
        writer.emit("process_exited", time=end + 0.02, role="chief", index=0, pid=102,
                    exit_code=0, decisive=True, chief=True)
    return run_dir


def _steps(writer, first: int, last: int, start: float, step_seconds: float, every: int,
           stall: float) -> float:
    """Steps `first` … `last` (loss 1/step), one per `step_seconds` from `start`, with a
    checkpoint after each multiple of `every`; returns the time of the last step."""
    when = start
    for step in range(first, last + 1):
        when = start + (step - first) * step_seconds
        writer.emit("step", time=when, step=step, loss=1.0 / step, epoch=0)
        if step % every == 0:
            writer.emit("checkpoint_saved", time=when + 0.01, step=step,
                        path=f"checkpoints/ckpt-{step}", loss=1.0 / step, size=1000,
                        save_seconds=0.8 * stall, stall_seconds=stall, requested=False)
    return when


def crash_then_fork(run_dir: Path, step_seconds: float = 0.1) -> Path:
    """A run killed after step 45 and recovered from checkpoint 40 (5 steps redone), trained
    on to step 60 and stopped; then forked by the user from checkpoint 20 (`--resume
    --from-step 20`) and trained to step 60 again: 40 steps of a new branch, none redone."""
    configmod.save(run_dir, RunConfig(steps=60, checkpoint_every=10, auto_recover=True))
    with EventWriter(run_dir, 0) as writer:
        writer.emit("run_started", time=T0, config={"strategy": "mirrored", "steps": 60})
        writer.emit("process_started", time=T0 + 0.1, role="chief", index=0, pid=101)
        writer.emit("training_started", time=T0 + 0.9, role="chief", index=0, start_step=0,
                    strategy="mirrored", replicas=2)
        now = _steps(writer, 1, 45, T0 + 1.0, step_seconds, 10, 0.05)
        writer.emit("fault_injected", time=now + 0.05, kind="kill", target="chief", step=45,
                    source="user")
        writer.emit("process_exited", time=now + 0.1, role="chief", index=0, pid=101,
                    signal=9, signal_name="SIGKILL", decisive=True, chief=True)
        writer.emit("recovery_scheduled", time=now + 0.11, delay=1.0, restart=1)
    with EventWriter(run_dir, 1) as writer:
        writer.emit("process_started", time=now + 1.2, role="chief", index=0, pid=102,
                    restore="checkpoints/ckpt-40")
        writer.emit("training_started", time=now + 1.9, role="chief", index=0, start_step=40,
                    strategy="mirrored", replicas=2)
        writer.emit("resumed", time=now + 1.95, from_step=40, checkpoint="checkpoints/ckpt-40")
        end = _steps(writer, 41, 60, now + 2.1, step_seconds, 10, 0.05)
        writer.emit("run_finished", time=end + 0.01, step=60, loss=1.0 / 60)
        writer.emit("process_exited", time=end + 0.02, role="chief", index=0, pid=102,
                    exit_code=0, decisive=True, chief=True)
    with EventWriter(run_dir, 2) as writer:
        start = end + 10.0
        writer.emit("forked", time=start, from_step=20, archived_steps=[30, 40, 50, 60],
                    archive="history/fork-2/checkpoints")
        writer.emit("process_started", time=start + 0.1, role="chief", index=0, pid=103,
                    restore="checkpoints/ckpt-20")
        writer.emit("training_started", time=start + 0.9, role="chief", index=0,
                    start_step=20, strategy="mirrored", replicas=2)
        writer.emit("resumed", time=start + 0.95, from_step=20,
                    checkpoint="checkpoints/ckpt-20")
        end = _steps(writer, 21, 60, start + 1.0, step_seconds, 10, 0.05)
        writer.emit("run_finished", time=end + 0.01, step=60, loss=1.0 / 60)
        writer.emit("process_exited", time=end + 0.02, role="chief", index=0, pid=103,
                    exit_code=0, decisive=True, chief=True)
    return run_dir


def killed_before_the_first_checkpoint(run_dir: Path, step_seconds: float = 0.1) -> Path:
    """Issue 25 case 12: a run with a checkpoint every 10 steps killed after step 7, before
    its first checkpoint, and restarted automatically with nothing to restore: attempt 1
    trains again from step 0 (no `resumed` event) to step 20."""
    configmod.save(run_dir, RunConfig(steps=20, checkpoint_every=10, auto_recover=True))
    with EventWriter(run_dir, 0) as writer:
        writer.emit("run_started", time=T0, config={"strategy": "mirrored", "steps": 20})
        writer.emit("process_started", time=T0 + 0.1, role="chief", index=0, pid=101)
        writer.emit("training_started", time=T0 + 0.9, role="chief", index=0, start_step=0,
                    strategy="mirrored", replicas=2)
        now = _steps(writer, 1, 7, T0 + 1.0, step_seconds, 10, 0.05)
        writer.emit("fault_injected", time=now + 0.05, kind="kill", target="chief", step=7,
                    source="user")
        writer.emit("process_exited", time=now + 0.1, role="chief", index=0, pid=101,
                    signal=9, signal_name="SIGKILL", decisive=True, chief=True)
        writer.emit("recovery_scheduled", time=now + 0.11, delay=1.0, restart=1)
    with EventWriter(run_dir, 1) as writer:
        writer.emit("process_started", time=now + 1.2, role="chief", index=0, pid=102,
                    restore=None)
        writer.emit("training_started", time=now + 1.9, role="chief", index=0, start_step=0,
                    strategy="mirrored", replicas=2)
        end = _steps(writer, 1, 20, now + 2.1, step_seconds, 10, 0.05)
        writer.emit("run_finished", time=end + 0.01, step=20, loss=1.0 / 20)
        writer.emit("process_exited", time=end + 0.02, role="chief", index=0, pid=102,
                    exit_code=0, decisive=True, chief=True)
    return run_dir


def two_runs(root):
    """The same kill after step 14: `every-10` resumes from 10 (4 steps redone, 2 saves),
    `every-4` from 12 (2 steps redone, 5 saves); every save stalled training 0.05 s."""
    return (crash_and_recovery(root / "every-10", kill_at=14, every=10),
            crash_and_recovery(root / "every-4", kill_at=14, every=4))


def write_recovered_run(run_dir) -> None:
    """A 400-step run killed at step 230 (the supervisor had read 228), restarted
    automatically from checkpoint 200, then trained on to step 260; times exact in binary."""
    configmod.save(run_dir, RunConfig(steps=400, checkpoint_every=50))
    with EventWriter(run_dir, 0) as w:
        w.emit("run_started", time=T0)
        w.emit("process_started", time=T0, pid=10, restore=None, standby=False, **CHIEF)
        w.emit("training_started", time=T0 + 9.5, start_step=0, strategy="mirrored",
               replicas=2, **CHIEF)
        for step in range(1, 231):
            w.emit("step", time=T0 + 10 + 0.25 * step, step=step, loss=2.0 / step)
        w.emit("fault_injected", time=T0 + 68, kind="kill", target="chief", step=228,
               source="user")
        w.emit("process_exited", time=T0 + 68.25, pid=10, last_step=230, signal=9,
               signal_name="SIGKILL", decisive=True, shutdown=False, **CHIEF)
        w.emit("recovery_scheduled", time=T0 + 68.25, delay=0.0, restart=1)
    with EventWriter(run_dir, 1) as w:
        w.emit("process_started", time=T0 + 68.5, pid=11, restore="checkpoints/ckpt-200",
               standby=False, **CHIEF)
        w.emit("resumed", time=T0 + 80, from_step=200, checkpoint="checkpoints/ckpt-200")
        for step in range(201, 261):
            w.emit("step", time=T0 + 80 + 0.25 * (step - 200), step=step, loss=2.0 / step)


def losses_and_validations(seen: list[dict]) -> tuple[dict, dict]:
    """{(attempt, step): loss} and {(attempt, step): (val_loss, val_accuracy)} of a run's events."""
    steps = {(e["attempt"], e["step"]): e["loss"] for e in seen if e["event"] == "step"}
    validations = {(e["attempt"], e["step"]): (e["val_loss"], e["val_accuracy"])
                   for e in seen if e["event"] == "validation"}
    return steps, validations


def write_chaos_run(run_dir, faults: int = 12, total: int = 1200, kind: str = "kill",
                    source: str = "chaos") -> None:
    """A `total`-step run killed every 90 steps (`faults` times; `kind` and `source`: the
    `fault_injected` event's) and resumed each time from 10 steps back."""
    configmod.save(run_dir, RunConfig(steps=total, checkpoint_every=10))
    step, time = 0, T0
    for attempt in range(faults + 1):
        with EventWriter(run_dir, attempt) as w:
            if attempt == 0:
                w.emit("run_started", time=time)
            else:
                w.emit("resumed", time=time, from_step=step - 10,
                       checkpoint=f"checkpoints/ckpt-{step - 10}")
                step -= 10
            w.emit("process_started", time=time, pid=10 + attempt, restore=None,
                   standby=False, role="chief", index=0, chief=True)
            last = min(step + 100, total) if attempt < faults else total
            for s in range(step + 1, last + 1):
                time += 0.01
                w.emit("step", time=time, step=s, loss=2.0 / s)
            step = last
            if attempt < faults:
                w.emit("fault_injected", time=time, kind=kind, target="chief", step=step,
                       source=source)
                w.emit("process_exited", time=time + 0.1, pid=10 + attempt, last_step=step,
                       signal=9, signal_name="SIGKILL", decisive=True, shutdown=False,
                       role="chief", index=0, chief=True)
                time += 1.0
