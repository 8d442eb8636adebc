"""The story line (`storyBanner`): one sentence of the run's state, in at most two lines.

A long sentence in the presentation view's 32 px wrapped to three lines at 1280 px and took
the plot's height. Here the font is made smaller, down to `MIN_FONT_FRACTION` of its size, until
the sentence fits in `MAX_LINES`; past that its beginning is cut at a word ("… "), as a story
sentence ends on its figures (steps redone, seconds lost, goodput), and the whole sentence is
in the tooltip. A short state clause in front ("Finished at step 1200 · ") is kept before the
cut, and the fault's clause after it when it fits, whole clauses (after an arrow, a semicolon
or a colon) cut between them: the room
read "… 800 · NaN loss at step 420" and not that the run had finished. A sentence that starts
with its fault ("Preempted at step 730 → …") keeps that clause the same way.
`text()` is always the whole sentence (what tests and screen readers read);
`shown_text()` is what is painted.
"""

from __future__ import annotations

import math
import re

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QLabel, QSizePolicy

from ftgui.core.formatting import NO_BREAK, unbroken_units
from ftgui.qt import theme

MAX_LINES = 2
MIN_FONT_FRACTION = 0.75  # the smallest font tried before the sentence is cut
ELLIPSIS = "… "
STATE_DOT = " · "  # after the state clause ("Finished at step 1200 · killed at …")
ARROW = " → "  # a first clause with an arrow tells an incident, not the state
CLAUSE_MARKS = (ARROW, "; ", ": ")  # where a story's clauses begin: a cut keeps them whole
CLAUSE_START = re.compile("|".join(map(re.escape, CLAUSE_MARKS)))
MAX_STATE_CHARS = 40  # a state clause kept in front of the cut: "Finished at step 1200"
TOOLTIP = "The run's state and its last incident: the figures are the Incidents tab's"
# QLabel paints wrapped text a little narrower than its contents (an indent of half an "x"
# with a styled frame): a sentence measured to fit within 8 px of the width wrapped a word
# onto a third line. Fit to this share of the width, less a few pixels.
WIDTH_SLACK = (0.03, 8)


def line_count(text: str, font: QFont, width: int) -> int:
    """Lines `text` takes when word-wrapped at `width` pixels in `font`."""
    metrics = QFontMetrics(font)
    rect = metrics.boundingRect(QRect(0, 0, max(width, 1), 1 << 20),
                                int(Qt.TextFlag.TextWordWrap), text)
    return max(1, round(rect.height() / metrics.lineSpacing()))


def fit(text: str, font: QFont, width: int, base_px: int,
        max_lines: int = MAX_LINES, owner: str = "") -> tuple[int, str]:
    """(pixel size, text to paint) that puts `owner` (a prefix always kept: "custom loop: ",
    the run a comparison's story line tells) and `text` in at most `max_lines` lines of
    `width` pixels: the largest size from `base_px` down to `MIN_FONT_FRACTION` of it at
    which the whole text fits, else the smallest with the text's beginning cut at a word and
    `ELLIPSIS` put in front (the figures a story sentence ends on stay), after its state
    clause ("Finished at step 1200 · … ") when it starts with a short one."""
    sized = QFont(font)
    floor = math.ceil(base_px * MIN_FONT_FRACTION)
    for px in range(base_px, floor - 1, -1):
        sized.setPixelSize(px)
        if line_count(owner + text, sized, width) <= max_lines:
            return px, owner + text
    head, dot, rest = text.partition(STATE_DOT)
    if dot and ARROW not in head and len(head) <= MAX_STATE_CHARS:
        # "Finished at step 1200 · killed at step 650 → … resumed: 50 steps redone, …": the
        # state, the fault and the figures stay, whole clauses cut between them
        fault, arrow, after = rest.partition(ARROW)
        keeps = [(head + dot + fault + arrow, after)] if arrow else []
        for keep, remaining in [*keeps, (head + dot, rest)]:
            cut = _cut_clauses(remaining, sized, width, max_lines, owner + keep) or \
                _cut_beginning(remaining, sized, width, max_lines, owner + keep)
            if cut is not None:
                return floor, cut
    fault, arrow, after = text.partition(ARROW)
    if arrow and STATE_DOT not in fault and len(fault) <= MAX_STATE_CHARS:
        # "Preempted at step 730 → … to restore checkpoint 730": the fault stays, as after a
        # state clause (the room read "… at step 730 → restarting: …", its key word cut)
        cut = _cut_clauses(after, sized, width, max_lines, owner + fault + arrow) or \
            _cut_beginning(after, sized, width, max_lines, owner + fault + arrow)
        if cut is not None:
            return floor, cut
    return floor, _cut_beginning(text, sized, width, max_lines, owner) or owner + ELLIPSIS


