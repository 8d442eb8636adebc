"""The main window's layout: which widget goes where, at sizes that fit 1280×720."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QLabel,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ftgui.qt.window.top_bar import TopBar


def build_layout(window) -> None:
    """Lay out `window` (a `MainWindow` whose panel, log, tables, plot pane and controller exist):
    the top bar, the settings over the event log on the left, the plot over the checkpoints and
    the processes / incidents on the right, the status line. Sets the window's attributes for
    the widgets it makes (`top_bar`, the buttons, `left`, `bottom`, splitters, `status_label`)."""
    window.top_bar = TopBar()
    bar = window.top_bar
    window.start_button, window.kill_button = bar.start_button, bar.kill_button
    window.preempt_button, window.resume_button = bar.preempt_button, bar.resume_button
    window.checkpoint_button, window.state_label = bar.checkpoint_button, bar.state_label
    window.story_banner = bar.story_banner

    window.panel_scroll = QScrollArea()
    window.panel_scroll.setObjectName("configScroll")
    window.panel_scroll.setWidgetResizable(True)
    window.panel_scroll.setWidget(window.panel)
    window.panel_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)

    # left: the settings over the event log (its lines are short sentences); right: the
    # plot over the checkpoints and the processes / incidents, each wide enough at 1280 px
    window.left = QSplitter(Qt.Orientation.Vertical)
    window.left.setObjectName("leftSplitter")
    window.left.addWidget(window.panel_scroll)
    window.left.addWidget(_titled("Event log", window.log))
    window.left.setSizes([430, 220])
    window.bottom = QSplitter(Qt.Orientation.Horizontal)
    window.bottom.setObjectName("bottomSplitter")
    window.bottom.addWidget(_titled("Checkpoints", window.table))
    window.bottom.addWidget(_process_tabs(window))
    window.bottom.setSizes([600, 380])
    window.right_splitter = QSplitter(Qt.Orientation.Vertical)
    window.right_splitter.addWidget(window.plot_pane)  # the plot under its view tools
    window.right_splitter.addWidget(window.bottom)
    window.right_splitter.setSizes([420, 260])
    window.main_splitter = QSplitter(Qt.Orientation.Horizontal)
    window.main_splitter.addWidget(window.left)
    window.main_splitter.addWidget(window.right_splitter)
    window.main_splitter.setStretchFactor(1, 1)
    window.main_splitter.setSizes([panel_column_width(window), 1000])

    central = QWidget()
    layout = QVBoxLayout(central)
    layout.addWidget(bar)
    layout.addWidget(window.main_splitter, 1)
    window.setCentralWidget(central)
    window.status_label = QLabel("")
    window.status_label.setObjectName("statusLabel")
    window.statusBar().addWidget(window.status_label, 1)
    window.resize(1360, 820)

def _process_tabs(window) -> QTabWidget:
    tabs = QTabWidget()
    tabs.setObjectName("processTabs")
    tabs.addTab(window.processes, "Processes")
    tabs.addTab(window.incident_panel, "Incidents")
    window.controller.incidentsChanged.connect(window.show_incidents)
    return tabs


def _titled(title: str, widget: QWidget) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 4, 0, 0)
    label = QLabel(f"<b>{title}</b>")
    layout.addWidget(label)
    layout.addWidget(widget, 1)
    return box


def panel_column_width(window) -> int:
    """Pixels for the left column: the settings panel at its preferred width (every value
    whole: 'MirroredStrategy', 'all on this machine'), its vertical scroll bar and frame; a
    narrower column cut the values at 1280 px (a new user's finding)."""
    scroll = window.panel_scroll
    return (window.panel.sizeHint().width() + scroll.verticalScrollBar().sizeHint().width()
            + 2 * scroll.frameWidth())
