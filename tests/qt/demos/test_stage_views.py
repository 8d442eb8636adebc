"""The stage's views at a projector's 1280×720: the y axis after the presentation view, a
constant or huge loss in the window, `replay --present`, the story line in two lines and marker
labels that leave the data visible (issue 24, issue 25 case 8)."""

from __future__ import annotations

import json
import os
import re

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import numpy as np
import pytest
from conftest import PLOT_READY_MS
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QApplication
from recorded import T0, write_chaos_run, write_recovered_run

from ftgui.core.record.events import EventWriter
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import RunConfig
from ftgui.qt import theme
from ftgui.qt.demos.panel import DemoPanel
from ftgui.qt.window import replay_app
from ftgui.qt.window.main_window import MainWindow


@pytest.fixture
def window(qtbot, tmp_path):
    """The window at 1280×720 and scale 1, shown, its plot created."""
    theme.set_scale(1.0)
    win = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.resize(1280, 720)
    with qtbot.waitSignal(win.plotReady, timeout=PLOT_READY_MS):
        win.show()
    yield win
    win.controller.shutdown()
    theme.set_scale(1.0)


def tick_labels(plot, side: str = "left") -> list[str]:
    """The tick labels the axis draws now, as pyqtgraph makes them (its scale included)."""
    axis = plot.getPlotItem().getAxis(side)
    low, high = axis.range
    levels = axis.tickValues(low, high, axis.geometry().height() or 400)
    return [text for spacing, values in levels
            for text in axis.tickStrings(values, axis.autoSIPrefixScale * axis.scale, spacing)]


def settle(qtbot, window) -> None:
    qtbot.wait(50)
    window.plot.redraw()
    QApplication.processEvents()


def test_after_f5_twice_the_y_ticks_lie_within_the_losses(window, qtbot, tmp_path):
    run_dir = tmp_path / "run"
    write_recovered_run(run_dir)  # loss 2/step: 2.0 at step 1 down to 0.0077 at step 260
    window.open_run(run_dir)
    settle(qtbot, window)
    for _ in range(2):
        window.menus.present_action.trigger()
        settle(qtbot, window)
    assert not window.presenting
    values = [float(text) for text in tick_labels(window.plot)]
    assert values and max(values) >= 1.0  # 0–2.0 on the axis, not 0–2000
    assert all(-0.2 <= value <= 2.2 for value in values), values
    axis = window.plot.getPlotItem().getAxis("left")
    assert axis.autoSIPrefixScale == 1.0 and axis.labelUnitPrefix == ""


def test_replay_present_opens_the_presentation_view(monkeypatch, tmp_path, qtbot):
    run_dir = tmp_path / "run"
    write_recovered_run(run_dir)
    seen = []

    class App:
        def exec(self):
            windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)
                       and w.isVisible()]
            seen.extend((w.presenting, w.menus.present_action.isChecked()) for w in windows)
            for w in windows:
                w.controller.shutdown()
                w.hide()
            return 0

        def quit(self):
            pass

    monkeypatch.setattr("ftgui.qt.window.app.make_app", App)  # replay opens its window there
    assert replay_app.run_replay(run_dir, 1.0, present=True) == 0
    assert seen == [(True, True)]


def write_constant_run(run_dir, loss: float, steps: int = 40) -> None:
    """A regression run whose loss is `loss` on every step, validated every 10 steps."""
    configmod.save(run_dir, RunConfig(steps=steps, checkpoint_every=10))
    with EventWriter(run_dir, 0) as w:
        w.emit("run_started", time=T0)
        for step in range(1, steps + 1):
            w.emit("step", time=T0 + step, step=step, loss=loss)
            if step % 10 == 0:
                w.emit("validation", time=T0 + step, step=step, val_loss=loss)


@pytest.mark.parametrize(("loss", "low", "high"), [(1e30, 0.9e30, 1.1e30),
                                                    (1e-30, 0.9e-30, 1.1e-30),
                                                    (2.5, 2.25, 2.75)])
def test_a_constant_loss_gets_distinct_ticks_in_every_view(window, qtbot, tmp_path, loss, low,
                                                           high):
    run_dir = tmp_path / "run"
    write_constant_run(run_dir, loss)
    window.open_run(run_dir)
    settle(qtbot, window)
    for presenting in (False, True):
        window.set_presenting(presenting)
        settle(qtbot, window)
        view_low, view_high = window.plot.getPlotItem().getViewBox().viewRange()[1]
        assert view_low == pytest.approx(low, rel=1e-9)
        assert view_high == pytest.approx(high, rel=1e-9)
        labels = tick_labels(window.plot)
        assert len(labels) >= 3 and len(set(labels)) == len(labels), labels
        values = [float(text) for text in labels]
        assert all(low <= value <= high for value in values)
    window.set_presenting(False)
    window.plot.set_log_y(True)
    settle(qtbot, window)
    view_low, view_high = window.plot.getPlotItem().getViewBox().viewRange()[1]
    exponent = np.log10(loss)
    pad = max(abs(exponent), 0) * 0.1 or 1.0
    assert (view_low, view_high) == pytest.approx((exponent - pad, exponent + pad))
    x, y = window.plot.traces[0].raw.getData()  # the curve itself, drawn (log10 of the loss)
    assert len(x) == 40 and y == pytest.approx(np.full(40, exponent))


