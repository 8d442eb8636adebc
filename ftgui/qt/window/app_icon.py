"""ftgui's application icon as a QIcon, shared by the application, the window and About."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtGui import QIcon

from ftgui import icons


def app_icon() -> QIcon:
    """ftgui's icon with every shipped PNG size (16 … 256 px), so Qt never scales one up."""
    icon = QIcon()
    for size in icons.ICON_SIZES:
        icon.addFile(str(icons.png_path(size)), QSize(size, size))
    return icon
