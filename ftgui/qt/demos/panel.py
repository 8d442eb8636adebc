"""The explanation panel of a guided demo: the demo's title, "stage 2 of 5", the stage's 2–4
sentences, the presenter's prompt ("Press K when ready: kill the chief") and, at the end, the
claims checked on the runs. It only renders; `ftgui.qt.demos.menu` drives it."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from ftgui.qt import theme
from ftgui.qt.controls import named_button

TEXT_PX = 15  # the stage's sentences, in pixels at scale 1
PRESENTING_TEXT_PX = 24  # in the presentation view
STAGE_SHARE = 0.7  # "stage 2 of 5" in the presentation view: this share of the text's size


class DemoPanel(QWidget):
    """Labels `demoTitle`, `demoStageLabel`, `demoText`, `demoPrompt`, `demoResult`; buttons
    `demoPreviousButton`, `demoNextButton`, `demoStopButton` (the demo menu connects them)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("demoPanel")
        self.title = _label("demoTitle")
        self.stage_label = _label("demoStageLabel")
        self.text = _label("demoText")
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.NoTextInteraction)
        self.prompt = _label("demoPrompt")
        self.prompt.setStyleSheet(f"color: {theme.ERROR}; font-weight: bold;")
        self.result = _label("demoResult")
        self.previous_button = _button("demoPreviousButton", "◀ Previous", "Page Up")
        self.next_button = _button("demoNextButton", "Next ▶", "Page Down")
        self.stop_button = _button("demoStopButton", "Stop demo", "Stop the demo's run and "
                                   "give the settings panel back what it showed before")
        row = QHBoxLayout()
        for button in (self.previous_button, self.next_button):
            row.addWidget(button)
        row.addStretch(1)
        row.addWidget(self.stop_button)
        layout = QVBoxLayout(self)
        self.scroll = self._scrolled(self.title, self.stage_label, self.text, self.prompt,
                                     self.result)
        layout.addWidget(self.scroll, 1)
        self._result_in_view = False  # the claims were shown last: keep them in view
        self.scroll.verticalScrollBar().rangeChanged.connect(self._bring_result_into_view)
        layout.addLayout(row)
        self._presenting = False
        self._restyle()
        theme.follow_scale(self, self._restyle)

    @staticmethod
    def _scrolled(*labels: QLabel) -> QScrollArea:
        """`labels` one under the other in a frameless scroll area (`demoScroll`): where the
        stage's text and the claims do not fit the dock (the presentation view's large text at
        1280x720), the rest scrolls instead of being squeezed under the next label or cut."""
        content = QWidget()
        column = QVBoxLayout(content)
        column.setContentsMargins(0, 0, 0, 0)
        for label in labels:
            column.addWidget(label)
        column.addStretch(1)
        area = QScrollArea()
        area.setObjectName("demoScroll")
        area.setWidget(content)
        area.setWidgetResizable(True)
        area.setFrameShape(QFrame.Shape.NoFrame)
        area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        return area

    def show_stage(self, title: str, index: int, total: int, text: str) -> None:
        """Stage `index` (0-based; -1: none yet) of `total`, with its `text`."""
        self.title.setText(title)
        shown = f"stage {index + 1} of {total}" if index >= 0 else f"{total} stages"
        shown_text = text if index >= 0 else "Starting…"
        if (shown, shown_text) != (self.stage_label.text(), self.text.text()):
            if not self._result_in_view:  # the claims, once shown, stay in view
                self.scroll.verticalScrollBar().setValue(0)  # a new stage: from its title
        self.stage_label.setText(shown)
        self.text.setText(shown_text)
        self.previous_button.setEnabled(index > 0)
        self.next_button.setEnabled(index + 1 < total)

    def show_prompt(self, text: str) -> None:
        self.prompt.setText(text)
        self.prompt.setVisible(bool(text))

    def show_result(self, text: str) -> None:
        """The claims checked at the end (`text`; "" hides them), scrolled into view: where
        the stage's text leaves them no room, they are what the room reads now."""
        self.result.setText(text)
        self.result.setVisible(bool(text))
        self._result_in_view = bool(text)
        self._bring_result_into_view()

    def _bring_result_into_view(self, *_range) -> None:
        # also on each change of the scroll range: the layout settles after show_result (the
        # scroll bar it brings narrows the text, which wraps to more lines)
        if self._result_in_view:
            self.scroll.ensureWidgetVisible(self.result, 0, 0)

    def set_presenting(self, on: bool) -> None:
        """Large sentences for the presentation view (`on`), normal ones otherwise."""
        self._presenting = bool(on)
        self._restyle()

    def _restyle(self, *_scale) -> None:
        size = PRESENTING_TEXT_PX if self._presenting else TEXT_PX
        pixels = round(size * theme.scale())
        self.title.setFont(theme.font_px(round(pixels * 1.15), bold=True))
        self.text.setFont(theme.font_px(pixels))
        self.prompt.setFont(theme.font_px(pixels, bold=True))
        self.result.setFont(theme.font_px(round(pixels * 0.8)))
        # "stage 2 of 5" and the buttons were the application's 12 px at the back of a room
        small = theme.font_px(round(pixels * STAGE_SHARE)) if self._presenting else theme.font()
        self.stage_label.setFont(small)
        button = theme.font_px(theme.presenting_px("button")) if self._presenting \
            else theme.font()
        for widget in (self.previous_button, self.next_button, self.stop_button):
            widget.setFont(button)