def test_a_single_step_is_in_view(window, qtbot, tmp_path):
    run_dir = tmp_path / "run"
    write_constant_run(run_dir, 0.75, steps=1)
    window.open_run(run_dir)
    settle(qtbot, window)
    view_low, view_high = window.plot.getPlotItem().getViewBox().viewRange()[1]
    assert (view_low, view_high) == pytest.approx((0.675, 0.825))



@pytest.mark.parametrize("presenting", [False, True])
def test_the_next_run_s_first_step_is_in_view_not_in_the_last_run_s_width(
        window, qtbot, tmp_path, presenting):
    """A demo's second run opens after a first of 260 steps: its first step alone is fitted
    as a single step, not set in the middle of a 276-step-wide axis (the room saw -300..300)."""
    window.set_presenting(presenting)
    write_recovered_run(tmp_path / "first")
    window.open_run(tmp_path / "first")
    settle(qtbot, window)
    assert window.plot.getPlotItem().getViewBox().viewRange()[0][1] > 250
    write_constant_run(tmp_path / "second", 0.75, steps=1)
    window.open_run(tmp_path / "second")
    settle(qtbot, window)
    low, high = window.plot.getPlotItem().getViewBox().viewRange()[0]
    # the empty plot's width, 1 step and a margin, around the step
    assert (low, high) == pytest.approx((0.45, 1.55))

LONG_STORY = ("Killed at step 650 → restored checkpoint 600 from disk → resumed: 50 steps redone, "
              "7.9 s lost · the warm standby took over in 0.9 s · run totals: 2 incidents, "
              "95 steps redone, 12.4 s lost · goodput 81 %")


EDGE_STORY = ("Finished at step 600 · preempted at step 476 → restored checkpoint 476 → "
              "resumed: 0 steps redone, 16.9 s lost · goodput 27 %")  # wrapped "%" alone


@pytest.mark.parametrize("story", [LONG_STORY, EDGE_STORY])
@pytest.mark.parametrize("presenting", [True, False])
def test_the_story_line_takes_at_most_two_lines(window, qtbot, presenting, story):
    from ftgui.qt.window.story_banner import MIN_FONT_FRACTION, line_count

    window.set_presenting(presenting)
    banner = window.story_banner
    banner.set_story(story)
    qtbot.wait(50)
    QApplication.processEvents()
    width = banner.contentsRect().width()
    assert line_count(banner.shown_text(), banner.font(), width) <= 2
    # as Qt lays it out: two lines and the padding (6 px above and below at most)
    lines = QFontMetrics(banner.font()).lineSpacing()
    # (the presentation view reserves two lines of its base size: a shrunk font's two lines
    # sit in that band)
    assert banner.heightForWidth(banner.width()) <= max(2.5 * lines + 12,  # three: 3 * + 12
                                                        banner.minimumHeight())
    assert banner.text() == story  # the whole sentence for readers and tests
    base = banner.base_px()
    assert banner.font().pixelSize() >= base * MIN_FONT_FRACTION
    if banner.shown_text() != story:  # cut at a word: the whole sentence in the tooltip
        # the beginning cut, the figures stay; a state clause in front stays too (it was cut:
        # "… 800 · NaN loss at step 420" did not say the run had finished)
        shown = banner.shown_text()
        head = "Finished at step 600 · " if story.startswith("Finished") else ""
        assert shown.startswith(head) and "… " in shown
        kept, tail = shown.split("… ", 1)
        assert story.startswith(kept) and story.endswith(tail)
        assert banner.toolTip().startswith(story)
    banner.set_story("Training: step 1 of 400 · loss 2.0000")
    QApplication.processEvents()
    assert banner.shown_text() == banner.text()
    assert banner.font().pixelSize() == base  # a short sentence at the full size


@pytest.mark.parametrize("presenting", [True, False])
def test_many_faults_label_only_the_newest_in_a_strip_at_the_top(window, qtbot, tmp_path,
                                                                 presenting):
    from ftgui.qt.plot.focus import MAX_LABEL_ROWS, MAX_LABELLED

    run_dir = tmp_path / "run"
    write_chaos_run(run_dir)
    window.open_run(run_dir)
    window.set_presenting(presenting)
    settle(qtbot, window)
    plot = window.plot
    assert len(plot.markers) == 24  # 12 kills, 12 resumes
    shown = [line.label for _, _, line in plot.markers if line.label.isVisible()]
    assert 2 <= len(shown) <= MAX_LABELLED
    steps = sorted(line.value() for _, _, line in plot.markers)
    newest = steps[-MAX_LABELLED:]
    assert all(line.value() >= newest[0] for _, _, line in plot.markers
               if line.label.isVisible())
    rects = [label.sceneBoundingRect() for label in shown]
    assert not any(a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1:])
    box = plot.getPlotItem().getViewBox().sceneBoundingRect()
    legend = plot.legend.sceneBoundingRect()
    row = max(r.height() for r in rects) + 1
    # presenting, the legend is at the bottom left: two rows under a margin of 6 px; else
    # the rows beside the legend (top right) and two more under it
    top = box.top() + 6 if presenting else max(legend.bottom(), box.top() + 6)
    assert presenting == (legend.top() > box.center().y())
    lowest = top + MAX_LABEL_ROWS * row + (0 if presenting else row)
    assert all(r.bottom() <= lowest + 1 for r in rects), [r.bottom() for r in rects]
    assert lowest - box.top() < box.height() / 2


