"""One source for every figure (issue 24): the story line, the Incidents tab, `ftgui report`, the
comparison and `ftgui train`'s summary print the same steps redone, time lost and goodput, to
the digit, after a crash, after a fork and after a restart with nothing to restore (issue 25,
case 12); built from recorded event streams (no TensorFlow), and once from a real run."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET

import pytest
from recorded import crash_and_recovery, crash_then_fork, killed_before_the_first_checkpoint

from ftgui.console import Progress
from ftgui.core.record import event_history, events, runs
from ftgui.core.reports import report
from ftgui.core.timeline.model import Timeline
from ftgui.core.timeline.run_figures import read_run
from ftgui.core.timeline.story import story

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def reopened(run_dir) -> Timeline:
    timeline = Timeline()
    timeline.feed(event_history.read_history(run_dir))
    return timeline


def cli_summary(run_dir) -> list[str]:
    """What `ftgui train` ends with, its events shown one by one as the CLI shows them."""
    progress = Progress(quiet=True)
    for event in events.read_all(run_dir):
        progress.show(event)
    return progress.summary()


def report_figures(run_dir) -> dict[str, str]:
    """The report's figures table as {header: cell}, and its incident rows."""
    text = report.build_report(run_dir)
    root = ET.fromstring(text.removeprefix("<!DOCTYPE html>\n"))
    rows = [["".join(cell.itertext()) for cell in row]
            for row in root.find(".//table[@id='figures']").findall("tr")]
    return dict(zip(rows[0], rows[1], strict=True))


def banner_figures(banner: str) -> tuple[str, str, str]:
    """(steps redone, time lost, goodput) as the banner prints them."""
    match = re.search(r"(\d+) steps? redone, ([\d.]+ s) lost · goodput (\d+ %)$", banner)
    assert match, banner
    return match.groups()


# Wall time runs from the first training_started (0.9 s after the run's start: the start-up
# before it is no training) to the last event.
@pytest.mark.parametrize("make, expected", [
    # killed at 12, restored 10; lost: 2.05 s to the first new step + 0.2 s of steps 11-12;
    # wall 5.12 - 0.9 = 4.22 s, goodput (4.22 - 2.25) / 4.22 = 46.7 %
    (crash_and_recovery, ("Finished at step 20 · killed at step 12 → restored checkpoint 10 → "
                          "resumed: 2 steps redone, 2.2 s lost · goodput 47 %")),
    # the fork from 20 redoes nothing: the incident's 5 steps are the run's (the report said
    # 45); wall 9.42 - 0.9 + 4.92 - 0.9 (the fork's 10 s wait and its 0.9 s start-up left
    # out) = 12.54 s, lost 2.55 s, goodput (12.54 - 2.55) / 12.54 = 79.7 %
    (crash_then_fork, ("Finished at step 60 · killed at step 45 → restored checkpoint 40 → "
                       "resumed: 5 steps redone, 2.5 s lost · goodput 80 %")),
    # case 12: nothing to restore; steps 1-7 redone, 2.05 s + the 0.7 s they had taken since
    # training_started; wall 5.62 - 0.9 = 4.72 s, goodput (4.72 - 2.75) / 4.72 = 41.7 %
    (killed_before_the_first_checkpoint, (
        "Finished at step 20 · killed at step 7 → restarted from step 0 (no checkpoint yet) → "
        "resumed: 7 steps redone, 2.7 s lost · goodput 42 %")),
])
def test_banner_report_and_cli_print_the_same_figures(tmp_path, make, expected):
    run_dir = make(tmp_path / "run")
    banner = story(reopened(run_dir))
    assert banner == expected
    assert cli_summary(run_dir) == [banner]  # the CLI's last line is the banner, to the letter
    redone, lost, goodput = banner_figures(banner)
    figures = report_figures(run_dir)
    assert (figures["incidents"], figures["steps redone"], figures["time lost"],
            figures["goodput"]) == ("1", redone, lost, goodput)
    root = ET.fromstring(report.build_report(run_dir).removeprefix("<!DOCTYPE html>\n"))
    assert "".join(root.find(".//p[@id='story']").itertext()) == banner  # the same sentence
    assert read_run(run_dir)[1].shown() == {"steps redone": redone, "time lost": lost,
                                            "goodput": goodput}


def test_a_fork_is_neither_an_incident_nor_redone_work(tmp_path):
    run_dir = crash_then_fork(tmp_path / "run")
    timeline = reopened(run_dir)
    assert [(r.start, r.end, r.cause) for r in timeline.redone] == [(40, 45, "crash")]
    assert [(i.kind, i.steps_lost) for i in timeline.incidents] == [("kill", 5)]
    assert runs.summarize(run_dir).incidents == 1
    text = report.build_report(run_dir)
    svg = ET.fromstring(text.removeprefix("<!DOCTYPE html>\n"))
    shaded = svg.findall(".//{http://www.w3.org/2000/svg}rect[@class='redone']")
    assert [r.find("{http://www.w3.org/2000/svg}title").text for r in shaded] == [
        "steps 41–45 redone (crash)"]


