"""A run's name and notes as a person gives them, kept in `RUN/run.toml` (never in events.jsonl,
which only trainers and the supervisor append to).

    name = "checkpoint every 10"
    notes = "the crash at step 606 cost 6 steps"

A missing file, or one that is not TOML, reads as no name and no notes.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import tomli_w

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

NOTES_FILE = "run.toml"
MAX_NAME = 200  # characters; a name is one line


@dataclass(frozen=True)
class RunNotes:
    """`name` (one line, '' = none: the folder's name is shown) and `notes` (free text)."""

    name: str = ""
    notes: str = ""


def path_of(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / NOTES_FILE


def load(run_dir: str | os.PathLike) -> RunNotes:
    """The name and notes of `run_dir` (empty ones when it has none)."""
    try:
        with open(path_of(run_dir), "rb") as handle:
            table = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return RunNotes()
    name, notes = table.get("name", ""), table.get("notes", "")
    return RunNotes(name if isinstance(name, str) else "", notes if isinstance(notes, str)
                    else "")


def save(run_dir: str | os.PathLike, notes: RunNotes) -> Path:
    """Write `notes` to `RUN/run.toml` atomically; other keys in the file are kept. Raises
    `ValueError` for a name over MAX_NAME characters or with a line break, `OSError` when the
    folder cannot be written."""
    name = notes.name.strip()
    if "\n" in name or "\r" in name or len(name) > MAX_NAME:
        raise ValueError(f"name: one line of at most {MAX_NAME} characters")
    path = path_of(run_dir)
    try:
        with open(path, "rb") as handle:
            table = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        table = {}
    table.update(name=name, notes=notes.notes)
    for key in ("name", "notes"):
        if not table[key]:
            del table[key]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(tomli_w.dumps(table), encoding="utf-8")
    os.replace(tmp, path)
    return path


def rename(run_dir: str | os.PathLike, name: str) -> RunNotes:
    """Give `run_dir` the name `name` (its notes stay); returns what is now stored."""
    notes = RunNotes(name.strip(), load(run_dir).notes)
    save(run_dir, notes)
    return notes


def annotate(run_dir: str | os.PathLike, text: str) -> RunNotes:
    """Set the notes of `run_dir` to `text` (its name stays); returns what is now stored."""
    notes = RunNotes(load(run_dir).name, text)
    save(run_dir, notes)
    return notes
