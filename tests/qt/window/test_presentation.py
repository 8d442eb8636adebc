"""The presentation view, the story line and the zoom, driven offscreen at a projector's
1280×720: what a room sees after a crash and its automatic recovery."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import pytest
from conftest import PLOT_READY_MS
from PySide6.QtCore import QSettings
from PySide6.QtGui import QAction, QFontMetrics, QKeySequence
from PySide6.QtWidgets import QApplication, QLabel
from recorded import CHIEF, T0, write_chaos_run, write_recovered_run

from ftgui import cli
from ftgui.core.checkpoints import listing
from ftgui.core.record.events import EventWriter
from ftgui.core.settings import config as configmod
from ftgui.core.settings.config import RunConfig
from ftgui.qt import theme
from ftgui.qt.window.main_window import MainWindow


def settings_at(tmp_path) -> QSettings:
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def window(qtbot, tmp_path):
    """The window at 1280×720 and scale 1, shown, its plot created."""
    theme.set_scale(1.0)
    win = MainWindow(settings=settings_at(tmp_path))
    qtbot.addWidget(win)
    win.resize(1280, 720)
    with qtbot.waitSignal(win.plotReady, timeout=PLOT_READY_MS):
        win.show()
    yield win
    win.controller.shutdown()
    theme.set_scale(1.0)


def test_the_story_of_a_crash_and_its_recovery_is_readable_from_the_back(window, tmp_path):
    run_dir = tmp_path / "run"
    write_recovered_run(run_dir)
    window.open_run(run_dir)
    window.menus.present_action.trigger()  # View → Presentation
    assert window.presenting and window.menus.present_action.isChecked()

    banner = window.findChild(QLabel, "storyBanner")
    # lost: 68 → 80.25 s, plus the 7.5 s that steps 201–230 had taken; wall 95 s less the
    # 9.5 s before training_started
    assert banner.text() == ("Killed at step 230 → restored checkpoint 200 → resumed: 30 steps "
                             "redone, 19.8 s lost · goodput 77 %")
    model = window.incident_panel.model_
    row = [model.data(model.index(0, column)) for column in range(model.columnCount())]
    # the same figures, printed alike (issue 24: the row said 19.75 s, the banner 19.8 s)
    assert row[3] == "230" and row[4] == "30" and row[5] == "19.8 s" and row[6] == "disk"
    assert "goodput <b>77 %</b>" in window.incident_panel.totals.text()
    banner.ensurePolished()
    assert banner.font().pixelSize() >= 28
    assert banner.isVisible()
    axis = window.plot.getPlotItem().getAxis("bottom")
    assert axis.style["tickFont"].pixelSize() >= 20
    assert window.plot.getPlotItem().getAxis("left").style["tickFont"].pixelSize() >= 20
    assert window.plot.traces[1].raw.opts["pen"].widthF() >= 3
    assert all(line.pen.widthF() >= 3 for _, _, line in window.plot.markers)
    # the y axis fits the newest half, steps 130 on (loss 2/130 … 2/260), with room above for
    # the marker labels and the redone inset: not the first step's 2.0, nor only the redone
    # steps (which took the rest of the resumed curve out of view; issue 24)
    low, high = window.plot.getPlotItem().getViewBox().viewRange()[1]
    assert low < 2 / 260 and 2 / 130 < high < 0.035
    for hidden in (window.panel, window.table, window.processes, window.log,
                   window.plot_pane.tools, window.statusBar()):
        assert not hidden.isVisible()
    QApplication.processEvents()  # the layout gives the room to the plot
    assert window.plot.isVisible() and window.plot.width() > 1200


def test_marker_labels_never_overlap(window, tmp_path):
    run_dir = tmp_path / "run"
    write_recovered_run(run_dir)
    window.open_run(run_dir)
    window.set_presenting(True)
    window.plot.redraw()
    QApplication.processEvents()
    labels = [line.label for _, _, line in window.plot.markers]
    assert len(labels) == 2 and all(label.isVisible() for label in labels)
    first, second = (label.sceneBoundingRect() for label in labels)
    assert not first.intersects(second)


def test_leaving_the_presentation_view_restores_the_layout(window, tmp_path):
    window.main_splitter.setSizes([300, 980])
    before = (window.main_splitter.sizes(), window.right_splitter.sizes())
    shown = [w.isVisible() for w in (window.panel, window.table, window.processes, window.log,
                                     window.plot_pane.tools, window.statusBar())]
    assert all(shown)
    window.set_presenting(True)
    assert not window.panel.isVisible()
    window.set_presenting(False)
    assert [w.isVisible() for w in (window.panel, window.table, window.processes, window.log,
                                    window.plot_pane.tools, window.statusBar())] == shown
    assert (window.main_splitter.sizes(), window.right_splitter.sizes()) == before
    assert not window.menus.present_action.isChecked()
    assert window.plot.getPlotItem().getAxis("bottom").style["tickFont"].pixelSize() < 20
    window.story_banner.ensurePolished()
    assert window.story_banner.font().pixelSize() == theme.STORY_PX
    assert window.menus.present_action.shortcut() == QKeySequence("F5")


def test_zoom_changes_every_font_and_is_remembered(qtbot, tmp_path):
    theme.set_scale(1.0)
    base = QApplication.font().pointSizeF()
    win = MainWindow(settings=settings_at(tmp_path))
    qtbot.addWidget(win)
    menus = win.menus
    assert [a.shortcut().toString() for a in (menus.zoom_out_action, menus.zoom_reset_action)] \
        == ["Ctrl+-", "Ctrl+0"]
    assert QKeySequence("Ctrl++") in menus.zoom_in_action.shortcuts()
    menus.zoom_in_action.trigger()
    menus.zoom_in_action.trigger()
    assert theme.scale() == 1.25
    assert QApplication.font().pointSizeF() == pytest.approx(1.25 * base)
    assert win.plot.getPlotItem().getAxis("left").style["tickFont"].pointSizeF() == \
        pytest.approx(1.25 * base)
    screen = win.screen().availableGeometry().width()
    assert win.minimumWidth() == min(round(theme.MIN_WINDOW_WIDTH * 1.25), screen)
    win.controller.shutdown()
    win.close()

    theme.set_scale(1.0)
    again = MainWindow(settings=settings_at(tmp_path))  # the next launch
    qtbot.addWidget(again)
    assert theme.scale() == 1.25
    again.menus.zoom_out_action.trigger()
    assert theme.scale() == 1.1
    again.menus.zoom_reset_action.trigger()
    assert theme.scale() == 1.0 and QApplication.font().pointSizeF() == pytest.approx(base)
    assert settings_at(tmp_path).value("view/zoom") is None
    again.controller.shutdown()


def test_the_view_menu_lists_presentation_and_zoom(window):
    texts = [a.text() for a in window.menus.view_menu.actions() if not a.isSeparator()]
    assert texts == ["&Presentation", "Zoom &in", "Zoom &out", "&Reset zoom"]
    assert window.findChild(QAction, "presentAction") is window.menus.present_action
    assert window.menus.run_menu.title() == "&Run"
    assert window.menus.faults_menu.title() == "&Faults"


def test_present_flag_opens_the_presentation_view(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr("ftgui.qt.window.app.run_app",
                        lambda run_dir=None, present=False: calls.append((run_dir, present)) or 0)
    assert cli.main(["--present"]) == 0
    assert cli.main(["open", str(tmp_path), "--present"]) == 0
    assert cli.main(["--present", "open", str(tmp_path)]) == 0
    assert cli.main(["open", str(tmp_path)]) == 0
    assert calls == [(None, True), (tmp_path, True), (tmp_path, True), (tmp_path, False)]
    with pytest.raises(SystemExit) as refused:
        cli.main(["--present", "devices"])
    assert refused.value.code == 2


def test_the_state_label_says_starting_or_restarting_until_a_step_arrives(window, tmp_path):
    run_dir = tmp_path / "run"
    configmod.save(run_dir, RunConfig(steps=400))
    with EventWriter(run_dir, 0) as w:
        w.emit("process_started", time=T0, pid=10, restore=None, standby=False, **CHIEF)
    window.open_run(run_dir)
    window.controller.stateChanged.emit("running", "")  # as the supervisor says once started
    assert window.state_label.text() == "starting — waiting for the first step"
    assert window.story_banner.text() == "Starting → importing TensorFlow"
    window.controller.timeline.feed([{"event": "step", "time": T0 + 9, "attempt": 0,
                                      "step": 1, "loss": 2.0}])
    window.controller.timelineChanged.emit(window.controller.timeline)
    assert window.state_label.text() == "running"
    assert window.story_banner.text() == "Training: step 1 of 400 · loss 2.0000"
    # killed, and its restart started: not "starting" beside "Killed at step 1 → restarting"
    window.controller.timeline.feed([
        {"event": "fault_injected", "time": T0 + 10, "attempt": 0, "kind": "kill",
         "target": "chief", "step": 1, "source": "user"},
        {"event": "process_exited", "time": T0 + 10.1, "attempt": 0, "role": "chief",
         "index": 0, "pid": 10, "signal": 9, "decisive": True, "chief": True},
        {"event": "process_started", "time": T0 + 10.2, "attempt": 1, "pid": 11,
         "restore": None, "standby": False, **CHIEF}])
    window.controller.timelineChanged.emit(window.controller.timeline)
    assert window.state_label.text() == "restarting — waiting for the first step"
    assert window.story_banner.text().startswith("Killed at step 1 → restarting")


@pytest.mark.parametrize("width", [1024, 1280])
def test_the_settings_panel_shows_its_values_whole(qtbot, tmp_path, width):
    """At 1024 and 1280 px the left column fits the panel at its preferred width: no value
    cut ('MirroredStrat', 'esnet' and a horizontal scroll bar were a new user's finding) and
    event log lines wrap instead of running off the column's edge."""
    theme.set_scale(1.0)
    win = MainWindow(settings=settings_at(tmp_path))
    qtbot.addWidget(win)
    win.resize(width, 720)
    win.show()
    qtbot.waitExposed(win)
    QApplication.processEvents()
    assert win.panel.width() >= win.panel.sizeHint().width()
    assert not win.panel_scroll.horizontalScrollBar().isVisible()
    assert win.log.lineWrapMode() == win.log.LineWrapMode.WidgetWidth
    win.controller.shutdown()


@pytest.mark.parametrize("forked", [False, True])
def test_the_checkpoint_table_shows_its_columns_whole_at_1280(qtbot, tmp_path, forked):
    """At 1280 px the checkpoint table's columns fit its pane: the newest valid row is bold,
    and its 'valid' column was cut to 'y…' (its header to 'valic') — a new user's finding;
    again beside a fork's archived rows ("↳ 160 (fork 2)") and a scroll bar (a second's)."""
    from PySide6.QtGui import QFont, QFontMetrics

    theme.set_scale(1.0)
    run_dir = tmp_path / "run"
    configmod.save(run_dir, RunConfig(steps=1200, checkpoint_every=100))
    with EventWriter(run_dir, attempt=0) as writer:
        writer.emit("run_started")
    directory = listing.checkpoint_dir(run_dir)
    archive = run_dir / "history" / "fork-2" / "checkpoints"
    strategy, replicas = ("one-device", 1) if forked else ("mirrored", 2)
    for folder, steps in [(directory, (800, 900, 1000, 1100, 1200)),
                          *([(archive, (1000, 1100, 1200))] if forked else [])]:
        folder.mkdir(parents=True)
        for step in steps:
            (folder / f"ckpt-{step}.index").write_bytes(b"i" * 800)
            (folder / f"ckpt-{step}.data-00000-of-00001").write_bytes(b"d" * 60_000)
            listing.write_metadata(folder / f"ckpt-{step}", loss=0.0017995, val_loss=0.10132,
                                   val_accuracy=0.9777, time=1796615489.68, epoch=54,
                                   strategy=strategy, replicas=replicas)
    win = MainWindow(settings=settings_at(tmp_path))
    qtbot.addWidget(win)
    win.resize(1280, 720)
    win.show()
    qtbot.waitExposed(win)
    win.open_run(run_dir)
    QApplication.processEvents()
    table, model = win.table, win.table.model()
    header = table.horizontalHeader()
    if forked:
        steps = [model.index(row, 0).data() for row in range(model.rowCount())]
        assert "↳ 1000 (fork 2)" in steps and steps[-1] == "★ 1200"
    else:
        assert header.length() <= table.viewport().width()
    bold = QFont(table.font())
    bold.setBold(True)
    last = model.columnCount() - 1
    shown = model.index(model.rowCount() - 1, last).data()
    assert shown == "yes"
    assert header.sectionSize(last) >= QFontMetrics(bold).horizontalAdvance(shown) + 8
    win.controller.shutdown()


@pytest.mark.parametrize("run", ["recovered", "five scheduled preemptions"])
def test_the_incident_table_shows_the_story_lines_figures_at_1280_px(window, tmp_path, qtbot,
                                                                     run):
    """The normal view at 1280×720: the incident's redone steps, time lost and source are in
    view without scrolling (the "redone" column was cut off behind detect and recovery; a
    user's chaos run, its faults "kill (schedule)" and a vertical scroll bar, cut "source")."""
    from PySide6.QtWidgets import QTabWidget

    from ftgui.qt.panes.incident_table import COLUMNS

    if run == "recovered":
        write_recovered_run(tmp_path / "run")
    else:
        write_chaos_run(tmp_path / "run", faults=5, total=600, kind="preempt",
                        source="schedule")
    window.open_run(tmp_path / "run")
    tabs = window.findChild(QTabWidget, "processTabs")
    tabs.setCurrentWidget(window.incident_panel)
    table = window.incident_panel.table
    qtbot.waitUntil(lambda: table.isVisible() and table.viewport().width() > 0)
    assert table.viewport().width() < 420  # the panel's share of a 1280 px window
    for name in ("at step", "steps lost", "time lost", "source"):
        column = COLUMNS.index(name)
        right = table.columnViewportPosition(column) + table.columnWidth(column)
        assert 0 <= table.columnViewportPosition(column) and right <= table.viewport().width(), \
            name


def test_the_run_buttons_and_the_state_grow_in_the_presentation_view(window):
    """The room sees which button the presenter presses and the state it leads to."""
    widgets = (window.kill_button, window.start_button, window.state_label)

    def pixel_sizes():
        for widget in widgets:
            widget.ensurePolished()
        return [widget.font().pixelSize() for widget in widgets]

    normal = pixel_sizes()
    window.set_presenting(True)
    assert pixel_sizes() == [theme.presenting_px("button")] * 2 + [theme.presenting_px("state")]
    assert all(big > small for big, small in zip(pixel_sizes(), normal, strict=True))
    window.set_presenting(False)
    assert pixel_sizes() == normal


def test_beside_a_demo_panel_the_buttons_keep_their_text_and_the_state_wraps(qtbot):
    """The top bar 880 px wide (the window at 1280 beside the guided demo's panel) with a long
    state: "Checkpoint now" lost its first letters; the state label takes two lines instead."""
    from ftgui.qt.window.top_bar import TopBar

    bar = TopBar()
    qtbot.addWidget(bar)
    bar.resize(880, 120)
    bar.show()
    bar.state_label.setText("held — at step 650 for the presenter")
    bar.set_presenting(True)
    qtbot.waitUntil(lambda: bar.checkpoint_button.width() > 0)
    QApplication.processEvents()
    for button in bar.buttons():
        assert button.font().pixelSize() == theme.presenting_px("button")
        assert button.width() >= button.sizeHint().width(), button.text()
    assert bar.state_label.geometry().right() <= bar.width()
    # two lines high whatever the state: no clipped frame while the layout catches up, and
    # nothing under the bar moves when the state changes length
    label = bar.state_label
    top = bar.story_banner.geometry().top()
    label.setText("running")
    for _ in range(3):
        QApplication.processEvents()
    assert label.height() >= 2 * QFontMetrics(label.font()).lineSpacing()
    assert bar.story_banner.geometry().top() == top


def test_the_state_label_names_a_held_faults_worker_in_words():
    from ftgui.qt.window.top_bar import held_words

    assert held_words(250, "worker:1") == ("held", "at step 250 for the fault of worker 1")


def test_the_state_label_says_stopping_while_a_preempted_chief_saves(qtbot):
    """Preemption demo: the state label said "running" beside "Preempted at step 730 →
    saving its step and stopping" (a presenter's grab)."""
    from ftgui.core.timeline.model import Timeline
    from ftgui.qt.window.top_bar import TopBar

    bar = TopBar()
    qtbot.addWidget(bar)
    timeline = Timeline()
    timeline.feed([{"event": "run_started", "time": 1.0, "attempt": 0},
                   {"event": "process_started", "time": 1.0, "attempt": 0, "role": "chief",
                    "pid": 10},
                   {"event": "step", "time": 2.0, "attempt": 0, "step": 730, "loss": 0.3},
                   {"event": "fault_injected", "time": 2.1, "attempt": 0, "kind": "preempt",
                    "target": "chief", "step": 730, "source": "user"}])
    bar.show_run(timeline, "running", "")
    assert bar.story_banner.text().startswith("Preempted at step 730 → saving its step")
    assert bar.state_label.text() == "stopping — saving its step"
    assert bar.state_label.property("state") == "recovering"  # amber
    timeline.feed([{"event": "process_exited", "time": 2.6, "attempt": 0, "role": "chief",
                    "index": 0, "pid": 10, "chief": True, "exit_code": 42, "decisive": True}])
    bar.show_run(timeline, "preempted", "saved at the current step and stopped")
    assert bar.state_label.text() == "preempted — saved at the current step and stopped"
