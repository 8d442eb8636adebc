"""The look of ftgui's Qt views in one place: colours, pen widths, font sizes and one scale factor.

Views read their colours and widths here instead of writing hex codes of their own. `set_scale(f)`
enlarges every font and line by `f` (View → Zoom and the presentation view set it): it sets the
application font at once and emits `signals.scaleChanged(f)`; a view re-reads what it drew with
(`pen_width`, `marker_pen`, `style`) in a slot, or through `follow_scale(widget, update)`. Widths
and pixel sizes below are given at scale 1.

The stylesheet is generated from these values (`stylesheet()`), so there is no `.qss` file to
keep in step with them. It is set on each widget it names (`style(widget)`), never on a parent:
a stylesheet on the window would restyle every child (Qt's stylesheet style draws spin boxes
lower than the desktop style does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QFont, QPen
from PySide6.QtWidgets import QApplication, QWidget

# ------------------------------------------------------------------------------ colours
ERROR = "#b00020"  # killed, failed, an invalid checkpoint
WARNING = "#b07800"  # dark amber: preempted, recovering (legible on white)
SUCCESS = "#1a7f37"
MUTED = "#666666"  # a process or run that ended on its own
TEXT = "#222222"
SECONDARY_TEXT = "#555555"
DEFAULT_STATE_COLOUR = "#444444"  # a state not listed below

STATE_COLOURS = {
    "running": "#1f77b4",
    "recovering": WARNING,
    "finished": SUCCESS,
    "killed": ERROR,
    "preempted": WARNING,
    "failed": ERROR,
    "stopped": MUTED,
    "interrupted": ERROR,
    "busy": DEFAULT_STATE_COLOUR,  # the run is held by a process outside this window
    "idle": MUTED,
}

# Vertical markers on the loss plot, one colour per kind of event.
MARKER_COLOURS = {
    "crash": "#d62728",
    "preemption": WARNING,
    "failed": "#8c564b",  # a process that exited with an error of its own
    "hang": "#6a3d9a",
    "nan_rollback": "#c51b7d",
    "fork": "#0f7c8c",
    "resume": "#2ca02c",
    "setting_changed": "#5f5f5f",
    "worker_lost": "#d95f02",
    "worker_back": SUCCESS,
}

# Markers of events that do not end a line of training: dotted, not dashed.
DOTTED_MARKERS = {"setting_changed", "worker_lost", "worker_back"}
# Markers that begin a line of training: their label is right of the line, and their dashes
# fill the gaps of the others', so a crash and a resume at the same step both show.
BEGINNING_MARKERS = {"resume", "fork", "worker_back", "setting_changed"}
# Dash, gap (in pen widths) of dashed and dotted markers: equal, so one shifted by a dash
# alternates with the other. Markers of N kinds of one family at one step take turns: a dash,
# N - 1 dashes of gap, each kind shifted by one dash more (`dash_slots`, `marker_pen`).
MARKER_DASHES = {"dashed": [4.0, 4.0], "dotted": [1.0, 1.0]}

CURVE_COLOURS = {
    "current": "#1f77b4",  # the open run's newest attempt
    "earlier": "#9fb7cf",  # its earlier attempts
    "validation": "#ff7f0e",  # validation points (fill)
    "validation_edge": "#a04000",
    "halo": "#9cc3e4",  # earlier attempts in the presentation view, wide under the newest
}
# Overlaid runs: distinct from the open run's blue, the validation orange and the marker colours.
OVERLAY_COLOURS = ("#9467bd", "#d4479b", "#2a9d8f", "#8c8c00", "#7f7f7f", "#17becf", "#5c3c92")
RAW_ALPHA_WHEN_SMOOTHED = 70  # 0–255: the raw curve under its smoothed one

NOTICE = "#8a5a00"  # a line on the plot about what the view leaves out
NOTICE_FILL = (255, 255, 255, 220)  # RGBA behind that line
LEGEND_FRAME = "#c8c8c8"
# RGBA, opaque: a curve seen faded through the legend looked like the pale redone steps
LEGEND_FILL = (255, 255, 255, 255)
LEGEND_TEXT = TEXT
PLOT_BACKGROUND = "#ffffff"  # the loss plot's; a marker's label is filled with it, opaque
REDONE_SHADE = (214, 39, 40, 28)  # RGBA: steps a restart computes again
REDONE_SHADE_PRESENTING = (214, 39, 40, 45)  # stronger on a projector
STORY_COLOUR = "#1b2a3a"  # the story line's text
STORY_FILL = "#eef3f8"  # and its background

# ------------------------------------------------------------------------------ sizes at scale 1
PEN_WIDTHS = {"curve": 1, "smoothed": 2, "marker": 1, "earlier": 1}  # pixels
# the presentation view: a room reads the plot from metres away; curves thicker than 3 px
PRESENTING_PEN_WIDTHS = {"curve": 3, "smoothed": 4, "marker": 3, "earlier": 6}
STATE_LABEL_PX = 14  # the run state in the window's top bar, in pixels
LEGEND_FONT_PT = 9.0  # the plot's legend
VALIDATION_SYMBOL_PX = 7
STORY_PX = 15  # the story line in the normal view
# pixel sizes in the presentation view (at scale 1): ticks and banner legible from the back
PRESENTING_PX = {"tick": 22, "axis_label": 24, "marker_label": 22, "legend": 20, "story": 32,
                 "validation_symbol": 12, "marker_label_padding": 6,
                 "button": 15, "state": 16}  # the top bar's run buttons and state label
MARKER_LABEL_PADDING_PX = 3  # around a marker label's text, inside its filled box
MIN_WINDOW_WIDTH = 960  # pixels at scale 1: the window never gets narrower
FALLBACK_FONT_PT = 9.0  # the base font size when no application exists yet to ask
MIN_SCALE, MAX_SCALE = 0.5, 4.0


class _Signals(QObject):
    scaleChanged = Signal(float)  # noqa: N815 (Qt's naming)


class _Follower(QObject):
    """Calls `update(scale)` on each scale change; a child of its owner, so it (and its
    connection) goes when the owner is deleted."""

    def __init__(self, owner: QObject, update: Callable[[float], None]):
        super().__init__(owner)
        self._update = update
        signals.scaleChanged.connect(self._on_scale)

    def _on_scale(self, factor: float) -> None:
        self._update(factor)


signals = _Signals()
_scale = 1.0
_base_font_pt: float | None = None  # the desktop's own UI font size, read once


# ------------------------------------------------------------------------------ scale and fonts
def scale() -> float:
    """The factor every font and line is drawn at (1.0 = as designed)."""
    return _scale


def set_scale(factor: float) -> None:
    """Draw every font and line `factor` times its base size (`MIN_SCALE`–`MAX_SCALE`).

    Sets the application font now and emits `signals.scaleChanged(factor)` for the views.
    Raises ValueError for a factor outside the range.
    """
    global _scale
    factor = float(factor)
    if not MIN_SCALE <= factor <= MAX_SCALE:
        raise ValueError(f"scale: {factor} is outside {MIN_SCALE}–{MAX_SCALE}")
    _base_pt()  # read the unscaled size before the first change
    _scale = factor
    app = QApplication.instance()
    if app is not None:
        app.setFont(font())
    signals.scaleChanged.emit(factor)


def _base_pt() -> float:
    global _base_font_pt
    if _base_font_pt is None:
        app = QApplication.instance()
        if app is None:
            return FALLBACK_FONT_PT
        size = QApplication.font().pointSizeF()
        _base_font_pt = size if size > 0 else FALLBACK_FONT_PT
    return _base_font_pt


def base_font_pt() -> float:
    """The UI font size at scale 1, in points: the desktop's own size."""
    return _base_pt()