@pytest.mark.parametrize("presenting", [True, False])
def test_after_a_resume_the_redone_steps_are_magnified_and_the_resumed_curve_stays(
        window, qtbot, tmp_path, presenting):
    from ftgui.qt.plot.redone_inset import RedoneInset

    run_dir = tmp_path / "run"
    write_recovered_run(run_dir)  # killed at 230, resumed from 200, on to 260; loss 2/step
    window.open_run(run_dir)
    window.set_presenting(presenting)
    settle(qtbot, window)
    plot = window.plot
    inset = plot.findChild(RedoneInset, "redoneInset")
    assert inset.isVisible()
    x_range, y_range = inset.getPlotItem().getViewBox().viewRange()
    assert x_range == pytest.approx([200.0, 230.0])
    low, high = 2.0 / 230, 2.0 / 200  # the redone losses, both lines of training
    pad = (high - low) * 0.1
    assert y_range == pytest.approx([low - pad, high + pad])
    old_x, old_y = inset.old.getData()
    new_x, new_y = inset.new.getData()
    assert old_x.tolist() == list(range(200, 231))  # from the checkpoint's step on
    # the steps redone, from the restored step's state on (no stretch of the old curve alone)
    assert new_x.tolist() == list(range(200, 231))
    assert old_y.tolist() == new_y.tolist() == [2.0 / s for s in range(200, 231)]
    # the main view: the whole resumed curve in view, the inset within the plot, over no label
    view_low, view_high = plot.getPlotItem().getViewBox().viewRange()[1]
    assert view_low <= 2.0 / 260 and 2.0 / 201 <= view_high
    box = plot.getPlotItem().getViewBox().sceneBoundingRect()
    rect = inset.geometry()
    assert box.contains(plot.mapToScene(rect).boundingRect())
    for _kind, _step, line in plot.markers:
        if line.label.isVisible():
            label = plot.mapFromScene(line.label.sceneBoundingRect()).boundingRect()
            assert not label.intersects(rect)


def test_no_inset_before_a_resume_nor_on_the_time_axis(window, qtbot, tmp_path):
    from ftgui.qt.plot.redone_inset import RedoneInset

    run_dir = tmp_path / "run"
    write_constant_run(run_dir, 0.5)
    window.open_run(run_dir)
    settle(qtbot, window)
    assert not window.plot.findChild(RedoneInset, "redoneInset").isVisible()
    write_recovered_run(tmp_path / "crash")
    window.open_run(tmp_path / "crash")
    settle(qtbot, window)
    assert window.plot.inset.isVisible()
    window.plot.set_x_axis("time")
    settle(qtbot, window)
    assert not window.plot.inset.isVisible()


def test_no_inset_for_a_nan_rolled_back_one_step(window, qtbot, tmp_path):
    # from the snapshot of the step before, the old line's redone step is the NaN itself:
    # the inset showed one segment "magnified" with nothing to lie on (a presenter's finding)
    run_dir = tmp_path / "run"
    configmod.save(run_dir, RunConfig(steps=100, checkpoint_every=50))
    with EventWriter(run_dir, 0) as w:
        w.emit("run_started", time=T0)
        w.emit("process_started", time=T0, pid=10, restore=None, standby=False, role="chief",
               index=0, chief=True)
        for step in range(1, 61):
            w.emit("step", time=T0 + 0.25 * step, step=step, loss=None if step == 60 else 2 / step)
        w.emit("non_finite_loss", time=T0 + 15.1, step=60)
        w.emit("rolled_back", time=T0 + 15.2, from_step=60, to_step=59, checkpoint=None,
               source="memory")
        for step in range(60, 81):
            w.emit("step", time=T0 + 15.25 + 0.25 * step, step=step, loss=2 / step)
    window.open_run(run_dir)
    window.set_presenting(True)
    settle(qtbot, window)
    assert window.plot.regions  # the step is still shaded as redone
    assert not window.plot.inset.isVisible()
    # nor a legend entry for pale lost steps: the only one is the NaN, which draws nothing;
    # the shaded step is named
    assert [label.text for _sample, label in window.plot.legend.items] == [
        "training loss", "steps redone"]


