"""The verdict on one fault of an audit, and on the whole audit (the exit status).

A fault's `status`:
- `exact`: the run recovered and every logged value and the final weights are the reference's,
  to the bit;
- `differs`: it recovered, but a value or a weight differs (`difference` names the first step);
- `design`: exactness is not promised by design, so it is no pass: the `model.fit` loop (it
  restarts at the epoch start), `parameter-server` (asynchronous: its steps run concurrently
  on the workers, killed or not), or a model the user-code check found non-deterministic
  whose values happened to match (when they differ, it is `differs`, with the check's reason);
- `failed`: the run did not reach its last step, or the fault never fired.
The audit passes (exit status 0) only when every fault is `exact`; otherwise 1.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ftgui.core import formatting
from ftgui.core.audit.compare import first_difference
from ftgui.core.audit.plan import AuditRun
from ftgui.core.audit.weights import WeightsResult
from ftgui.core.record.events import who
from ftgui.core.record.incidents import Incident
from ftgui.core.timeline import story
from ftgui.core.timeline.model import Timeline

STATUSES = ("exact", "differs", "design", "failed")
FIT_REASON = ("the model.fit loop restarts at the epoch start by design (BackupAndRestore): "
              "the steps since are redone from another data position")
PS_REASON = ("parameter-server training is asynchronous by design: the workers' steps run "
             "concurrently, so its values are not bit-reproducible, killed or not")
MARKS = {"exact": "✓", "differs": "✗", "design": "–", "failed": "✗"}


@dataclass
class Verdict:
    """One fault's verdict. `step`: the global step the fault hit after; `first_step`: the
    first step whose logged value differs (None: none); `weights_differ`: the final
    checkpoint's tensors that differ; `steps_redone`, `time_lost` (seconds), `source` (memory,
    just in time, disk, none) and `resumed_from` from the fault's incident (None when it did
    not recover); `reason`: why `design` or `failed`, or the user-code check's warning;
    `restart`: in a warm-standby audit, what the restart was (`restart_words`)."""

    name: str
    kind: str
    step: int
    target: str
    status: str
    difference: str = ""
    weights_differ: list[str] = field(default_factory=list)
    first_step: int | None = None
    steps_redone: int | None = None
    time_lost: float | None = None
    source: str = ""
    resumed_from: int | None = None
    reason: str = ""
    run_dir: str = ""
    restart: str = ""  # with --warm-standby: "warm standby", "cold start", … (`restart_words`)

    @property
    def passed(self) -> bool:
        return self.status == "exact"

    def first_difference_text(self) -> str:
        """What differs first, in one line ('' when nothing does)."""
        parts = []
        if self.difference:
            parts.append(f"first difference at {self.difference}")
        if self.weights_differ:
            shown = ", ".join(self.weights_differ[:5])
            more = f" and {len(self.weights_differ) - 5} more" if len(self.weights_differ) > 5 \
                else ""
            parts.append(f"final weights differ: {shown}{more}")
        return "; ".join(parts)

    def line(self) -> str:
        """The console's and the summary's line: mark, fault, step, outcome, cost."""
        head = f"{MARKS[self.status]} {self.name} after step {self.step} ({self.target})"
        if self.status == "failed":
            return f"{head}: failed: {self.reason}"
        redone = self.steps_redone
        steps = "—" if redone is None else formatting.steps(redone)
        cost = (f"redid {steps}, lost {formatting.seconds(self.time_lost)}, "
                f"restored from {self.source or '—'}"
                + (f" step {self.resumed_from}" if self.resumed_from is not None
                   and not self.source.startswith("nothing") else "")
                + (f", restart: {self.restart}" if self.restart else ""))
        if self.status == "exact":
            return f"{head}: exact to the bit; {cost}"
        if self.status == "design":
            return f"{head}: not exact by design: {self.reason}; {cost}"
        text = f"{head}: NOT exact: {self.first_difference_text()}; {cost}"
        return text + (f" (the user-code check warned: {self.reason})" if self.reason else "")

    def to_dict(self) -> dict:
        return {**asdict(self), "passed": self.passed}



def fault_incident(run: AuditRun, timeline: Timeline) -> Incident | None:
    """The incident of the run's planned fault (kind and target), else None."""
    kind = "kill" if run.kind == "worker-loss" else run.kind
    for incident in timeline.incidents:
        if incident.kind == kind and incident.source == "schedule":
            return incident
    return None


