"""The audit's plan, comparison, verdicts and outputs on recorded events (no TensorFlow): what
a CI pipeline reads for each fault, and the one-line refusals before anything trains."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ftgui import cli
from ftgui.core.audit import compare, outputs, plan, runner, verdict
from ftgui.core.audit.weights import WeightsResult, readable
from ftgui.core.settings.config import RunConfig
from ftgui.core.settings.schema import ConfigError
from tests.recorded import ev


def losses(first: int, last: int, start: float, attempt: int = 0, shift: float = 0.0):
    return [ev("step", start + 0.25 * (s - first), attempt, step=s, loss=1.0 / s + shift)
            for s in range(first, last + 1)]


def reference_events(steps: int = 20) -> list[dict]:
    return [ev("run_started", 0.0), ev("training_started", 0.5, start_step=0),
            *losses(1, steps, 1.0), ev("validation", 6.0, step=10, val_loss=0.5,
                                       val_accuracy=0.75),
            ev("run_finished", 7.0, step=steps, loss=1.0 / steps)]


def killed_run(kill_at: int = 14, restored: int = 10, steps: int = 20,
               shift_after_resume: float = 0.0, target: str = "chief",
               source: str = "disk") -> list[dict]:
    """`target` killed by the schedule after `kill_at`, resumed from `restored` (restored
    from `source`) 2 s after the exit; the resumed losses shifted by `shift_after_resume`."""
    role, _, index = target.partition(":")
    crash = 1.0 + 0.25 * (kill_at - 1)
    resumed = crash + 2.0
    return [
        ev("run_started", 0.0), ev("training_started", 0.5, start_step=0),
        *losses(1, kill_at, 1.0), ev("validation", 6.0, step=10, val_loss=0.5,
                                     val_accuracy=0.75),
        ev("fault_injected", crash + 0.01, kind="kill", target=target, step=kill_at,
           source="schedule"),
        ev("process_exited", crash + 0.05, role=role, index=int(index or 0), signal=9,
           signal_name="SIGKILL", decisive=True, chief=role == "chief"),
        ev("training_started", resumed - 0.1, 1, start_step=restored),
        ev("resumed", resumed - 0.05, 1, from_step=restored, checkpoint=f"ckpt-{restored}",
           source=source),
        *losses(restored + 1, steps, resumed, 1, shift_after_resume),
        ev("run_finished", resumed + 3.0, 1, step=steps, loss=1.0 / steps),
        ev("process_exited", resumed + 3.1, 1, role="chief", index=0, exit_code=0,
           decisive=True, chief=True),
    ]


def audit_run(kind: str = "kill", step: int = 14, **settings) -> plan.AuditRun:
    return plan.AuditRun(kind, kind, step, "chief", RunConfig(steps=20, **settings))


# ---------------------------------------------------------------- which faults, at which steps
def test_a_mirrored_audit_takes_every_fault_but_the_worker_loss_and_says_why():
    kinds, left_out = plan.parse_kinds(None, RunConfig(steps=200))
    assert kinds == ["kill", "preempt", "hang", "nan", "kill-in-snapshot"]
    assert left_out == ["worker-loss left out: worker-loss needs workers (strategy "
                        "multi-worker or parameter-server), not mirrored",
                        # checkpoints every 100 steps: no checkpoint step after the first one
                        "kill-in-save left out: kill-in-save needs a checkpoint step after "
                        "the first one and before the last step"]


def test_a_multi_worker_audit_adds_a_worker_loss_of_the_last_worker():
    config = RunConfig(strategy="multi-worker", workers=2, steps=200)
    kinds, _ = plan.parse_kinds(None, config)
    assert "worker-loss" in kinds
    runs = plan.plan(config, ["worker-loss"])
    assert (runs[1].kind, runs[1].target) == ("worker-loss", "worker:1")
    assert runs[1].config.kill_at_step == runs[1].step
    assert runs[1].config.auto_recover


@pytest.mark.parametrize(("config", "nan"), [
    (RunConfig(steps=30), True),  # the snapshot of the step before: no checkpoint needed
    (RunConfig(steps=30, snapshot_every=0), False),
    (RunConfig(steps=30, strategy="multi-worker", workers=2), False),
    (RunConfig(steps=200, strategy="multi-worker", workers=2), True),  # checkpoint 100
])
def test_a_nan_is_audited_only_where_it_finds_a_state_to_roll_back_to(config, nan):
    # 30 steps, a checkpoint every 100: the NaN run failed "with status 3" (a new user's
    # finding), though the user's training was not at fault
    kinds, left_out = plan.parse_kinds(None, config)
    assert ("nan" in kinds) is nan
    if not nan:
        assert "nan left out: nan needs a state to roll back to: a checkpoint before its " \
               "step (--steps over 101, or a smaller --checkpoint-every) or in-memory " \
               "snapshots (strategy default, one-device, mirrored)" in left_out


def test_the_fit_loop_audits_kills_only():
    kinds, left_out = plan.parse_kinds(None, RunConfig(loop="fit", steps=200))
    assert kinds == ["kill"]
    assert [line.split(" left out")[0] for line in left_out] == [
        "preempt", "hang", "nan", "worker-loss", "kill-in-save", "kill-in-snapshot"]


@pytest.mark.parametrize(("faults", "line"), [
    ("kill,crash", "faults: 'crash' is not one of kill, preempt, hang, nan, worker-loss, "
                   "kill-in-save, kill-in-snapshot"),
    ("worker-loss", "faults: worker-loss needs workers (strategy multi-worker or "
                    "parameter-server), not mirrored"),
    (" , ", "faults: name at least one of kill, preempt, hang, nan, worker-loss, "
            "kill-in-save, kill-in-snapshot"),
])
def test_a_fault_list_the_strategy_cannot_run_is_refused_in_one_line(faults, line):
    with pytest.raises(ConfigError) as raised:
        plan.parse_kinds(faults, RunConfig(steps=200))
    assert str(raised.value) == line


def test_fault_steps_come_from_the_seed_after_the_first_checkpoint_and_before_the_end():
    config = RunConfig(steps=200, checkpoint_every=20, seed=7)
    first = plan.plan(config, ["kill", "preempt", "hang", "nan"])
    again = plan.plan(config, ["kill", "preempt", "hang", "nan"])
    other = plan.plan(config.replace(seed=8), ["kill", "preempt", "hang", "nan"])
    assert [r.step for r in first] == [r.step for r in again]
    assert [r.step for r in first] != [r.step for r in other]
    assert first[0].name == "reference" and first[0].step == 0
    assert not first[0].config.auto_recover
    assert all(21 <= r.step < 200 for r in first[1:])
    hang = first[3]
    assert hang.config.hang_at_step == hang.step
    assert hang.config.watchdog_seconds == plan.HANG_WATCHDOG_SECONDS


def test_the_reference_keeps_none_of_the_users_faults():
    config = RunConfig(steps=50, kill_at_step=20, chaos_faults=3, kill_after_seconds=4.0)
    reference = plan.plan(config, ["nan"])
    assert (reference[0].config.kill_at_step, reference[0].config.chaos_faults,
            reference[0].config.kill_after_seconds) == (0, 0, 0.0)
    assert reference[1].config.kill_at_step == 0  # the nan run has its one fault only


# ---------------------------------------------------------------- the comparison to the bit
def test_a_recovery_that_redoes_the_same_losses_has_no_difference():
    assert compare.first_difference(reference_events(), killed_run()) is None


def test_a_redone_step_one_bit_off_is_the_first_difference():
    run = killed_run(shift_after_resume=1e-16)  # 1/11 + 1e-16 is the next float up
    found = compare.first_difference(reference_events(), run)
    assert (found.step, found.what, found.attempt) == (11, "loss", 1)
    assert found.got != found.expected
    assert found.text() == (f"step 11: loss {found.got!r} (attempt 1), reference "
                            f"{1.0 / 11!r}")


def test_minus_zero_is_not_zero():
    assert not compare.same_bits(-0.0, 0.0)
    assert compare.same_bits(float("nan"), float("nan"))
    assert compare.same_bits(None, None) and not compare.same_bits(None, 0.0)


def test_the_poisoned_nan_is_the_fault_not_a_difference_but_a_nan_elsewhere_is():
    reference = reference_events()
    run = [*losses(1, 6, 1.0),
           ev("fault_injected", 2.3, kind="nan", target="chief", step=7, source="schedule"),
           ev("step", 2.5, step=7, loss=None), ev("rolled_back", 2.6, from_step=7, to_step=5),
           *losses(6, 20, 3.0)]
    assert compare.first_difference(reference, run) == \
        compare.Difference(10, "validation missing", -1, None, 0.5)
    assert run[11]["step"] == 8
    run[11] = ev("step", 3.5, step=8, loss=None)  # not poisoned by the fault: a difference
    assert compare.first_difference(reference, run).step == 8


def test_a_step_the_run_never_logged_is_a_difference():
    run = [e for e in killed_run() if not (e["event"] == "step" and e["step"] == 20)]
    found = compare.first_difference(reference_events(), run)
    assert found.text() == f"step 20: loss never logged, reference {1.0 / 20!r}"


def test_an_extra_validation_at_a_preemption_save_is_no_difference():
    run = killed_run()
    run.insert(5, ev("validation", 2.0, step=5, val_loss=0.9, val_accuracy=0.5))
    assert compare.first_difference(reference_events(), run) is None


# ---------------------------------------------------------------- verdicts
def test_an_exact_recovery_passes_with_its_cost_from_the_incident():
    found = verdict.judge(audit_run(), reference_events(), killed_run(), WeightsResult())
    assert (found.status, found.steps_redone, found.resumed_from, found.source) == (
        "exact", 4, 10, "disk")
    # from the fault (0.01 s after step 14) to the first new step, plus the 1 s that
    # steps 11-14 had taken (from step 10's time to step 14's)
    assert found.time_lost == pytest.approx(2.0 - 0.01 + 1.0)
    assert found.line() == ("✓ kill after step 14 (chief): exact to the bit; redid 4 steps, "
                            "lost 3.0 s, restored from disk step 10")
    assert verdict.exit_status([found]) == 0


@pytest.mark.parametrize("standby, warm, forked, words", [
    (True, True, False, "warm standby"),
    (True, False, False, "warm standby still getting ready"),
    (False, None, False, "cold start"), (False, None, True, "cold start, forked")])
def test_a_warm_standby_audit_says_what_each_restart_was(standby, warm, forked, words):
    # a --warm-standby audit whose restart was cold audited something else than asked
    run = killed_run()
    resumed = next(k for k, e in enumerate(run) if e["event"] == "training_started"
                   and e["attempt"] == 1)
    run.insert(resumed, ev("process_started", run[resumed]["time"] - 0.5, 1, role="chief",
                           index=0, pid=42, standby=standby, standby_warm=warm,
                           forked=forked))
    found = verdict.judge(audit_run(warm_standby=True), reference_events(), run,
                          WeightsResult())
    assert found.restart == words
    assert found.line().endswith(f"restored from disk step 10, restart: {words}")
    # without --warm-standby the line says nothing of it
    assert verdict.judge(audit_run(), reference_events(), run, WeightsResult()).restart == ""


def test_a_restart_of_standbys_and_cold_starts_names_the_processes_of_each():
    # a parameter-server cluster with standbys for two of its tasks: "still getting ready"
    # said of standbys that were ready (a breaker's audit)
    run = killed_run()
    resumed = next(k for k, e in enumerate(run) if e["event"] == "training_started"
                   and e["attempt"] == 1)
    for k, (role, index, standby) in enumerate((("chief", 0, True), ("worker", 0, True),
                                                ("worker", 1, False), ("ps", 0, False))):
        run.insert(resumed + k, ev("process_started", 1.0, 1, role=role, index=index,
                                   standby=standby, standby_warm=True if standby else None))
    found = verdict.judge(audit_run(warm_standby=True), reference_events(), run,
                          WeightsResult())
    assert found.restart == "warm standby for chief, worker 0; cold start for worker 1, ps 0"


def test_a_warm_standby_audit_says_when_its_restarts_cannot_be_warm():
    assert plan.standby_notes(RunConfig(warm_standby=True)) == []
    assert plan.standby_notes(RunConfig(max_standbys=0)) == []
    assert plan.standby_notes(RunConfig(warm_standby=True, max_standbys=0)) == [
        "warm standby: --max-standbys 0 keeps none, so every restart is a cold start"]
    assert plan.standby_notes(RunConfig(warm_standby=True, loop="fit")) == [
        "warm standby: under --loop fit a fault does not wait for it (model.fit has no "
        "holds): a restart may find it still importing TensorFlow"]


def test_an_audit_shorter_than_its_first_checkpoint_says_where_its_faults_land():
    """A new user's `ftgui audit runs/a --steps 50`: every fault "after step 49", where the
    docs said after the first checkpoint (step 100, never reached)."""
    config = RunConfig(steps=50)
    assert set(plan.fault_steps(config, "kill")) == {49}
    assert plan.step_notes(config) == [
        "faults: the first checkpoint (step 100) is past the last step (50): every fault hits "
        "after step 49 and restores from the in-memory snapshot; give --checkpoint-every "
        "under 50 to audit restores from checkpoints"]
    assert "restores from step 0 (snapshots off)" in plan.step_notes(
        RunConfig(steps=50, snapshot_every=0))[0]
    assert plan.step_notes(RunConfig(steps=200)) == []


def test_a_lost_parameter_server_worker_replaced_by_a_standby_says_so():
    # the others trained on: its replacement joined the same attempt, and the line said
    # "restored from nothing (carried on) step 30" with no restart (a breaker's audit)
    run = [ev("run_started", 0.0), ev("training_started", 0.5, start_step=0),
           *losses(1, 14, 1.0),
           ev("fault_injected", 4.3, kind="kill", target="worker:1", step=14,
              source="schedule"),
           ev("process_exited", 4.35, role="worker", index=1, signal=9, signal_name="SIGKILL",
              decisive=False, chief=False),
           ev("process_started", 4.5, role="worker", index=1, pid=7, standby=True,
              standby_warm=True),
           *losses(15, 20, 4.6), ev("run_finished", 7.0, step=20, loss=1.0 / 20),
           ev("process_exited", 7.1, role="chief", index=0, exit_code=0, decisive=True,
              chief=True)]
    lost = plan.AuditRun("worker-loss", "worker-loss", 14, "worker:1",
                         RunConfig(strategy="parameter-server", workers=2, steps=20,
                                   warm_standby=True))
    found = verdict.judge(lost, reference_events(), run, WeightsResult())
    assert (found.source, found.restart) == ("nothing (the others carried on)", "warm standby")
    assert found.line().endswith(
        "restored from nothing (the others carried on), restart: warm standby")


def test_the_faults_a_warm_standby_waits_for():
    from ftgui.core.supervision.fault_plan import standby_holds

    config = RunConfig(steps=50, kill_at_step=20, preempt_at_step=30, nan_at_step=40,
                       hang_at_step=10)
    assert standby_holds(config, ["chief"]) == {}
    # a preemption is asked for before its step: it holds after the step before; a NaN
    # recovers in its process and waits for nothing
    assert standby_holds(config.replace(warm_standby=True), ["chief"]) == {
        10: "standby", 20: "standby", 29: "standby"}
    # a kill inside lands while its step's save or snapshot is written: held the step before
    inside = RunConfig(steps=50, checkpoint_every=10, kill_in_save_at_step=20,
                       kill_in_snapshot_at_step=33, warm_standby=True)
    assert standby_holds(inside, ["chief"]) == {19: "standby", 32: "standby"}
    # with no standby kept, none will come: nothing to wait for
    assert standby_holds(config.replace(warm_standby=True, max_standbys=0), ["chief"]) == {}
    # model.fit has no holds
    assert standby_holds(config.replace(warm_standby=True, loop="fit", preempt_at_step=0,
                                        nan_at_step=0, hang_at_step=0), ["chief"]) == {}
    ps = RunConfig(strategy="parameter-server", workers=2, steps=50, kill_at_step=20,
                   fault_target="worker:1", warm_standby=True)
    assert standby_holds(ps, ["chief", "worker:0", "worker:1", "ps:0"]) == {}


def test_a_worker_loss_the_survivors_saved_just_in_time_redoes_nothing():
    run = plan.AuditRun("worker-loss", "worker-loss", 14, "worker:1",
                        RunConfig(strategy="multi-worker", workers=2, steps=20))
    found = verdict.judge(run, reference_events(),
                          killed_run(restored=14, target="worker:1", source="just_in_time"),
                          WeightsResult())
    assert (found.status, found.target, found.steps_redone, found.source,
            found.resumed_from) == ("exact", "worker:1", 0, "just in time", 14)
    assert found.line().startswith("✓ worker-loss after step 14 (worker:1): exact to the bit")


def test_a_differing_loss_fails_naming_the_first_step():
    found = verdict.judge(audit_run(), reference_events(),
                          killed_run(shift_after_resume=1e-16), WeightsResult())
    assert (found.status, found.first_step) == ("differs", 11)
    assert found.first_difference_text().startswith("first difference at step 11: loss ")
    assert verdict.exit_status([found]) == 1


def test_differing_final_weights_fail_naming_the_variables():
    differ = WeightsResult(["optimizer/_trainable_variables/0 (dense/kernel)", "step"])
    found = verdict.judge(audit_run(), reference_events(), killed_run(), differ)
    assert found.status == "differs" and found.first_step is None
    assert found.first_difference_text() == (
        "final weights differ: optimizer/_trainable_variables/0 (dense/kernel), step")


def test_the_fit_loop_is_not_exact_by_design_and_not_a_pass():
    not_compared = WeightsResult(problem="the fit loop's weights are not compared")
    found = verdict.judge(audit_run(loop="fit"), reference_events(),
                          killed_run(shift_after_resume=0.5), not_compared)
    assert found.status == "design" and "restarts at the epoch start by design" in found.reason
    assert found.first_step == 11  # what differs is still told
    assert not found.passed and verdict.exit_status([found]) == 1


def test_a_parameter_server_run_is_not_exact_by_design_and_not_a_pass():
    # asynchronous: its values differ from the reference's before any fault (a breaker's
    # audits all said "NOT exact" at step 1-3 of attempt 0, as if the recovery had failed)
    ps = plan.AuditRun("kill", "kill", 14, "chief",
                       RunConfig(strategy="parameter-server", workers=2, steps=20))
    found = verdict.judge(ps, reference_events(), killed_run(shift_after_resume=0.5),
                          WeightsResult())
    assert (found.status, found.reason) == ("design", verdict.PS_REASON)
    assert found.first_step == 11 and not found.passed
    equal = verdict.judge(ps, reference_events(), killed_run(), WeightsResult())
    assert (equal.status, equal.reason) == (
        "design", f"equal this time, but not promised: {verdict.PS_REASON}")
    missing = verdict.judge(ps, reference_events(), killed_run(),
                            WeightsResult(problem="no final checkpoint"))
    assert missing.status == "failed"


def test_a_non_deterministic_model_fails_when_it_differs_and_is_no_pass_when_it_does_not():
    warned = "the model uses RandomStandardNormal, whose state no checkpoint holds"
    differs = verdict.judge(audit_run(), reference_events(),
                            killed_run(shift_after_resume=1e-16), WeightsResult(), warned)
    assert differs.status == "differs" and differs.line().endswith(
        f"(the user-code check warned: {warned})")
    equal = verdict.judge(audit_run(), reference_events(), killed_run(), WeightsResult(),
                          warned)
    assert equal.status == "design" and not equal.passed


def test_a_run_that_did_not_finish_or_whose_fault_never_fired_fails():
    unfinished = [e for e in killed_run() if e["event"] != "run_finished"][:-1]
    assert verdict.judge(audit_run(), reference_events(), unfinished,
                         WeightsResult()).status == "failed"
    quiet = reference_events()
    assert verdict.judge(audit_run(), reference_events(), quiet,
                         WeightsResult()).reason == "the fault never fired"


def test_a_missing_final_checkpoint_fails():
    found = verdict.judge(audit_run(), reference_events(), killed_run(),
                          WeightsResult(problem="no checkpoint of step 20"))
    assert (found.status, found.reason) == ("failed", "final weights: no checkpoint of step 20")


def test_trainable_variables_are_named_after_the_models_variables():
    names = ["dense/kernel", "dense/bias"]
    assert readable("optimizer/_trainable_variables/1", names) == \
        "optimizer/_trainable_variables/1 (dense/bias)"
    assert readable("optimizer/_variables/3", names) == "optimizer/_variables/3"


# ---------------------------------------------------------------- outputs
def result_of(tmp_path: Path) -> outputs.AuditResult:
    exact = verdict.judge(audit_run(), reference_events(), killed_run(), WeightsResult())
    second = plan.AuditRun("nan", "kill", 14, "chief", RunConfig(steps=20))  # named nan
    differs = verdict.judge(second, reference_events(), killed_run(shift_after_resume=1e-16),
                            WeightsResult())
    design = verdict.judge(audit_run(loop="fit"), reference_events(), killed_run(),
                           WeightsResult())
    design.name = "fit-kill"
    return outputs.AuditResult(tmp_path, {"strategy": "mirrored", "steps": 20},
                               [exact, differs, design], checkpoints=2,
                               checkpoint_seconds=0.5, snapshot_every=10, snapshots=2,
                               snapshot_seconds=0.0123, snapshot_first_seconds=0.0101,
                               snapshot_size=54_321, seconds=12.5)


def test_junit_has_one_case_per_fault_the_failure_text_naming_the_first_step(tmp_path):
    result = result_of(tmp_path)
    paths = outputs.write_outputs(result)
    suite = ET.parse(paths["junit"]).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert list(cases) == ["kill", "nan", "fit-kill"]
    assert cases["kill"].find("failure") is None and cases["kill"].find("skipped") is None
    assert cases["nan"].find("failure").get("message").startswith(
        "first difference at step 11: loss ")
    assert cases["fit-kill"].find("skipped").get("message").startswith(
        "not exact by design: the model.fit loop restarts at the epoch start by design")
    assert result.exit_status == 1


def test_the_json_summary_holds_each_verdict_and_the_reference_cost(tmp_path):
    paths = outputs.write_outputs(result_of(tmp_path), json_path=tmp_path / "out" / "a.json")
    summary = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert summary["exit_status"] == 1
    assert summary["reference"] == {"checkpoints": 2, "checkpoint_seconds": 0.5,
                                    "snapshot_every": 10, "snapshots": 2,
                                    "snapshot_seconds": 0.0123,
                                    "snapshot_first_seconds": 0.0101, "snapshot_size": 54_321}
    kill = summary["faults"][0]
    assert (kill["name"], kill["status"], kill["passed"], kill["steps_redone"],
            kill["source"]) == ("kill", "exact", True, 4, "disk")


def test_the_html_report_has_a_section_per_fault_with_its_figures(tmp_path):
    paths = outputs.write_outputs(result_of(tmp_path))
    html = paths["html"].read_text(encoding="utf-8")
    ET.fromstring(html.split("\n", 1)[1])  # well-formed
    for name in ("kill", "nan", "fit-kill"):
        assert f'id="fault-{name}"' in html and f'id="figures-{name}"' in html
    assert "<td>disk</td>" in html and "reference run: 2 checkpoints" in html


# ---------------------------------------------------------------- refusals before training
@pytest.mark.parametrize(("argv", "line"), [
    (["--faults", "kill,fire"],
     "ftgui: faults: 'fire' is not one of kill, preempt, hang, nan, worker-loss, "
     "kill-in-save, kill-in-snapshot\n"),
    (["--faults", "worker-loss"], "ftgui: faults: worker-loss needs workers (strategy "
                                  "multi-worker or parameter-server), not mirrored\n"),
    (["--loop", "fit", "--faults", "hang"],
     "ftgui: faults: hang: hang_at_step: the fit loop takes kill faults only; use loop "
     "custom\n"),
    (["--model", "missing.py:build"],
     "ftgui: model (--model): file '{cwd}/missing.py' does not exist\n"),
    (["--steps", "2"], "ftgui: steps: an audit needs at least 3 steps, not 2\n"),
])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys, argv, line):
    audit_dir = tmp_path / "audit"
    assert cli.main(["audit", str(audit_dir), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.err == line.format(cwd=Path.cwd())
    assert captured.out == "" and not audit_dir.exists()


def test_a_folder_that_holds_an_audit_is_refused(tmp_path, capsys):
    runs = plan.plan(RunConfig(steps=20), ["kill"])
    runner.write_plan(tmp_path, runs)
    assert runner.is_audit_dir(tmp_path)
    assert cli.main(["audit", str(tmp_path), "--steps", "20", "--faults", "kill"]) == 2
    # (was "…; pick a new folder": an interrupted audit could not be rerun, issue 29)
    assert capsys.readouterr().err == (f"ftgui: run_dir: {tmp_path} already holds an audit; "
                                       "rerun with --fresh to delete it and start over, or "
                                       "pick a new folder\n")


@pytest.mark.parametrize("fresh", [[], ["--fresh"]])
def test_a_training_runs_folder_is_refused(tmp_path, capsys, fresh):
    """A new user's `ftgui audit runs/demo` wrote reference/, kill/, … and audit.json into a
    finished training run's folder, beside its own events.jsonl."""
    from recorded import crash_and_recovery

    run_dir = crash_and_recovery(tmp_path / "demo")
    before = sorted(p.name for p in run_dir.iterdir())
    assert cli.main(["audit", str(run_dir), "--steps", "20", "--faults", "kill", *fresh]) == 2
    assert capsys.readouterr().err == (
        f"ftgui: run_dir: {run_dir} is a training run's folder; an audit makes its own runs "
        "in a new folder: pick one (e.g. audits/mine)\n")
    assert sorted(p.name for p in run_dir.iterdir()) == before