def test_presenting_the_comparison_takes_the_plots_place_at_the_rooms_sizes(window, qtbot,
                                                                            tmp_path):
    from recorded import two_runs

    from ftgui.core.record import runs
    from ftgui.qt.runs.compare_view import COMPARE_COLOURS

    every_10, every_4 = two_runs(tmp_path / "runs")
    window.open_run(every_10)
    window.set_presenting(True)
    view = window.run_history.compare([runs.summarize(every_10), runs.summarize(every_4)])
    QApplication.processEvents()
    assert not view.isWindow() and view.parent() is window.right_splitter  # no window on top
    assert view.isVisible() and not window.plot_pane.isVisible()
    assert not view.table.isVisible() and view.back.isVisible()
    assert window.story_banner.isVisible()
    # whose story it tells: over two runs' figures its goodput read as the comparison's
    assert window.story_banner.text().startswith("every-10: Finished at step 20 · ")
    text = view.figures.text().replace("\u00a0", " ")  # each figure unbroken
    # the figures in a table of aligned columns (two runs' one-line headlines wrapped at
    # 16 px), each run named in its colour: no legend over the curves (it sat mid-left,
    # under three rows of labels)
    assert not view.plot.legend.isVisible()
    table = text.partition("<table")[2].partition("</table>")[0]
    cells = [re.sub(r"<[^>]+>", "", cell.replace("<br>", " ")) for cell in
             re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", table)]
    assert cells == [
        "", "steps redone", "time lost", "checkpoints", "checkpoint stall", "goodput",
        "■ every-10", "4", "2.4 s", "2", "0.10 s", "45 %",  # what the time lost is weighed against
        "■ every-4", "2", "2.2 s", "5", "0.25 s", "47 %"]
    # the two runs logged the same 20 losses to the bit: said, as their curves lie on each
    # other (a room saw one colour and not why)
    assert "same loss at all 20 steps in both runs, to the bit: one curve lies on the other" \
        in text
    px = int(text.partition("font-size:")[2].partition("px")[0])
    assert px == 24  # the presentation's size: the table fits at it
    header_px = int(text.partition("<th")[2].partition("font-size:")[2].partition("px")[0])
    # the column names smaller than the figures a room reads, a word a line (at 17 px the back
    # row read the figures without their names)
    assert header_px == 20 and "checkpoint<br>stall" in table
    final_px = int(text.rpartition("font-size:")[2].partition("px")[0])
    assert final_px == 24  # the verdict at full size
    colours = [trace.colour for trace in view.plot.overlays.values()]
    assert colours == list(COMPARE_COLOURS[:2])
    widths = [trace.raw.opts["pen"].widthF() for trace in view.plot.overlays.values()]
    assert widths[0] > widths[1] >= 3  # the first one wider: the other is seen lying on it
    kinds = sorted(kind for kind, _step, _line in view.plot.markers)
    assert kinds == ["crash", "resume", "resume"]  # both killed at 14: one marker
    view.plot.redraw()
    QApplication.processEvents()
    labels = sorted(line.label.toPlainText() for _kind, _step, line in view.plot.markers
                    if line.label.isVisible())
    # each run's resume labelled (a row of its own) after a square in its run's colour: the
    # room could not tell whose was whose
    assert labels == ["killed @ 14", "■ resume ← 10", "■ resume ← 12"]
    squares = {line.label.toPlainText(): re.findall(r"color:(#[0-9a-f]{6})", line.label.toHtml())
               for _kind, _step, line in view.plot.markers}
    assert squares["■ resume ← 10"][0] == COMPARE_COLOURS[0]
    assert squares["■ resume ← 12"][0] == COMPARE_COLOURS[1]
    window.set_presenting(False)  # F5 again: the comparison in its own window
    QApplication.processEvents()
    assert view.isWindow() and view.isVisible() and window.plot_pane.isVisible()
    assert window.story_banner.text().startswith("Finished at step 20 · ")
    assert view.table.isVisible() and not view.back.isVisible()
    window.set_presenting(True)
    QApplication.processEvents()
    view.back.click()  # back to the run
    QApplication.processEvents()
    assert not view.isVisible() and window.plot_pane.isVisible()
    assert window.story_banner.text().startswith("Finished at step 20 · ")  # unnamed again
    window.run_history.compare([runs.summarize(every_10), runs.summarize(every_4)])
    assert not window.plot_pane.isVisible()
    window.controller.stateChanged.emit("running", "")  # the next run: its plot in place
    QApplication.processEvents()
    assert not view.isVisible() and window.plot_pane.isVisible()
    view.close()


def test_final_losses_that_differ_are_shown_in_full():
    from ftgui.core.timeline.run_figures import RunFigures
    from ftgui.qt.runs.compare_view import final_line, loss_text

    def run(name, loss):
        return RunFigures(name, 0, 0, 0.0, 0, 0.0, 1.0, 1.0, 10, loss)

    a, b, c = run("a", 0.0118), run("b", 0.011800000000000001), run("c", 0.0118)
    rows = [a, b, c]
    assert loss_text(a, rows) == "0.0118"
    assert loss_text(b, rows) == "0.011800000000000001"  # one bit apart: both in full
    assert loss_text(c, rows) == "0.0118 = a, bitwise"
    assert final_line(rows) == ("final loss a 0.0118 · b 0.011800000000000001 · "
                                "c 0.0118 = a, bitwise")
    assert loss_text(run("d", None), rows) == "—"


def test_final_losses_far_apart_show_the_digits_that_tell_them_apart():
    """Over the comparison's plot, 0.07338647544384003 · 0.04708482325077057 were 17 digits
    each for a room to read; the table and the tooltip keep them in full."""
    from ftgui.core.timeline.run_figures import RunFigures
    from ftgui.qt.runs.compare_view import cells, final_line

    def run(name, loss):
        return RunFigures(name, 0, 0, 0.0, 0, 0.0, 1.0, 1.0, 10, loss)

    rows = [run("custom loop", 0.07338647544384003), run("model.fit", 0.04708482325077057)]
    assert final_line(rows) == "final loss custom loop 0.07339 · model.fit 0.04708"
    assert cells(rows[1], rows)[-1] == "0.04708482325077057"
    close = [run("a", 0.01234561), run("b", 0.01234549), run("c", 0.01234561)]
    assert final_line(close) == "final loss a 0.012346 · b 0.012345 · c 0.012346 = a, bitwise"
    closer = [run("a", 0.0123456781), run("b", 0.0123456789)]  # 7 digits: in full
    assert final_line(closer) == "final loss a 0.0123456781 · b 0.0123456789"
    assert final_line([run("a", 0.5), run("b", 0.5)]) == "final loss 0.5: b = a, bitwise"


def test_runs_equal_at_every_step_are_said_to_lie_on_each_other():
    """The checkpoint-interval demo's comparison: two runs equal to the bit at all 600 steps
    drew one orange curve with blue slivers, and a room did not know why (helper-36)."""
    import numpy as np

    from ftgui.core.timeline.run_figures import RunFigures
    from ftgui.qt.runs.compare_view import final_line, same_curves

    steps = np.arange(1.0, 601.0)
    losses = 1.0 / steps
    assert same_curves([(steps, losses), (steps.copy(), losses.copy())]) == 600
    other = losses.copy()
    other[300] = np.nextafter(other[300], 1.0)  # one bit apart at one step
    assert same_curves([(steps, losses), (steps, other)]) == 0
    assert same_curves([(steps, losses), (steps[:-1], losses[:-1])]) == 0  # a step short
    assert same_curves([(steps, losses)]) == 0
    nan = losses.copy()
    nan[5] = np.nan
    assert same_curves([(steps, nan), (steps, nan.copy())]) == 600

    def run(name, loss):
        return RunFigures(name, 0, 0, 0.0, 0, 0.0, 1.0, 1.0, 600, loss)

    rows = [run("every 10", 1 / 600), run("every 100", 1 / 600)]
    assert final_line(rows, 600) == ("same loss at all 600 steps in both runs, to the bit: "
                                     "one curve lies on the other")
    assert final_line([*rows, run("c", 1 / 600)], 1200) == (
        "same loss at all 1,200 steps in all 3 runs, to the bit: one curve lies on the other")
    assert final_line(rows) == "final loss 0.0016666666666666668: every 100 = every 10, bitwise"


def test_a_fit_runs_final_loss_says_it_is_the_epochs_running_mean():
    """model.fit logs Keras' running mean over the epoch: "custom loop 0.07339 · model.fit
    0.04708" told a room that model.fit trained better (a presenter's finding)."""
    import dataclasses

    from ftgui.core.timeline.run_figures import RunFigures
    from ftgui.qt.runs.compare_view import cells, final_line

    custom = RunFigures("custom loop", 0, 0, 0.0, 0, 0.0, 1.0, 1.0, 10, 0.07338647544384003)
    fit = dataclasses.replace(custom, name="model.fit", final_loss=0.04708482325077057,
                              running_mean=True)
    assert final_line([custom, fit]) == ("final loss custom loop 0.07339 · model.fit 0.04708 "
                                         "(epoch's running mean)")
    assert cells(fit, [custom, fit])[-1] == "0.04708482325077057 (epoch's running mean)"


def test_a_reopened_fit_run_is_known_by_its_loop(tmp_path):
    from recorded import crash_and_recovery

    from ftgui.core.record import events
    from ftgui.core.timeline.run_figures import read_run

    run_dir = crash_and_recovery(tmp_path / "custom")
    assert read_run(run_dir)[1].running_mean is False
    seen = events.read_all(run_dir)
    seen[0]["config"]["loop"] = "fit"  # as `ftgui train --loop fit` records it
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in seen))
    assert read_run(run_dir)[1].running_mean is True


