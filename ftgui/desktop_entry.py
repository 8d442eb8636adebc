"""`ftgui install-desktop-entry`: a freedesktop launcher entry and icon for the user (Linux/BSD).

Writes `<data>/applications/ftgui.desktop`, `<data>/icons/hicolor/<N>x<N>/apps/ftgui.png` for
every shipped size and `<data>/icons/hicolor/scalable/apps/ftgui.svg`, where `<data>` is the
user's data folder (`platformdirs.user_data_path()`: `$XDG_DATA_HOME`, else ~/.local/share).
What it wrote (files, and folders it had to create) is listed in `<data>/ftgui/desktop-entry.json`
so that `--uninstall` removes exactly that, and nothing a user or another program put there.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import platformdirs

from ftgui import icons

MANIFEST = Path("ftgui") / "desktop-entry.json"
DESKTOP_FILE = Path("applications") / f"{icons.ICON_NAME}.desktop"


class DesktopEntryError(RuntimeError):
    """The launcher entry cannot be installed or removed here; the message says why."""


def data_dir() -> Path:
    """The user's data folder launchers read (`$XDG_DATA_HOME`, else ~/.local/share)."""
    return platformdirs.user_data_path()


def launch_command() -> list[str]:
    """The command the launcher runs: the `ftgui` script beside this Python if there is one
    (a virtual environment's bin folder is not on the desktop's PATH), else `python -m ftgui`."""
    script = Path(sys.executable).parent / "ftgui"
    if script.is_file():
        return [str(script)]
    found = shutil.which("ftgui")
    return [str(Path(found).absolute())] if found else [sys.executable, "-m", "ftgui"]


def desktop_file_text(command: list[str]) -> str:
    """The `.desktop` file for `command` (freedesktop Desktop Entry Specification 1.4)."""
    exec_line = " ".join(_exec_quote(arg) for arg in command)
    return "\n".join([
        "[Desktop Entry]",
        "Type=Application",
        "Version=1.4",
        "Name=ftgui",
        "GenericName=Fault-tolerant training viewer",
        "Comment=Make fault-tolerant distributed TensorFlow training visible",
        f"Exec={exec_line}",
        f"TryExec={command[0]}",
        f"Icon={icons.ICON_NAME}",
        "Terminal=false",
        "Categories=Science;ArtificialIntelligence;",
        "Keywords=TensorFlow;training;checkpoint;distributed;fault tolerance;",
        "StartupNotify=true",
        f"StartupWMClass={icons.ICON_NAME}",
        "",
    ])


def _exec_quote(arg: str) -> str:
    """One Exec argument: quoted when it holds a reserved character, `\\ " ` $` escaped and
    `%` doubled, as the specification asks."""
    arg = arg.replace("%", "%%")
    if not any(c in arg for c in " \t\n\"'\\><~|&;$*?#()`"):
        return arg
    escaped = "".join("\\" + c if c in '"`$\\' else c for c in arg)
    return f'"{escaped}"'


def planned_files(base: Path) -> dict[Path, Path | None]:
    """Destination under `base` -> source file in the package (None: the desktop file)."""
    plan: dict[Path, Path | None] = {base / DESKTOP_FILE: None}
    hicolor = base / "icons" / "hicolor"
    for size in icons.ICON_SIZES:
        plan[hicolor / f"{size}x{size}" / "apps" / f"{icons.ICON_NAME}.png"] = icons.png_path(size)
    plan[hicolor / "scalable" / "apps" / f"{icons.ICON_NAME}.svg"] = icons.svg_path()
    return plan


def install(base: Path | None = None, command: list[str] | None = None) -> list[Path]:
    """Write the desktop file and icons under `base` (default: `data_dir()`); returns the files
    written. Installing again replaces them. Raises DesktopEntryError off Linux/BSD or when a
    packaged icon is missing, OSError when a file cannot be written."""
    _check_platform()
    base = Path(base) if base is not None else data_dir()
    plan = planned_files(base)
    missing = [str(src) for src in plan.values() if src is not None and not src.is_file()]
    if missing:
        raise DesktopEntryError(f"icon: {missing[0]} is missing from the installed package")
    previous = _read_manifest(base)
    created_dirs = list(previous.get("dirs", []))
    for destination, source in plan.items():
        created_dirs += [str(d) for d in _make_parents(destination.parent)]
        if source is None:
            destination.write_text(desktop_file_text(command or launch_command()),
                                   encoding="utf-8")
        else:
            shutil.copyfile(source, destination)
    manifest = base / MANIFEST
    created_dirs += [str(d) for d in _make_parents(manifest.parent)]
    manifest.write_text(json.dumps({"files": [str(p) for p in plan], "dirs": created_dirs},
                                   indent=1), encoding="utf-8")
    return list(plan)


def uninstall(base: Path | None = None) -> list[Path]:
    """Remove what `install` wrote under `base` (files, then the folders it created if they
    are empty) and its manifest; returns the files removed ([] when nothing was installed)."""
    _check_platform()
    base = Path(base) if base is not None else data_dir()
    manifest = _read_manifest(base)
    removed = []
    for name in manifest.get("files", []):
        path = Path(name)
        if path.is_file():
            path.unlink()
            removed.append(path)
    (base / MANIFEST).unlink(missing_ok=True)
    for name in sorted(manifest.get("dirs", []), key=len, reverse=True):  # deepest first
        path = Path(name)
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    return removed


def _read_manifest(base: Path) -> dict:
    try:
        return json.loads((base / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except ValueError as exc:
        raise DesktopEntryError(f"manifest: {base / MANIFEST} is not valid JSON ({exc}); "
                                "delete it and install again") from None


def _make_parents(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents; returns those created, outermost first."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir()
    return list(reversed(missing))


def _check_platform() -> None:
    if not sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        raise DesktopEntryError(
            "install-desktop-entry: launcher entries are a Linux/BSD (freedesktop) feature; "
            "on macOS and Windows see docs/window.md, 'Desktop: version, launcher, recent runs, "
            "quitting'"
        )

