"""`made_once` (conftest.py): a reference folder is made once per session, by whichever process
asks first, and a make that failed leaves nothing behind, so that the next asker makes it again."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import made_once


def test_a_folder_is_made_once_and_then_reused(tmp_path_factory):
    made = []

    def make(folder: Path) -> None:
        made.append(folder)
        (folder / "run.txt").write_text("trained")

    first = made_once(tmp_path_factory, "made-once-test", make)
    again = made_once(tmp_path_factory, "made-once-test", make)
    assert first == again == made[0]
    assert len(made) == 1 and (first / "run.txt").read_text() == "trained"


def test_a_failed_make_leaves_nothing_and_is_tried_again(tmp_path_factory):
    def failing(folder: Path) -> None:
        (folder / "half.txt").write_text("half")
        raise RuntimeError("the reference run failed")

    with pytest.raises(RuntimeError, match="the reference run failed"):
        made_once(tmp_path_factory, "made-once-failing", failing)
    folder = made_once(tmp_path_factory, "made-once-failing",
                       lambda f: (f / "whole.txt").write_text("whole"))
    assert sorted(p.name for p in folder.iterdir()) == ["whole.txt"]


def test_two_processes_asking_at_once_make_it_once(tmp_path):
    """Two processes (as two xdist workers) ask for the same folder at the same time: one
    makes it (its make goes on once the other has asked) while the other waits on the lock,
    then reuses it."""
    script = tmp_path / "ask.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from conftest import made_once

        class Factory:
            def getbasetemp(self):
                return Path(sys.argv[1])

        base = Path(sys.argv[1])

        def make(folder):
            while len(list(base.glob("asked-*"))) < 2:  # until the other process asks too
                time.sleep(0.01)
            with open(base / "makes.log", "a") as log:
                log.write(sys.argv[2] + "\\n")

        (base / ("asked-" + sys.argv[2])).touch()
        print(made_once(Factory(), "shared", make))
    """))
    base = tmp_path / "session"
    base.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}  # base itself
    asks = [subprocess.Popen([sys.executable, str(script), str(base), name],
                             stdout=subprocess.PIPE, text=True, env=env)
            for name in ("gw0", "gw1")]
    folders = [ask.communicate(timeout=120)[0].strip() for ask in asks]
    assert [ask.returncode for ask in asks] == [0, 0]
    assert folders[0] == folders[1] == str(base / "made-once" / "shared")
    assert len((base / "makes.log").read_text().splitlines()) == 1
