"""Versions of ftgui and the stack it runs on, read without importing TensorFlow or Qt.

`ftgui --version` must answer in a fraction of a second, and `import tensorflow` costs seconds:
every version here comes from the installed packages' metadata (`importlib.metadata`), except
the Qt library's own version, which only `qt_version()` asks Qt for.
"""

from __future__ import annotations

import platform
from importlib import metadata

# The distributions TensorFlow is published as; the first one installed is reported.
TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-macos",
                            "tensorflow-intel", "tf-nightly")
NOT_INSTALLED = "not installed"


def package_version(distribution: str) -> str | None:
    """The installed version of `distribution` (e.g. "PySide6"), or None if it is absent."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def ftgui_version() -> str:
    """ftgui's version from its package metadata (from the source when it is not installed)."""
    found = package_version("ftgui")
    if found is None:
        from ftgui import __version__

        return __version__
    return found


def tensorflow_version() -> str:
    """TensorFlow's version from its distribution's metadata, or "not installed"."""
    for name in TENSORFLOW_DISTRIBUTIONS:
        found = package_version(name)
        if found is not None:
            return found
    return NOT_INSTALLED


def qt_version() -> str:
    """The version of the Qt library PySide6 runs on (imports PySide6.QtCore)."""
    try:
        from PySide6 import QtCore
    except ImportError:
        return NOT_INSTALLED
    return QtCore.qVersion()


def stack_versions() -> dict[str, str]:
    """{"ftgui", "Python", "PySide6", "Qt", "pyqtgraph", "TensorFlow"} -> version text; the
    order is the order to show them in. Imports PySide6.QtCore, never TensorFlow."""
    return {
        "ftgui": ftgui_version(),
        "Python": f"{platform.python_version()} ({platform.python_implementation()})",
        "PySide6": package_version("PySide6") or NOT_INSTALLED,
        "Qt": qt_version(),
        "pyqtgraph": package_version("pyqtgraph") or NOT_INSTALLED,
        "TensorFlow": tensorflow_version(),
    }


def version_text(verbose: bool = False) -> str:
    """What `ftgui --version` prints: `ftgui <version>`, and with `verbose` one more line per
    part of the stack (`TensorFlow 2.21.0`, …) plus the platform."""
    if not verbose:
        return f"ftgui {ftgui_version()}"
    lines = [f"{name} {version}" for name, version in stack_versions().items()]
    lines.append(f"platform {platform.platform()}")
    return "\n".join(lines)
