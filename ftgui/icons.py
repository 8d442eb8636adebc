"""Where ftgui's application icon lives in the installed package (Qt-free: the desktop entry
installer uses it too). `tools/render_icons.py` makes the PNGs from the SVG."""

from __future__ import annotations

from pathlib import Path

ICON_NAME = "ftgui"  # the freedesktop icon name, and the desktop file's name
ICON_SIZES = (16, 32, 48, 64, 128, 256)  # pixels; one PNG per size
RESOURCES = Path(__file__).resolve().parent / "resources"


def svg_path() -> Path:
    """The icon as drawn: `ftgui/resources/ftgui.svg`."""
    return RESOURCES / f"{ICON_NAME}.svg"


def png_path(size: int) -> Path:
    """The icon rendered at `size` pixels (one of `ICON_SIZES`); raises ValueError otherwise."""
    if size not in ICON_SIZES:
        raise ValueError(f"size: {size} is not one of {', '.join(map(str, ICON_SIZES))}")
    return RESOURCES / "icons" / f"{ICON_NAME}-{size}.png"
