"""What an audit writes for a pipeline and a person: JUnit XML (one test case per fault), a JSON
summary and an HTML report with a section per fault (its loss plot with the fault and the redone
steps marked, `ftgui.core.reports.svg_plot`, and its figures).

JUnit: an `exact` fault passes; `differs` and `failed` are failures whose message is the first
difference (or why it failed); `design` is skipped with its reason, since it is neither a pass
nor a regression of the recovery.
"""

from __future__ import annotations

import json
import os
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from ftgui import __version__
from ftgui.core import formatting
from ftgui.core.audit.verdict import Verdict, exit_status
from ftgui.core.reports.report import STYLE, _table, seconds
from ftgui.core.reports.svg_plot import plot_svg
from ftgui.core.timeline.run_figures import read_run

SUITE = "ftgui audit"
DEFAULT_NAMES = {"junit": "audit-junit.xml", "json": "audit.json", "html": "audit.html"}


@dataclass
class AuditResult:
    """A finished audit: its folder, the settings summary (`settings`: strategy, model, steps,
    …), each fault's verdict, the reference run's checkpoint cost (count, seconds training
    waited for them), its snapshot interval and cost (`snapshots` taken, `snapshot_seconds`
    training spent copying them, None when no `snapshot_stats` event told it, of which
    `snapshot_first_seconds` the first; `snapshot_size` bytes each),
    the audit's wall `seconds`, and the default fault kinds `left_out` (one line each)."""

    audit_dir: Path
    settings: dict
    verdicts: list[Verdict]
    checkpoints: int = 0
    checkpoint_seconds: float = 0.0
    snapshot_every: int = 0
    snapshots: int = 0
    snapshot_seconds: float | None = None
    snapshot_first_seconds: float = 0.0
    snapshot_size: int = 0
    seconds: float = 0.0
    left_out: list[str] = field(default_factory=list)

    @property
    def exit_status(self) -> int:
        return exit_status(self.verdicts)

    def cost_line(self) -> str:
        """The reference run's checkpoint and snapshot cost in one line."""
        if not self.snapshot_every:
            snapshots = "snapshots off"
        elif self.snapshot_seconds is None:
            snapshots = (f"in-memory snapshots {_every(self.snapshot_every)} (their cost "
                         "was not recorded)")
        else:
            one = self.snapshots == 1
            snapshots = (f"{formatting.counted(self.snapshots, 'in-memory snapshot')} "
                         f"({_every(self.snapshot_every)}, "
                         f"{formatting.size(self.snapshot_size)} each), training waited "
                         f"{formatting.seconds(self.snapshot_seconds, digits=3)} for "
                         f"{'it' if one else 'them'}"
                         + ("" if one else
                            f" ({formatting.seconds(self.snapshot_first_seconds, digits=3)} "
                            "of it the first)"))
        return (f"reference run: {formatting.counted(self.checkpoints, 'checkpoint')}, "
                f"training waited "
                f"{seconds(self.checkpoint_seconds)} for "
                f"{'it' if self.checkpoints == 1 else 'them'}; {snapshots}")

    def to_dict(self) -> dict:
        return {"audit_dir": str(self.audit_dir), "settings": self.settings,
                "exit_status": self.exit_status, "seconds": self.seconds,
                "reference": {"checkpoints": self.checkpoints,
                              "checkpoint_seconds": self.checkpoint_seconds,
                              "snapshot_every": self.snapshot_every,
                              "snapshots": self.snapshots,
                              "snapshot_seconds": self.snapshot_seconds,
                              "snapshot_first_seconds": self.snapshot_first_seconds,
                              "snapshot_size": self.snapshot_size},
                "left_out": self.left_out, "faults": [v.to_dict() for v in self.verdicts]}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def junit_xml(result: AuditResult) -> str:
    """The JUnit XML document: one `testsuite`, one `testcase` per fault (classname
    `ftgui.audit`, name the fault kind)."""
    verdicts = result.verdicts
    suite = ET.Element("testsuite", name=SUITE, tests=str(len(verdicts)),
                       failures=str(sum(v.status in ("differs", "failed") for v in verdicts)),
                       errors="0", skipped=str(sum(v.status == "design" for v in verdicts)),
                       time=f"{result.seconds:.3f}")
    for verdict in verdicts:
        case = ET.SubElement(suite, "testcase", classname="ftgui.audit", name=verdict.name)
        if verdict.status == "design":
            ET.SubElement(case, "skipped", message=f"not exact by design: {verdict.reason}")
        elif verdict.status in ("differs", "failed"):
            message = verdict.first_difference_text() if verdict.status == "differs" \
                else verdict.reason
            failure = ET.SubElement(case, "failure", message=message,
                                    type="not exact" if verdict.status == "differs"
                                    else "did not recover")
            failure.text = verdict.line()
        ET.SubElement(case, "system-out").text = verdict.line()
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(
        suite, encoding="unicode") + "\n"