def test_a_stage_names_the_pane_its_text_points_at():
    import tomllib

    from ftgui.core.demos import definitions

    found, _problems = definitions.discover()
    by_key = {demo.key: demo for demo in found}
    crash = by_key["crash-and-recover"]
    pointing = [stage for stage in crash.stages if "checkpoint table" in stage.text]
    assert pointing and all(stage.show == "checkpoints" for stage in pointing)
    for demo in found:  # every stage that tells the room to look at the table shows it,
        for stage in demo.stages:  # or speaks of the newest checkpoint (a presenter's finding)
            if "checkpoint table" in stage.text or re.search(
                    r"newest(\s+valid)?\s+checkpoint", stage.text):
                assert stage.show == "checkpoints", (demo.key, stage.text[:40])
    table = tomllib.loads(crash.path.read_text())
    table["stages"][1]["show"] = "plot"
    with pytest.raises(definitions.DemoError,
                       match=r"^stages\[1\]\.show: 'plot' is not one of checkpoints, incidents$"):
        definitions.parse(table, crash.path)


def test_presenting_a_stage_pane_shows_the_checkpoint_table_large(window, qtbot, tmp_path):
    from ftgui.qt.demos.panel import STAGE_PANE_PX, show_stage_pane

    run_dir = tmp_path / "run"
    write_recovered_run(run_dir)
    window.open_run(run_dir)
    window.set_presenting(True)
    QApplication.processEvents()
    assert not window.table.isVisible()
    show_stage_pane(window, "checkpoints", window.presenting)
    QApplication.processEvents()
    assert window.table.isVisible() and not window.processes.isVisible()
    assert not window.incident_panel.isVisible()
    assert window.table.font().pixelSize() == STAGE_PANE_PX
    assert window.plot.isVisible() and window.story_banner.isVisible()
    show_stage_pane(window, "incidents", window.presenting)
    QApplication.processEvents()
    assert window.incident_panel.isVisible() and not window.table.isVisible()
    show_stage_pane(window, "", window.presenting)
    QApplication.processEvents()
    assert not window.bottom.isVisible()
    show_stage_pane(window, "checkpoints", window.presenting)
    window.set_presenting(False)  # what the demo menu does when the view is left
    show_stage_pane(window, "checkpoints", window.presenting)
    QApplication.processEvents()
    assert window.table.isVisible() and window.processes.parentWidget().isVisible()
    assert window.table.font().pixelSize() != STAGE_PANE_PX



