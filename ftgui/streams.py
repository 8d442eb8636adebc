"""Console output that survives any locale: stdout and stderr of an `ftgui` process never fail on
a character their encoding lacks (`LC_ALL=C`, `PYTHONIOENCODING=cp1252`, a Windows console).

What ftgui prints uses a few typographic characters (→ · … ✓ ✗ —). Where the console's encoding
has no such character it is written as its ASCII look-alike (`->`, `-`, `...`, `ok`, `x`), and
any other character as a Python escape (`\\u00e9`), instead of raising `UnicodeEncodeError`.
Files are another matter: ftgui writes every file as UTF-8, whatever the locale.
"""

from __future__ import annotations

import codecs
import sys

ERRORS = "ftgui-ascii"
# The environment of every Python process ftgui starts: UTF-8 mode (file names and argv are
# decoded as UTF-8 whatever the locale, so a run folder named `rün` reaches TensorFlow whole)
# and UTF-8 output, which ftgui reads back as UTF-8.
CHILD_ENV = {"PYTHONUTF8": "1", "PYTHONIOENCODING": "utf-8"}

ASCII_LOOKALIKES = {
    "→": "->", "←": "<-", "↳": "->", "·": "-", "…": "...", "—": "-", "–": "-", "−": "-",
    "×": "x", "✓": "ok", "✗": "x", "✕": "x", "≤": "<=", "≥": ">=", "≈": "~", "±": "+/-",
    "µ": "u", "§": "S", "▶": ">", "◀": "<", "★": "*", "‘": "'", "’": "'", "“": '"', "”": '"',
    "\u00a0": " ", "\u2009": " ", "\u202f": " ",
}


def _lookalike(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start:error.end]
    out = []
    for char in text:
        fallback = ASCII_LOOKALIKES.get(char)
        out.append(fallback if fallback is not None
                   else char.encode("ascii", "backslashreplace").decode("ascii"))
    return "".join(out), error.end


codecs.register_error(ERRORS, _lookalike)


def make_console_safe(streams: tuple[str, ...] = ("stdout", "stderr")) -> None:
    """Reconfigure `sys.stdout` / `sys.stderr` (when they are text streams) so that characters
    their encoding cannot hold are written as ASCII look-alikes or escapes. The encoding itself
    is kept (a UTF-8 console still gets →). Streams replaced by something without
    `reconfigure` (a test's capture) are left as they are."""
    for name in streams:
        stream = getattr(sys, name, None)
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None:
            continue
        try:
            reconfigure(errors=ERRORS)
        except (ValueError, OSError):  # a closed stream
            continue