def interrupted_audit(audit_dir: Path) -> list[plan.AuditRun]:
    """An audit folder as a cancelled `kill,nan` audit leaves it: the plan, the reference and
    kill runs started, nan never; an output of an even earlier audit and a file of the user."""
    runs = plan.plan(RunConfig(steps=20), ["kill", "nan"])
    runner.write_plan(audit_dir, runs)
    for name in ("reference", "kill"):
        (audit_dir / name).mkdir()
        (audit_dir / name / "config.toml").write_text("steps = 20\n", encoding="utf-8")
    (audit_dir / "audit.json").write_text("{}", encoding="utf-8")
    (audit_dir / "notes.txt").write_text("mine", encoding="utf-8")
    return runs


def test_an_interrupted_audit_is_refused_naming_its_runs_and_fresh(tmp_path, capsys):
    interrupted_audit(tmp_path)
    assert cli.main(["audit", str(tmp_path), "--steps", "20", "--faults", "kill"]) == 2
    assert capsys.readouterr().err == (
        f"ftgui: run_dir: {tmp_path} already holds an audit (reference, kill); rerun with "
        "--fresh to delete it and start over, or pick a new folder\n")
    assert (tmp_path / "kill" / "config.toml").is_file()


def test_fresh_deletes_the_earlier_audit_and_nothing_else(tmp_path):
    interrupted_audit(tmp_path)
    rerun = plan.plan(RunConfig(steps=20), ["preempt"])  # another plan: kill is the old one's
    assert runner.start_over(tmp_path, rerun) == ["reference", "kill", "audit-plan.json",
                                                  "audit.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    runner.refuse_used_folder(tmp_path, rerun)  # free now: no error
    assert runner.start_over(tmp_path, rerun) == []


def test_fresh_deletes_nothing_while_a_run_of_the_earlier_audit_is_supervised(tmp_path):
    from ftgui.core.record.run_lock import RunLock

    runs = interrupted_audit(tmp_path)
    lock = RunLock(tmp_path / "kill")
    lock.acquire()
    try:
        with pytest.raises(ConfigError) as raised:
            runner.start_over(tmp_path, runs)
    finally:
        lock.release()
    assert str(raised.value) == (f"run_dir: {tmp_path}: kill still running (another audit?); "
                                 "stop it first")
    assert runner.is_audit_dir(tmp_path) and (tmp_path / "reference").is_dir()


# ------------------------------------------------ the window's command, the runs view
def test_the_windows_audit_command_passes_the_panels_settings_but_not_its_faults(tmp_path):
    config = RunConfig(strategy="multi-worker", workers=3, warm_standby=True, steps=300,
                       kill_at_step=40, auto_recover=True, global_batch_size=63)
    argv = runner.command(tmp_path / "a", config, python="python")
    start = ["python", *(["-P"] if sys.version_info >= (3, 11) else []), "-m", "ftgui"]
    assert argv == [*start, "audit", str(tmp_path / "a"),
                    "--strategy", "multi-worker", "--workers", "3", "--batch-size", "63",
                    "--steps", "300", "--warm-standby"]
    assert cli.build_parser().parse_args(argv[len(start):]).workers == 3


def test_progress_lines_tell_the_runs_done_of_how_many():
    assert runner.progress("run 1 of 5: starting reference: never interrupted") == (0, 5)
    assert runner.progress("3 of 5 runs done: kill finished at step 200") == (3, 5)
    assert runner.progress("3 of 5 runs done; waiting for nan (step 7 of 200)") == (3, 5)
    assert runner.progress("waiting for the weights comparison (4 s)") is None


def test_the_runs_of_an_audit_are_listed_together_under_its_name(tmp_path):
    from ftgui.core.record import runs
    from tests import recorded

    audit = tmp_path / "audit-1"
    runner.write_plan(audit, plan.plan(RunConfig(steps=20), ["kill"]))
    recorded.crash_and_recovery(audit / "kill")
    recorded.crash_and_recovery(audit / "reference")
    recorded.killed_before_the_first_checkpoint(tmp_path / "alone")
    listed = runs.list_runs(tmp_path)
    assert [(run.name, run.group) for run in listed] == [
        ("alone", ""), ("audit-1 › kill", "audit-1"), ("audit-1 › reference", "audit-1")]


def test_the_reference_cost_line_tells_the_snapshots_cost_beside_the_checkpoints(tmp_path):
    result = result_of(tmp_path)
    line = ("reference run: 2 checkpoints, training waited 0.50 s for them; 2 in-memory "
            "snapshots (every 10 steps, 54.3 kB each), training waited 0.012 s for them "
            "(0.010 s of it the first)")
    assert result.cost_line() == line
    html = outputs.write_outputs(result)["html"].read_text(encoding="utf-8")
    assert line in html
    result.snapshot_seconds = None  # a reference whose trainer wrote no snapshot_stats
    assert result.cost_line().endswith("in-memory snapshots every 10 steps (their cost was "
                                       "not recorded)")
    result.checkpoints, result.snapshots, result.snapshot_seconds = 1, 1, 0.004
    assert result.cost_line() == ("reference run: 1 checkpoint, training waited 0.50 s for "
                                  "it; 1 in-memory snapshot (every 10 steps, 54.3 kB each), "
                                  "training waited 0.004 s for it")


def test_the_snapshot_interval_reads_as_english():
    from ftgui.core.audit.outputs import _every

    assert (_every(1), _every(10)) == ("every step", "every 10 steps")  # not "every 1 steps"