def font_pt() -> float:
    """The UI font size at the current scale, in points."""
    return _base_pt() * _scale


def font() -> QFont:
    """The application font at the current scale."""
    result = QFont(QApplication.font()) if QApplication.instance() else QFont()
    result.setPointSizeF(font_pt())
    return result


def apply(app: QApplication) -> None:
    """At start-up: remember the desktop's font size as the base, and give `app` the font at
    the current scale when that is not 1 (a scale set before the application existed)."""
    _base_pt()
    if _scale != 1.0:
        app.setFont(font())


def follow_scale(owner: QObject, update: Callable[[float], None]) -> None:
    """Call `update(scale)` after every `set_scale`, for as long as `owner` exists."""
    _Follower(owner, update)


# ------------------------------------------------------------------------------ pens
def pen_width(kind: str, presenting: bool = False) -> float:
    """The width in pixels of a `kind` line (a key of `PEN_WIDTHS`) at the current scale, in
    the normal view or (`presenting`) the presentation view."""
    return (PRESENTING_PEN_WIDTHS if presenting else PEN_WIDTHS)[kind] * _scale


def presenting_px(kind: str) -> int:
    """A pixel size of the presentation view (a key of `PRESENTING_PX`) at the current scale."""
    return round(PRESENTING_PX[kind] * _scale)


def font_px(pixels: int, bold: bool = False) -> QFont:
    """The application font at `pixels` pixels (already scaled by the caller)."""
    result = font()
    result.setPixelSize(max(int(pixels), 1))
    result.setBold(bold)
    return result


def tick_font(presenting: bool = False) -> QFont:
    """The font of a plot's axis ticks: the UI font at the current scale, or the presentation
    view's `PRESENTING_PX["tick"]`."""
    return font_px(presenting_px("tick")) if presenting else font()


def rgba(values: tuple[int, int, int, int]) -> QColor:
    """A QColor from an (r, g, b, a) tuple of the theme."""
    return QColor(*values)


def state_colour(state: str) -> str:
    """The colour (#rrggbb) a run or window state is written in."""
    return STATE_COLOURS.get(state, DEFAULT_STATE_COLOUR)


def marker_family(kind: str) -> str:
    """The dash family of a `kind` marker: "dotted" (`DOTTED_MARKERS`) or "dashed"."""
    return "dotted" if kind in DOTTED_MARKERS else "dashed"


