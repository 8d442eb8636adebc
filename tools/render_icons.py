"""Render ftgui's application icon (ftgui/resources/ftgui.svg) to the PNG sizes it ships with.

Usage: python tools/render_icons.py   (writes ftgui/resources/icons/ftgui-<N>.png; commit them)

Qt's own SVG renderer (PySide6.QtSvg) draws each size from the vector file, so the PNGs are what
Qt itself would show; the PNGs exist because launchers and some Qt builds lack an SVG loader.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication, QImage, QPainter  # noqa: E402
from PySide6.QtSvg import QSvgRenderer  # noqa: E402

from ftgui import icons  # noqa: E402


def render(size: int, renderer: QSvgRenderer) -> QImage:
    """The icon drawn at `size`×`size` pixels on a transparent background."""
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    return image


def main() -> int:
    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(icons.svg_path()))
    if not renderer.isValid():
        print(f"render_icons: {icons.svg_path()} is not a valid SVG", file=sys.stderr)
        return 1
    for size in icons.ICON_SIZES:
        path = icons.png_path(size)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not render(size, renderer).save(str(path)):
            print(f"render_icons: could not write {path}", file=sys.stderr)
            return 1
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
