"""The View menu's two jobs: the presentation view (the loss plot and the story line fill the
window, large enough for the back of a room) and the zoom of every font and line (the theme's
scale, remembered in QSettings as `view/zoom`)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QSplitter, QWidget

from ftgui.qt import theme

ZOOM_STEPS = (0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0)  # View → Zoom in / out
ZOOM_KEY = "view/zoom"


class Presentation:
    """Switches a window between its normal layout and the presentation view.

    `hidden()` gives the widgets the presentation view hides (the configuration panel, the
    tables and the log, the plot's tools, the status bar, docks); `splitters` keep their sizes.
    Leaving gives every one of them back the visibility and sizes it had when the view was
    entered.
    `looks` are called with `on` after each switch (views that change their look).
    """

    def __init__(self, hidden: Callable[[], list[QWidget]], splitters: list[QSplitter],
                 looks: list[Callable[[bool], None]]):
        self.hidden, self.splitters, self.looks = hidden, splitters, looks
        self.on = False
        self._hidden: list[QWidget] = []
        self._visible: list[bool] = []
        self._sizes: list[bytes] = []

    def set_on(self, on: bool) -> bool:
        """Enter (`True`) or leave the presentation view; returns whether anything changed."""
        on = bool(on)
        if on == self.on:
            return False
        if on:
            self._hidden = self.hidden()
            self._visible = [not widget.isHidden() for widget in self._hidden]
            self._sizes = [splitter.saveState() for splitter in self.splitters]
            for widget in self._hidden:
                widget.hide()
        else:
            for widget, visible in zip(self._hidden, self._visible, strict=True):
                widget.setVisible(visible)
            for splitter, state in zip(self.splitters, self._sizes, strict=True):
                splitter.restoreState(state)
        self.on = on
        for look in self.looks:
            look(on)
        return True


class Zoom:
    """Steps the theme's scale through `ZOOM_STEPS` and remembers it in `settings`."""

    def __init__(self, settings: QSettings):
        self.settings = settings

    def restore(self) -> float:
        """Apply the remembered zoom (1.0 when none, or when it is not a number in range)."""
        try:
            factor = float(self.settings.value(ZOOM_KEY, 1.0))
        except (TypeError, ValueError):
            factor = 1.0
        if not theme.MIN_SCALE <= factor <= theme.MAX_SCALE:
            factor = 1.0
        if factor != theme.scale():
            theme.set_scale(factor)
        return factor

    def zoom_in(self) -> float:
        bigger = [step for step in ZOOM_STEPS if step > theme.scale() + 1e-9]
        return self.set(bigger[0] if bigger else ZOOM_STEPS[-1])

    def zoom_out(self) -> float:
        smaller = [step for step in ZOOM_STEPS if step < theme.scale() - 1e-9]
        return self.set(smaller[-1] if smaller else ZOOM_STEPS[0])

    def reset(self) -> float:
        return self.set(1.0)

    def set(self, factor: float) -> float:
        """Scale every font and line by `factor` and remember it; returns it."""
        theme.set_scale(factor)
        if factor == 1.0:
            self.settings.remove(ZOOM_KEY)
        else:
            self.settings.setValue(ZOOM_KEY, factor)
        return factor
