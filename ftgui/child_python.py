"""How ftgui starts a Python process of its own (a trainer, a standby, a helper): `module_argv`.

`python -m MODULE` puts the working directory first on the child's `sys.path`, so a user's
`json.py` or `random.py` there would stand in for the standard module that TensorFlow or ftgui
imports (`AttributeError: module 'json' has no attribute 'loads'`). `-P` (Python 3.11+) leaves
it off; a process that runs the user's code puts the user's folders back after the standard
library (`user_code.import_module`), so the user's own modules still import.
"""

from __future__ import annotations

import sys

SAFE_PATH = ("-P",) if sys.version_info >= (3, 11) else ()


def module_argv(module: str, python: str = sys.executable) -> list[str]:
    """`[python, -P, -m, module]`: the command line that runs `module` in a child Python of
    this one's version (`-P` only where Python has it, 3.11+)."""
    return [python, *SAFE_PATH, "-m", module]