def test_a_stage_that_shows_the_table_again_keeps_it_filling_its_frame(window, qtbot, tmp_path):
    """Crash and recover shows the checkpoint table at the held stage and again at the kill's:
    the second time its columns shrank to their contents and left 65 px of its frame empty
    (the kill picture), until some later resize. The last column takes the rest, and every
    column fits its contents in the stage's font and again in the normal view's."""
    from ftgui.qt.demos.panel import show_stage_pane

    run_dir = tmp_path / "run"
    write_recovered_run(run_dir)
    window.resize(1280, 720)
    window.open_run(run_dir)
    window.set_presenting(True)
    header = window.table.horizontalHeader()
    for presenting in (True, True, False):
        show_stage_pane(window, "checkpoints", presenting)
        qtbot.wait(30)
        assert header.length() == window.table.viewport().width()
        for column in range(header.count() - 1):
            assert header.sectionSize(column) >= window.table.sizeHintForColumn(column)


def test_in_the_presentation_view_the_story_band_keeps_two_lines_so_a_kill_is_not_clipped(
        window, qtbot):
    """A one-line story, then a kill's two-line one: the band already has room for both
    lines when the text changes (it was painted cut at the top and bottom for 0.1-0.2 s
    until the layout caught up) and keeps its height, so the plot under it does not jump."""
    from ftgui.qt.window.story_banner import line_count

    window.set_presenting(True)
    banner = window.story_banner
    banner.set_story("Training: step 394 of 600 · loss 0.0123")
    qtbot.wait(50)
    one_line = banner.height()
    banner.set_story("Killed at step 395 → restored checkpoint 390 → waiting for the first "
                     "step of the restarted chief, from a warm standby")
    assert line_count(banner.shown_text(), banner.font(), banner.contentsRect().width()) == 2
    assert banner.height() >= banner.heightForWidth(banner.width())  # before any layout
    qtbot.wait(50)
    assert banner.height() == one_line
    window.set_presenting(False)
    qtbot.wait(50)
    banner.set_story("Training: step 394 of 600 · loss 0.0123")
    qtbot.wait(50)
    assert banner.height() < one_line  # the normal view keeps its one line

def test_a_story_too_long_even_small_keeps_its_figures(window, qtbot):
    window.set_presenting(True)
    window.resize(960, 720)  # the narrowest window; a demo's panel takes as much again
    banner = window.story_banner
    banner.set_story(LONG_STORY + " · " + LONG_STORY)
    qtbot.wait(50)
    QApplication.processEvents()
    shown = banner.shown_text()
    # the fault stays in front, as in a story that ends on its goodput
    assert shown.startswith("Killed at step 650 → … ")
    assert shown.endswith("95 steps redone, 12.4 s lost · goodput 81 %")
    assert banner.toolTip().startswith(LONG_STORY + " · " + LONG_STORY)
    lines = QFontMetrics(banner.font()).lineSpacing()
    assert banner.heightForWidth(banner.width()) <= max(2.5 * lines + 12,  # the shrunk font
                                                        banner.minimumHeight())  # the band


@pytest.mark.parametrize("story", [
    "Finished at step 800 · worker 1 killed at step 420 → waiting for Slurm: 12.5 s → restored "
    "checkpoint 400 → resumed: 20 steps redone, 3.2 s lost · goodput 88 %",
    "Finished at step 400 · worker 1 killed at step 250 → the coordinator trained on with the "
    "other workers; a replacement worker 1 joined: 0 steps redone, 0.7 s lost · goodput 97 %"])
def test_a_cut_end_banner_still_says_the_run_finished(window, qtbot, story):
    from ftgui.qt.window.story_banner import line_count
    """The demo panel docked at 1280 px: the end banner was cut to "… 800 · NaN loss …" and
    "… carried on with the remaining workers; …", the run's state gone."""
    window.set_presenting(True)
    window.demos.dock.show()
    window.resizeDocks([window.demos.dock], [384], Qt.Orientation.Horizontal)
    banner = window.story_banner
    banner.set_story(story)
    qtbot.wait(50)
    QApplication.processEvents()
    shown = banner.shown_text()
    head = story.split(" · ")[0]
    assert shown != story  # it does not fit whole here
    # the state and the fault stay in front, whole clauses are cut, the figures stay at the end
    kept, tail = shown.split(" → … " if " → … " in shown else " · … ")
    assert shown.startswith(head + " · ") and story.startswith(kept)
    assert story.endswith(tail) and "steps redone" in tail and "goodput" in tail
    assert story[:-len(tail)].endswith((" → ", "; ", ": "))  # whole clauses: "… worker 1 restarted"
    assert line_count(shown, banner.font(), banner.contentsRect().width()) <= 2