def test_case_12_a_restart_before_the_first_checkpoint_redoes_what_was_done(tmp_path):
    run_dir = killed_before_the_first_checkpoint(tmp_path / "run")
    timeline = reopened(run_dir)
    [incident] = timeline.incidents
    assert (incident.step, incident.resumed_step, incident.steps_lost) == (7, 0, 7)
    assert incident.restore_source == "none"
    assert incident.recovery_seconds == pytest.approx(2.0, abs=1e-6)  # exit → first new step
    assert incident.time_lost == pytest.approx(2.05 + 0.7, abs=1e-6)
    assert [(r.start, r.end) for r in timeline.redone] == [(0, 7)]
    assert timeline.totals().goodput == pytest.approx((4.72 - 2.75) / 4.72, abs=1e-6)


def test_the_incidents_tab_gives_the_banners_figures_at_every_moment(window, tmp_path):
    """Fed as the controller feeds a live run: the totals line is not frozen at the resume
    (it said 56 % while the banner said 62 %)."""
    from ftgui.qt.panes.incident_table import COLUMNS
    from ftgui.qt.runs.compare_view import cells

    run_dir = crash_and_recovery(tmp_path / "run")
    seen = events.read_all(run_dir)
    controller = window.controller
    first_new = next(i for i, e in enumerate(seen) if e["event"] == "step" and e["attempt"] == 1)
    banner, panel = window.top_bar.story_banner, window.incident_panel
    checked = 0
    for end in (first_new + 1, first_new + 4, len(seen)):
        changes = controller.timeline.feed(seen[checked:end])
        controller._emit(changes)  # what a tick of the controller's timer does
        checked = end
        if end == first_new + 1:  # step 11 of the redo: the banner tells no cost yet
            assert banner.text().endswith("resumed: redoing steps 11–12 (1 of 2 done)")
            continue
        redone, lost, goodput = banner_figures(banner.text())
        assert (f"<b>{redone}</b> steps redone · <b>{lost}</b> lost of " in panel.totals.text()
                and panel.totals.text().endswith(f"goodput <b>{goodput}</b>")), (
            banner.text(), panel.totals.text())
        model = panel.model_
        row = dict(zip(COLUMNS, (model.data(model.index(0, c))
                                 for c in range(model.columnCount())), strict=True))
        assert (row["steps lost"], row["time lost"], row["source"]) == (redone, lost, "disk")
    assert goodput == "47 %"
    row = cells(read_run(run_dir)[1])  # the comparison table's row of this run
    assert (row[2], row[3], row[7]) == (redone, lost, goodput)


@pytest.mark.tf
def test_a_real_run_killed_and_recovered_prints_one_set_of_figures(killed_at_25_and_recovered,
                                                                   qtbot):
    """`ftgui train --kill-at-step 25 --auto-recover`: its summary line, the reopened
    banner, the Incidents tab and the report agree to the printed digit."""
    from ftgui.qt.panes.incident_table import COLUMNS, IncidentPanel

    run_dir, printed = killed_at_25_and_recovered
    banner = story(reopened(run_dir))
    assert banner.startswith("Finished at step 40 · killed at step 2")  # 25, or a poll late
    assert banner in printed  # the summary line is the banner, to the character
    redone, lost, goodput = banner_figures(banner)
    assert int(redone) >= 5 and goodput != "100 %"
    figures = report_figures(run_dir)
    assert (figures["steps redone"], figures["time lost"], figures["goodput"]) == (
        redone, lost, goodput)
    panel = IncidentPanel()
    qtbot.addWidget(panel)
    panel.show_timeline(reopened(run_dir))
    assert panel.totals.text().endswith(f"goodput <b>{goodput}</b>")
    assert f"<b>{redone}</b> steps redone · <b>{lost}</b> lost" in panel.totals.text()
    model = panel.model_
    assert model.data(model.index(0, COLUMNS.index("source"))) == "disk"


@pytest.mark.tf
def test_case_12_a_real_run_killed_before_its_first_checkpoint_and_resumed(tmp_path, capsys):
    """Issue 25 case 12 end to end: `--resume` after a kill before the first checkpoint
    trains from step 0, and the steps done before the kill count as redone."""
    from ftgui import cli

    run_dir = tmp_path / "run"
    flags = ["--steps", "30", "--checkpoint-every", "20", "--snapshot-every", "0"]
    assert cli.main(["train", str(run_dir), *flags, "--kill-at-step", "6"]) != 0
    capsys.readouterr()
    assert cli.main(["train", str(run_dir), "--resume"]) == 0
    printed = capsys.readouterr()
    assert f"no valid checkpoint in {run_dir}; starting from step 0" in printed.out
    timeline = reopened(run_dir)
    [incident] = timeline.incidents
    killed_at = incident.step
    assert killed_at >= 6 and incident.resumed_step == 0 and incident.steps_lost == killed_at
    assert incident.recovery_seconds is not None and incident.time_lost > 0
    banner = story(timeline)
    assert banner.startswith(f"Finished at step 30 · killed at step {killed_at} → restarted "
                             f"from step 0 (no checkpoint yet) → resumed: {killed_at} steps "
                             "redone, ")
    assert banner in printed.out.splitlines()
    redone, lost, goodput = banner_figures(banner)
    assert goodput != "100 %" and lost != "0.0 s"
    figures = report_figures(run_dir)
    assert (figures["steps redone"], figures["time lost"], figures["goodput"]) == (
        redone, lost, goodput)
