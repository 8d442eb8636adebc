"""Before the window opens on X11: the system libraries Qt's xcb platform plugin needs.

PySide6's wheels bring Qt but not the X11 client libraries its `xcb` plugin links. Where one is
missing (a fresh Debian with only `xvfb` installed lacks `libxcb-cursor0`, `libxcb-icccm4`,
`libxcb-keysyms1` …) Qt prints a paragraph and aborts with a core dump. ftgui checks first and
says in one line which Debian packages to install. Imports no Qt.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path

# What PySide6 6.11's libqxcb.so and libQt6XcbQpa.so.6 need outside Qt (`ldd`), with the
# Debian 12 package of each.
XCB_LIBRARIES = {
    "libxcb.so.1": "libxcb1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libX11.so.6": "libx11-6",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libGL.so.1": "libgl1",
    "libEGL.so.1": "libegl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0",
}


def uses_xcb(environ=None, platform: str = sys.platform) -> bool:
    """Whether Qt will open its window through the xcb (X11) plugin: `QT_QPA_PLATFORM` names
    it first, or is unset on Linux/BSD with an X display (`DISPLAY`, as `xvfb-run` gives)
    outside a Wayland session. Without any display the app says so itself."""
    environ = os.environ if environ is None else environ
    if not platform.startswith(("linux", "freebsd")):
        return False
    chosen = environ.get("QT_QPA_PLATFORM", "").strip()
    if chosen:
        return chosen.split(";")[0].split(":")[0].strip().lower() == "xcb"
    wayland = environ.get("WAYLAND_DISPLAY") and environ.get("XDG_SESSION_TYPE") == "wayland"
    return bool(environ.get("DISPLAY")) and not wayland


def _loads(name: str) -> bool:
    try:
        ctypes.CDLL(name, mode=os.RTLD_LAZY)
    except OSError:
        return False
    return True


def xcb_plugin() -> Path | None:
    """PySide6's `Qt/plugins/platforms/libqxcb.so` (None when PySide6 has none)."""
    spec = importlib.util.find_spec("PySide6")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "Qt" / "plugins" / "platforms" / "libqxcb.so"
        if path.is_file():
            return path
    return None


def missing_line(environ=None, loads: Callable[[str], bool] = _loads,
                 plugin: Path | None | bool = True) -> str:
    """One line naming the missing libraries and the Debian packages that bring them when Qt
    would use xcb and cannot load it, else ''. `loads(name)` says whether a library loads
    (dlopen); `plugin`: the xcb plugin to try last, catching a library this table lacks
    (True: PySide6's own; None: none)."""
    if not uses_xcb(environ):
        return ""
    missing = [name for name in XCB_LIBRARIES if not loads(name)]
    if missing:
        packages = " ".join(XCB_LIBRARIES[name] for name in missing)
        return (f"Qt's X11 (xcb) platform plugin needs {', '.join(missing)}, missing here: "
                f"install them (Debian/Ubuntu: `apt-get install {packages}`), or train without "
                "a window with `ftgui train RUN`")
    path = xcb_plugin() if plugin is True else plugin
    if path is not None and not loads(str(path)):
        return (f"Qt's X11 (xcb) platform plugin {path} cannot be loaded "
                f"({_load_error(str(path))}); install the library it names, or train without "
                "a window with `ftgui train RUN`")
    return ""


def _load_error(name: str) -> str:
    try:
        ctypes.CDLL(name, mode=os.RTLD_LAZY)
    except OSError as exc:
        return str(exc)
    return "it loads now"