def restart_words(events: list[dict], incident: Incident) -> str:
    """What started the processes of the attempt after `incident`'s, from their
    `process_started` events: "warm standby" (a standby that had imported TensorFlow),
    "warm standby still getting ready" (handed its task while importing: recovery waited
    for it), "cold start" (no standby: TensorFlow imported after the fault), "cold start,
    forked" (no standby, but forked from the fork server: TensorFlow already imported); a mix names
    the processes of each ("warm standby for chief, worker 0; cold start for worker 1, ps
    0": a parameter-server cluster under a cap on standbys). '' when no process started (a
    NaN rolled back in the process, a parameter-server worker's loss)."""
    if incident.lone:  # its replacement joined the same attempt, the others training on
        starts = [e for e in events if e.get("event") == "process_started"
                  and e.get("attempt") == incident.attempt
                  and f"{e.get('role')}:{e.get('index', 0)}" == incident.target
                  and e.get("time", 0) >= incident.time][:1]
    else:
        starts = [e for e in events if e.get("event") == "process_started"
                  and e.get("attempt") == incident.attempt + 1]
    if not starts or incident.in_process:
        return ""
    kinds: dict[str, list[str]] = {}
    for event in starts:
        words = ("cold start, forked" if event.get("forked") else
                 "cold start" if not event.get("standby") else
                 "warm standby still getting ready" if event.get("standby_warm") is False
                 else "warm standby")
        kinds.setdefault(words, []).append(who(event))
    if len(kinds) == 1:
        return next(iter(kinds))
    return "; ".join(f"{words} for {', '.join(names)}" for words, names in kinds.items())


def judge(run: AuditRun, reference: list[dict], events: list[dict], weights: WeightsResult,
          nondeterministic: str = "") -> Verdict:
    """The verdict on `run` from the reference's and its own events and its final weights
    (`weights`); `nondeterministic`: the user-code check's reason when it found the model
    non-deterministic ('' when not)."""
    timeline = Timeline()
    timeline.feed(events)
    incident = fault_incident(run, timeline)
    verdict = Verdict(run.name, run.kind, run.step, run.target, "exact")
    if incident is not None:
        verdict.steps_redone, verdict.time_lost = incident.steps_lost, incident.time_lost
        verdict.resumed_from = incident.resumed_step
        verdict.source = story.source_words(incident) or (
            "nothing (the others carried on)" if incident.lone else "")
        if run.config.warm_standby:
            verdict.restart = restart_words(events, incident)
    difference = first_difference(reference, events)
    if difference is not None:
        verdict.difference, verdict.first_step = difference.text(), difference.step
    verdict.weights_differ = list(weights.differ)
    if timeline.state != "finished":
        verdict.status, verdict.reason = "failed", (
            f"the run ended {timeline.state}" + (f": {timeline.reason}" if timeline.reason
                                                  else ""))
    elif incident is None:
        verdict.status, verdict.reason = "failed", "the fault never fired"
    elif run.config.loop == "fit":  # its weights are Keras files: compared by the losses only
        verdict.status, verdict.reason = "design", FIT_REASON
    elif weights.problem:
        verdict.status, verdict.reason = "failed", f"final weights: {weights.problem}"
    elif run.config.strategy == "parameter-server":  # even a reference run twice differs
        verdict.status = "design"
        verdict.reason = PS_REASON if difference is not None or weights.differ else \
            f"equal this time, but not promised: {PS_REASON}"
    elif difference is not None or weights.differ:
        verdict.status, verdict.reason = "differs", nondeterministic
    elif nondeterministic:
        verdict.status = "design"
        verdict.reason = f"equal this time, but not promised: {nondeterministic}"
    return verdict


def exit_status(verdicts: list[Verdict]) -> int:
    """0 when every fault recovered exactly (and there was at least one), else 1."""
    return 0 if verdicts and all(v.passed for v in verdicts) else 1
