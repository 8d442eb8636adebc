"""The user's own modules that a model or dataset file imports: found by reading the files
with `ast` (nothing is run), so that their content is part of the run's record and a change
of one refuses a resume, as a change of the named file does.

A module is the user's own when Python would import it from the user's folders rather than an
installed package: `NAME.py` or a package `NAME/` in the working directory (where the trainer
runs) or beside the file that imports it — the two folders `user_code.import_module` puts on
the trainer's `sys.path`, after the standard library: a `json.py` there is never imported as
`json`, so a standard module's name is never the user's own. Modules found are read in
turn for their own imports. Relative imports (`from . import x`) name no top-level module of a
folder and are left out, as are imports inside strings or `importlib` calls.
"""

from __future__ import annotations

import ast
import hashlib
import os
import sys
from pathlib import Path

# Imported by every trainer before the user's code: `import keras` in a model gets the installed
# one even with a keras.py in the working directory, so such a file is not the user's module.
PRELOADED = frozenset({"ftgui", "tensorflow", "keras", "numpy", "tensorboard", "google", "absl"})


def module_hashes(path: Path, cwd: Path | None = None) -> dict[str, str]:
    """{module name: hex SHA-256} of the user's own modules `path` imports, directly or
    through one another (a package: over its `.py` files, by relative path and content),
    sorted by name; {} when there are none. `cwd`: the working directory (default: this
    process'). A file that cannot be read or parsed imports nothing here."""
    return dict(sorted((name, _digest(found, files))
                       for name, (found, files) in _modules(path, cwd).items()))


def module_files(path: Path, cwd: Path | None = None) -> list[Path]:
    """The `.py` files of the user's own modules `path` imports, directly or through one
    another (those `module_hashes` hashes), for naming the user's line of an error raised
    in one of them."""
    return [file for _found, files in _modules(path, cwd).values() for file in files]


def _modules(path: Path, cwd: Path | None) -> dict[str, tuple[Path, list[Path]]]:
    """{module name: (its file or folder, its .py files)} of the user's own modules."""
    folders = [Path.cwd() if cwd is None else cwd]
    modules: dict[str, tuple[Path, list[Path]]] = {}
    pending = [Path(path)]
    while pending:
        current = pending.pop()
        for name in sorted(_imported_names(current)):
            if name in modules or name in sys.stdlib_module_names or name in PRELOADED:
                continue
            found = _find(name, [*folders, current.parent])
            if found is None:
                continue
            files = _module_files(found)
            modules[name] = (found, files)
            pending.extend(files)
    return modules


def hidden_standard_modules(path: Path, cwd: Path | None = None) -> list[Path]:
    """The user's files that `path` imports by a standard module's name (`import code` with a
    `code.py` in the working directory or beside `path`): Python's own module is imported
    instead (ftgui keeps the standard library first); for a hint when the code fails."""
    folders = [Path.cwd() if cwd is None else cwd, Path(path).parent]
    found = (_find(name, folders) for name in sorted(_imported_names(Path(path)))
             if name in sys.stdlib_module_names)
    return [hidden for hidden in found if hidden is not None]


def _imported_names(path: Path) -> set[str]:
    """The top-level names `path` imports (`import a.b` → a, `from a.b import c` → a)."""
    try:
        tree = ast.parse(Path(path).read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _find(name: str, folders: list[Path]) -> Path | None:
    """`NAME.py` or the package folder `NAME/` in the first of `folders` that has one, else
    a folder `NAME/` of `.py` files without `__init__.py` (a namespace package: Python
    imports it when no folder has the module itself)."""
    for folder in folders:
        if (folder / name / "__init__.py").is_file():
            return folder / name
        if (folder / f"{name}.py").is_file():
            return folder / f"{name}.py"
    for folder in folders:
        if (folder / name).is_dir() and _module_files(folder / name):
            return folder / name
    return None


def _module_files(found: Path) -> list[Path]:
    """The `.py` files of a module: the file, or every one of a package, in order."""
    if found.is_file():
        return [found]
    return sorted(p for p in found.rglob("*.py") if "__pycache__" not in p.parts)


def _digest(found: Path, files: list[Path]) -> str:
    digest = hashlib.sha256()
    for file in files:
        if found.is_dir():
            digest.update(os.fsencode(file.relative_to(found).as_posix()) + b"\0")
        try:
            digest.update(file.read_bytes())
        except OSError:
            digest.update(b"\0unreadable")
    return digest.hexdigest()