def make_dock(panel: DemoPanel, parent) -> QDockWidget:
    """The dock (`demoDock`) holding `panel`, hidden until a demo starts."""
    dock = QDockWidget("Guided demo", parent)
    dock.setObjectName("demoDock")
    dock.setWidget(panel)
    dock.setMinimumWidth(300)
    dock.hide()
    return dock


def _label(name: str) -> QLabel:
    label = QLabel("")
    label.setObjectName(name)
    label.setWordWrap(True)
    # QLabel centres its text vertically: while the layout has not yet given a new stage's
    # longer text its height (one frame), the text overflowed above and below, its first line
    # cut as if scrolled (a presenter's finding). From the top, only its end waits a frame.
    label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
    return label


def _button(name: str, text: str, tip: str) -> QPushButton:
    button = named_button(name, text, tip)
    button.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # Page Up / Down stay the menu's
    return button


STAGE_PANE_PX = 20  # the text of a pane a demo's stage shows in the presentation view


def show_stage_pane(window, pane: str, presenting: bool = True) -> None:
    """The pane a demo's stage points at, under the plot in the presentation view:
    "checkpoints" (the checkpoint table) or "incidents" (the Incidents tab), its text at
    `STAGE_PANE_PX`; "" hides the panes again. Not `presenting`: the panes as the normal view
    has them (both shown, the theme's font), their visibility left to the view."""
    from PySide6.QtWidgets import QTabWidget

    tabs = window.findChild(QTabWidget, "processTabs")
    boxes = {"checkpoints": window.table.parentWidget(), "incidents": tabs}
    wanted = pane if presenting else ""
    for name, box in boxes.items():
        box.setVisible(not wanted or name == wanted)
    if wanted == "incidents":
        tabs.setCurrentWidget(window.incident_panel)
    font = theme.font_px(round(STAGE_PANE_PX * theme.scale())) if wanted else theme.font()
    for widget in (window.table, window.incident_panel):
        widget.setFont(font)
    # each column to its contents in the new font, the last one stretched over the rest (the
    # table's `resizeColumnsToContents` shrank the stretched one too, until the next resize:
    # the kill picture's table ended 65 px short of its frame)
    window.table.horizontalHeader().resizeSections()
    if presenting:
        window.bottom.setVisible(bool(pane))
