"""How ftgui starts a Python process of its own (a trainer, a standby, a helper): `module_argv`.

`python -m MODULE` puts the working directory first on the child's `sys.path`, so a user's
`json.py` or `random.py` there would stand in for the standard module that TensorFlow or ftgui
imports (`AttributeError: module 'json' has no attribute 'loads'`). `-P` (Python 3.11+) leaves
it off; a process that runs the user's code puts the user's folders back after the standard
library (`user_code.import_module`), so the user's own modules still import.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

_SOURCE = Path(__file__).resolve().parent.parent  # the folder that holds the ftgui package


def module_argv(module: str, python: str = sys.executable) -> list[str]:
    """`[python, -P, -m, module]`: the command line that runs `module` in a child Python of
    this one's version. `-P` only where Python has it (3.11+), and not for a source checkout
    run from its own folder without installing it (the child finds ftgui only there)."""
    return [python, *_safe_path(), "-m", module]


def _safe_path() -> tuple[str, ...]:
    if sys.version_info < (3, 11):
        return ()
    if not _installed():
        try:
            if Path.cwd().resolve() == _SOURCE:
                return ()
        except OSError:  # the working directory was deleted: nothing to import there
            pass
    return ("-P",)


@functools.cache
def _installed() -> bool:
    import importlib.metadata  # not at import: the window starts without it

    try:
        importlib.metadata.distribution("ftgui")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True