def _cut_clauses(text: str, font: QFont, width: int, max_lines: int, keep: str) -> str | None:
    """`keep`, `ELLIPSIS` and the most last whole clauses (after a `CLAUSE_MARKS`) of
    `text` that fit in `max_lines`; None when not even the last one fits. ("… worker 1
    restarted: …", not "… 1 restarted: …", a word cut from its clause.)"""
    for start in (match.end() for match in CLAUSE_START.finditer(text)):
        shown = keep + ELLIPSIS + text[start:]
        if line_count(shown, font, width) <= max_lines:
            return shown
    return None



def _cut_beginning(text: str, font: QFont, width: int, max_lines: int,
                   keep: str) -> str | None:
    """`keep`, `ELLIPSIS` and the most last words of `text` that fit in `max_lines`; None when
    not even one word fits after `keep`."""
    words = text.split(" ")
    low, high = 0, len(words)  # the most last words that fit after the ellipsis: bisection
    while low < high:
        middle = (low + high + 1) // 2
        if line_count(keep + ELLIPSIS + " ".join(words[-middle:]), font, width) <= max_lines:
            low = middle
        else:
            high = middle - 1
    if keep and low == 0:
        return None
    return keep + ELLIPSIS + " ".join(words[len(words) - low:])


class StoryBanner(QLabel):
    """The story line: `set_story(text)`; sized or cut to `MAX_LINES` at its width."""

    def __init__(self, text: str = "", parent=None):
        super().__init__(parent)
        self.setObjectName("storyBanner")
        self.setWordWrap(True)
        self.setSizePolicy(QSizePolicy.Policy.Ignored,
                           QSizePolicy.Policy.Preferred)  # wraps, never widens
        self.setProperty("presenting", False)
        self._story = self._owner = ""
        self._px = 0  # the font size the stylesheet gives now (0: the theme's)
        self.set_story(text)

    def text(self) -> str:  # noqa: D102 (QLabel's; the whole sentence, not the cut one)
        return self._story

    def shown_text(self) -> str:
        """What is painted: the sentence, or "…" and its end when it does not fit (its
        no-break spaces as spaces)."""
        return super().text().replace(NO_BREAK, " ")

    def set_story(self, text: str, owner: str | None = None) -> None:
        """Show `text`, after "OWNER: " when `owner` (the run it tells, over a comparison:
        kept whole when the sentence is cut; the room lost it once)."""
        self._owner = f"{owner}: " if owner else ""
        self._story = self._owner + text
        self.setAccessibleName(self._story)
        self.refit()

    def restyle(self) -> None:
        """The theme's stylesheet again (after a scale or view change), then fit."""
        self._px = 0
        self.setStyleSheet(theme.stylesheet())
        self.refit()

    def base_px(self) -> int:
        presenting = bool(self.property("presenting"))
        return theme.presenting_px("story") if presenting else round(theme.STORY_PX *
                                                                    theme.scale())

    def refit(self) -> None:
        width = round(self.contentsRect().width() * (1 - WIDTH_SLACK[0])) - WIDTH_SLACK[1]
        base = self.base_px()
        owner, told = self._owner, unbroken_units(self._story[len(self._owner):])
        story = owner + told
        px, shown = fit(told, self.font(), width, base, owner=owner) if width > 40 \
            else (base, story)
        if px != (self._px or base):
            self._px = px
            self.setStyleSheet(theme.stylesheet() + "\n" + _size_rule(px))
        if shown != super().text():
            super().setText(shown)
        self._reserve_lines(base)  # the base size's: a text shrunk to fit needs no more
        self.setToolTip(TOOLTIP if shown == story else f"{self._story}\n\n{TOOLTIP}")

    def _reserve_lines(self, px: int) -> None:
        """In the presentation view the banner is always `MAX_LINES` high at `px`: a story
        that grows to two lines at a kill (or a font that shrinks or grows back with the text)
        was painted clipped until the layout caught up (0.1-0.2 s), and the plot under it
        jumped at every incident."""
        if not self.property("presenting"):
            self.setMinimumHeight(0)
            return
        font = QFont(self.font())
        font.setPixelSize(px)
        frame = self.height() - self.contentsRect().height()  # the stylesheet's padding
        self.setMinimumHeight(MAX_LINES * QFontMetrics(font).lineSpacing() + max(frame, 0))

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.refit()


def _size_rule(px: int) -> str:
    """A stylesheet rule after the theme's that sets the banner's font size in both views."""
    return (f'QLabel#storyBanner, QLabel#storyBanner[presenting="true"] '
            f"{{ font-size: {px}px; }}")