def test_a_cut_story_over_a_comparison_keeps_the_name_of_its_run(window, qtbot):
    """The checkpoint-interval demo's end, presenting with the panel docked: the story line
    over the comparison read "… at step 600 · killed at step 395 → …", the run's name cut,
    and the room took one run's figures for the comparison's (helper-36)."""
    from ftgui.qt.window.story_banner import line_count

    story = ("Finished at step 600 · killed at step 395 → restored checkpoint 300 → resumed: "
             "95 steps redone, 3.0 s lost · goodput 84 %")
    window.set_presenting(True)
    window.demos.dock.show()
    window.resizeDocks([window.demos.dock], [384], Qt.Orientation.Horizontal)
    banner = window.story_banner
    banner.set_story(story, "checkpoint every 100")
    qtbot.wait(50)
    QApplication.processEvents()
    shown = banner.shown_text()
    assert banner.text() == "checkpoint every 100: " + story
    assert shown != banner.text()  # it does not fit whole here
    assert shown.startswith("checkpoint every 100: Finished at step 600 · ")
    assert shown.endswith("95 steps redone, 3.0 s lost · goodput 84 %")
    assert line_count(shown, banner.font(), banner.contentsRect().width()) <= 2


def test_a_cut_story_keeps_whole_clauses_at_every_width(window):
    """At some widths the end banner read "worker 1 killed at step 250 → … 1 restarted: …",
    its clause cut after its first word; a cut falls after an arrow or a semicolon."""
    from ftgui.qt import theme
    from ftgui.qt.window.story_banner import fit

    story = ("Finished at step 400 · worker 1 killed at step 250 → the coordinator trained on "
             "with the other workers; a replacement worker 1 joined: 0 steps redone, "
             "0.7 s lost · goodput 97 %")
    font = window.story_banner.font()
    for width in range(700, 1000, 4):  # the banner beside a docked demo panel
        shown = fit(story, font, width, theme.presenting_px("story"))[1]
        if shown != story:
            tail = shown.split("… ", 1)[1]
            assert story[:-len(tail)].endswith((" → ", "; ", ": ")), (width, shown)


def test_the_comparison_of_two_constant_huge_losses_has_a_drawable_range(qtbot, tmp_path):
    from ftgui.core.record import runs
    from ftgui.qt.runs.compare_view import CompareView

    for name in ("a", "b"):
        write_constant_run(tmp_path / name, 1e30)
    view = CompareView()
    qtbot.addWidget(view)
    view.resize(1000, 640)
    view.show()
    assert view.show_runs([runs.summarize(tmp_path / "a"), runs.summarize(tmp_path / "b")]) == []
    view.plot.redraw()
    QApplication.processEvents()
    low, high = view.plot.getPlotItem().getViewBox().viewRange()[1]
    assert (low, high) == pytest.approx((0.9e30, 1.1e30))
    labels = tick_labels(view.plot)
    assert len(labels) >= 3 and len(set(labels)) == len(labels)
    model = view.table.model()
    assert [model.index(row, len(model.columns) - 1).data() for row in (0, 1)] == [
        "1e+30", "1e+30 = a, bitwise"]


CLAIMS = "\n".join(f"✓ claim {i} (checkpoint every {10 ** i}): resumed from checkpoint {i}00"
                   for i in range(1, 6))