def marker_pen(kind: str, presenting: bool = False, slot: int = 0, sharing: int = 1) -> QPen:
    """The cosmetic pen of a `kind` marker (a key of `MARKER_COLOURS`), scaled: dashed, or
    dotted for `DOTTED_MARKERS`; thicker in the presentation view. Alone at its step
    (`sharing` 1) a `BEGINNING_MARKERS` one is shifted by one dash. When `sharing` markers of
    one family are drawn at one step, this one (the `slot`-th, from 0) draws one dash in
    every `sharing`, shifted by `slot` dashes: each colour shows in turn along the line."""
    pen = QPen(QColor(MARKER_COLOURS[kind]))
    pen.setCosmetic(True)
    pen.setWidthF(pen_width("marker", presenting))
    dash, gap = MARKER_DASHES[marker_family(kind)]
    pen.setCapStyle(Qt.PenCapStyle.FlatCap)  # a square cap would lengthen each dash
    if sharing > 1:
        pen.setDashPattern([dash, (sharing - 1) * dash])
        pen.setDashOffset(slot * dash)
    else:
        pen.setDashPattern([dash, gap])
        if kind in BEGINNING_MARKERS:
            pen.setDashOffset(dash)
    return pen


def dash_slots(kinds: list[str]) -> list[tuple[int, int]]:
    """(slot, sharing) for `marker_pen` of each of the markers `kinds` drawn at one step, in
    that order: the kinds of one dash family share the line in turns, those ending a line of
    training first (a crash keeps the unshifted dashes, a resume the shifted ones); markers of
    one kind (one colour) share a turn, so two workers lost at one step stay dotted."""
    slots: list[tuple[int, int]] = [(0, 1)] * len(kinds)
    for family in {marker_family(kind) for kind in kinds}:
        turns = sorted(dict.fromkeys(kind for kind in kinds if marker_family(kind) == family),
                       key=lambda kind: kind in BEGINNING_MARKERS)  # stable: then by order
        for k, kind in enumerate(kinds):
            if kind in turns:
                slots[k] = (turns.index(kind), len(turns))
    return slots


class MarkerPens(Mapping):
    """A view's marker names mapped to theme marker kinds; each lookup gives the pen at the
    current scale, e.g. `MarkerPens(kill="crash")["kill"]`."""

    def __init__(self, **kinds: str):
        unknown = sorted(set(kinds.values()) - set(MARKER_COLOURS))
        if unknown:
            raise ValueError(f"marker kind: {', '.join(unknown)} is not one of "
                             f"{', '.join(MARKER_COLOURS)}")
        self._kinds = kinds

    def __getitem__(self, name: str) -> QPen:
        return marker_pen(self._kinds[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self._kinds)

    def __len__(self) -> int:
        return len(self._kinds)


# ------------------------------------------------------------------------------ stylesheet
def stylesheet() -> str:
    """The stylesheet at the current scale for the widgets it names by objectName: the state
    label (coloured by its `state` property), the bold Kill / Resume buttons, the Runs dock's
    info line, and the story line, run buttons and state label larger where their `presenting`
    property is true (the presentation view)."""
    rules = [
        f"QLabel#stateLabel {{ font-size: {round(STATE_LABEL_PX * _scale)}px; "
        f"font-weight: bold; padding: 0 8px; color: {DEFAULT_STATE_COLOUR}; }}",
        *(f'QLabel#stateLabel[state="{state}"] {{ color: {colour}; }}'
          for state, colour in STATE_COLOURS.items()),
        f"QPushButton#killButton:enabled {{ color: {ERROR}; font-weight: bold; }}",
        f"QPushButton#resumeButton:enabled {{ color: {SUCCESS}; font-weight: bold; }}",
        f"QLabel#runsInfoLabel {{ color: {SECONDARY_TEXT}; }}",
        f"QLabel#storyBanner {{ font-size: {round(STORY_PX * _scale)}px; font-weight: bold; "
        f"color: {STORY_COLOUR}; background: {STORY_FILL}; padding: 3px 8px; }}",
        f'QLabel#storyBanner[presenting="true"] {{ font-size: {presenting_px("story")}px; '
        f"padding: 6px 12px; }}",
        # the room sees which button the presenter presses, and the state it leads to
        f'QPushButton[presenting="true"] {{ font-size: {presenting_px("button")}px; '
        f"padding: 4px 10px; }}",
        f'QLabel#stateLabel[presenting="true"] {{ font-size: {presenting_px("state")}px; }}',
    ]
    return "\n".join(rules)


def style(*widgets: QWidget) -> None:
    """Give each of `widgets` the theme's stylesheet at the current scale (again after
    `set_scale`: call it from a `signals.scaleChanged` slot)."""
    sheet = stylesheet()
    for widget in widgets:
        widget.setStyleSheet(sheet)


def set_state(widget: QWidget, state: str) -> None:
    """Set `widget`'s `state` property and restyle it (the stylesheet colours by state)."""
    set_property(widget, "state", state)


def set_property(widget: QWidget, name: str, value) -> None:
    """Set a property the stylesheet selects on (`state`, `presenting`) and restyle `widget`."""
    widget.setProperty(name, value)
    widget.style().unpolish(widget)
    widget.style().polish(widget)
