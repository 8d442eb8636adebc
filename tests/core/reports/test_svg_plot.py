"""The report's loss plot (`ftgui.core.reports.svg_plot`): the run drawn as one curve, a fork's
abandoned steps set apart, marker labels that never overlap (a new user's findings: attempts in
red, green and purple read as the kill and resume markers; "killed @ 143" over "resume ← 192")."""

from __future__ import annotations

import re

from recorded import crash_and_recovery, crash_then_fork, write_chaos_run

from ftgui.core.record import events
from ftgui.core.reports.svg_plot import (
    ABANDONED_COLOUR,
    CHAR_PX,
    CURVE_COLOUR,
    plot_svg,
)
from ftgui.core.timeline.model import Timeline


def timeline_of(run_dir) -> Timeline:
    timeline = Timeline()
    timeline.feed(events.read_all(run_dir))
    return timeline


def polylines(svg: str) -> list[tuple[str, str, list[float]]]:
    """(class, stroke, x of each point) per polyline."""
    found = re.findall(r'<polyline class="(\w+)" stroke="([^"]+)"[^>]*points="([^"]*)"', svg)
    return [(kind, stroke, [float(p.split(",")[0]) for p in points.split()])
            for kind, stroke, points in found]


def test_every_attempt_of_a_run_is_drawn_in_its_one_colour(tmp_path):
    svg = plot_svg(timeline_of(crash_and_recovery(tmp_path / "run")))
    lines = polylines(svg)
    assert len(lines) == 2  # the killed attempt and the resumed one
    assert {(kind, stroke) for kind, stroke, _ in lines} == {("segment", CURVE_COLOUR)}


def test_a_forks_abandoned_steps_are_pale_and_dashed(tmp_path):
    timeline = timeline_of(crash_then_fork(tmp_path / "run"))
    svg = plot_svg(timeline)
    lines = polylines(svg)
    kept = [x for kind, _, x in lines if kind == "segment"]
    abandoned = [x for kind, stroke, x in lines if kind == "abandoned"
                 and stroke == ABANDONED_COLOUR]
    assert len(abandoned) == 2  # attempt 0's steps after 20, and all of attempt 1
    assert 'stroke-dasharray="5 3"' in svg
    # the branch a fork left starts at the fork's step: the kept lines end there
    fork_x = min(x[0] for x in abandoned)
    assert all(x[-1] <= fork_x or x[0] >= fork_x for x in kept)


def test_marker_labels_never_overlap_and_each_line_keeps_its_title(tmp_path):
    write_chaos_run(tmp_path / "run", faults=12, total=1200)
    timeline = timeline_of(tmp_path / "run")
    svg = plot_svg(timeline)
    labels = re.findall(r'<text class="marker-label" x="([0-9.]+)" y="([0-9.]+)"[^>]*>([^<]+)<',
                        svg)
    assert labels  # some are drawn
    spans = [(float(y), float(x), float(x) + CHAR_PX * len(text)) for x, y, text in labels]
    for i, (row, start, end) in enumerate(spans):
        for other_row, other_start, other_end in spans[i + 1:]:
            assert row != other_row or end <= other_start or other_end <= start
    assert svg.count('<line class="marker"') == len(timeline.markers)
    assert svg.count("</title></line>") == len(timeline.markers)  # every label as a tooltip


def test_a_kill_and_its_resume_at_one_step_take_turns_along_one_line(tmp_path):
    """Killed after step 20 and resumed from checkpoint 20: the resume's green dashes covered
    the kill's red ones, under the red label "killed @ 20" (a new user's finding)."""
    svg = plot_svg(timeline_of(crash_and_recovery(tmp_path / "run", kill_at=20, every=10,
                                                  steps=30)))
    lines = re.findall(r'<line class="marker" x1="([0-9.]+)"[^>]*stroke="([^"]+)" '
                       r'stroke-dasharray="([^"]+)" stroke-dashoffset="([^"]+)"', svg)
    assert len(lines) == 2 and lines[0][0] == lines[1][0]  # one step, one x
    assert {dash for _, _, dash, _ in lines} == {"4 10"}  # each dash, then the other's gap
    assert sorted(offset for _, _, _, offset in lines) == ["-7", "0"]
    assert lines[0][1] != lines[1][1]  # red and green


def test_steps_start_at_0_validation_losses_are_points_and_a_legend_names_them(tmp_path):
    """A new user's findings: the plot had no 0 tick, no validation points (the window shows
    them) and no legend."""
    timeline = timeline_of(crash_and_recovery(tmp_path / "run", kill_at=25, every=10,
                                              steps=30))  # steps 21-25 redone
    timeline.feed([{"event": "validation", "time": 9.0, "attempt": 1, "step": 30,
                    "val_loss": 0.5, "val_accuracy": 0.8},
                   {"event": "validation", "time": 5.0, "attempt": 0, "step": 10,
                    "val_loss": None, "val_accuracy": None}])  # NaN: left out
    svg = plot_svg(timeline)
    x_ticks = re.findall(r'text-anchor="middle">([^<]+)</text>', svg)
    assert x_ticks[0] == "0"
    [point] = re.findall(r'<circle class="validation" cx="([0-9.]+)" cy="([0-9.]+)"', svg)
    [last] = [x for kind, _, x in polylines(svg)][-1:]
    assert float(point[0]) == last[-1]  # step 30, where the curve ends
    legend = re.findall(r'<g class="legend"[^>]*>.*?<text[^>]*>([^<]+)</text></g>', svg)
    assert legend == ["training loss", "validation loss", "steps redone"]


def test_the_legend_names_only_what_is_drawn(tmp_path):
    svg = plot_svg(timeline_of(crash_then_fork(tmp_path / "run")))
    legend = re.findall(r'<g class="legend"[^>]*>.*?<text[^>]*>([^<]+)</text></g>', svg)
    assert legend == ["training loss", "abandoned by a fork", "steps redone"]
    assert plot_svg(Timeline()).count('class="legend"') == 0  # nothing drawn, nothing named


def test_a_chaos_runs_five_faults_and_their_resumes_are_all_labelled(tmp_path):
    """A new user's chaos report: "frozen @ 192" drawn, its "resume ← 192" not, though the
    incident table listed it (three rows of labels were full)."""
    from ftgui.core.timeline.model import Marker

    timeline = timeline_of(crash_and_recovery(tmp_path / "run", kill_at=25, every=10,
                                              steps=600))
    steps = (143, 192, 274, 275, 384, 476)
    timeline.markers[:] = [Marker(kind, step, f"{label} @ {step}", 0) for step in steps
                           for kind, label in (("crash", "killed"), ("resume", "resume"))
                           if not (step == 274 and kind == "crash")]
    labels = re.findall(r'<text class="marker-label"[^>]*>([^<]+)<', plot_svg(timeline))
    assert len(labels) == len(timeline.markers) == 11