def summary_json(result: AuditResult) -> str:
    return json.dumps(result.to_dict(), indent=1) + "\n"


def html_report(result: AuditResult) -> str:
    """The audit's report: the verdicts table, the reference's cost, and a section per fault
    with its loss plot (fault marked, redone steps shaded) and figures."""
    rows = [[v.name, str(v.step), v.status, str(v.steps_redone if v.steps_redone is not None
                                                 else "—"),
             formatting.seconds(v.time_lost), v.source or "—",
             v.first_difference_text() or v.reason or "—"] for v in result.verdicts]
    body = [f"<h1>Fault-tolerance audit: {escape(result.audit_dir.name)}</h1>",
            f"<p>{escape(_settings_line(result.settings))}; audit took "
            f"{escape(seconds(result.seconds))}; exit status {result.exit_status}.</p>",
            _table(["fault", "at step", "verdict", "steps redone", "time lost", "source",
                    "first difference"], rows, numeric={1, 3, 4}, name="verdicts"),
            f"<p>{escape(result.cost_line())}</p>"]
    body += [f"<p>{escape(line)}</p>" for line in result.left_out]
    for verdict in result.verdicts:
        body += _fault_section(verdict)
    made = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime())
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8"/>',
        f"<title>ftgui audit: {escape(result.audit_dir.name)}</title>",
        f"<style>{STYLE}</style>", "</head>", "<body>", *body,
        f"<p><small>Written by ftgui {escape(__version__)} on {made}.</small></p>",
        "</body>", "</html>", ""])


def _settings_line(settings: dict) -> str:
    return ", ".join(f"{key} {value}" for key, value in settings.items())


def _fault_section(verdict: Verdict) -> list[str]:
    parts = [f'<h2 id="fault-{escape(verdict.name)}">{escape(verdict.name)}: '
             f"{escape(verdict.status)}</h2>", f"<p>{escape(verdict.line())}</p>"]
    if verdict.run_dir and Path(verdict.run_dir).is_dir():
        timeline, _ = read_run(verdict.run_dir, verdict.name)
        parts.append(plot_svg(timeline, f"training loss, {verdict.name} after step "
                                        f"{verdict.step}"))
        redone = [f"steps {r.start + 1}–{r.end} redone ({r.cause})" for r in timeline.redone]
        if redone:
            parts.append(f"<p>{escape('; '.join(redone))}</p>")
    parts.append(_table(
        ["fault step", "target", "restored from", "resumed from", "steps redone", "time lost"],
        [[str(verdict.step), verdict.target, verdict.source or "—",
          "—" if verdict.resumed_from is None else str(verdict.resumed_from),
          "—" if verdict.steps_redone is None else str(verdict.steps_redone),
          formatting.seconds(verdict.time_lost)]], numeric={0, 3, 4, 5},
        name=f"figures-{verdict.name}"))
    return parts


def write_outputs(result: AuditResult, junit: Path | None = None, json_path: Path | None = None,
                  html: Path | None = None) -> dict[str, Path]:
    """Write the three files (None: the default name inside the audit folder); returns
    {"junit": path, "json": path, "html": path}. Raises `OSError`."""
    folder = result.audit_dir
    paths = {"junit": junit or folder / DEFAULT_NAMES["junit"],
             "json": json_path or folder / DEFAULT_NAMES["json"],
             "html": html or folder / DEFAULT_NAMES["html"]}
    _write(paths["junit"], junit_xml(result))
    _write(paths["json"], summary_json(result))
    _write(paths["html"], html_report(result))
    return paths


def _every(steps: int) -> str:
    """"every step", "every 10 steps"."""
    return "every step" if steps == 1 else f"every {steps} steps"
