"""The issue's acceptance cases, on real training (marked tf; three audits in all, and one
refused by the user-code check): the built-in model recovers exactly from every default fault,
a model with a stateful random op does not, the failure naming the first step that differs, a
warm-standby audit's fault waits for the standby, and a model that fails the check stops the
audit before any training."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from ftgui import cli
from ftgui.core import formatting
from ftgui.core.record import events

pytestmark = pytest.mark.tf


def cases(audit_dir):
    suite = ET.parse(audit_dir / "audit-junit.xml").getroot()
    return {case.get("name"): case for case in suite.iter("testcase")}


def test_the_built_in_model_recovers_exactly_from_every_fault(tmp_path, capsys):
    audit_dir = tmp_path / "audit"
    status = cli.main(["audit", str(audit_dir), "--steps", "200", "--checkpoint-every", "20"])
    out = capsys.readouterr().out
    assert status == 0, out
    found = cases(audit_dir)
    assert list(found) == ["kill", "preempt", "hang", "nan", "kill-in-save", "kill-in-snapshot"]
    assert all(case.find("failure") is None and case.find("skipped") is None
               for case in found.values())
    summary = json.loads((audit_dir / "audit.json").read_text(encoding="utf-8"))
    html = (audit_dir / "audit.html").read_text(encoding="utf-8")
    for fault in summary["faults"]:
        assert fault["status"] == "exact" and fault["weights_differ"] == []
        assert fault["source"] in ("memory", "just in time", "disk")
        figures = (f"<td class=\"n\">{fault['step']}</td><td>chief</td>"
                   f"<td>{fault['source']}</td><td class=\"n\">{fault['resumed_from']}</td>"
                   f"<td class=\"n\">{fault['steps_redone']}</td>"
                   f"<td class=\"n\">{formatting.seconds(fault['time_lost'])}</td>")
        assert figures in html
    preempt = next(f for f in summary["faults"] if f["name"] == "preempt")
    assert preempt["steps_redone"] == 0 and preempt["resumed_from"] == preempt["step"]
    # killed inside the save of ckpt-N (snapshots off): the torn ckpt-N is skipped, the
    # previous checkpoint restored
    save = next(f for f in summary["faults"] if f["name"] == "kill-in-save")
    assert (save["source"], save["resumed_from"], save["steps_redone"]) == (
        "disk", save["step"] - 20, 20)
    save_events = events.read_all(audit_dir / "kill-in-save")
    assert not [e for e in save_events if e["event"] == "checkpoint_saved"
                and e["step"] == save["step"] and e["attempt"] == 0]
    # killed inside the snapshot of step N: its half-copied slot is not restored
    snapshot = next(f for f in summary["faults"] if f["name"] == "kill-in-snapshot")
    # (snapshots every step, the default: the previous snapshot, one step back, beats disk)
    assert (snapshot["source"], snapshot["resumed_from"]) == ("memory", snapshot["step"] - 1)
    assert summary["reference"]["checkpoints"] == 10
    assert "run 7 of 7: starting kill-in-snapshot" in out
    # TensorFlow imported once, by the fork server, before the runs: every start and restart
    # of every run forked from it (they had imported it 11 times side by side)
    for run in ("reference", *found):
        starts = [e for e in events.read_all(audit_dir / run) if e["event"] == "process_started"]
        assert starts and all(e["forked"] for e in starts), run


def test_a_stateful_random_op_breaks_exactness_and_the_failure_names_the_step(tmp_path,
                                                                             capsys):
    # snapshots off: the NaN rolls back to a checkpoint and redoes steps, whose noise then
    # differs (from the snapshot of the step before, it redoes only the poisoned step, whose
    # traced function draws from random ops of its own: equal, by luck, and said so)
    audit_dir = tmp_path / "audit"
    status = cli.main(["audit", str(audit_dir), "--steps", "60", "--checkpoint-every", "20",
                       "--snapshot-every", "0",
                       "--model", "resources/examples/noisy_model.py:build", "--faults", "nan"])
    assert status == 1
    failure = cases(audit_dir)["nan"].find("failure")
    summary = json.loads((audit_dir / "audit.json").read_text(encoding="utf-8"))
    nan = summary["faults"][0]
    # the rollback restores step `resumed_from`; the noise drawn after it is not the same
    assert nan["first_step"] == nan["resumed_from"] + 1
    assert failure.get("message").startswith(
        f"first difference at step {nan['first_step']}: loss ")
    assert "RandomStandardNormal" in nan["reason"]


def test_a_model_that_fails_the_check_exits_2_in_one_line_before_any_training(tmp_path,
                                                                               capsys):
    model = tmp_path / "broken.py"
    model.write_text("def build(input_shape, num_classes):\n"
                     "    raise RuntimeError('no GPU here')\n", encoding="utf-8")
    audit_dir = tmp_path / "audit"
    status = cli.main(["audit", str(audit_dir), "--steps", "50", "--faults", "kill",
                       "--model", f"{model}:build"])
    assert status == 2
    assert capsys.readouterr().err == f"ftgui: {model}:2: RuntimeError: no GPU here\n"
    assert not any((audit_dir / name / "events.jsonl").exists() for name in ("reference",
                                                                              "kill"))
    assert not (audit_dir / "audit-plan.json").exists()  # the folder is free for a retry
    # checked once, before any run started: one folder with the check's log, not one per run
    assert sorted(p.name for p in audit_dir.iterdir()) == ["reference"]
    assert (audit_dir / "reference" / "logs" / "check.log").is_file()


def test_a_warm_standby_audit_waits_for_the_standby_and_says_how_each_run_restarted(
        tmp_path, capsys):
    # The fault hit while the standby was still importing TensorFlow, so a --warm-standby
    # audit audited cold-ish restarts and said nothing of it (a user's finding): the fault
    # now waits for the standby, and each verdict names the restart.
    audit_dir = tmp_path / "audit"
    status = cli.main(["audit", str(audit_dir), "--steps", "40", "--checkpoint-every", "10",
                       "--faults", "kill", "--warm-standby"])
    out = capsys.readouterr().out
    assert status == 0, out
    kill = json.loads((audit_dir / "audit.json").read_text(encoding="utf-8"))["faults"][0]
    assert (kill["status"], kill["restart"]) == ("exact", "warm standby")
    assert f"restored from memory step {kill['step']}, restart: warm standby" in out
    seen = [e for e in events.read_all(audit_dir / "kill")
            if e["event"] in ("held", "standby_ready", "fault_injected", "process_started")]
    order = [e["event"] for e in seen]
    # held at the fault's step, and the standby ready, before the fault (in either order)
    assert sorted(order[1:3]) == ["held", "standby_ready"]
    assert order[0] == order[4] == "process_started" and order[3] == "fault_injected"
    held = next(e for e in seen if e["event"] == "held")
    assert (held["why"], held["step"], seen[3]["step"]) == ("standby", kill["step"],
                                                            kill["step"])
    assert (seen[4]["standby"], seen[4]["standby_warm"]) == (True, True)
