"""`ftgui report RUN [-o FILE.html]`: one self-contained HTML file with the plot as inline SVG, the
figures and incidents, every setting and the checkpoint list; written without Qt."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest
from conftest import fake_checkpoint
from recorded import crash_and_recovery

from ftgui import cli
from ftgui.core.record import run_notes
from ftgui.core.record.run_notes import RunNotes
from ftgui.core.reports import report
from ftgui.core.settings import config as configmod

SVG = "{http://www.w3.org/2000/svg}"


class Tags(HTMLParser):
    """Counts start tags and checks that every opened element is closed, in order."""

    VOID = {"meta", "br", "img", "hr", "link", "input"}

    def __init__(self):
        super().__init__()
        self.open, self.counts, self.errors = [], {}, []

    def handle_starttag(self, tag, attrs):
        self.counts[tag] = self.counts.get(tag, 0) + 1
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.counts[tag] = self.counts.get(tag, 0) + 1

    def handle_endtag(self, tag):
        if not self.open or self.open.pop() != tag:
            self.errors.append(tag)


def table(root, name: str) -> list[list[str]]:
    """The rows (header first) of the table with id `name`, as cell texts."""
    element = root.find(f".//table[@id='{name}']")
    return [["".join(cell.itertext()) for cell in row] for row in element.findall("tr")]


def test_the_report_holds_the_plot_figures_settings_and_checkpoints(tmp_path):
    run_dir = crash_and_recovery(tmp_path / "run")
    fake_checkpoint(run_dir, 10)
    fake_checkpoint(run_dir, 20)
    run_notes.save(run_dir, RunNotes("crash at 12 <demo>", "killed by hand & recovered"))
    out = report.write_report(run_dir, tmp_path / "out.html")
    text = out.read_text(encoding="utf-8")

    tags = Tags()
    tags.feed(text)
    assert tags.errors == [] and tags.open == []
    assert tags.counts["svg"] == 1 and tags.counts["polyline"] == 2  # one per attempt
    root = ET.fromstring(text.removeprefix("<!DOCTYPE html>\n"))  # well-formed XML too
    svg = root.find(f".//{SVG}svg")
    lines = svg.findall(f"{SVG}polyline")
    # steps 1–12, then 11–20 begun at step 10's point (the checkpoint it restored)
    assert [len(line.get("points").split()) for line in lines] == [12, 1 + 10]
    [band] = svg.findall(f"{SVG}rect[@class='redone']")
    assert band.find(f"{SVG}title").text == "steps 11–12 redone (crash)"
    assert [m.find(f"{SVG}title").text for m in svg.findall(f"{SVG}line[@class='marker']")] == [
        "killed @ 12", "resume ← 10"]

    assert root.find(".//h1").text == "crash at 12 <demo>"
    assert "killed by hand & recovered" in text.replace("&amp;", "&")
    # time lost: the fault 0.05 s after step 12 to the first new step 2.1 s after it, plus
    # the 0.2 s steps 11-12 had taken; wall 4.22 s (from training_started, 0.9 s after the
    # run's start, to the last exit at 5.12 s); two saves stalled 0.05 s each. Steps redone,
    # time lost and goodput are printed as the banner and the Incidents tab print them
    # (issue 24: "2.25 s" and "46.7 %" here, "2.2 s" and "47 %" there)
    # the final loss in full, and the story line's sentence, as `ftgui train` prints them (a
    # new user could not check the one against the other)
    assert table(root, "figures") == [
        ["incidents", "steps redone", "time lost", "checkpoints", "checkpoint stall",
         "wall time", "goodput", "final loss"],
        ["1", "2", "2.2 s", "2", "0.10 s", "4.22 s", "47 %", repr(1.0 / 20)]]
    assert "".join(root.find(".//p[@id='story']").itertext()) == (
        "Finished at step 20 · killed at step 12 → restored checkpoint 10 → resumed: 2 steps "
        "redone, 2.2 s lost · goodput 47 %")
    assert table(root, "incidents")[1] == [
        "kill", "chief", "user", "12", "10", "2", "0.05 s", "2.00 s", "2.2 s", "disk"]
    settings = {row[0]: row[2] for row in table(root, "settings")[1:]}
    values = configmod.load_values(run_dir)
    assert values["strategy"] == "mirrored"
    other_strategies = {"workers", "ps", "cluster"}  # not used by a mirrored run: left out
    assert other_strategies <= set(values)
    assert settings == {key: ("true" if value is True else "false" if value is False
                              else str(value))
                        for key, value in values.items() if key not in other_strategies}
    assert settings["checkpoint_every"] == "10" and settings["auto_recover"] == "true"
    assert [row[0] for row in table(root, "checkpoints")[1:]] == ["10", "20"]
    assert table(root, "checkpoints")[1][-1] == "yes"


def test_ftgui_report_writes_beside_the_run_without_importing_qt_or_tensorflow(tmp_path):
    run_dir = crash_and_recovery(tmp_path / "run")
    code = ("import sys; from ftgui import cli; code = cli.main(['report', sys.argv[1]]); "
            "assert not {'PySide6', 'tensorflow', 'pyqtgraph'} & set(sys.modules); "
            "sys.exit(code)")
    result = subprocess.run([sys.executable, "-c", code, str(run_dir)], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    written = tmp_path / "run-report.html"
    assert result.stdout == f"wrote {written}\n" and written.is_file()


def test_ftgui_report_of_a_folder_that_is_no_run_says_so_in_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert cli.main(["report", str(tmp_path / "empty"), "-o", str(tmp_path / "x.html")]) == 2
    assert capsys.readouterr().err == (
        f"ftgui: run_dir: {tmp_path / 'empty'} is not a run (no config.toml or events.jsonl)\n")
    assert not (tmp_path / "x.html").exists()
    assert cli.main(["report", str(tmp_path / "gone"), "-o", str(tmp_path / "x.html")]) == 2
    assert capsys.readouterr().err == f"ftgui: run_dir: {tmp_path / 'gone'} does not exist\n"


def test_one_redone_step_is_named_as_one():
    from ftgui.core.reports.svg_plot import _steps_of

    # a NaN rolled back to the step before redoes one step: it read "steps 50–50 redone"
    assert (_steps_of(50, 50), _steps_of(41, 50)) == ("step 50", "steps 41–50")


def test_a_long_segment_is_thinned_but_keeps_its_spike():
    import numpy as np

    from ftgui.core.reports.svg_plot import thin

    x = np.arange(100_000, dtype=float)
    y = np.ones_like(x)
    y[54_321] = 9.0
    tx, ty = thin(x, y)
    assert len(tx) <= 2000 and 9.0 in ty and 54_321.0 in tx
    assert np.all(np.diff(tx) > 0)


def test_settings_of_other_strategies_show_when_the_strategy_is_missing_or_unknown(tmp_path):
    from ftgui.core.settings.schema import SETTINGS

    run_dir = crash_and_recovery(tmp_path / "run")
    path = run_dir / "config.toml"
    text = path.read_text()
    line = next(line for line in text.splitlines() if line.startswith("strategy ="))
    path.write_text(text.replace(line + "\n", ""))  # no strategy: the default, mirrored
    keys = {row[0] for row in report_settings(run_dir)}
    assert {"replicas", "gpus", "snapshot_every"} <= keys and not {"workers", "ps"} & keys
    path.write_text(text.replace(line, 'strategy = "bogus"'))
    keys = {row[0] for row in report_settings(run_dir)}
    assert {"replicas", "gpus", "workers", "ps", "cluster", "snapshot_every"} <= keys
    assert SETTINGS["strategy"].default == "mirrored"


def report_settings(run_dir) -> list[list[str]]:
    text = report.build_report(run_dir)
    root = ET.fromstring(text.removeprefix("<!DOCTYPE html>\n"))
    return table(root, "settings")[1:]


def test_a_run_nobody_supervises_is_reported_interrupted_not_running(tmp_path):
    """`ftgui train` killed with SIGKILL right after a SIGTERM (a breaker's finding) left
    events that stop mid-attempt: the report said "running" of a run no process runs. While
    a supervisor holds the run's lock it is running; once none does, it is interrupted, as
    the window and the run history say."""
    from ftgui.core.record.events import EventWriter
    from ftgui.core.record.run_lock import RunLock
    from ftgui.core.record.run_state import INTERRUPTED_REASON
    from ftgui.core.timeline.run_figures import read_run

    run_dir = tmp_path / "run"
    configmod.save(run_dir, configmod.RunConfig(steps=300))
    with EventWriter(run_dir, attempt=0) as writer:
        writer.emit("run_started")
        writer.emit("process_started", pid=10, restore=None, standby=False, role="chief",
                    index=0, chief=True)
        for step in range(1, 94):
            writer.emit("step", step=step, loss=1.0 / step)
        writer.emit("fault_injected", kind="preempt", target="chief", step=93, source="user")
    lock = RunLock(run_dir)
    lock.acquire()
    try:
        assert read_run(run_dir)[0].state == "running"
    finally:
        lock.release()
    timeline, _ = read_run(run_dir)
    assert (timeline.state, timeline.reason) == ("interrupted", INTERRUPTED_REASON)
    text = report.build_report(run_dir)
    assert f"interrupted: {INTERRUPTED_REASON}" in text and "; running" not in text


@pytest.mark.parametrize("target", ["config.toml", "events.jsonl", "checkpoints/ckpt-10.index",
                                    "notes.html"])
def test_ftgui_report_never_writes_over_a_runs_own_files(tmp_path, capsys, target):
    """A breaker's find: `-o RUN/events.jsonl` replaced the run's history with HTML, and
    `-o RUN/config.toml` made it impossible to resume. A file of any run folder (this run's,
    another's) is refused in one line and stays as it was."""
    run_dir = crash_and_recovery(tmp_path / "run")
    fake_checkpoint(run_dir, 10)
    other = crash_and_recovery(tmp_path / "other")
    (run_dir / "notes.html").write_text("<p>my own notes</p>")
    for folder in (run_dir, other):
        victim = folder / target
        if not victim.exists():
            continue
        before = victim.read_bytes()
        assert cli.main(["report", str(run_dir), "-o", str(victim)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "output:" in err and "its record" in err
        assert victim.read_bytes() == before
        assert not victim.with_name(victim.name + ".tmp").exists()


def test_ftgui_report_into_a_folder_or_over_its_earlier_report(tmp_path, capsys):
    run_dir = crash_and_recovery(tmp_path / "run")
    (tmp_path / "out").mkdir()
    assert cli.main(["report", str(run_dir), "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "run-report.html").is_file()  # the default name, in the folder
    inside = run_dir / "report.html"  # a new .html file in the run folder is allowed
    assert cli.main(["report", str(run_dir), "-o", str(inside)]) == 0
    assert cli.main(["report", str(run_dir), "-o", str(inside)]) == 0  # and written again
    assert "ftgui report: run" in inside.read_text()


def test_ftgui_report_to_a_name_without_a_suffix_writes_an_html_file(tmp_path, capsys):
    """A new user's `-o out` wrote a file named `out` that no browser opened by a click."""
    run_dir = crash_and_recovery(tmp_path / "run")
    assert cli.main(["report", str(run_dir), "-o", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {tmp_path / 'out.html'}"
    assert not (tmp_path / "out").exists()
    assert "ftgui report: run" in (tmp_path / "out.html").read_text()
    assert cli.main(["report", str(run_dir), "-o", str(tmp_path / "out.htm")]) == 0
    assert (tmp_path / "out.htm").is_file()  # a suffix given is kept
    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:  # it wrote into the current folder
        cli.main(["report", str(run_dir), "-o", ""])
    assert refused.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "an empty name" in err


def test_a_planted_tmp_link_is_never_written_through(tmp_path, capsys):
    """A breaker's find: the report was written to OUT.tmp first, following a link planted
    there to another run's events.jsonl (and a hard link to its config.toml)."""
    run_dir = crash_and_recovery(tmp_path / "run")
    other = crash_and_recovery(tmp_path / "other")
    out = tmp_path / "out"
    out.mkdir()
    (out / "rep.html.tmp").symlink_to(other / "events.jsonl")
    os.link(other / "config.toml", out / "rep2.html.tmp")
    files = {name: (other / name).read_bytes() for name in ("events.jsonl", "config.toml")}
    for name in ("rep.html", "rep2.html"):
        assert cli.main(["report", str(run_dir), "-o", str(out / name)]) == 0
        assert (out / name).read_text().startswith("<!DOCTYPE html>")
        assert (out / name).stat().st_mode & 0o777 == 0o644
    assert {name: (other / name).read_bytes() for name in files} == files


def test_a_report_that_cannot_be_written_says_so_in_one_output_line(tmp_path, capsys):
    run_dir = crash_and_recovery(tmp_path / "run")
    assert cli.main(["report", str(run_dir), "-o", str(tmp_path / "no" / "x.html")]) == 2
    assert capsys.readouterr().err == (f"ftgui: output: {tmp_path / 'no' / 'x.html'} cannot "
                                       "be written (No such file or directory)\n")
    (tmp_path / "out" / "run-report.html").mkdir(parents=True)  # a folder where the file goes
    assert cli.main(["report", str(run_dir), "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.startswith("ftgui: output: ")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["run-report.html"]  # no .tmp


def test_a_link_into_another_run_names_that_run(tmp_path, capsys):
    run_dir = crash_and_recovery(tmp_path / "run")
    other = crash_and_recovery(tmp_path / "other")
    (run_dir / "evil.html").symlink_to(other / "config.toml")
    assert cli.main(["report", str(run_dir), "-o", str(run_dir / "evil.html")]) == 2
    assert f"a file of the run folder {other}," in capsys.readouterr().err
    assert (other / "config.toml").read_text().startswith("strategy = ")


def test_the_reports_final_loss_is_in_full_and_says_when_it_is_a_running_mean():
    from ftgui.core.timeline.run_figures import RunFigures

    def run(loss, fit=False):
        return RunFigures("r", 0, 0, 0.0, 0, 0.0, 1.0, 1.0, 10, loss, running_mean=fit)

    assert report.final_loss(run(0.13206340372562408)) == "0.13206340372562408"
    assert report.final_loss(run(0.047, fit=True)) == "0.047 (epoch's running mean)"
    assert report.final_loss(run(None)) == "—"
