"""Before Qt would abort on X11 for want of its xcb plugin's libraries (a fresh Debian with only
`xvfb`), ftgui names the missing libraries and the Debian packages in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from ftgui.qt.window import platform_libs

XVFB_RUN = {"DISPLAY": ":99"}  # what `xvfb-run ftgui` gives the app


def test_qt_uses_xcb_under_xvfb_and_when_named_first():
    assert platform_libs.uses_xcb(XVFB_RUN, "linux")
    assert platform_libs.uses_xcb({"QT_QPA_PLATFORM": "xcb"}, "linux")
    assert platform_libs.uses_xcb({"QT_QPA_PLATFORM": "xcb:display=:1"}, "linux")
    assert not platform_libs.uses_xcb({"QT_QPA_PLATFORM": "offscreen", **XVFB_RUN}, "linux")
    assert not platform_libs.uses_xcb({"QT_QPA_PLATFORM": "wayland;xcb"}, "linux")
    assert not platform_libs.uses_xcb({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0",
                                       "XDG_SESSION_TYPE": "wayland"}, "linux")
    assert not platform_libs.uses_xcb({}, "linux")  # no display: the app says that itself
    assert not platform_libs.uses_xcb(XVFB_RUN, "darwin")


def test_the_missing_libraries_are_named_with_their_debian_packages():
    absent = {"libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1"}
    line = platform_libs.missing_line(XVFB_RUN, loads=lambda name: name not in absent,
                                      plugin=None)
    assert line == (
        "Qt's X11 (xcb) platform plugin needs libxcb-cursor.so.0, libxcb-icccm.so.4, "
        "libxcb-keysyms.so.1, missing here: install them (Debian/Ubuntu: `apt-get install "
        "libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1`), or train without a window with "
        "`ftgui train RUN`")
    assert platform_libs.missing_line(XVFB_RUN, loads=lambda name: True, plugin=None) == ""
    offscreen = {"QT_QPA_PLATFORM": "offscreen", **XVFB_RUN}
    assert platform_libs.missing_line(offscreen, loads=lambda name: False) == ""


def test_a_plugin_that_still_cannot_load_is_named(tmp_path):
    broken = tmp_path / "libqxcb.so"
    broken.write_bytes(b"not a library")
    line = platform_libs.missing_line(XVFB_RUN, loads=lambda name: name != str(broken),
                                      plugin=broken)
    assert line.startswith(f"Qt's X11 (xcb) platform plugin {broken} cannot be loaded (")
    assert line.endswith("); install the library it names, or train without a window with "
                         "`ftgui train RUN`")


def test_every_library_the_xcb_plugin_links_outside_qt_is_in_the_table():
    plugin = platform_libs.xcb_plugin()
    if plugin is None or shutil.which("objdump") is None:
        pytest.skip("no xcb plugin in this PySide6, or no objdump (binutils) to read it")
    qpa = plugin.parent.parent.parent / "lib" / "libQt6XcbQpa.so.6"
    needed = set()
    for library in (plugin, qpa):
        listing = subprocess.run(["objdump", "-p", str(library)], capture_output=True,
                                 encoding="utf-8", check=True).stdout
        needed |= {line.split()[1] for line in listing.splitlines()
                   if line.strip().startswith("NEEDED")}
    outside_qt = {name for name in needed if not name.startswith("libQt6")}
    system = {"libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libgthread-2.0.so.0"}
    assert outside_qt - system <= set(platform_libs.XCB_LIBRARIES)


def test_ftgui_under_xvfb_without_the_libraries_exits_with_the_line_not_a_core_dump():
    expected = platform_libs.missing_line({"QT_QPA_PLATFORM": "xcb"})
    if not expected:
        pytest.skip("every library of Qt's xcb plugin is installed here: nothing to refuse")
    env = {**os.environ, "QT_QPA_PLATFORM": "xcb", "DISPLAY": ":99"}
    done = subprocess.run([sys.executable, "-m", "ftgui"], env=env, capture_output=True,
                          encoding="utf-8", check=False)
    assert (done.returncode, done.stderr) == (2, f"ftgui: {expected}\n")