@pytest.mark.parametrize("presenting", [False, True])
def test_the_demo_panel_s_labels_never_overlap_and_the_claims_come_into_view(
        window, qtbot, presenting):
    """A long last stage's text and five claims, in the dock at 1280x720: in the presentation
    view they do not fit, so the panel scrolls; no label is squeezed under the next, and the
    claims, shown last, are in view whole."""
    menu = window.demos
    [demo] = [d for d in menu.demos if d.key == "checkpoint-interval"]
    menu.dock.show()
    window.resizeDocks([menu.dock], [window.width() * 3 // 10], Qt.Orientation.Horizontal)
    window.set_presenting(presenting)
    menu.panel.set_presenting(presenting)
    panel = menu.panel
    long_text = f"{demo.stages[-1].text} {demo.stages[-2].text}"  # more than the room's panel
    panel.show_stage(demo.title, 4, 5, long_text)
    qtbot.wait(50)
    panel.show_result(CLAIMS)
    qtbot.wait(50)
    labels = [panel.title, panel.stage_label, panel.text, panel.result]
    for label in labels:
        assert label.height() >= label.heightForWidth(label.width())  # all its lines
    for upper, lower in zip(labels, labels[1:], strict=False):
        assert upper.geometry().bottom() < lower.geometry().top()
    assert _result_in_view(panel)
    scrolled = panel.scroll.verticalScrollBar().value()
    assert (scrolled > 0) == presenting  # the normal view fits it all
    panel.show_stage(demo.title, 3, 5, demo.stages[-2].text)  # a stage due after the end
    qtbot.wait(50)
    assert _result_in_view(panel)  # the claims stay in view
    panel.show_result("")
    panel.show_stage(demo.title, 4, 5, long_text)
    assert panel.scroll.verticalScrollBar().value() == 0  # a new stage reads from its title


def _result_in_view(panel) -> bool:
    viewport = panel.scroll.viewport()
    top = panel.result.mapTo(viewport, panel.result.rect().topLeft()).y()
    return 0 <= top and top + panel.result.height() <= viewport.height()


def test_a_stage_s_text_not_yet_given_its_height_shows_its_first_line(qtbot):
    """A label shorter than its text (a new stage's longer text, one frame before the layout
    gives it room) drew it centred, its first line cut above the label as if scrolled (a
    presenter's finding at the kill and resume stages): the panel's labels are drawn from the
    top, so their first line is what shows."""
    panel = DemoPanel()
    qtbot.addWidget(panel)
    panel.set_presenting(True)
    panel.text.setText("FIRST LINE, the one that was cut\n" + "\n".join(["more"] * 8))
    panel.text.resize(400, panel.text.heightForWidth(400))
    whole = _ink(panel.text.grab().toImage(), 50)
    panel.text.resize(400, 60)  # room for about two of its nine lines
    assert _ink(panel.text.grab().toImage(), 50) == whole  # its first lines, where they belong
    for label in (panel.title, panel.stage_label, panel.text, panel.prompt, panel.result):
        assert label.alignment() & Qt.AlignmentFlag.AlignTop, label.objectName()


def _ink(image, rows: int) -> list[tuple[int, int]]:
    """The dark pixels (text) of `image`'s first `rows` rows."""
    return [(x, y) for y in range(rows) for x in range(image.width())
            if image.pixelColor(x, y).lightness() < 128]


def test_the_demo_panels_stage_count_and_buttons_grow_in_the_presentation_view(qtbot):
    """"stage 2 of 5" and Previous / Next / Stop demo kept the application's 12 px beside the
    panel's 24 px sentences (a presenter's finding at 1280×720)."""
    panel = DemoPanel()
    qtbot.addWidget(panel)
    widgets = (panel.stage_label, panel.previous_button, panel.next_button, panel.stop_button)
    normal = [widget.font().pixelSize() for widget in widgets]
    panel.set_presenting(True)
    big = [widget.font().pixelSize() for widget in widgets]
    assert big[0] >= 16 and big[1:] == [theme.presenting_px("button")] * 3
    panel.set_presenting(False)
    assert [widget.font().pixelSize() for widget in widgets] == normal


def test_a_fault_first_story_keeps_its_fault_when_cut(qtbot):
    """A presenter's finding after K: "… at step 730 → restarting: waking the warm standby
    (TensorFlow already imported) to restore checkpoint 730" lost "Preempted", its key word."""
    from PySide6.QtGui import QFont

    from ftgui.qt.window.story_banner import fit, line_count

    story = ("Preempted at step 730 → restarting: waking the warm standby (TensorFlow already "
             "imported) to restore checkpoint 730")
    font = QFont(theme.font())
    px, shown = fit(story, font, 430, 32)
    font.setPixelSize(px)
    assert shown != story and line_count(shown, font, 430) <= 2
    assert shown.startswith("Preempted at step 730 → … ")
    assert story.endswith(shown.split("… ", 1)[1])


def test_a_live_story_that_ends_on_its_goodput_keeps_the_fault_in_front(window, qtbot):
    """A presenter's finding: during the parameter-server run the banner began "… carried on
    with the remaining workers", the worker that was hit cut away while the room read it."""
    window.set_presenting(True)
    window.demos.dock.show()
    window.resizeDocks([window.demos.dock], [384], Qt.Orientation.Horizontal)
    banner = window.story_banner
    story = ("Worker 1 killed at step 250 → the coordinator trained on with the other workers; "
             "a replacement worker 1 joined: 0 steps redone, 0.7 s lost · goodput 97 %")
    banner.set_story(story)
    qtbot.wait(50)
    QApplication.processEvents()
    shown = banner.shown_text()
    assert shown == story or shown.startswith("Worker 1 killed at step 250 → ")
    assert shown.endswith("0.7 s lost · goodput 97 %")


def test_a_run_of_a_demo_of_several_runs_is_named_in_the_story_line(window, tmp_path):
    """The chaos demo's reference run read "Training: step 300 of 600" for 23 s: nothing said
    it was the uninterrupted one (a presenter's finding). A run the demo ran as one of
    several is named; another run opened afterwards is not."""
    write_chaos_run(tmp_path / "reference", faults=0, total=600)
    write_chaos_run(tmp_path / "other", faults=0, total=600)
    window.demos._names = {(tmp_path / "reference").absolute(): "uninterrupted"}
    window.open_run(tmp_path / "reference")
    window.refresh_story()
    assert window.story_banner.text().startswith("uninterrupted: Training: step 600")
    window.open_run(tmp_path / "other")
    window.refresh_story()
    assert window.story_banner.text().startswith("Training: step 600")


def test_the_chaos_demos_five_faults_are_all_named_in_the_normal_view(window, qtbot, tmp_path):
    """A new user's chaos run: the lines at 143 and 192 had no labels (only the newest six
    markers were labelled, of its ten)."""
    run_dir = tmp_path / "run"
    write_chaos_run(run_dir, faults=5, total=600)
    window.resize(1280, 720)
    window.open_run(run_dir)
    settle(qtbot, window)
    labels = sorted(line.label.toPlainText() for _, _, line in window.plot.markers
                    if line.label.isVisible())
    assert [text for text in labels if text.startswith("killed")] == [
        f"killed @ {step}" for step in (100, 190, 280, 370, 460)]
